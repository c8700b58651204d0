import ODataCore

/// A value that is expensive to get (a CSRF token, a bearer token) and shared by every concurrent caller:
/// at most one fetch runs at a time, and a value rejected by the back end is replaced once, however many
/// requests met the rejection together.
///
/// A caller that was rejected passes the value it sent to ``replacing(_:fetch:)``: when another caller has
/// already replaced it, the newer value is returned without a fetch. ``reset()`` forgets the value (a user
/// switch, a closed store); a fetch still running then delivers to its waiters but is not kept.
final class SingleFlight<Value: Sendable & Equatable>: Sendable {
    private struct State {
        var value: Value?
        var fetch: Task<Value, any Error>?
        /// Bumped by `reset()`, so that a fetch started before it is not kept.
        var epoch = 0
    }

    private let state = LockedValue(State())

    /// The value, fetched (or joined) when none is held.
    func value(fetch: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await obtain(rejected: nil, fetch: fetch)
    }

    /// A replacement for `rejected`: the held value when it already differs, otherwise a fresh one (one
    /// fetch for every caller that was rejected with the same value).
    func replacing(_ rejected: Value, fetch: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await obtain(rejected: rejected, fetch: fetch)
    }

    /// Forgets the held value.
    func reset() {
        state.withLock { state in
            state.value = nil
            state.fetch = nil
            state.epoch &+= 1
        }
    }

    private enum Step { case have(Value), wait(Task<Value, any Error>) }

    private func obtain(rejected: Value?, fetch: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let step: Step = state.withLock { state in
            if let value = state.value, rejected == nil || value != rejected { return .have(value) }
            if let running = state.fetch { return .wait(running) }
            state.value = nil
            let epoch = state.epoch
            let task = Task<Value, any Error> { [weak self] in
                do {
                    let value = try await fetch()
                    self?.state.withLock { state in
                        guard state.epoch == epoch else { return }
                        state.value = value
                        state.fetch = nil
                    }
                    return value
                } catch {
                    self?.state.withLock { state in
                        if state.epoch == epoch { state.fetch = nil }
                    }
                    throw error
                }
            }
            state.fetch = task
            return .wait(task)
        }
        switch step {
        case .have(let value):
            return value
        case .wait(let task):
            // The fetch is shared: a waiter's cancellation never cancels it (it is not a child task).
            return try await task.value
        }
    }
}
