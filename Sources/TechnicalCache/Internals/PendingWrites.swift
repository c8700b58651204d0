import Dispatch
import Foundation
import ODataCore

/// Entries handed to the cache's writer and not yet committed (``ResponseCache/storeBehind(_:for:keepingNewer:completion:)``):
/// held here, in memory, from the hand-over to the commit, so that a lookup of their URL answers them (a reader reads
/// its own write); written in groups, one transaction each, on a queue of their own.
///
/// Each URL has at most one pending entry: a later one replaces it (the earlier one is then not stored), unless the
/// later one keeps newer entries and the pending one was sent later. A direct write or removal of a URL cancels its
/// pending entry (``cancel(_:)``); a group checks, inside its transaction, that each entry it writes is still its
/// URL's pending one, so that an entry replaced or cancelled meanwhile is never written over what replaced it.
final class PendingWrites: Sendable {
    /// What is told of one handed-over entry when its fate is known: stored (true), not stored (false: superseded,
    /// cancelled, or refused by the cache's rules), or the write failed.
    typealias Completion = @Sendable (Result<Bool, CacheError>) -> Void

    struct Item: Sendable {
        let id: UInt64
        let entry: CacheEntry
        let keepingNewer: Bool
        let completion: Completion
        var bytes: Int { Self.bytes(of: entry) }
        /// What an entry counts against ``PendingWrites/byteLimit``: its payload plus a small overhead.
        static func bytes(of entry: CacheEntry) -> Int { entry.payload.count + 256 }
    }

    private struct State {
        var items: [String: Item] = [:]
        /// URLs whose pending entry waits for a group, in hand-over order.
        var queue: [String] = []
        var queued: Set<String> = []
        var nextID: UInt64 = 1
        var bytes = 0
        var draining = false
        /// Callers of ``flushed()`` waiting for the groups to end.
        var waitingForDrain: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedValue(State())
    /// The queue the groups are written on (a thread of their own, never a cooperative one).
    let queue = DispatchQueue(label: "ODataStores.TechnicalCache.pendingWrites")
    /// The bytes held (payloads plus a small overhead each) beyond which a hand-over is shed (not held, not stored).
    let byteLimit: Int
    /// The most entries one group writes.
    static let groupLimit = 256

    init(byteLimit: Int) { self.byteLimit = byteLimit }

    /// The pending entry of `url`, if any.
    func entry(for url: String) -> CacheEntry? {
        state.withLock { $0.items[url]?.entry }
    }

    /// Whether `id` is still the pending entry of `url` (checked inside a group's transaction).
    func isCurrent(_ url: String, id: UInt64) -> Bool {
        state.withLock { $0.items[url]?.id == id }
    }

    /// The number of entries and bytes held (for tests and statistics).
    var held: (entries: Int, bytes: Int) { state.withLock { ($0.items.count, $0.bytes) } }

    /// Hands `entry` over, unless the held bytes would go above ``byteLimit`` (a writer slower than the answers
    /// arrive): then it is shed, not held (an entry alone, and one that replaces its URL's pending entry, are always
    /// taken). Returns whether it was taken, whether the caller must start the writer (none runs), and the completion
    /// of an entry this one superseded (or of this one, when a later answer is pending), to be told `false` outside
    /// the lock.
    func add(_ entry: CacheEntry, for url: String, keepingNewer: Bool, completion: @escaping Completion)
        -> (taken: Bool, startWriter: Bool, superseded: Completion?) {
        state.withLock { state in
            if keepingNewer, let pending = state.items[url], pending.entry.storedAt > entry.storedAt {
                return (true, false, completion)  // an answer to a later request is pending
            }
            // A URL's newer answer always replaces its pending one (shed, the older one would be written after the
            // caller saw the newer); a URL without one is shed when the writer is too far behind.
            if state.items[url] == nil, state.bytes > 0, state.bytes + Item.bytes(of: entry) > byteLimit { return (false, false, nil) }
            let id = state.nextID
            state.nextID += 1
            let item = Item(id: id, entry: entry, keepingNewer: keepingNewer, completion: completion)
            let replaced = state.items.updateValue(item, forKey: url)
            state.bytes += item.bytes - (replaced?.bytes ?? 0)
            if state.queued.insert(url).inserted { state.queue.append(url) }
            let start = !state.draining
            state.draining = true
            return (true, start, replaced?.completion)
        }
    }

    /// Replaces the pending entry of `url` by `change(entry)` (a 304's refresh of it), under a new ID so that a group
    /// that took the old one writes this one instead; its completion stays. Returns the new entry, or nil when none is
    /// pending or `change` declines.
    func update(_ url: String, _ change: (CacheEntry) -> CacheEntry?) -> CacheEntry? {
        state.withLock { state in
            guard let item = state.items[url], let changed = change(item.entry) else { return nil }
            let replacement = Item(id: state.nextID, entry: changed, keepingNewer: item.keepingNewer, completion: item.completion)
            state.nextID += 1
            state.items[url] = replacement
            state.bytes += replacement.bytes - item.bytes
            if state.queued.insert(url).inserted { state.queue.append(url) }
            return changed
        }
    }

    /// Drops the pending entry of `url` (a direct write or removal of it follows); its completion is told `false`.
    func cancel(_ url: String) {
        let item = state.withLock { state -> Item? in
            guard let item = state.items.removeValue(forKey: url) else { return nil }
            state.bytes -= item.bytes
            return item
        }
        item?.completion(.success(false))
    }

    /// The next group: up to ``groupLimit`` URLs with their pending entries, in hand-over order; nil when none waits
    /// (the writer then stops, and the next hand-over starts it again).
    func nextGroup() -> [(url: String, item: Item)]? {
        let (group, drained) = state.withLock { state -> ([(url: String, item: Item)], [CheckedContinuation<Void, Never>]) in
            var group: [(url: String, item: Item)] = []
            while group.count < Self.groupLimit, !state.queue.isEmpty {
                let url = state.queue.removeFirst()
                state.queued.remove(url)
                if let item = state.items[url] { group.append((url, item)) }
            }
            if group.isEmpty {
                state.draining = false
                defer { state.waitingForDrain = [] }
                return (group, state.waitingForDrain)
            }
            return (group, [])
        }
        for waiter in drained { waiter.resume() }
        return group.isEmpty ? nil : group
    }

    /// A group ended (committed, or failed): each of its entries that is still its URL's pending one leaves the memory.
    func finished(_ group: [(url: String, item: Item)]) {
        state.withLock { state in
            for (url, item) in group where state.items[url]?.id == item.id {
                state.items[url] = nil
                state.bytes -= item.bytes
            }
        }
    }

    /// Waits until every entry handed over so far is written (or failed).
    func flushed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.draining else { return true }
                state.waitingForDrain.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

}
