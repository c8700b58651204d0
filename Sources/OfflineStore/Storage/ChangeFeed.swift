import Foundation
import ODataCore
import Synchronization

/// What one committed write transaction changed: the entity sets it wrote rows of (``LocalQuery/requestQueueSet``
/// and ``LocalQuery/errorArchiveSet`` for the queue and the ErrorArchive), the keys of the entity rows it wrote while
/// they are few, or everything.
struct CommittedChange: Sendable, Hashable {
    /// The most keys of one set a change lists; a commit that writes more rows of a set (a download's page) names
    /// the set only, and an observer of it runs its query again.
    static let keyLimit = 64

    /// The sets written.
    var sets: Set<String> = []
    /// The keys of the entity rows written, by set, for the sets whose rows are known (at most ``keyLimit`` each):
    /// a set in ``sets`` and not here had rows written that are not listed.
    private(set) var keys: [String: Set<String>] = [:]
    /// Every set may have changed (the entities were wiped).
    var all = false

    var isEmpty: Bool { sets.isEmpty && !all }

    /// Notes the row of `key` in `set` written.
    mutating func wrote(set: String, key: String) {
        if sets.insert(set).inserted {
            keys[set] = [key]
        } else if keys[set] != nil {
            keys[set]!.insert(key)
            if keys[set]!.count > Self.keyLimit { keys[set] = nil }
        }
    }

    /// Notes rows of `set` written that are not listed (the queue, the ErrorArchive, a table made or its catalog row changed).
    mutating func wrote(set: String) {
        sets.insert(set)
        keys[set] = nil
    }

    /// The keys of the rows of `set` written, when they are known (`[]`: none of its rows).
    func keys(of set: String) -> Set<String>? {
        guard !all else { return nil }
        guard sets.contains(set) else { return [] }
        return keys[set]
    }

    /// Whether the change can touch what reads `read` (`nil`: everything).
    func touches(_ read: Set<String>?) -> Bool {
        guard let read, !all else { return !isEmpty }
        return !sets.isDisjoint(with: read)
    }
}

/// The observers of one open store (``OfflineODataProvider/observe(_:)``): each names the sets its query reads and is
/// signalled with the change after every commit that wrote one of them (``EntityStore/write(_:)`` publishes,
/// after the commit, on the store's writer thread: a signal applies a few rows to a ``LiveAnswer`` or schedules the
/// observer's next run of its query, and never waits for a query). Closing the store ends every observer.
final class ChangeFeed: Sendable {
    /// One observer: the sets it reads (`nil`: all), what a matching commit calls, what closing the store calls.
    struct Observer: Sendable {
        var sets: Set<String>?
        var signal: @Sendable (CommittedChange) -> Void
        var end: @Sendable () -> Void
    }

    private let state = LockedValue<(next: Int, observers: [Int: Observer], closed: Bool)>((0, [:], false))
    /// The times an observer ran its query again whole since the store opened (not counting the rows of a
    /// ``LiveAnswer`` applied): what a test proves row-by-row answers with.
    let queriesRunAgain = LockedValue(0)

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

    /// When the last change was published (`DispatchTime`'s uptime in nanoseconds; 0: none yet): the commit's time, as
    /// close to it as the store can say (``OfflineODataProvider/lastCommitUptimeNanoseconds``).
    var lastPublished: UInt64 { published.load(ordering: .relaxed) }
    private let published = Atomic<UInt64>(0)

    /// Signals the observers `change` can concern.
    func publish(_ change: CommittedChange) {
        guard !change.isEmpty else { return }
        published.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        let signals = state.withLock { state in state.observers.values.filter { change.touches($0.sets) }.map(\.signal) }
        for signal in signals { signal(change) }
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
