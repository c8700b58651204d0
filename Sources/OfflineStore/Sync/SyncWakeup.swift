import ODataCore
import ODataSession

/// What wakes the synchronizer: a timer on its clock, a local change, ``OfflineSynchronizer/syncNow()``, or the end.
final class Wakeup: Sendable {
    enum Trigger: Sendable, Equatable {
        case timer, change, now, cancelled
    }

    private struct State {
        var pending: Trigger?
        var waiter: CheckedContinuation<Trigger, Never>?
        var generation = 0
    }

    private let state = LockedValue(State())

    /// Wakes the waiter, or the next one to wait (a request for a sync now outranks a change).
    func signal(_ trigger: Trigger, generation: Int? = nil) {
        let waiter = state.withLock { state -> CheckedContinuation<Trigger, Never>? in
            if let generation, generation != state.generation { return nil }  // a timer of an earlier wait
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if trigger != .timer, state.pending != .now && state.pending != .cancelled { state.pending = trigger }
            return nil
        }
        waiter?.resume(returning: trigger)
    }

    /// Waits for a signal, or `duration` on `clock`.
    func wait(for duration: Duration, on clock: any RetryClock) async -> Trigger {
        let generation = state.withLock { state -> Int in
            state.generation += 1
            return state.generation
        }
        let timer = Task { [weak self] in
            do { try await clock.sleep(for: duration) } catch { return }
            self?.signal(.timer, generation: generation)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Trigger, Never>) in
                let ready = state.withLock { state -> Trigger? in
                    if Task.isCancelled { return .cancelled }
                    if let pending = state.pending {
                        state.pending = nil
                        return pending
                    }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            signal(.cancelled)
        }
    }
}
