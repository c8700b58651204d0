import Dispatch
import Foundation
import LMDB
import ODataCore

/// Writes the caller does not wait for: an online read's answer reaches its caller before its entry commits.
extension ResponseCache {
    /// Hands `entry` for `url` to the cache's writer and returns before it is written: the writer commits the entries
    /// handed over in groups (up to 256 per transaction), on a thread of its own. Until its commit the entry answers
    /// lookups of `url` from memory (``entry(for:)`` returns it: a reader reads its own write); a later hand-over for
    /// the same URL replaces it, and a direct ``store(_:for:keepingNewer:)`` or ``removeEntry(for:)`` of the URL cancels
    /// it. The rules of ``store(_:for:keepingNewer:)`` apply when it is written (`no-store`, the largest entry, the
    /// budget and its evictions, `keepingNewer`).
    ///
    /// **Durability**: an entry is as durable as any other once its group committed (``CacheDurability``). A process
    /// that ends before that — killed, or crashed — loses the entries not yet committed and nothing else: the cache
    /// holds what it held before them. ``close()`` writes them first; ``flushPendingWrites()`` waits for them.
    ///
    /// The call waits only when more than 32 MiB of handed-over entries wait for their commit (a writer slower than
    /// the answers arrive), until a group made room.
    ///
    /// - Parameters:
    ///   - entry: The response to keep (credentials already dropped from its headers).
    ///   - url: The literal request URL.
    ///   - keepingNewer: As for ``store(_:for:keepingNewer:)``: an entry with a later ``CacheEntry/storedAt``, pending or
    ///     stored, is kept.
    ///   - completion: Told once, on the writer's thread, whether the entry was stored, or the write's error (counted
    ///     in ``CacheStatistics/storageFailures`` like any write's). Keep it short.
    /// - Throws: ``CacheError/notOpen``; ``CacheError/invalidEntry`` for a status outside 100…999 (nothing is handed over).
    public func storeBehind(_ entry: CacheEntry, for url: String, keepingNewer: Bool = false,
                            completion: @escaping @Sendable (Result<Bool, CacheError>) -> Void = { _ in }) async throws(CacheError) {
        guard (100...999).contains(entry.status) else {
            throw CacheError.invalidEntry.with(detail: "status \(entry.status) is not an HTTP status code")
        }
        let cache = try openCache()
        let handed = cache.pending.add(entry, for: url, keepingNewer: keepingNewer, completion: completion)
        if let superseded = handed.superseded {
            counters.withLock { $0.supersededWrites += 1 }
            superseded(.success(false))
        }
        if handed.startWriter { cache.pending.queue.async { self.writePending(cache) } }
        if handed.full { await cache.pending.roomMade() }
    }

    /// Waits until every entry handed to the writer so far (``storeBehind(_:for:keepingNewer:completion:)``) is
    /// committed or failed. Returns at once when none waits or the cache is closed.
    public func flushPendingWrites() async {
        guard let cache = try? openCache() else { return }  // closed: `close()` wrote them
        await cache.pending.flushed()
    }

    /// The entries handed to the writer and not yet committed, and their bytes (payloads plus 256 each).
    public var pendingWrites: (entries: Int, bytes: Int) {
        (try? openCache())?.pending.held ?? (0, 0)
    }

    /// The writer: group after group until none waits. Runs on the pending writes' queue (or, from ``close()``, on the
    /// closing thread, after that queue's last block).
    func writePending(_ cache: OpenCache) {
        while let group = cache.pending.nextGroup() {
            var prepared: [(url: String, id: UInt64, store: PreparedStore?, completion: PendingWrites.Completion)] = []
            for (url, item) in group {
                let condition: StoreCondition = item.keepingNewer ? .storedNoLaterThan(item.entry.storedAt) : .always
                do {
                    prepared.append((url, item.id, try prepareStore(item.entry, url: url, condition: condition, in: cache), item.completion))
                } catch {
                    prepared.append((url, item.id, nil, item.completion))
                    item.completion(.failure(Self.storageError(error)))
                }
            }
            let ready = prepared.filter { $0.store != nil }
            do {
                let outcomes = try runWrite(cache, .write) { txn -> [StoreOutcome?] in
                    try ready.map { item in
                        // Replaced or cancelled since the group was taken: what replaced it is written instead.
                        guard cache.pending.isCurrent(item.url, id: item.id) else { return nil }
                        return try self.applyStore(item.store!, txn)
                    }
                }
                for (item, outcome) in zip(ready, outcomes) {
                    guard let outcome else { continue }  // its completion was told when it was replaced or cancelled
                    let stored = finishStore(outcome, cache: cache)
                    if tier != nil { secondTierDidStore(item.store!.entry, for: item.url, stored: stored) }
                    item.completion(.success(stored))
                }
            } catch {
                // The group is lost (counted by `runWrite`); the entries stay as they were stored before it.
                for item in ready where cache.pending.isCurrent(item.url, id: item.id) { item.completion(.failure(error)) }
            }
            cache.pending.finished(group)
        }
    }
}
