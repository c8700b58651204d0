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
    /// The call never waits for the writer: when the entries waiting for their commit hold 32 MiB (a writer slower
    /// than the answers arrive, as while the kernel throttles the disk's dirty pages), a further entry for a URL with
    /// none pending is **shed** — not held, not stored, counted in ``CacheStatistics/shedWrites``, its completion told
    /// `false` — and the URL's next read goes to the server. A newer answer always replaces its URL's pending one, and
    /// a lone entry larger than 32 MiB is taken.
    ///
    /// - Parameters:
    ///   - entry: The response to keep (credentials already dropped from its headers).
    ///   - url: The literal request URL.
    ///   - keepingNewer: As for ``store(_:for:keepingNewer:)``: an entry with a later ``CacheEntry/storedAt``, pending or
    ///     stored, is kept (when it is already stored, this one is not handed over: no lookup answers it).
    ///   - completion: Told once whether the entry was stored, or the write's error (counted in
    ///     ``CacheStatistics/storageFailures`` like any write's): on the writer's thread, or at once on the caller's when
    ///     the entry is not handed over (shed, or older than the stored one). Keep it short.
    /// - Throws: ``CacheError/notOpen``; ``CacheError/invalidEntry`` for a status outside 100…999 (nothing is handed over).
    public func storeBehind(_ entry: CacheEntry, for url: String, keepingNewer: Bool = false,
                            completion: @escaping @Sendable (Result<Bool, CacheError>) -> Void = { _ in }) async throws(CacheError) {
        guard (100...999).contains(entry.status) else {
            throw CacheError.invalidEntry.with(detail: "status \(entry.status) is not an HTTP status code")
        }
        let cache = try openCache()
        if keepingNewer, !committedEntryAllows(entry, for: url, in: cache) {
            // An answer to a later request is committed: this one is not handed over, so no lookup answers it meanwhile.
            counters.withLock { $0.supersededWrites += 1 }
            completion(.success(false))
            return
        }
        let handed = cache.pending.add(entry, for: url, keepingNewer: keepingNewer, completion: completion)
        guard handed.taken else {
            // The writer is behind by more than the memory it may hold: the read does not wait for it.
            counters.withLock { $0.shedWrites += 1 }
            completion(.success(false))
            return
        }
        if let superseded = handed.superseded {
            counters.withLock { $0.supersededWrites += 1 }
            superseded(.success(false))
        }
        if handed.startWriter { cache.pending.queue.async { self.writePending(cache) } }
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
                // One transaction for the group; when it fails (an entry the map has no room for, say), each entry
                // is tried on its own, so that one entry's failure loses that entry only.
                let outcomes = try cache.environment.write { txn -> [StoreOutcome?] in
                    try ready.map { item in try self.applyCurrent(item.url, id: item.id, item.store!, cache, txn) }
                }
                for (item, outcome) in zip(ready, outcomes) { finishBehind(item.url, item.store!, outcome, item.completion, cache) }
            } catch {
                for item in ready {
                    do {
                        let outcome = try runWrite(cache, .write) { txn in try self.applyCurrent(item.url, id: item.id, item.store!, cache, txn) }
                        finishBehind(item.url, item.store!, outcome, item.completion, cache)
                    } catch {
                        // Lost (counted by `runWrite`); the URL's entry stays as it was stored before.
                        if cache.pending.isCurrent(item.url, id: item.id) { item.completion(.failure(error)) }
                    }
                }
            }
            cache.pending.finished(group)
        }
    }

    /// Whether the committed entry of `url` (if any) was stored no later than `entry`, read without waiting for a
    /// writer. The group checks it again in its transaction (a write may commit in between), and reports its failure:
    /// a read that fails here hands the entry over.
    private func committedEntryAllows(_ entry: CacheEntry, for url: String, in cache: OpenCache) -> Bool {
        let key = cache.crypto.withLock { $0 }.entryKey(for: url, partition: configuration.partition)
        do {
            return try cache.environment.read { txn in try Self.conditionHolds(.storedNoLaterThan(entry.storedAt), key: key, in: cache, txn) }
        } catch {
            return true
        }
    }

    /// Writes a handed-over entry unless it was replaced or cancelled since its group was taken (then what replaced it
    /// is written instead, and nil is returned).
    private func applyCurrent(_ url: String, id: UInt64, _ store: PreparedStore, _ cache: OpenCache, _ txn: LMDBTransaction) throws -> StoreOutcome? {
        guard cache.pending.isCurrent(url, id: id) else { return nil }
        return try applyStore(store, txn)
    }

    /// After the commit of a handed-over entry: the counts, the second tier, the completion (told already when it was
    /// replaced or cancelled, `outcome` nil).
    private func finishBehind(_ url: String, _ store: PreparedStore, _ outcome: StoreOutcome?, _ completion: PendingWrites.Completion, _ cache: OpenCache) {
        guard let outcome else { return }
        let stored = finishStore(outcome, cache: cache)
        if tier != nil { secondTierDidStore(store.entry, for: url, stored: stored) }
        completion(.success(stored))
    }
}
