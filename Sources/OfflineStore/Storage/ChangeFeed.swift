import Foundation
import ODataCore

/// What one committed write transaction changed: the entity sets it wrote rows of (``LocalQuery/requestQueueSet``
/// and ``LocalQuery/errorArchiveSet`` for the queue and the ErrorArchive), or everything.
struct CommittedChange: Sendable, Hashable {
    /// The sets written.
    var sets: Set<String> = []
    /// Every set may have changed (the entities were wiped).
    var all = false

    var isEmpty: Bool { sets.isEmpty && !all }

    /// Whether the change can touch what reads `read` (`nil`: everything).
    func touches(_ read: Set<String>?) -> Bool {
        guard let read, !all else { return !isEmpty }
        return !sets.isDisjoint(with: read)
    }
}

/// The observers of one open store (``OfflineODataProvider/observe(_:)``): each names the sets its query reads and is
/// signalled after every commit that wrote one of them (``EntityStore/writeNow(_:)`` publishes, after the commit, on
/// the writing thread: a signal only schedules the observer's next read). Closing the store ends every observer.
final class ChangeFeed: Sendable {
    /// One observer: the sets it reads (`nil`: all), what a matching commit calls, what closing the store calls.
    struct Observer: Sendable {
        var sets: Set<String>?
        var signal: @Sendable () -> Void
        var end: @Sendable () -> Void
    }

    private let state = LockedValue<(next: Int, observers: [Int: Observer], closed: Bool)>((0, [:], false))

    /// Adds an observer. - Returns: its ID, or `nil` when the store is closed.
    func add(_ observer: Observer) -> Int? {
        state.withLock { state in
            guard !state.closed else { return nil }
            state.next += 1
            state.observers[state.next] = observer
            return state.next
        }
    }

    /// Removes an observer (its sequence ended or was cancelled).
    func remove(_ id: Int) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }

    /// How many observers there are.
    var count: Int { state.withLock { $0.observers.count } }

    /// Signals the observers `change` can concern.
    func publish(_ change: CommittedChange) {
        guard !change.isEmpty else { return }
        let signals = state.withLock { state in state.observers.values.filter { change.touches($0.sets) }.map(\.signal) }
        for signal in signals { signal() }
    }

    /// The store closes: every observer ends, and none is added any more.
    func close() {
        let ends = state.withLock { state -> [@Sendable () -> Void] in
            state.closed = true
            defer { state.observers.removeAll() }
            return state.observers.values.map(\.end)
        }
        for end in ends { end() }
    }
}
