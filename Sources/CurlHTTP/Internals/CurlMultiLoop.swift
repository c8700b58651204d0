internal import CCurl
import Foundation
import Synchronization

/// The event loop: one dedicated thread owns a `CURLM` and runs
/// `curl_multi_poll` → inbox → `curl_multi_perform` → `curl_multi_info_read`.
///
/// Other threads only touch the `Mutex`-guarded inbox and call `curl_multi_wakeup`, which is the one multi
/// function documented as callable from another thread:
/// > curl_multi_wakeup … This function can be called from any thread.
/// Each submitted transfer resumes its continuation exactly once, on the loop thread.
final class CurlMultiLoop: Sendable {
    typealias Continuation = CheckedContinuation<TransportResponse, any Error>

    struct Submission: Sendable {
        let id: UInt64
        let request: TransportRequest
        let continuation: Continuation
    }

    /// What callers hand to the loop, plus counters the loop publishes for tests.
    struct Inbox {
        var submissions: [Submission] = []
        var cancellations: [UInt64] = []
        var nextID: UInt64 = 0
        var shutdownRequested = false
        /// Set (under the lock) just before the multi handle is destroyed: no more wakeups after it.
        var multiDestroyed = false
        var loopThread: pthread_t?
        var counts = Counts()
    }

    /// Counters for tests and diagnostics.
    struct Counts: Sendable, Equatable {
        /// Transfers added to the multi handle and not yet finished.
        var active = 0
        /// Idle easy handles kept for reuse.
        var pooled = 0
        /// Easy handles created over the transport's life.
        var handlesCreated = 0
        /// Transfers completed (successfully or not) over the transport's life.
        var completed = 0
    }

    private let inbox = Mutex(Inbox())
    /// The `CURLM *`. Used by the loop thread, except `curl_multi_wakeup`, which is called under the inbox lock
    /// and only while `multiDestroyed` is false.
    private nonisolated(unsafe) let multi: UnsafeMutableRawPointer
    private let configuration: CurlConfiguration
    private let exited = DispatchSemaphore(value: 0)

    /// Creates the multi handle, sets its options and starts the loop thread.
    ///
    /// - Parameter configuration: The validated configuration.
    /// - Throws: `CurlError` when libcurl cannot be initialized or rejects a multi option.
    init(configuration: CurlConfiguration) throws(CurlError) {
        try CurlGlobal.ensureInitialized()
        guard let multi = curl_multi_init() else {
            throw CurlError(kind: .other, message: "curl_multi_init failed")
        }
        func set(_ option: CURLMoption, _ value: Int, _ name: String) throws(CurlError) {
            let rc = CCurl_multi_setopt_long(multi, option, value)
            if rc != CURLM_OK {
                curl_multi_cleanup(multi)
                throw CurlError(kind: .invalidConfiguration, curlCode: Int(rc.rawValue),
                                message: "curl_multi_setopt(\(name)) failed: \(String(cString: curl_multi_strerror(rc)))")
            }
        }
        try set(CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost, "CURLMOPT_MAX_HOST_CONNECTIONS")
        try set(CURLMOPT_MAX_TOTAL_CONNECTIONS, configuration.maxTotalConnections, "CURLMOPT_MAX_TOTAL_CONNECTIONS")
        try set(CURLMOPT_MAXCONNECTS, configuration.maxCachedConnections, "CURLMOPT_MAXCONNECTS")
        try set(CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING")
        self.multi = multi
        self.configuration = configuration

        let thread = Thread { [self] in self.run() }
        thread.name = "CurlHTTP event loop"
        thread.start()
    }

    // MARK: Called from any thread

    /// Reserves an id for a transfer, before its cancellation handler is installed.
    func makeID() -> UInt64 {
        inbox.withLock { inbox in
            inbox.nextID &+= 1
            return inbox.nextID
        }
    }

    /// Hands a transfer to the loop, or resumes it at once when the transport is shut down or the task is
    /// already cancelled.
    func submit(_ submission: Submission) {
        let rejection: (any Error)? = inbox.withLock { inbox in
            if inbox.shutdownRequested {
                return CurlError(kind: .shutdown, message: "the transport has been shut down")
            }
            // Checked under the lock: a cancellation handler that ran before this point found nothing to
            // cancel, so the flag it set must be honoured here; one that runs later finds the submission.
            if Task.isCancelled {
                return CancellationError()
            }
            inbox.submissions.append(submission)
            curl_multi_wakeup(multi)
            return nil
        }
        if let rejection {
            submission.continuation.resume(throwing: rejection)
        }
    }

    /// Cancels a transfer: removes it from the inbox, or asks the loop to remove it from the multi handle.
    func cancel(_ id: UInt64) {
        let removed: Submission? = inbox.withLock { inbox in
            if let index = inbox.submissions.firstIndex(where: { $0.id == id }) {
                return inbox.submissions.remove(at: index)
            }
            if !inbox.multiDestroyed {
                inbox.cancellations.append(id)
                curl_multi_wakeup(multi)
            }
            return nil
        }
        removed?.continuation.resume(throwing: CancellationError())
    }

    /// Asks the loop to fail every transfer with `.shutdown`, free its handles and stop; waits until it has,
    /// unless called on the loop thread itself.
    func shutdown() {
        let wait = inbox.withLock { inbox -> Bool in
            inbox.shutdownRequested = true
            if !inbox.multiDestroyed { curl_multi_wakeup(multi) }
            let onLoop = inbox.loopThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
            return !onLoop
        }
        if wait {
            exited.wait()
            exited.signal()  // let later callers of `shutdown` pass too
        }
    }

    /// The loop's published counters.
    var counts: Counts { inbox.withLock { $0.counts } }

    // MARK: The loop thread

    private func run() {
        inbox.withLock { $0.loopThread = pthread_self() }
        var state = LoopState(multi: multi, configuration: configuration)
        while true {
            let (submissions, cancellations, stop) = inbox.withLock { inbox in
                defer {
                    inbox.submissions.removeAll(keepingCapacity: true)
                    inbox.cancellations.removeAll(keepingCapacity: true)
                }
                return (inbox.submissions, inbox.cancellations, inbox.shutdownRequested)
            }
            if stop {
                state.failAll(pending: submissions)
                break
            }
            for submission in submissions { state.start(submission) }
            for id in cancellations { state.cancel(id) }

            var running: Int32 = 0
            let rc = curl_multi_perform(multi, &running)
            if rc != CURLM_OK {
                state.failActive(CurlError(kind: .other, curlCode: Int(rc.rawValue),
                                           message: "curl_multi_perform failed: \(String(cString: curl_multi_strerror(rc)))"))
            }
            state.drainCompleted()
            let counts = state.counts
            inbox.withLock { $0.counts = counts }

            var ready: Int32 = 0
            // curl_multi_poll returns early when curl's own timers need it, and on curl_multi_wakeup.
            _ = curl_multi_poll(multi, nil, 0, 1000, &ready)
        }
        state.releaseAll()
        let counts = state.counts
        inbox.withLock { inbox in
            inbox.counts = counts
            inbox.multiDestroyed = true
        }
        curl_multi_cleanup(multi)
        exited.signal()
    }
}

/// The state only the loop thread touches: the active transfers and the pool of idle easy handles.
private struct LoopState {
    struct Active {
        let id: UInt64
        let handle: CurlEasyHandle
        let continuation: CurlMultiLoop.Continuation
    }

    let multi: UnsafeMutableRawPointer
    let configuration: CurlConfiguration
    var byID: [UInt64: Active] = [:]
    var idByHandle: [UnsafeMutableRawPointer: UInt64] = [:]
    var pool: [CurlEasyHandle] = []
    var counts = CurlMultiLoop.Counts()

    init(multi: UnsafeMutableRawPointer, configuration: CurlConfiguration) {
        self.multi = multi
        self.configuration = configuration
    }

    mutating func start(_ submission: CurlMultiLoop.Submission) {
        let handle: CurlEasyHandle
        if let pooled = pool.popLast() {
            handle = pooled
        } else if let made = CurlEasyHandle() {
            handle = made
            counts.handlesCreated += 1
        } else {
            submission.continuation.resume(throwing: CurlError(kind: .other, message: "curl_easy_init failed"))
            return
        }
        do {
            try handle.prepare(submission.request, configuration: configuration)
        } catch {
            recycle(handle)
            submission.continuation.resume(throwing: error)
            return
        }
        let rc = curl_multi_add_handle(multi, handle.raw)
        guard rc == CURLM_OK else {
            recycle(handle)
            submission.continuation.resume(throwing: CurlError(
                kind: .other, curlCode: Int(rc.rawValue),
                message: "curl_multi_add_handle failed: \(String(cString: curl_multi_strerror(rc)))"))
            return
        }
        byID[submission.id] = Active(id: submission.id, handle: handle, continuation: submission.continuation)
        idByHandle[handle.raw] = submission.id
        counts.active = byID.count
    }

    mutating func cancel(_ id: UInt64) {
        guard let active = remove(id) else { return }  // already finished: nothing to do
        active.continuation.resume(throwing: CancellationError())
    }

    mutating func drainCompleted() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            guard let id = idByHandle[easy], let active = remove(id, recycling: false) else { continue }
            let outcome = active.handle.finish(result: result)
            recycle(active.handle)
            active.continuation.resume(with: outcome.mapError { $0 as any Error })
        }
    }

    mutating func failActive(_ error: CurlError) {
        for id in Array(byID.keys) {
            remove(id)?.continuation.resume(throwing: error)
        }
    }

    mutating func failAll(pending: [CurlMultiLoop.Submission]) {
        let error = CurlError(kind: .shutdown, message: "the transport was shut down before the transfer completed")
        for submission in pending { submission.continuation.resume(throwing: error) }
        failActive(error)
    }

    /// Frees every easy handle; called once, before the multi handle is destroyed.
    mutating func releaseAll() {
        pool.removeAll()
        counts.pooled = 0
    }

    /// Takes a transfer off the multi handle.
    @discardableResult
    private mutating func remove(_ id: UInt64, recycling: Bool = true) -> Active? {
        guard let active = byID.removeValue(forKey: id) else { return nil }
        idByHandle.removeValue(forKey: active.handle.raw)
        curl_multi_remove_handle(multi, active.handle.raw)
        counts.active = byID.count
        counts.completed += 1
        if recycling { recycle(active.handle) }
        return active
    }

    private mutating func recycle(_ handle: CurlEasyHandle) {
        handle.discardTransfer()
        if pool.count < configuration.maxPooledHandles {
            pool.append(handle)
        }
        counts.pooled = pool.count
    }
}
