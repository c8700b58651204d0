import Foundation
import HTTPTypes
import LMDB
import ODataCore
import Synchronization

/// 304 refreshes: held in memory, written by the next write transaction or a background flush.
extension ResponseCache {
    /// Refreshes the entry for `url` after a 304: its headers are merged with the 304's and its stored
    /// time is set; the payload stays. Suspends instead of blocking while other writes finish.
    ///
    /// Only the representation the 304 is about is refreshed (RFC 9111 §4.3.4): nothing changes, and
    /// `nil` is returned, when the stored entry does not have the validators of `revalidated` (another
    /// answer replaced it meanwhile), or when the 304 names another entity tag
    /// (``CachePolicy/notModified(_:confirms:)``). The check and the write are one transaction.
    ///
    /// - Parameters:
    ///   - url: The literal request URL.
    ///   - headers: The 304 response's headers.
    ///   - revalidated: The entry whose validators the request sent, as the caller holds it (its
    ///     payload is kept); `nil` for the one stored now.
    ///   - date: The refreshed entry's ``CacheEntry/storedAt`` (never earlier than it was): the time the
    ///     request was sent, for writers that store with `keepingNewer`. The default is now.
    /// - Returns: The refreshed entry (the one to deliver), or `nil` when nothing it applies to is stored.
    /// - Throws: ``CacheError/notOpen``; ``CacheError/storage`` when the write fails (counted in
    ///   ``CacheStatistics/storageFailures``).
    @discardableResult
    public func refresh(for url: String, with304Headers headers: HTTPFields, revalidating revalidated: CacheEntry? = nil, at date: Date = Date()) async throws -> CacheEntry? {
        try await refresh(for: url, with304Headers: headers, revalidating: revalidated, confirmed: false, at: date)
    }

    /// The refresh itself, for a 304 that the caller may have already matched against `revalidated`
    /// (``CachePolicy/notModified(_:confirms:)``): ``CachingTransport`` checks it once, before it decides which
    /// answer to deliver.
    ///
    /// - Parameters:
    ///   - url: The literal request URL.
    ///   - headers: The 304 response's headers.
    ///   - revalidated: The entry whose validators the request sent.
    ///   - confirmed: Whether the caller checked that `headers` confirm `revalidated`.
    ///   - date: The refreshed entry's ``CacheEntry/storedAt`` (never earlier than it was).
    /// - Returns: The refreshed entry, or `nil` when nothing it applies to is stored.
    /// - Throws: As the public variant.
    func refresh(for url: String, with304Headers headers: HTTPFields, revalidating revalidated: CacheEntry?, confirmed: Bool, at date: Date) async throws -> CacheEntry? {
        let refreshed: CacheEntry?
        switch try prepareRefresh(for: url, with304Headers: headers, revalidating: revalidated, confirmed: confirmed, at: date) {
        case .none: refreshed = nil
        case .deferred(let entry): refreshed = entry
        case .write(let prepared):
            let outcome = try await runWrite(prepared.cache, .refresh) { txn in try self.applyStore(prepared, txn) }
            refreshed = finishRefresh(outcome, entry: prepared.entry, cache: prepared.cache)
        }
        if tier != nil { secondTierDidRefresh(refreshed, for: url) }
        return refreshed
    }
    /// A 304 about an entry handed to the writer and not yet committed (``storeBehind(_:for:keepingNewer:completion:)``):
    /// the pending entry is refreshed in memory and written refreshed. Nil when none is pending for `url`, when the 304
    /// is about another representation, or when the refreshed entry may not be stored (the written path decides then).
    private func refreshPending(_ url: String, with304Headers headers: HTTPFields, revalidating revalidated: CacheEntry?,
                                confirmed: Bool, at date: Date) throws -> CacheEntry? {
        try openCache().pending.update(url) { pending in
            if let revalidated, pending.etag != revalidated.etag || pending.lastModified != revalidated.lastModified { return nil }
            guard (confirmed && revalidated != nil) || CachePolicy.notModified(headers, confirms: pending) else { return nil }
            var entry = pending
            entry.refresh(with: headers, at: Date(timeIntervalSince1970: Double(OpenCache.milliseconds(max(date, entry.storedAt))) / 1000))
            return entry.hasDirective("no-store") ? nil : entry
        }
    }

    /// How long a 304's refresh may wait in memory before a background write (it is written earlier by
    /// any other write, and at ``close()``).
    static let refreshFlushDelay: DispatchTimeInterval = .milliseconds(100)
    /// Pending refreshes beyond which the background write is not delayed.
    ///
    /// As many as the touches held (`OpenCache.touchFlushThreshold`): with 256 readers of 256 URLs, a threshold of
    /// 256 wrote every URL's refresh about once per 256 reads instead of once per delay.
    static let refreshFlushThreshold = 4096
    /// This cache's delay before the background write of held refreshes: ``refreshFlushDelay``, longer in
    /// tests that need a refresh held while another process writes.
    var refreshFlushHold: DispatchTimeInterval {
        get { refreshHold.withLock { $0 } }
        set { refreshHold.withLock { $0 = newValue } }
    }

    private enum PreparedRefresh {
        /// Nothing it applies to is stored.
        case none
        /// Kept in memory, written soon: the refreshed entry.
        case deferred(CacheEntry)
        /// Written now (a 304 that forbids storing).
        case write(PreparedStore)
    }

    /// A 304 changes only the freshness and headers of an entry the caller already holds, so its write
    /// is deferred: the refreshed entry is kept in memory — lookups return it, every write transaction
    /// first writes it (conditions then see it), a background write follows within
    /// ``refreshFlushDelay`` — and many refreshes share one transaction. Whether the stored entry still
    /// has the validators of the one refreshed is checked now (a read) and again when it is written.
    /// A process killed in between loses only the refresh: the entry stays as it was stored.
    private func prepareRefresh(for url: String, with304Headers headers: HTTPFields, revalidating revalidated: CacheEntry?, confirmed: Bool, at date: Date) throws -> PreparedRefresh {
        if let refreshed = try refreshPending(url, with304Headers: headers, revalidating: revalidated, confirmed: confirmed, at: date) {
            return .deferred(refreshed)
        }
        guard var entry = try revalidated ?? entry(for: url) else { return .none }
        guard (confirmed && revalidated != nil) || CachePolicy.notModified(headers, confirms: entry) else {
            counters.withLock { $0.supersededWrites += 1 }
            return .none
        }
        let validators = (etag: entry.etag, lastModified: entry.lastModified)
        let condition = StoreCondition.storedValidators(etag: validators.etag, lastModified: validators.lastModified)
        // To the millisecond, as it is written: a held refresh and the written one answer alike.
        entry.refresh(with: headers, at: Date(timeIntervalSince1970: Double(OpenCache.milliseconds(max(date, entry.storedAt))) / 1000))
        if entry.hasDirective("no-store") {
            return .write(try prepareStore(entry, url: url, condition: condition))
        }
        let cache = try openCache()
        let key: [UInt8]
        if let readAt = entry.readAt, readAt.cache == cache.identity, readAt.generation == cache.crypto.withLock({ $0.generation }), readAt.url == url {
            key = readAt.key.bytes  // the key the lookup hashed this URL to: no second HMAC (nor a copy of the keys)
        } else {
            key = cache.crypto.withLock { $0 }.entryKey(for: url, partition: configuration.partition)
        }
        let knownTag = entry.sealedTag
        let stillStored: Bool
        let transaction = cache.environment.lastTransactionID
        if let readAt = entry.readAt, readAt.cache == cache.identity, readAt.key == TouchKey(key), readAt.transaction == transaction {
            stillStored = true  // nothing was committed (by any process) since the lookup that read it: no read needed
        } else if let held = cache.hot.current(for: url, key: key, at: transaction) {
            // Every commit since is known (`HotEntries`: this process's own, which left the URL's value alone, or checked
            // since): the stored value is the held one, with its tag — the value the caller read, or one whose validators
            // are known (the background write of an earlier refresh of this entry, for example). No read.
            if let knownTag, held.tag == knownTag {
                stillStored = true
            } else {
                stillStored = held.entry.etag == validators.etag && held.entry.lastModified == validators.lastModified
            }
        } else {
            do {
                stillStored = try cache.environment.read { txn in
                    let keys = cache.keys(for: txn)
                    // The very sealed value the caller read: the same representation, nothing to open (the tag is
                    // read without the value's chunks).
                    let tag = try cache.storedTag(forKey: key, txn)
                    if let knownTag, tag == knownTag { return true }
                    // A value held decoded (read or written since, for example the background write of an
                    // earlier refresh of this entry): its validators are known.
                    if let tag, let held = cache.hot.entry(for: url, tag: tag) {
                        return held.etag == validators.etag && held.lastModified == validators.lastModified
                    }
                    return try cache.withStoredValue(forKey: key, txn) { buffer in
                        guard let buffer else { return false }
                        guard let meta = keys.openMeta(buffer, key: key) else { return false }
                        let stored = CacheEntry(status: meta.status, trustedHeaders: meta.headers, payload: Data(), storedAt: meta.storedAt)
                        return stored.etag == validators.etag && stored.lastModified == validators.lastModified
                    }
                }
            } catch {
                throw Self.storageError(error)
            }
        }
        guard stillStored else {
            counters.withLock { $0.supersededWrites += 1 }
            return .none
        }
        let touchKey = TouchKey(key)
        let refresh = PendingRefresh(entry: entry, url: url, etag: validators.etag, lastModified: validators.lastModified)
        let count = cache.refreshes.withLock { refreshes in
            // The URL's slot found with one hash and written in place (a URL read again and again has one held).
            guard let index = refreshes.index(forKey: touchKey) else {
                refreshes[touchKey] = refresh
                return refreshes.count
            }
            let held = refreshes.values[index]
            // Unless a later refresh of the same representation is already held.
            if !(held.matches(validators.etag, validators.lastModified) && held.entry.storedAt > entry.storedAt) {
                refreshes.values[index] = refresh
            }
            return refreshes.count
        }
        counters.withLock { $0.refreshes += 1 }
        scheduleRefreshFlush(cache, now: count >= Self.refreshFlushThreshold)
        return .deferred(entry)
    }

    /// Writes the pending refreshes in the background, once per delay however many arrive.
    private func scheduleRefreshFlush(_ cache: OpenCache, now: Bool) {
        guard cache.refreshFlushScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + (now ? .milliseconds(0) : refreshHold.withLock { $0 })) { [weak self] in
            cache.refreshFlushScheduled.store(false, ordering: .releasing)
            guard let self else { return }
            do {
                let flushed = try cache.environment.write { txn in
                    try cache.flushRefreshes(configuration: self.configuration, holdingWritten: true, txn)
                }
                self.count(flushed, cache: cache)
            } catch {
                // The refreshes stay held (lookups still see them) and go with the next write transaction.
                self.storageFailed(.refreshFlush, error)
            }
            self.syncIfDue(cache)
        }
    }

    /// Counts what a committed flush of refreshes did, and stops holding what it wrote.
    func count(_ flush: OpenCache.RefreshFlush, cache: OpenCache) {
        cache.settle(flush)
        guard flush.written + flush.superseded + flush.evictions > 0 else { return }
        counters.withLock {
            $0.supersededWrites += flush.superseded
            $0.evictions += flush.evictions
            $0.evictedBytes += flush.evictedBytes
        }
    }

    private func finishRefresh(_ outcome: StoreOutcome, entry: CacheEntry, cache: OpenCache) -> CacheEntry? {
        count(outcome.refreshes, cache: cache)
        counters.withLock {
            if outcome.stored { $0.refreshes += 1 }
            if outcome.oversize { $0.oversizeRejects += 1 }
            if outcome.superseded { $0.supersededWrites += 1 }
            $0.evictions += outcome.evictions
            $0.evictedBytes += outcome.evictedBytes
        }
        syncIfDue(cache)
        return outcome.superseded ? nil : entry
    }
}
