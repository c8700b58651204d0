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
    /// The GETs in flight that identical reads may join, and the count of writes that finished (one lock, which every
    /// coalescing read takes twice: to lead or join, and its leader to end the flight).
    private let flights = LockedValue(Flights())

    private struct Flights {
        /// Counts the writes (any method but GET and HEAD) that finished; a read joins only reads that began after
        /// the last one (it is part of the key), so it never gets an answer older than a write this store made.
        var writeEpoch: UInt64 = 0
        /// Each GET in flight, by its key, with the shared answer of the reads that joined it: made when the first
        /// one joins (a read nobody joins makes none). Only the leader removes its entry, when its answer is in.
        var byKey: [FlightKey: Flight?] = [:]
    }

    private enum Role {
        case lead(FlightKey)
        case join(Flight)
    }

    init(upstream: any HTTPTransport, coalescesReads: Bool, counters: LockedValue<OnlineStoreStatistics>, reporter: CacheReporter) {
        self.upstream = upstream
        self.coalescesReads = coalescesReads
        self.counters = counters
        self.reporter = reporter
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let isWrite = request.method != "GET" && request.method != "HEAD"
        if isWrite {
            defer { flights.withLock { $0.writeEpoch &+= 1 } }
            return try await sendCounted(request)
        }
        guard coalescesReads, request.method == "GET" else { return try await sendCounted(request) }
        return try await send(request, key: FlightKey(url: request.url, headers: request.headerFields))
    }

    /// Sends `request` in the calling task (no task of its own, no extra thread hop). An identical request
    /// already in flight is joined instead: its answer is this one's too.
    @inline(__always)
    private func send(_ request: TransportRequest, key: FlightKey) async throws -> TransportResponse {
        while true {
            let role: Role = flights.withLock { flights in
                var key = key
                key.epoch = flights.writeEpoch
                guard let index = flights.byKey.index(forKey: key) else {
                    flights.byKey[key] = .some(nil)
                    return .lead(key)
                }
                if let flight = flights.byKey.values[index] { return .join(flight) }
                let flight = Flight()
                flights.byKey.values[index] = flight
                return .join(flight)
            }
            switch role {
            case .lead(let key):
                let result: Result<TransportResponse, any Error>
                do { result = .success(try await sendCounted(request)) } catch { result = .failure(error) }
                // The entry is this leader's: nobody else removes it, and none other can be made under its key meanwhile.
                let joined = flights.withLock { $0.byKey.removeValue(forKey: key) } ?? nil
                joined?.finish(result)
                return try result.get()
            case .join(let flight):
                counters.withLock { $0.coalesced += 1 }
                reporter.coalesced()
                let result = await flight.result()
                // The leader's own cancellation is not this read's: ask again (join or lead a new flight).
                if case .failure(let error) = result, error is CancellationError, !Task.isCancelled { continue }
                try Task.checkCancellation()
                return try result.get()
            }
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
/// writes (a write through the store starts a new epoch, so no read joins one sent before it). Its hash is the URL's
/// and the epoch's alone — reads of one URL with other header fields are rare, and equality tells them apart —; the
/// URL's is computed once, outside the lock it is looked up under, which sets the epoch.
struct FlightKey: Hashable, Sendable {
    var epoch: UInt64 = 0
    let url: String
    let headers: HTTPFields
    private let urlHash: Int

    init(url: String, headers: HTTPFields) {
        self.url = url
        self.headers = headers
        urlHash = url.hashValue
    }

    static func == (lhs: FlightKey, rhs: FlightKey) -> Bool {
        lhs.urlHash == rhs.urlHash && lhs.epoch == rhs.epoch && lhs.url == rhs.url && lhs.headers.elementsEqual(rhs.headers)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(urlHash)
        hasher.combine(epoch)
    }
}

/// The answer of a network request that identical reads share: made when the first one joins its leader, which
/// hands the answer to every read that joined.
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
