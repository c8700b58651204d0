internal import CCurl
import Foundation
import ODataCore


/// The event loop: one dedicated thread owns a `CURLM` and runs
/// `curl_multi_poll` → inbox → `curl_multi_perform` → `curl_multi_info_read`.
///
/// Other threads only touch the lock-guarded inbox (`LockedValue`) and call `curl_multi_wakeup`, which is the one multi
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
        /// Transfers waiting for a free connection to their origin.
        var queued = 0
        /// Idle easy handles kept for reuse.
        var pooled = 0
        /// Easy handles created over the transport's life.
        var handlesCreated = 0
        /// Transfers completed (successfully or not) over the transport's life.
        var completed = 0
    }

    private let inbox = LockedValue(Inbox())
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
            // One wakeup per batch: if the inbox already held work, a wakeup is already on its way and the
            // loop drains everything at once.
            if inbox.submissions.isEmpty && inbox.cancellations.isEmpty {
                curl_multi_wakeup(multi)
            }
            inbox.submissions.append(submission)
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
                if inbox.submissions.isEmpty && inbox.cancellations.isEmpty {
                    curl_multi_wakeup(multi)
                }
                inbox.cancellations.append(id)
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
        var state = LoopState(multi: multi, configuration: configuration) { [self] counts in
            self.inbox.withLock { $0.counts = counts }
        }
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
            if state.drainCompleted() {
                continue  // new transfers were added: perform them before sleeping
            }
            let counts = state.counts
            self.inbox.withLock { $0.counts = counts }

            var ready: Int32 = 0
            // curl_multi_poll returns early when curl's own timers need it, and on curl_multi_wakeup.
            let pollResult = curl_multi_poll(multi, nil, 0, 1000, &ready)
            if pollResult != CURLM_OK {
                // Not expected (bad handle, out of memory); don't spin: back off a millisecond and go on.
                usleep(1000)
            }
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

/// A first-in, first-out queue of submissions waiting for a free connection to their origin.
private struct WaitQueue {
    private var incoming: [CurlMultiLoop.Submission] = []
    private var outgoing: [CurlMultiLoop.Submission] = []

    var isEmpty: Bool { incoming.isEmpty && outgoing.isEmpty }
    var count: Int { incoming.count + outgoing.count }

    mutating func append(_ submission: CurlMultiLoop.Submission) { incoming.append(submission) }

    mutating func popFirst() -> CurlMultiLoop.Submission? {
        if outgoing.isEmpty {
            outgoing = incoming.reversed()
            incoming.removeAll()
        }
        return outgoing.popLast()
    }

    /// Removes the submission with `id`, if it is waiting here.
    mutating func remove(id: UInt64) -> CurlMultiLoop.Submission? {
        if let index = incoming.firstIndex(where: { $0.id == id }) { return incoming.remove(at: index) }
        if let index = outgoing.firstIndex(where: { $0.id == id }) { return outgoing.remove(at: index) }
        return nil
    }

    mutating func removeAll() -> [CurlMultiLoop.Submission] {
        defer { incoming.removeAll(); outgoing.removeAll() }
        return outgoing.reversed() + incoming
    }
}

/// The state only the loop thread touches: the active transfers, the transfers waiting for a connection and
/// the pool of idle easy handles.
///
/// Transfers to one origin beyond its connection limit wait here rather than in libcurl's pending queue:
/// libcurl 7.88 moves a pending HTTP/1.1 transfer back only when another transfer runs afterwards
/// (`multi_ischanged`), so with every other transfer pending, one could sit idle until a timeout. Here the
/// next waiting transfer is added the moment one to its origin is removed, and libcurl never has to queue.
private struct LoopState {
    struct Active {
        let id: UInt64
        let origin: String
        let handle: CurlEasyHandle
        let continuation: CurlMultiLoop.Continuation
    }

    let multi: UnsafeMutableRawPointer
    let configuration: CurlConfiguration
    /// Publishes the counters; called before a finished transfer's continuation is resumed, so a caller that
    /// has its answer sees counters that include it.
    let publish: (CurlMultiLoop.Counts) -> Void
    var byID: [UInt64: Active] = [:]
    var idByHandle: [UnsafeMutableRawPointer: UInt64] = [:]
    var activePerOrigin: [String: Int] = [:]
    var waiting: [String: WaitQueue] = [:]
    var pool: [CurlEasyHandle] = []
    var counts = CurlMultiLoop.Counts()

    init(multi: UnsafeMutableRawPointer, configuration: CurlConfiguration, publish: @escaping (CurlMultiLoop.Counts) -> Void) {
        self.multi = multi
        self.configuration = configuration
        self.publish = publish
    }

    /// How many transfers may run at once to `origin`: one per connection for HTTP/1.1; for HTTP/2 over TLS,
    /// libcurl multiplexes up to 100 streams on each connection.
    func limit(for origin: String) -> Int {
        if configuration.http2OverTLS && origin.hasPrefix("https://") {
            return configuration.maxConnectionsPerHost * 100
        }
        return configuration.maxConnectionsPerHost
    }

    mutating func start(_ submission: CurlMultiLoop.Submission) {
        let origin = URLOrigin.of(submission.request.url)
        if activePerOrigin[origin, default: 0] >= limit(for: origin) {
            waiting[origin, default: WaitQueue()].append(submission)
            counts.queued += 1
            return
        }
        add(submission, origin: origin)
    }

    private mutating func add(_ submission: CurlMultiLoop.Submission, origin: String) {
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
        byID[submission.id] = Active(id: submission.id, origin: origin, handle: handle, continuation: submission.continuation)
        idByHandle[handle.raw] = submission.id
        activePerOrigin[origin, default: 0] += 1
        counts.active = byID.count
    }

    /// Adds waiting transfers to `origin` while it has free slots.
    private mutating func startWaiting(_ origin: String) {
        while activePerOrigin[origin, default: 0] < limit(for: origin), let next = waiting[origin]?.popFirst() {
            counts.queued -= 1
            if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
            add(next, origin: origin)
        }
    }

    mutating func cancel(_ id: UInt64) {
        if let active = remove(id) {
            active.continuation.resume(throwing: CancellationError())
            startWaiting(active.origin)
            return
        }
        for origin in Array(waiting.keys) {
            if let submission = waiting[origin]?.remove(id: id) {
                counts.queued -= 1
                if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
                publish(counts)
                submission.continuation.resume(throwing: CancellationError())
                return
            }
        }
        // Not found: it has already finished.
    }

    /// Resumes every finished transfer and starts transfers that were waiting for its connection.
    ///
    /// - Returns: Whether transfers were started (then `curl_multi_perform` should run again before polling).
    mutating func drainCompleted() -> Bool {
        var remaining: Int32 = 0
        var freed: [String] = []
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            guard let id = idByHandle[easy], let active = remove(id, recycling: false) else { continue }
            let outcome = active.handle.finish(result: result)
            recycle(active.handle)
            active.continuation.resume(with: outcome.mapError { $0 as any Error })
            freed.append(active.origin)
        }
        let queuedBefore = counts.queued
        for origin in freed { startWaiting(origin) }
        return counts.queued < queuedBefore
    }

    mutating func failActive(_ error: CurlError) {
        for id in Array(byID.keys) {
            if let active = remove(id) {
                active.continuation.resume(throwing: error)
                startWaiting(active.origin)
            }
        }
    }

    mutating func failAll(pending: [CurlMultiLoop.Submission]) {
        let error = CurlError(kind: .shutdown, message: "the transport was shut down before the transfer completed")
        var all = pending
        for origin in Array(waiting.keys) {
            all += waiting[origin]?.removeAll() ?? []
        }
        waiting.removeAll()
        counts.queued = 0
        for submission in all { submission.continuation.resume(throwing: error) }
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
        let left = activePerOrigin[active.origin, default: 1] - 1
        activePerOrigin[active.origin] = left > 0 ? left : nil
        counts.active = byID.count
        counts.completed += 1
        if recycling { recycle(active.handle) }
        publish(counts)
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

/// The origin libcurl counts connections by.
enum URLOrigin {
    /// `scheme://host:port` of a validated URL, lower-cased: what libcurl counts connections by.
    /// Runs for every request: a byte scan, and Unicode lower-casing only when an upper-case or non-ASCII byte needs it.
    static func of(_ url: String) -> String {
        var url = url
        return url.withUTF8 { bytes -> String in
            let count = bytes.count
            var schemeEnd = -1
            var index = 0
            while index + 2 < count {
                if bytes[index] == UInt8(ascii: ":") && bytes[index + 1] == UInt8(ascii: "/") && bytes[index + 2] == UInt8(ascii: "/") {
                    schemeEnd = index + 3
                    break
                }
                index += 1
            }
            var end = count
            if schemeEnd >= 0 {
                end = schemeEnd
                while end < count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") { end += 1 }
            }
            let origin = UnsafeBufferPointer(rebasing: bytes[..<end])
            let text = String(decoding: origin, as: UTF8.self)
            return origin.contains { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || $0 >= 0x80 } ? text.lowercased() : text
        }
    }
}
