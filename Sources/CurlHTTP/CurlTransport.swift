import Foundation
public import ODataCore
import Synchronization

/// An HTTP transport over libcurl's multi interface: many concurrent transfers on dedicated event threads,
/// connections kept alive and reused, HTTP/2 over TLS, async/await API.
///
/// Each event thread owns one libcurl multi handle (``CurlConfiguration/eventLoopCount`` of them; one gives a
/// single thread and a single connection cache). `send(_:)` hands its transfer to the least busy thread and
/// suspends without blocking Swift's cooperative pool. Cancelling the calling task removes the transfer
/// promptly.
///
/// ```swift
/// let transport = try CurlTransport()
/// let response = try await transport.send(TransportRequest(url: "http://127.0.0.1:8080/People"))
/// ```
///
/// ## Topics
/// - ``init(configuration:)``
/// - ``send(_:)``
/// - ``shutdown()``
public final class CurlTransport: HTTPTransport, Sendable {
    /// The configuration the transport was created with.
    public let configuration: CurlConfiguration
    /// The event loops, each a thread with its own multi handle; transfers go to the least busy one.
    private let shards: [Shard]

    /// One event loop and the number of transfers handed to it that have not returned yet.
    final class Shard: Sendable {
        let loop: CurlMultiLoop
        let inFlight = Atomic<Int>(0)

        init(loop: CurlMultiLoop) {
            self.loop = loop
        }
    }

    /// Creates a transport and starts its event threads.
    ///
    /// - Parameter configuration: The options; the default is `CurlConfiguration()`.
    /// - Throws: `CurlError` of kind `.invalidConfiguration` naming a bad option, or when libcurl cannot
    ///   be initialized.
    public init(configuration: CurlConfiguration = .init()) throws {
        try configuration.validate()
        self.configuration = configuration
        let count = configuration.effectiveEventLoopCount
        var shards: [Shard] = []
        do {
            for index in 0..<count {
                shards.append(Shard(loop: try CurlMultiLoop(configuration: configuration.shard(index, of: count))))
            }
        } catch {
            for shard in shards { shard.loop.shutdown() }
            throw error
        }
        self.shards = shards
    }

    deinit {
        for shard in shards { shard.loop.shutdown() }
    }

    /// The loop with the fewest transfers in flight (the first on a tie, so sequential traffic stays on one
    /// loop and keeps reusing one connection).
    private func leastBusyShard() -> Shard {
        var best = shards[0]
        var bestLoad = best.inFlight.load(ordering: .relaxed)
        for shard in shards.dropFirst() where bestLoad > 0 {
            let load = shard.inFlight.load(ordering: .relaxed)
            if load < bestLoad {
                best = shard
                bestLoad = load
            }
        }
        return best
    }

    /// The loops' counters, summed (for tests and diagnostics).
    var counts: CurlMultiLoop.Counts {
        shards.reduce(into: CurlMultiLoop.Counts()) { total, shard in
            let counts = shard.loop.counts
            total.active += counts.active
            total.queued += counts.queued
            total.pooled += counts.pooled
            total.handlesCreated += counts.handlesCreated
            total.completed += counts.completed
        }
    }

    /// Sends a request and waits for its complete response.
    ///
    /// - Parameter request: The request; its URL must be absolute `http://` or `https://`.
    /// - Returns: The final response, whatever its status code (4xx and 5xx are responses, not errors).
    /// - Throws: `CurlError` for a bad request or a failed transfer (see `CurlError`), or
    ///   `CancellationError` when the calling task is cancelled.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        try RequestValidation.validate(request)
        let shard = leastBusyShard()
        shard.inFlight.add(1, ordering: .relaxed)
        defer { shard.inFlight.subtract(1, ordering: .relaxed) }
        let loop = shard.loop
        let id = loop.makeID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                loop.submit(.init(id: id, request: request, continuation: continuation))
            }
        } onCancel: {
            loop.cancel(id)
        }
    }

    /// Fails every transfer still running with `CurlError.shutdown`, closes all connections and stops the
    /// event thread; later calls to `send(_:)` fail with `.shutdown`. Calling it again does nothing.
    ///
    /// It blocks until the event thread has stopped (normally well under a millisecond).
    public func shutdown() {
        for shard in shards { shard.loop.shutdown() }
    }
}
