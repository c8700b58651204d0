public import Foundation
import ODataCore
public import ODataSession

/// A ``ODataSession/RetryClock`` for tests: time moves only when the test says so, so a test of retries,
/// `Retry-After` or the offline synchronizer never sleeps.
///
/// A task that sleeps on it waits until ``advance(by:)`` moves the time past its deadline (or it is cancelled).
/// ``nextSleep()`` waits for the next sleep any task begins and tells how long it asked for, in the order they
/// began:
///
/// ```swift
/// let clock = TestClock()
/// parameters.clock = clock
/// async let result = provider.upload()
/// let wait = await clock.nextSleep()       // the upload waits before a re-send
/// #expect(wait == .seconds(2))             // what Retry-After asked for
/// clock.advance(by: wait)
/// ```
///
/// A clock made with `advancesBySleeping: true` needs no one to move it: each sleep moves the time by what it asked
/// for and returns at once (``sleeps`` still lists them) — for tests that only check the waits.
public final class TestClock: RetryClock, Sendable {
    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var sleepers: [UInt64: Sleeper] = [:]
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
        var requested: [Duration] = []
        var told = 0
        var watchers: [CheckedContinuation<Duration, Never>] = []
    }

    private let state: LockedValue<State>
    private let advancesBySleeping: Bool

    /// Creates a clock.
    ///
    /// - Parameters:
    ///   - now: The time it starts at; the default is 2027-01-15 08:00:00 UTC.
    ///   - advancesBySleeping: Whether a sleep moves the time by its duration and returns at once; the default
    ///     `false` waits for ``advance(by:)``.
    public init(now: Date = Date(timeIntervalSince1970: 1_800_000_000), advancesBySleeping: Bool = false) {
        state = LockedValue(State(now: now))
        self.advancesBySleeping = advancesBySleeping
    }

    /// The clock's current time.
    public var now: Date { state.withLock { $0.now } }

    /// Every wait asked for so far, in the order the sleeps began.
    public var sleeps: [Duration] { state.withLock { $0.requested } }

    /// How many tasks sleep on the clock now.
    public var sleeping: Int { state.withLock { $0.sleepers.count } }

    /// Waits until ``advance(by:)`` moves the time `duration` past now.
    ///
    /// - Parameter duration: How long to wait.
    /// - Throws: `CancellationError` when the calling task is cancelled.
    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resume, watcher) = state.withLock { state -> (Result<Void, any Error>?, (CheckedContinuation<Duration, Never>, Duration)?) in
                    state.requested.append(duration)
                    var watcher: (CheckedContinuation<Duration, Never>, Duration)?
                    if !state.watchers.isEmpty {
                        watcher = (state.watchers.removeFirst(), duration)
                        state.told += 1
                    }
                    if state.cancelled.remove(id) != nil { return (.failure(CancellationError()), watcher) }
                    if advancesBySleeping {
                        state.now = state.now.addingTimeInterval(duration.timeInterval)
                        return (.success(()), watcher)
                    }
                    let deadline = state.now.addingTimeInterval(duration.timeInterval)
                    if deadline <= state.now { return (.success(()), watcher) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (nil, watcher)
                }
                watcher.map { $0.0.resume(returning: $0.1) }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time forward and wakes every task whose wait has ended.
    ///
    /// - Parameter duration: How far.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.addingTimeInterval(duration.timeInterval)
            let now = state.now
            let ids = state.sleepers.filter { $0.value.deadline <= now }.keys
            return ids.compactMap { state.sleepers.removeValue(forKey: $0) }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Waits for the next sleep a task begins on the clock (one already begun and not yet told counts), and
    /// returns how long it asked for.
    ///
    /// - Returns: The wait asked for.
    public func nextSleep() async -> Duration {
        await withCheckedContinuation { (continuation: CheckedContinuation<Duration, Never>) in
            let ready = state.withLock { state -> Duration? in
                if state.told < state.requested.count {
                    state.told += 1
                    return state.requested[state.told - 1]
                }
                state.watchers.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

}
