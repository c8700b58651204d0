/// The events of one ``RequestExecution`` as an async sequence: every event in order, ending after
/// `finished`. Iterate it once: it has one consumer (a second iterator running at the same time ends at once).
///
/// It does what `AsyncStream` would, specialized for ``RequestEvent``: events already reported are read
/// without suspending, and no generic machinery runs per event (measured: `AsyncStream` spent a quarter
/// of a passive read's event delivery looking up its generic metadata). Cancelling the iterating task ends
/// the sequence (`next()` returns `nil`).
public struct RequestEvents: AsyncSequence, Sendable {
    /// The sequence's element.
    public typealias Element = RequestEvent
    /// The sequence never throws.
    public typealias Failure = Never

    let buffer: Buffer

    /// Creates the iterator.
    /// - Returns: the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(buffer: buffer)
    }

    /// Reads the events one at a time.
    public struct Iterator: AsyncIteratorProtocol {
        let buffer: Buffer

        /// The next event, suspending until it is reported; `nil` after `finished` or when the task is cancelled.
        /// - Returns: the event, or `nil`.
        public mutating func next() async -> RequestEvent? {
            await buffer.next()
        }

        /// The next event, as ``next()``.
        /// - Parameter actor: ignored: the iterator holds no isolated state.
        /// - Returns: the event, or `nil`.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> RequestEvent? {
            await buffer.next()
        }
    }

    /// The events not read yet, whether more will come, and the reader waiting for one.
    final class Buffer: Sendable {
        private struct State {
            var events: [RequestEvent] = []
            var head = 0
            var finished = false
            var waiter: (id: UInt64, continuation: UnsafeContinuation<RequestEvent?, Never>)?
            var nextID: UInt64 = 0
        }

        private let state = LockedValue(State())

        init(events: [RequestEvent], finished: Bool) {
            state.withLock { state in
                state.events = events
                state.finished = finished
            }
        }

        /// Adds an event, or hands it to the waiting reader.
        func yield(_ event: RequestEvent) {
            let waiter: UnsafeContinuation<RequestEvent?, Never>? = state.withLock { state in
                guard !state.finished else { return nil }
                if let waiter = state.waiter {
                    state.waiter = nil
                    return waiter.continuation
                }
                state.events.append(event)
                return nil
            }
            waiter?.resume(returning: event)
        }

        /// No more events: a waiting reader gets `nil` once the buffered ones are read.
        func finish() {
            let waiter: UnsafeContinuation<RequestEvent?, Never>? = state.withLock { state in
                state.finished = true
                defer { state.waiter = nil }
                return state.waiter?.continuation
            }
            waiter?.resume(returning: nil)
        }

        private enum Step {
            case event(RequestEvent)
            case end
            case wait
        }

        private func take(_ state: inout State) -> Step {
            if state.head < state.events.count {
                let event = state.events[state.head]
                state.head += 1
                if state.head == state.events.count {
                    state.events.removeAll(keepingCapacity: true)
                    state.head = 0
                }
                return .event(event)
            }
            return state.finished ? .end : .wait
        }

        func next() async -> RequestEvent? {
            switch state.withLock({ take(&$0) }) {
            case .event(let event): return event
            case .end: return nil
            case .wait: break
            }
            let id = state.withLock { state -> UInt64 in
                state.nextID &+= 1
                return state.nextID
            }
            return await withTaskCancellationHandler {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<RequestEvent?, Never>) in
                    let ready: RequestEvent?? = state.withLock { state in
                        switch take(&state) {
                        case .event(let event): return .some(event)
                        case .end: return .some(nil)
                        case .wait:
                            // One reader at a time; a cancelled or second one ends at once.
                            guard state.waiter == nil, !Task.isCancelled else { return .some(nil) }
                            state.waiter = (id, continuation)
                            return .none
                        }
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                let waiter: UnsafeContinuation<RequestEvent?, Never>? = state.withLock { state in
                    guard let waiter = state.waiter, waiter.id == id else { return nil }
                    state.waiter = nil
                    return waiter.continuation
                }
                waiter?.resume(returning: nil)
            }
        }
    }
}
