import Foundation
import LMDB
import ODataCore
import Synchronization

/// Writes: storing a server's answer (with its conditions) and removing an entry.
extension ResponseCache {
    /// Stores `entry` for `url`, replacing the previous entry; evicts least-recently-used entries when
    /// the budget requires it (a bounded number in each write, down to the low-water mark). Suspends instead
    /// of blocking while other writes finish.
    ///
    /// Not stored (and the previous entry removed, since it is superseded): a response marked
    /// `Cache-Control: no-store`, or one larger than the largest allowed entry (counted as an oversize
    /// reject).
    ///
    /// Writers that run requests concurrently pass `keepingNewer` with each entry's
    /// ``CacheEntry/storedAt`` set to the time its request was sent: the answer to an earlier request
    /// that arrives last then never replaces the answer to a later one (checked in the write
    /// transaction; counted as a superseded write).
    ///
    /// - Parameters:
    ///   - entry: The response to keep (credentials were already dropped from its headers).
    ///   - url: The literal request URL.
    ///   - keepingNewer: When `true`, an entry stored with a later ``CacheEntry/storedAt`` (to the
    ///     millisecond) is kept and `entry` is dropped. The default is `false`: `entry` replaces it.
    /// - Returns: `true` when the entry was stored.
    /// - Throws: ``CacheError/notOpen``; ``CacheError/invalidEntry`` for a status outside 100…999;
    ///   ``CacheError/storage`` when the write fails (the previous state is kept; counted in
    ///   ``CacheStatistics/storageFailures``).
    @discardableResult
    public func store(_ entry: CacheEntry, for url: String, keepingNewer: Bool = false) async throws -> Bool {
        let prepared = try prepareStore(entry, url: url, condition: keepingNewer ? .storedNoLaterThan(entry.storedAt) : .always)
        let cache = prepared.cache
        cache.pending.cancel(url)  // this write replaces an entry handed to the writer before
        let outcome = try await runWrite(cache, .write) { txn in try self.applyStore(prepared, txn) }
        let stored = finishStore(outcome, cache: cache)
        if tier != nil { secondTierDidStore(entry, for: url, stored: stored) }
        return stored
    }

    /// Copies an entry read from the Redis tier into this cache (not back to the tier), on the tier's fill
    /// queue; an entry stored meanwhile with a later time is kept.
    func storeFromSecondTier(_ entry: CacheEntry, for url: String) throws {
        let prepared = try prepareStore(entry, url: url, condition: .storedNoLaterThan(entry.storedAt))
        let outcome = try runWrite(prepared.cache, .write) { txn in try self.applyStore(prepared, txn) }
        _ = finishStore(outcome, cache: prepared.cache)
    }

    /// What the entry stored for a key must be for a write to go ahead (checked in its transaction).
    enum StoreCondition: Sendable {
        case always
        /// Nothing stored, a damaged entry, or one stored no later than this (to the millisecond).
        case storedNoLaterThan(Date)
        /// An entry with exactly these validators: the representation a 304 confirmed.
        case storedValidators(etag: String?, lastModified: String?)
    }

    struct PreparedStore: Sendable {
        let cache: OpenCache
        let key: [UInt8]
        let entry: CacheEntry
        let sealed: SealedEntry?
        let generation: UInt64
        let storable: Bool
        let oversize: Bool
        let condition: StoreCondition
    }

    struct StoreOutcome: Sendable {
        var stored: Bool
        var oversize: Bool
        var removed: Bool
        var evictions: Int
        var evictedBytes: Int
        var superseded = false
        /// The pending 304 refreshes this transaction wrote first.
        var refreshes = OpenCache.RefreshFlush()
    }

    func prepareStore(_ entry: CacheEntry, url: String, condition: StoreCondition = .always) throws -> PreparedStore {
        try prepareStore(entry, url: url, condition: condition, in: openCache())
    }

    /// ``prepareStore(_:url:condition:)`` for a cache the caller holds (the writer of handed-over entries, which also
    /// runs while the cache closes).
    func prepareStore(_ entry: CacheEntry, url: String, condition: StoreCondition, in cache: OpenCache) throws -> PreparedStore {
        guard (100...999).contains(entry.status) else {
            throw CacheError.invalidEntry.with(detail: "status \(entry.status) is not an HTTP status code")
        }
        let crypto = cache.crypto.withLock { $0 }
        let key = crypto.entryKey(for: url, partition: configuration.partition)
        if CachePolicy.hasDirective("no-store", in: entry.headers) {
            return PreparedStore(cache: cache, key: key, entry: entry, sealed: nil, generation: crypto.generation, storable: false, oversize: false, condition: condition)
        }
        // The stored size is known before sealing: each box adds the sealer's overhead.
        let combined = entry.payload.count <= SealedEntry.combinedLimit
        let overhead = (combined ? 4 : 0) + (crypto.sealer == nil ? 0 : (combined ? 1 : 2) * Sealer.overhead)
        let metaCount = EntryCodec.encodeMeta(entry).count
        if 5 + metaCount + entry.payload.count + overhead + OpenCache.perEntryOverhead > configuration.maxEntryBytes {
            return PreparedStore(cache: cache, key: key, entry: entry, sealed: nil, generation: crypto.generation, storable: false, oversize: true, condition: condition)
        }
        let sealed = try crypto.seal(entry, key: key)
        return PreparedStore(cache: cache, key: key, entry: entry, sealed: sealed, generation: crypto.generation, storable: true, oversize: false, condition: condition)
    }

    /// Whether the entry stored for `key` allows a write under `condition`.
    static func conditionHolds(_ condition: StoreCondition, key: [UInt8], in cache: OpenCache, _ txn: LMDBTransaction) throws -> Bool {
        if case .always = condition { return true }
        let crypto = cache.crypto.withLock { $0 }
        // nil: nothing stored; .some(nil): stored but damaged.
        let meta = try cache.withStoredValue(forKey: key, txn) { buffer in
            buffer.map { crypto.openMeta($0, key: key) }
        }
        switch condition {
        case .always:
            return true
        case .storedNoLaterThan(let date):
            guard let stored = meta ?? nil else { return true }
            return Int64(stored.storedAt.timeIntervalSince1970 * 1000) <= Int64(date.timeIntervalSince1970 * 1000)
        case .storedValidators(let etag, let lastModified):
            guard let stored = meta ?? nil else { return false }
            let entry = CacheEntry(status: stored.status, trustedHeaders: stored.headers, payload: Data(), storedAt: stored.storedAt)
            return entry.etag == etag && entry.lastModified == lastModified
        }
    }

    func applyStore(_ prepared: PreparedStore, _ txn: LMDBTransaction) throws -> StoreOutcome {
        let cache = prepared.cache
        // Pending refreshes first: the condition below must see every 304 already delivered.
        let refreshes = try cache.flushRefreshes(configuration: configuration, txn)
        var outcome = try applyStoreAfterRefreshes(prepared, txn)
        outcome.refreshes = refreshes
        return outcome
    }

    private func applyStoreAfterRefreshes(_ prepared: PreparedStore, _ txn: LMDBTransaction) throws -> StoreOutcome {
        let cache = prepared.cache
        guard try Self.conditionHolds(prepared.condition, key: prepared.key, in: prepared.cache, txn) else {
            return StoreOutcome(stored: false, oversize: false, removed: false, evictions: 0, evictedBytes: 0, superseded: true)
        }
        guard prepared.storable, var sealed = prepared.sealed else {
            try cache.flushTouches(txn)
            var total = try cache.readBytes(txn)
            let removedBytes = try cache.removeEntry(prepared.key, txn)
            total -= removedBytes
            try cache.writeBytes(total, txn)
            return StoreOutcome(stored: false, oversize: prepared.oversize, removed: removedBytes > 0, evictions: 0, evictedBytes: 0)
        }
        let crypto = cache.crypto.withLock { $0 }
        if crypto.generation != prepared.generation {
            // A rekey ran since the value was sealed: seal it again with the current key.
            sealed = try crypto.seal(prepared.entry, key: prepared.key)
        }
        let result = try cache.put(sealed: sealed, key: prepared.key, now: Date(), configuration: configuration, txn)
        return StoreOutcome(stored: true, oversize: false, removed: false, evictions: result.count, evictedBytes: result.bytes)
    }

    func finishStore(_ outcome: StoreOutcome, cache: OpenCache) -> Bool {
        count(outcome.refreshes, cache: cache)
        counters.withLock {
            if outcome.stored { $0.writes += 1 }
            if outcome.oversize { $0.oversizeRejects += 1 }
            if outcome.removed { $0.removals += 1 }
            if outcome.superseded { $0.supersededWrites += 1 }
            $0.evictions += outcome.evictions
            $0.evictedBytes += outcome.evictedBytes
        }
        syncIfDue(cache)
        return outcome.stored
    }

    /// Removes the entry for `url` (for example after a 404 or 410), suspending instead of blocking while
    /// other writes finish.
    ///
    /// - Parameter url: The literal request URL.
    /// - Returns: `true` when an entry was removed.
    /// - Throws: ``CacheError/notOpen``; ``CacheError/storage`` when the write fails (counted in
    ///   ``CacheStatistics/storageFailures``).
    @discardableResult
    public func removeEntry(for url: String) async throws -> Bool {
        let cache = try openCache()
        cache.pending.cancel(url)  // an entry handed to the writer before goes too
        let key = cache.crypto.withLock { $0 }.entryKey(for: url, partition: configuration.partition)
        let removed = try await runWrite(cache, .removal) { txn in try Self.applyRemove(key: key, cache: cache, txn) }
        finishRemove(removed, cache: cache)
        if tier != nil { secondTierDidRemove(for: url) }
        return removed
    }

    private static func applyRemove(key: [UInt8], cache: OpenCache, _ txn: LMDBTransaction) throws -> Bool {
        try cache.flushTouches(txn)
        guard try txn.value(forKey: key, in: cache.entries) != nil else { return false }
        var total = try cache.readBytes(txn)
        total -= try cache.removeEntry(key, txn)
        try cache.writeBytes(total, txn)
        return true
    }

    private func finishRemove(_ removed: Bool, cache: OpenCache) {
        if removed { counters.withLock { $0.removals += 1 } }
        syncIfDue(cache)
    }
}
