public import Logging
import ODataCore
import ODataTelemetry
public import ServiceLifecycle

/// An ``OfflineODataProvider`` as a ServiceLifecycle `Service`, to run in a `ServiceGroup` next to
/// the rest of a service.
///
/// ``run()`` opens the store (the first open downloads it) and keeps it open until graceful
/// shutdown. Then it waits for a running upload or download, for at most ``drainDeadline``, cancels
/// what still runs, waits for it to stop, and closes the store.
///
/// No queued request is lost: a cancelled upload sends nothing more and leaves every request it did
/// not settle in the queue, for the next upload after the store is opened again; a cancelled download
/// changes nothing. A request whose answer was on its way when the upload was cancelled stays queued
/// although the back end may have executed it: set
/// ``OfflineODataParameters/enableRepeatableRequests`` so that the back end recognises the second send
/// (`Repeatability-Request-ID`) and every request is executed exactly once.
///
/// With a ``OfflineSyncConfiguration`` the service runs an ``OfflineSynchronizer`` (``synchronizer``) from open to
/// shutdown: it uploads and downloads by itself, and its state is ``OfflineSynchronizer/states()``. At graceful
/// shutdown it is stopped first (a sync it runs is cancelled: the upload leaves what it did not settle queued).
///
/// Start uploads and downloads through ``upload()`` and ``download(definingQueries:)``: the service
/// knows these and can cancel them at shutdown. One started on the provider directly is waited for,
/// but cannot be cancelled by the service; when it outlasts the deadline the service keeps waiting,
/// until the task running ``run()`` is cancelled (for example by the group's
/// `maximumGracefulShutdownDuration`).
public final class OfflineStoreService: Service, Sendable {
    /// The provider the service opens and closes.
    public let provider: OfflineODataProvider
    /// How long a running upload or download may still run at graceful shutdown before it is cancelled.
    public let drainDeadline: Duration
    /// Where the service logs opening, draining and closing.
    public let logger: Logger
    /// The synchronizer the service runs while the store is open, when it was given a configuration.
    public let synchronizer: OfflineSynchronizer?

    private struct State {
        var operations: [UInt64: @Sendable () -> Void] = [:]
        var nextOperation: UInt64 = 0
        var shuttingDown = false
    }

    private let state = LockedValue(State())

    /// Creates the service; nothing is opened until ``run()``.
    /// - Parameters:
    ///   - provider: the offline store; add its defining queries first. The service opens it in
    ///     ``run()`` and closes it at the end.
    ///   - drainDeadline: how long a running upload or download may still run at graceful shutdown;
    ///     the default is 10 s.
    ///   - logger: the logger; the default is the provider's (``OfflineODataParameters/telemetry``).
    ///   - synchronization: when to sync by itself (``OfflineSynchronizer``); the default `nil` syncs only when asked.
    public init(provider: OfflineODataProvider, drainDeadline: Duration = .seconds(10), logger: Logger? = nil,
                synchronization: OfflineSyncConfiguration? = nil) {
        self.provider = provider
        self.drainDeadline = drainDeadline
        self.logger = logger ?? provider.parameters.telemetry.logger
        self.synchronizer = synchronization.map { OfflineSynchronizer(provider: provider, configuration: $0) }
    }

    /// Uploads the queued requests (``OfflineODataProvider/upload()``) in a task the service can cancel
    /// at shutdown. Cancelling the calling task cancels the upload.
    /// - Returns: how many requests were sent, accepted and failed.
    /// - Throws: what ``OfflineODataProvider/upload()`` throws, a `CancellationError` when cancelled;
    ///   `OfflineODataError` `.notOpen` once the service is shutting down.
    public func upload() async throws -> OfflineODataUploadResult {
        try await operation { [provider] in try await provider.upload() }
    }

    /// Downloads (``OfflineODataProvider/download(definingQueries:)``) in a task the service can cancel
    /// at shutdown. Cancelling the calling task cancels the download.
    /// - Parameter names: the defining queries to download, by name; `nil` for all of them.
    /// - Throws: what ``OfflineODataProvider/download(definingQueries:)`` throws, a `CancellationError`
    ///   when cancelled; `OfflineODataError` `.notOpen` once the service is shutting down.
    public func download(definingQueries names: [String]? = nil) async throws {
        try await operation { [provider] in try await provider.download(definingQueries: names) }
    }

    /// Runs `body` in a task registered for cancellation at shutdown.
    private func operation<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let started = state.withLock { state -> (UInt64, Task<T, any Error>)? in
            guard !state.shuttingDown else { return nil }
            let task = Task { try await body() }
            state.nextOperation &+= 1
            state.operations[state.nextOperation] = { task.cancel() }
            return (state.nextOperation, task)
        }
        guard let (id, task) = started else {
            throw OfflineODataError(.notOpen, "the offline store service is shutting down")
        }
        defer { _ = state.withLock { $0.operations.removeValue(forKey: id) } }
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    /// Opens the store, waits for graceful shutdown, lets a running upload or download finish within
    /// ``drainDeadline``, cancels it after that, then closes the store.
    /// - Throws: the error of ``OfflineODataProvider/open()``; then the store stays closed.
    public func run() async throws {
        try await provider.open()
        logger.info("offline store open", metadata: ["odata.service_root": "\(provider.serviceRoot)"])
        let syncing = synchronizer.map { synchronizer in Task { await synchronizer.run() } }
        let graceful: Bool
        do {
            try await gracefulShutdown()
            graceful = true
        } catch {
            graceful = false
        }
        state.withLock { $0.shuttingDown = true }
        if let syncing {
            syncing.cancel()
            await syncing.value
        }
        if graceful {
            let clock = ContinuousClock()
            let end = clock.now.advanced(by: drainDeadline)
            while await busy(), clock.now < end, !Task.isCancelled {
                try? await clock.sleep(for: .milliseconds(10))
            }
        }
        let cancels = state.withLock { Array($0.operations.values) }
        if !cancels.isEmpty {
            logger.warning("offline store: cancelling the running upload or download; unsent requests stay queued",
                           metadata: ["odata.drain_deadline": "\(drainDeadline)", "odata.graceful": "\(graceful)"])
            for cancel in cancels { cancel() }
        }
        // The cancelled operations stop at their next step; an operation started on the provider
        // directly is waited for unless this task is cancelled. Closing under a running upload could
        // lose the answer of a request the back end executed.
        var warned = false
        while await busy() {
            if state.withLock({ $0.operations.isEmpty }) && Task.isCancelled { break }
            if !warned && state.withLock({ $0.operations.isEmpty }) {
                logger.warning("offline store: waiting for an upload or download not started through the service")
                warned = true
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        await provider.close()
        logger.info("offline store closed")
    }

    /// Whether an upload or download runs (through the service or started on the provider).
    private func busy() async -> Bool {
        if !state.withLock({ $0.operations.isEmpty }) { return true }
        let current = await provider.currentState
        return current == .uploading || current == .downloading
    }
}
