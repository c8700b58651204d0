import Foundation
import LMDB
import Synchronization

/// Eviction: least recently used first, in bounded steps (issue 31).
///
/// A write that would exceed the budget evicts, in its own transaction, the entries it needs to fit under
/// the limit and at most `evictionBatch` more towards the low-water mark; the rest goes in the background,
/// one transaction of at most `evictionBatch` entries at a time. Before, the whole run down to the low-water
/// mark was on the caller's path: a fifth of the budget in one transaction, 200k entries and a 4 s `store`
/// at 1M entries.
extension OpenCache {
    /// The most entries one transaction evicts beyond those its own write needs to fit under the limit: a
    /// write that leaves the total above the low-water mark after this many hands the rest to the
    /// background, which evicts in transactions of this many entries (see `scheduleEviction`). So no caller
    /// waits behind an eviction run that grows with the cache; the order (least recently used first) and
    /// the end state (the low-water mark) are the same.
    static let evictionBatch = 64

    /// Evicts least-recently-used entries until `needed` more bytes fit under `target`, or, past `limit`
    /// (which it always goes below), after `maxCount` entries. Each victim is the first record of the LRU
    /// index (a B-tree keyed by tick): O(log n) to find, whatever the size of the cache.
    func evict(toFit needed: Int, target: Int, limit: Int, maxCount: Int, total: inout Int, _ txn: LMDBTransaction) throws -> (count: Int, bytes: Int) {
        var count = 0
        var bytes = 0
        while total + needed > target, count < maxCount || total + needed > limit {
            let oldest = try txn.withCursor(in: lru) { cursor in try cursor.first() }
            guard let oldest else { break }
            let size = try removeEntry(oldest.value, txn)
            // A dangling LRU record (no info) is removed too.
            try txn.removeValue(forKey: oldest.key, in: lru)
            total -= size
            bytes += size
            count += 1
        }
        return (count, bytes)
    }

    /// One background step: the pending uses first (the order must see them), then at most
    /// `evictionBatch` entries towards `target`. Returns what it evicted and whether more is owed.
    func evictBatch(target: Int, _ txn: LMDBTransaction) throws -> (count: Int, bytes: Int, owed: Bool) {
        try flushTouches(txn)
        var total = try readBytes(txn)
        guard total > target else { return (0, 0, false) }
        let evicted = try evict(toFit: 0, target: target, limit: .max, maxCount: Self.evictionBatch, total: &total, txn)
        try writeBytes(total, txn)
        return (evicted.count, evicted.bytes, total > target && evicted.count > 0)
    }

    /// Goes on evicting down to `target` in the background, one bounded transaction at a time, so that a
    /// write waits at most for one step; a step that fails ends the run (counted), and the next write that
    /// exceeds the limit starts another. Nothing is scheduled while a run is under way.
    func scheduleEviction(target: Int) {
        guard evictionScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        DispatchQueue.global(qos: .utility).async { [weak self] in
            guard let self else { return }
            defer { self.evictionScheduled.store(false, ordering: .releasing) }
            while true {
                do {
                    let step = try self.environment.write { txn in try self.evictBatch(target: target, txn) }
                    if step.count > 0 { self.onEviction(step.count, step.bytes) }
                    guard step.owed else { return }
                } catch {
                    self.onStorageFailure(.eviction, error)
                    return
                }
            }
        }
    }
}
