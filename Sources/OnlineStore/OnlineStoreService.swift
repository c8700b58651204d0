public import Logging
public import ServiceLifecycle
import ODataTelemetry

/// An ``OnlineODataStore`` as a ServiceLifecycle `Service`, to run in a `ServiceGroup` next to the
/// rest of a service (an HTTP server, for example).
///
/// ``run()`` opens the store and keeps it open until graceful shutdown. Then it lets the requests
/// in flight finish, for at most ``drainDeadline``, and closes the store (see
/// ``OnlineODataStore/close()``): the executions of ``OnlineODataStore/execute(_:listener:)`` and
/// ``OnlineODataStore/execute(batch:listener:)`` still running then are cancelled and end with a
/// failure at once; a ``OnlineODataStore/response(for:listener:)`` call runs in its caller's task, which
/// the service cannot cancel, and fails when its answer arrives (or when its caller cancels it). When
/// the task running ``run()`` is cancelled instead (the group's cancellation, or its
/// `maximumGracefulShutdownDuration` passed), the store is closed at once.
///
/// A `ServiceGroup` shuts its services down in the reverse order of its list, each after the one
/// behind it ended: put the store *before* the services that use it, so that an HTTP server stops
/// taking requests, and finishes its own, before the store closes.
///
/// ```swift
/// let store = try OnlineODataStore(serviceRoot: root, options: options)
/// let group = ServiceGroup(
///     services: [OnlineStoreService(store: store), httpServer],
///     gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()
/// ```
public struct OnlineStoreService: Service {
    /// The store the service opens and closes.
    public let store: OnlineODataStore
    /// How long requests in flight at graceful shutdown may still run before they are cancelled.
    public let drainDeadline: Duration
    /// Where the service logs opening, draining and closing.
    public let logger: Logger

    /// Creates the service; nothing is opened until ``run()``.
    /// - Parameters:
    ///   - store: the store; the service opens it in ``run()`` and closes it at the end.
    ///   - drainDeadline: how long requests in flight at graceful shutdown may still run; the default is 10 s.
    ///   - logger: the logger; the default is the store's (``OnlineStoreOptions/telemetry``).
    public init(store: OnlineODataStore, drainDeadline: Duration = .seconds(10), logger: Logger? = nil) {
        self.store = store
        self.drainDeadline = drainDeadline
        self.logger = logger ?? store.options.telemetry.logger
    }

    /// Opens the store, waits for graceful shutdown, lets the requests in flight finish within
    /// ``drainDeadline``, then closes the store (cancelling what still runs).
    /// - Throws: the error of ``OnlineODataStore/open()``; then the store stays closed.
    public func run() async throws {
        try await store.open()
        logger.info("online store open", metadata: ["odata.service_root": "\(store.serviceRoot)"])
        defer { store.close() }
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled rather than shut down gracefully: no time to drain.
            logger.info("online store cancelled, closing", metadata: ["odata.in_flight": "\(store.inFlightRequests)"])
            return
        }
        let left = await Self.drain(deadline: drainDeadline) { store.inFlightRequests }
        if left > 0 {
            logger.warning("online store closing with requests still in flight; they are cancelled",
                           metadata: ["odata.in_flight": "\(left)", "odata.drain_deadline": "\(drainDeadline)"])
        } else {
            logger.info("online store drained, closing")
        }
    }

    /// Waits until `count()` is 0, the deadline passed, or the task is cancelled; polls every 10 ms.
    /// - Returns: the last count (0 when drained).
    static func drain(deadline: Duration, _ count: () -> Int) async -> Int {
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: deadline)
        var left = count()
        while left > 0, clock.now < end, !Task.isCancelled {
            // Throws only when the task is cancelled, which the loop's condition checks next.
            try? await clock.sleep(for: .milliseconds(10))
            left = count()
        }
        return left
    }
}
