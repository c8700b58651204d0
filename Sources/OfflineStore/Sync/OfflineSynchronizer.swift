import CurlHTTP
import Foundation
import Logging
import CoreMetrics
import ODataCore
import ODataSession
import ODataTelemetry

/// Uploads, then downloads, by itself: when ``run()`` starts, after local changes were queued (debounced), every
/// ``OfflineSyncConfiguration/interval``, and at once on ``syncNow()``. While the back end cannot be reached it waits
/// as ``OfflineSyncConfiguration/unreachableBackoff`` says — a bounded number of tries a minute, never a busy loop —
/// and every queued request stays queued (``OfflineODataError/backEndUnreachable``). Its state is an
/// `AsyncSequence` (``states()``), a log line at each change, and the gauge `odata_offline_sync_state{state=…}`.
///
/// ```swift
/// let synchronizer = OfflineSynchronizer(provider: provider)
/// let task = Task { await synchronizer.run() }
/// for await state in synchronizer.states() { show(state) }   // idle, syncing(.uploading), waiting(until:because:) …
/// ```
///
/// ``OfflineStoreService`` runs one when given a configuration, and stops it at graceful shutdown. The waits are on
/// the provider's ``OfflineODataParameters/clock``.
public final class OfflineSynchronizer: Sendable {
    /// The provider it syncs; open it first (``OfflineStoreService`` does).
    public let provider: OfflineODataProvider
    /// When it syncs.
    public let configuration: OfflineSyncConfiguration
    private let logger: Logger
    private let telemetry: Telemetry
    private let clock: any RetryClock
    private let wakeup = Wakeup()

    private struct Observers {
        var current: OfflineSyncState = .idle(lastSuccess: nil)
        var next = 0
        var continuations: [Int: AsyncStream<OfflineSyncState>.Continuation] = [:]
    }

    private let observers = LockedValue(Observers())

    /// Creates a synchronizer; nothing runs until ``run()``.
    ///
    /// - Parameters:
    ///   - provider: The provider to sync, opened before ``run()``.
    ///   - configuration: When to sync; the default is `OfflineSyncConfiguration()`.
    public init(provider: OfflineODataProvider, configuration: OfflineSyncConfiguration = OfflineSyncConfiguration()) {
        self.provider = provider
        self.configuration = configuration
        self.telemetry = provider.parameters.telemetry
        self.logger = provider.parameters.telemetry.logger
        self.clock = provider.parameters.clock
    }

    /// The current state.
    public var currentState: OfflineSyncState { observers.withLock { $0.current } }

    /// The states from now on: the current one at once, then each change, until ``OfflineSyncState/stopped`` (the
    /// sequence then ends) or the consumer stops iterating.
    ///
    /// - Returns: An async sequence of states; every call makes a new one.
    public func states() -> AsyncStream<OfflineSyncState> {
        let (stream, continuation) = AsyncStream<OfflineSyncState>.makeStream()
        let id = observers.withLock { observers -> Int in
            observers.next += 1
            observers.continuations[observers.next] = continuation
            continuation.yield(observers.current)
            if observers.current == .stopped { continuation.finish() }
            return observers.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Asks for a sync at once: it starts as soon as the running one (if any) ended, without waiting for an
    /// interval, a debounce or a backoff.
    public func syncNow() {
        wakeup.signal(.now)
    }

    /// Syncs until the calling task is cancelled; the state is then ``OfflineSyncState/stopped``. A sync that runs
    /// is cancelled with the task: the upload leaves what it did not settle queued.
    public func run() async {
        let token = provider.addQueueObserver { [wakeup] in wakeup.signal(.change) }
        defer {
            provider.removeQueueObserver(token)
            publish(.stopped)
        }
        var lastSuccess: Date?
        var unreachableTries = 0
        var nextAt = clock.now  // a sync when the run starts
        while !Task.isCancelled {
            let left = nextAt.timeIntervalSince(clock.now)
            let trigger = left <= 0 ? .timer : await wakeup.wait(for: Duration(timeInterval: left), on: clock)
            switch trigger {
            case .cancelled: return
            case .change:
                // A change while waiting for the back end does not bring it back: keep the wait.
                if case .waiting = currentState { continue }
                guard await debounce() else { return }
            case .timer, .now: break
            }
            switch await syncOnce() {
            case .success:
                lastSuccess = clock.now
                unreachableTries = 0
                publish(.idle(lastSuccess: lastSuccess))
                nextAt = clock.now.addingTimeInterval(configuration.interval.timeInterval)
            case .unreachable(let error):
                unreachableTries += 1
                let policy = configuration.unreachableBackoff
                let wait = max(configuration.minimumWait, policy.backoff(beforeRetry: unreachableTries, random: Double.random(in: 0..<1)))
                nextAt = clock.now.addingTimeInterval(wait.timeInterval)
                publish(.waiting(until: nextAt, because: error.message))
            case .attention(let error):
                unreachableTries = 0
                publish(.needsAttention(error))
                nextAt = clock.now.addingTimeInterval(configuration.interval.timeInterval)
            case .busy:
                // An upload or download started elsewhere runs: try again shortly, in the same state.
                nextAt = clock.now.addingTimeInterval(configuration.minimumWait.timeInterval)
            case .cancelled:
                return
            }
        }
    }

    /// Waits until no change came for ``OfflineSyncConfiguration/debounce`` (at most
    /// ``OfflineSyncConfiguration/maximumDebounce`` after the first). - Returns: `false` when cancelled.
    private func debounce() async -> Bool {
        var left = configuration.maximumDebounce
        while left > .zero {
            let wait = min(configuration.debounce, left)
            let start = clock.now
            switch await wakeup.wait(for: wait, on: clock) {
            case .cancelled: return false
            case .timer, .now: return true
            case .change: left -= Duration(timeInterval: clock.now.timeIntervalSince(start))
            }
        }
        return true
    }

    private enum Outcome {
        case success
        case unreachable(OfflineODataError)
        case attention(OfflineODataError)
        /// Another upload or download was running.
        case busy
        case cancelled
    }

    private func syncOnce() async -> Outcome {
        do {
            publish(.syncing(.uploading))
            _ = try await provider.upload()
            if configuration.downloads {
                publish(.syncing(.downloading))
                try await provider.download()
            }
            return .success
        } catch is CancellationError {
            return .cancelled
        } catch let error as OfflineODataError {
            if Task.isCancelled { return .cancelled }
            let current = await provider.currentState
            if error == .invalidRequest && (current == .uploading || current == .downloading) { return .busy }
            return error == .backEndUnreachable && !Self.needsAPerson(error) ? .unreachable(error) : .attention(error)
        } catch {
            if Task.isCancelled { return .cancelled }
            return .attention(OfflineODataError(.storage, "the sync failed: \(error)", underlying: error))
        }
    }

    /// Whether a failure is one only a person can fix, although it is an outage by its kind: a TLS handshake the
    /// back end or the trust settings refuse does not pass by waiting.
    static func needsAPerson(_ error: OfflineODataError) -> Bool {
        guard error == .backEndUnreachable, let underlying = error.underlying else { return false }
        let cause = (underlying as? SessionError)?.underlying ?? underlying
        return (cause as? CurlError) == .tls
    }

    private func publish(_ state: OfflineSyncState) {
        let (changed, continuations) = observers.withLock { observers -> (Bool, [AsyncStream<OfflineSyncState>.Continuation]) in
            guard observers.current != state else { return (false, []) }
            observers.current = state
            return (true, Array(observers.continuations.values))
        }
        guard changed else { return }
        for continuation in continuations {
            continuation.yield(state)
            if state == .stopped { continuation.finish() }
        }
        for name in ["idle", "syncing", "waiting", "needs_attention", "stopped"] {
            telemetry.gauge(MetricName.syncState, [("state", name)]).record(name == state.name ? 1 : 0)
        }
        switch state {
        case .waiting, .needsAttention:
            logger.warning("offline sync \(state)", metadata: ["store": .string(provider.parameters.storeName)])
        default:
            logger.info("offline sync \(state)", metadata: ["store": .string(provider.parameters.storeName)])
        }
    }
}
