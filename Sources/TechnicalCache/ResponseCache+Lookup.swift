import Foundation
import LMDB
import ODataCore
import Synchronization

/// Lookups: the held (decoded) entry, the disk, a damaged entry's removal, the Redis tier on a miss.
extension ResponseCache {
    /// Returns the entry stored for `url`, or `nil` when none is (never cached, evicted, or damaged).
    ///
    /// A damaged entry (failed authentication or decoding) is removed and counted as an integrity
    /// failure; the cache stays usable.
    ///
    /// An entry handed to the writer and not yet committed (``storeBehind(_:for:keepingNewer:completion:)``) is returned
    /// from memory.
    ///
    /// - Parameter url: The literal request URL.
    /// - Returns: The entry (with ``CacheEntry/lastUsedAt`` set to now), or `nil`.
    /// - Throws: ``CacheError/notOpen`` when the cache is closed.
    public func entry(for url: String) throws -> CacheEntry? {
        let cache = try openCache()
        // Handed to the writer, not yet committed (`storeBehind`): the newest answer there is.
        if let pending = cache.pending.entry(for: url) {
            counters.withLock { $0.hits += 1; $0.memoryHits += 1 }
            return pending
        }
        // The keys' generation only (not a copy of the keys) for an entry held in memory.
        let generation = cache.crypto.withLock { $0.generation }
        if let hot = heldEntry(for: url, generation: generation, cache: cache),
           let entry = deliver(hot.held.entry, url: url, key: hot.held.key, generation: generation, transaction: hot.transaction, cache: cache,
                               fromMemory: true) {
            return entry
        }
        // A rekey keeps the index key: the LMDB key of a URL never changes while the cache is open.
        let key = cache.crypto.withLock { $0 }.entryKey(for: url, partition: configuration.partition)
        // Two reasons to read again, counted apart so that neither uses up the other's tries.
        var redelivered = 0
        var rekeyed = 0
        while true {
            let transaction = cache.environment.lastTransactionID
            let outcome: Lookup
            do {
                outcome = try lookup(key: key, cache: cache)
            } catch LMDBError.environmentClosed {
                throw CacheError.notOpen
            } catch {
                // The storage itself failed (for example a damaged page): a miss, counted.
                outcome = .damaged
            }
            switch outcome {
            case .hit(let entry, let generation):
                if let tag = entry.sealedTag {
                    cache.hot.hold(entry, url: url, key: key, generation: generation, tag: tag, at: transaction)
                }
                guard let delivered = deliver(entry, url: url, key: TouchKey(key), generation: generation, transaction: transaction,
                                              cache: cache, retrying: redelivered < 7)
                else {
                    redelivered += 1
                    continue
                }
                return delivered
            case .miss:
                counters.withLock { $0.requests += 1; $0.misses += 1 }
                return tier == nil ? nil : secondTierEntry(for: url)
            case .damaged:
                // The keys of the snapshot failed. Damaged — unless two rekeys committed between the start
                // of the read and the reading of the keys: the write transaction decides with the keys then.
                var removal = Removal.gone
                do { removal = try removeDamaged(key: key, cache: cache) } catch {
                    // The damaged entry stays (the next lookup tries again); this lookup is a miss either way.
                    storageFailed(.damagedRemoval, error)
                }
                if removal == .resealed && rekeyed < 2 {
                    rekeyed += 1
                    continue
                }
                counters.withLock {
                    $0.requests += 1
                    $0.misses += 1
                    if removal == .removed { $0.integrityFailures += 1 }
                }
                return nil
            }
        }
    }

    /// The entry held in memory for `url` (see `HotEntries`) when the disk still stores it: without a read
    /// when every commit since it was last checked is this process's own and left it alone, else after
    /// comparing the stored value's tag.
    /// The held object itself is returned, not a copy of its entry: with a refresh held, `deliver` answers with that and
    /// the held entry's parts (with many URLs, memory seldom in the CPU's cache) are not retained and released.
    private func heldEntry(for url: String, generation: UInt64, cache: OpenCache) -> (held: HotEntries.Held, transaction: UInt64)? {
        let transaction = cache.environment.lastTransactionID
        guard let (held, current) = cache.hot.held(for: url, generation: generation, transaction: transaction) else { return nil }
        if !current {
            // A read that fails is "not known to be stored": the lookup reads the disk, which reports it.
            let stored = try? cache.environment.read { txn in try cache.storedTag(forKey: held.key.bytes, txn) }
            guard stored == held.tag else {
                cache.hot.forget(url)
                return nil
            }
            cache.hot.confirm(url, tag: held.tag, at: transaction)
        }
        return (held, transaction)
    }

    /// A hit: the deferred refresh of the entry if one is held, the lookup recorded for the LRU order;
    /// `fromMemory` when the entry was held decoded (counted in ``CacheStatistics/memoryHits``).
    ///
    /// A refresh stops being held once the transaction that wrote it commits, so an entry read before that
    /// commit and checked for a held refresh after it would miss the refresh: when none is held and a commit
    /// came after `transaction` (noted before the read), this returns `nil` while `retrying`: read again.
    private func deliver(_ found: CacheEntry, url: String, key touchKey: TouchKey, generation: UInt64, transaction: UInt64, cache: OpenCache,
                         fromMemory: Bool = false, retrying: Bool = true) -> CacheEntry? {
        let now = Date()
        var entry: CacheEntry
        if let refreshed = cache.pendingRefresh(of: found, key: touchKey) {
            entry = refreshed  // `found` is not copied
        } else if retrying, cache.environment.lastTransactionID != transaction {
            return nil
        } else {
            entry = found
        }
        entry.lastUsedAt = now
        entry.readAt = CacheEntry.ReadAt(cache: cache.identity, transaction: transaction, url: url, generation: generation, key: touchKey)
        cache.recordUse(of: touchKey, at: Int64(now.timeIntervalSince1970 * 1000))
        counters.withLock {
            $0.requests += 1
            $0.hits += 1
            if fromMemory { $0.memoryHits += 1 }
        }
        return entry
    }

    private enum Lookup {
        /// The entry, opened with the keys of this generation.
        case hit(CacheEntry, generation: UInt64)
        case miss
        case damaged
    }

    /// Reads and opens the value stored under `key` with the keys of the snapshot read (a rekey may be
    /// committing meanwhile: see `OpenCache.keys(for:)`).
    private func lookup(key: [UInt8], cache: OpenCache) throws -> Lookup {
        try cache.environment.read { txn in
            let crypto = cache.keys(for: txn)
            let decoded: Lookup = try cache.withStoredValue(forKey: key, txn) { buffer in
                guard let buffer else { return .miss }
                guard let entry = crypto.open(buffer, key: key) else { return .damaged }
                return .hit(entry, generation: crypto.generation)
            }
            return decoded
        }
    }

    /// What `removeDamaged` found in its write transaction.
    private enum Removal {
        /// The entry still failed to open and was removed.
        case removed
        /// The entry opens with the current keys (a rekey re-sealed it meanwhile).
        case resealed
        /// Nothing is stored any more.
        case gone
    }

    /// Removes an entry that failed to open, after checking again inside the write transaction with the
    /// current keys (a lookup racing with `rekey` must not delete a good entry).
    private func removeDamaged(key: [UInt8], cache: OpenCache) throws -> Removal {
        try cache.environment.write { txn in
            let crypto = cache.keys(for: txn)
            let found: Removal = try cache.withStoredValue(forKey: key, txn) { buffer in
                guard let buffer else { return .gone }
                return crypto.open(buffer, key: key) == nil ? .removed : .resealed
            }
            guard found == .removed else { return found }
            try cache.flushTouches(txn)
            var total = try cache.readBytes(txn)
            total -= try cache.removeEntry(key, txn)
            try cache.writeBytes(total, txn)
            return .removed
        }
    }

    /// The number of entries and bytes held decoded in memory (for tests).
    var hotUsage: (count: Int, bytes: Int) { state.withLock { $0 }?.hot.usage ?? (0, 0) }
    /// The lookups that found an entry held in memory but not known current, so read its stored tag (for tests).
    var heldChecks: Int { state.withLock { $0 }?.hot.checks ?? 0 }

    /// The 304 refreshes held in memory, not yet written (for tests).
    var pendingRefreshCount: Int { state.withLock { $0 }?.refreshes.withLock { $0.count } ?? 0 }
    /// Whether an entry is stored for `url`, without counting as a use or opening it (for tests).
    func containsEntry(for url: String) throws -> Bool {
        let cache = try openCache()
        let key = cache.crypto.withLock { $0 }.entryKey(for: url, partition: configuration.partition)
        return try cache.environment.read { txn in try txn.value(forKey: key, in: cache.entries) != nil }
    }

    /// The stored chunks checked against their heads, with the databases' page figures (for tests).
    func chunkAudit() throws -> ChunkAudit {
        let cache = try openCache()
        return try cache.environment.read { txn in try cache.auditChunks(txn) }
    }

    /// The lookups whose use is not yet written to the LRU index (for tests).
    var pendingTouchCount: Int { state.withLock { $0 }?.touches.withLock { $0.count } ?? 0 }
}
