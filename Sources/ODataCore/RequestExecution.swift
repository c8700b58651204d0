import Synchronization

/// The status of a ``RequestExecution``.
public enum ExecutionStatus: String, Sendable, Hashable {
    /// Created; `requestStarted` sees this status.
    case initialized
    /// Running: cache and server responses are delivered with this status.
    case inProgress
    /// Finished successfully.
    case completed
    /// Finished with a failure.
    case failed
}

/// One event of a request execution, in the order a store reports them.
public enum RequestEvent: Sendable {
    /// The execution started.
    case started
    /// The technical cache answered: `nil` means never cached (or evicted).
    case cacheResponse(ODataResponse?)
    /// The server answered successfully (a 304 arrives as the cached payload, marked revalidated).
    case serverResponse(ODataResponse)
    /// The request failed; the response is the server's when there was one.
    case failed(any Error, ODataResponse?)
    /// The execution ended; the response is the very object given to `serverResponse` or `failed`.
    case finished(ODataResponse?)
}

/// Receives the callbacks of a request execution. Every method has an empty default.
///
/// Active mode, successful read: `requestStarted` → `requestCacheResponse` → `requestServerResponse`
/// → `requestFinished`. See SPEC's tables for the other cases.
public protocol ODataRequestListener: Sendable {
    /// The execution started (status `initialized`).
    func requestStarted(_ execution: RequestExecution)
    /// The technical cache answered (status `inProgress`); `nil` means nothing cached.
    func requestCacheResponse(_ execution: RequestExecution, response: ODataResponse?)
    /// The server answered (status `inProgress`).
    func requestServerResponse(_ execution: RequestExecution, response: ODataResponse)
    /// The request failed (status `failed`).
    func requestFailed(_ execution: RequestExecution, error: any Error, response: ODataResponse?)
    /// The execution ended (status `completed` or `failed`).
    func requestFinished(_ execution: RequestExecution, response: ODataResponse?)
}

extension ODataRequestListener {
    /// Does nothing.
    public func requestStarted(_ execution: RequestExecution) {}
    /// Does nothing.
    public func requestCacheResponse(_ execution: RequestExecution, response: ODataResponse?) {}
    /// Does nothing.
    public func requestServerResponse(_ execution: RequestExecution, response: ODataResponse) {}
    /// Does nothing.
    public func requestFailed(_ execution: RequestExecution, error: any Error, response: ODataResponse?) {}
    /// Does nothing.
    public func requestFinished(_ execution: RequestExecution, response: ODataResponse?) {}
}

/// One execution of a request by a store: its status, its listener, and the same callbacks as an
/// async sequence of ``RequestEvent``s.
///
/// The store reports events; the execution keeps the status consistent with them, calls the
/// listener, and feeds ``events``. After `finished` nothing more is reported.
public final class RequestExecution: Sendable {
    private struct State {
        var status: ExecutionStatus = .initialized
        var isFinished = false
        var finalResponse: ODataResponse?
        var finalError: (any Error)?
        var waiters: [CheckedContinuation<ODataResponse?, any Error>] = []
        /// The task doing the work, until the end (``attach(_:)``).
        var task: Task<Void, Never>?
        var isCancelled = false
        /// The store asked the work to stop (``stop()``) before a task was attached.
        var isStopped = false
        /// The event stream, made when ``events`` is first asked for; until then the events are kept in
        /// `history`, so that a caller who only awaits ``result()`` pays for no stream.
        var stream: RequestEvents?
        var history = History()
    }

    /// The events reported before ``events`` was asked for, the first five inline (a store reports at most one of
    /// each kind): an execution whose events nobody reads allocates nothing for them.
    private struct History {
        private var first: (RequestEvent?, RequestEvent?, RequestEvent?, RequestEvent?, RequestEvent?)
        private var more: [RequestEvent] = []
        private var count = 0

        init() { first = (nil, nil, nil, nil, nil) }

        mutating func append(_ event: RequestEvent) {
            switch count {
            case 0: first.0 = event
            case 1: first.1 = event
            case 2: first.2 = event
            case 3: first.3 = event
            case 4: first.4 = event
            default: more.append(event)
            }
            count += 1
        }

        /// The events in order.
        var events: [RequestEvent] {
            [first.0, first.1, first.2, first.3, first.4].prefix(count).compactMap { $0 } + more
        }
    }

    /// The request being executed.
    public let request: ODataRequest

    private let listener: (any ODataRequestListener)?
    private let state = LockedValue(State())

    /// Creates an execution; stores create these.
    /// - Parameters:
    ///   - request: the request.
    ///   - listener: the listener to call, if any.
    public init(request: ODataRequest, listener: (any ODataRequestListener)?) {
        self.request = request
        self.listener = listener
    }

    /// The async sequence of this execution's events, from `started` on (whenever it is first asked for),
    /// ending after `finished`. Every access returns the same sequence; iterate it once.
    public var events: RequestEvents {
        state.withLock { state in
            if let stream = state.stream { return stream }
            let stream = RequestEvents(buffer: RequestEvents.Buffer(events: state.history.events, finished: state.isFinished))
            state.history = History()
            state.stream = stream
            return stream
        }
    }

    /// The current status.
    public var status: ExecutionStatus { state.withLock { $0.status } }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Reports one event: sets the status that goes with it, calls the listener, feeds ``events``.
    /// Events after `finished` are ignored.
    /// - Parameter event: the event.
    package func report(_ event: RequestEvent) {
        typealias Waiter = CheckedContinuation<ODataResponse?, any Error>
        // The end takes out the waiters and their outcome in the same critical section as the status.
        let (proceed, stream, waiters, outcome): (Bool, RequestEvents?, [Waiter], Result<ODataResponse?, any Error>?) = state.withLock { state in
            guard !state.isFinished else { return (false, nil, [], nil) }
            var waiters: [Waiter] = []
            var outcome: Result<ODataResponse?, any Error>?
            switch event {
            case .started: state.status = .initialized
            case .cacheResponse, .serverResponse: state.status = .inProgress
            case .failed(let error, _):
                state.status = .failed
                state.finalError = error
            case .finished(let response):
                if state.status != .failed { state.status = .completed }
                state.isFinished = true
                state.finalResponse = response
                state.task = nil
                if !state.waiters.isEmpty {
                    swap(&waiters, &state.waiters)
                    outcome = state.finalError.map { .failure($0) } ?? .success(response)
                }
            }
            if state.stream == nil { state.history.append(event) }
            return (true, state.stream, waiters, outcome)
        }
        guard proceed else { return }
        switch event {
        case .started: listener?.requestStarted(self)
        case .cacheResponse(let response): listener?.requestCacheResponse(self, response: response)
        case .serverResponse(let response): listener?.requestServerResponse(self, response: response)
        case .failed(let error, let response): listener?.requestFailed(self, error: error, response: response)
        case .finished(let response): listener?.requestFinished(self, response: response)
        }
        stream?.buffer.yield(event)
        guard case .finished = event else { return }
        stream?.buffer.finish()
        if let outcome {
            for waiter in waiters { waiter.resume(with: outcome) }
        }
    }

    /// Hands the execution the task doing its work, so that ``cancel()`` and ``stop()`` reach it; stores call this
    /// once, after starting the task. A task attached after either was asked for is cancelled at once.
    /// - Parameter task: the task.
    package func attach(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            if state.isCancelled || state.isStopped { return true }
            if !state.isFinished { state.task = task }
            return false
        }
        if cancelNow { task.cancel() }
    }

    /// Stops the work without marking the execution cancelled (``isCancelled`` stays `false`): for a store that
    /// closes, whose running executions then end with its own failure. Nothing happens after the end.
    package func stop() {
        let task = state.withLock { state -> Task<Void, Never>? in
            guard !state.isFinished else { return nil }
            state.isStopped = true
            return state.task
        }
        task?.cancel()
    }

    /// Asks the store to stop the execution; it then ends with a failure (`CancellationError`).
    public func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            guard !state.isCancelled, !state.isFinished else { return nil }
            state.isCancelled = true
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }

    /// Waits for the end of the execution.
    /// - Returns: the final response (the server's, or the cache's in passive mode; `nil` when
    ///   nothing was cached).
    /// - Throws: the error reported with `failed`.
    public func result() async throws -> ODataResponse? {
        // A finished execution answers without suspending.
        let finished: Result<ODataResponse?, any Error>? = state.withLock { state in
            guard state.isFinished else { return nil }
            if let error = state.finalError { return .failure(error) }
            return .success(state.finalResponse)
        }
        if let finished { return try finished.get() }
        return try await withCheckedThrowingContinuation { waiter in
            let outcome: Result<ODataResponse?, any Error>? = state.withLock { state in
                guard state.isFinished else {
                    state.waiters.append(waiter)
                    return nil
                }
                if let error = state.finalError { return .failure(error) }
                return .success(state.finalResponse)
            }
            if let outcome { waiter.resume(with: outcome) }
        }
    }
}
