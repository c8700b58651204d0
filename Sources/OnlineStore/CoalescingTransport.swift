import ODataCore
import HTTPTypes

/// The online store's own leg under its cache (see `docs/notes/cache.md`, "The stack"): identical GETs in flight
/// share one network request (``OnlineStoreOptions/coalescesIdenticalReads``), a read never joins one that began
/// before a write through the store finished, and every request that reaches the network is counted.
final class CoalescingTransport: HTTPTransport {
    private let upstream: any HTTPTransport
    private let coalescesReads: Bool
    private let counters: LockedValue<OnlineStoreStatistics>
    private let reporter: CacheReporter
    /// Counts the writes (any method but GET and HEAD) that finished; a read joins only reads that
    /// began after the last one, so it never gets an answer older than a write this store made.
    private let writeEpoch = LockedValue<UInt64>(0)
    /// The GETs in flight that identical reads may join (a lock of its own: every coalescing read takes it).
    private let flights = LockedValue<[FlightKey: Flight]>([:])

    init(upstream: any HTTPTransport, coalescesReads: Bool, counters: LockedValue<OnlineStoreStatistics>, reporter: CacheReporter) {
        self.upstream = upstream
        self.coalescesReads = coalescesReads
        self.counters = counters
        self.reporter = reporter
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let isWrite = request.method != "GET" && request.method != "HEAD"
        if isWrite {
            defer { writeEpoch.withLock { $0 &+= 1 } }
            return try await sendCounted(request)
        }
        guard coalescesReads, request.method == "GET" else { return try await sendCounted(request) }
        return try await send(request, key: FlightKey(epoch: writeEpoch.withLock { $0 }, url: request.url, headers: request.headerFields))
    }

    /// Sends `request` in the calling task (no task of its own, no extra thread hop). An identical request
    /// already in flight is joined instead: its answer is this one's too.
    @inline(__always)
    private func send(_ request: TransportRequest, key: FlightKey) async throws -> TransportResponse {
        while true {
            let (flight, isLeader): (Flight, Bool) = flights.withLock { flights in
                if let existing = flights[key] { return (existing, false) }
                let flight = Flight()
                flights[key] = flight
                return (flight, true)
            }
            if isLeader {
                let result: Result<TransportResponse, any Error>
                do { result = .success(try await sendCounted(request)) } catch { result = .failure(error) }
                flights.withLock { flights in
                    if let index = flights.index(forKey: key), flights.values[index] === flight { flights.remove(at: index) }
                }
                flight.finish(result)
                return try result.get()
            }
            counters.withLock { $0.coalesced += 1 }
            reporter.coalesced()
            let result = await flight.result()
            // The leader's own cancellation is not this read's: ask again (join or lead a new flight).
            if case .failure(let error) = result, error is CancellationError, !Task.isCancelled { continue }
            try Task.checkCancellation()
            return try result.get()
        }
    }

    /// Inlined into its callers: one async frame fewer per request.
    @inline(__always)
    private func sendCounted(_ request: TransportRequest) async throws -> TransportResponse {
        let reply = try await upstream.send(request)
        counters.withLock {
            $0.networkRequests += 1
            $0.bytesReceived += reply.metrics.headerBytes + reply.metrics.bodyBytes
        }
        return reply
    }
}

/// What makes reads identical for coalescing: the URL and header fields (in order) of a GET, between the same
/// writes (a write through the store starts a new epoch, so no read joins one sent before it). Its hash is the
/// epoch's and the URL's alone — reads of one URL with other header fields are rare, and equality tells them apart —
/// computed once, outside the lock it is looked up under.
struct FlightKey: Hashable, Sendable {
    let epoch: UInt64
    let url: String
    let headers: HTTPFields
    private let hash: Int

    init(epoch: UInt64, url: String, headers: HTTPFields) {
        self.epoch = epoch
        self.url = url
        self.headers = headers
        var hasher = Hasher()
        hasher.combine(epoch)
        hasher.combine(url)
        hash = hasher.finalize()
    }

    static func == (lhs: FlightKey, rhs: FlightKey) -> Bool {
        lhs.hash == rhs.hash && lhs.epoch == rhs.epoch && lhs.url == rhs.url && lhs.headers.elementsEqual(rhs.headers)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}

/// One network request that identical reads share: the first one sends it, the others wait for its answer.
final class Flight: Sendable {
    private struct State {
        var result: Result<TransportResponse, any Error>?
        var waiters: [CheckedContinuation<Result<TransportResponse, any Error>, Never>] = []
    }

    private let state = LockedValue(State())

    /// The answer, once the leader has it.
    func result() async -> Result<TransportResponse, any Error> {
        if let result = state.withLock({ $0.result }) { return result }
        return await withCheckedContinuation { waiter in
            let ready = state.withLock { state -> Result<TransportResponse, any Error>? in
                if let result = state.result { return result }
                state.waiters.append(waiter)
                return nil
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }

    /// Hands the answer to every waiter.
    func finish(_ result: Result<TransportResponse, any Error>) {
        let waiters = state.withLock { state in
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }
}
