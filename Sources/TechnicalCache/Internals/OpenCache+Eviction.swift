import Foundation
import LMDB

/// Eviction: least recently used first, in bounded steps (issue 31).
///
/// A write that would exceed the budget evicts, in its own transaction, the entries it needs to fit under
/// the limit and at most `evictionBatch` more towards the low-water mark; while the mark is not reached
/// (`evictionOwed`), each following write evicts at most `evictionBatch` more. Before, the whole run down to
/// the low-water mark was in the write that crossed the limit: a fifth of the budget in one transaction,
/// about 120k entries and a 4 s `store` at 1M entries.
extension OpenCache {
    /// The most entries one write evicts beyond those it needs to fit under the limit: a write that leaves
    /// the total above the low-water mark after this many leaves the rest to the writes that follow, this
    /// many each. So no caller waits for an eviction run that grows with the cache; the order (least
    /// recently used first) and the end state (the low-water mark) are the same.
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
}
