import Foundation
import HTTPTypes
import LMDB
import ODataCore

/// A 304's refresh of an entry, kept in memory until the next write transaction (or a background flush
/// within `ResponseCache.refreshFlushDelay`): the refreshed entry, and the validators of the representation
/// it refreshes.
struct PendingRefresh: Sendable {
    var entry: CacheEntry
    /// The request URL: the written entry is held decoded under it (`HotEntries`) once its write commits.
    var url: String
    var etag: String?
    var lastModified: String?

    func matches(_ etag: String?, _ lastModified: String?) -> Bool {
        self.etag == etag && self.lastModified == lastModified
    }

    /// The same refresh (not a later one of the same representation).
    func isSame(as other: PendingRefresh) -> Bool {
        matches(other.etag, other.lastModified) && entry.storedAt == other.entry.storedAt && CacheEntry.sameLines(entry.headers, other.entry.headers)
    }
}

/// 304 refreshes held in memory: what a lookup sees of them, and their write.
extension OpenCache {
    /// The refreshed entry a lookup of `key` must return instead of `stored`, while its refresh is not
    /// written: the same representation (validators), refreshed no earlier than stored.
    func pendingRefresh(of stored: CacheEntry, key: TouchKey) -> CacheEntry? {
        // The same sealed value the refresh was read from is the same representation: its validators need no scan.
        guard let pending = refreshes.withLock({ $0[key] }),
              (stored.sealedTag != nil && pending.entry.sealedTag == stored.sealedTag) || pending.matches(stored.etag, stored.lastModified),
              Self.milliseconds(pending.entry.storedAt) >= Self.milliseconds(stored.storedAt)
        else { return nil }
        var entry = pending.entry
        entry.size = stored.size
        entry.sealedTag = stored.sealedTag
        return entry
    }

    /// What writing the pending refreshes did.
    struct RefreshFlush: Sendable {
        /// The refreshes the transaction wrote or dropped (see `settle`).
        var taken: [TouchKey: PendingRefresh] = [:]
        var written = 0
        var superseded = 0
        var evictions = 0
        var evictedBytes = 0
        /// The entries written, each with its URL, key and the tag of its new sealed value: held decoded once the
        /// transaction commits, so that the next lookup of each opens nothing (see `settle`).
        var held: [(url: String, entry: CacheEntry, key: [UInt8], tag: CacheEntry.SealedTag)] = []
        /// The ID the transaction commits with, and the key generation it sealed with.
        var transaction: UInt64 = 0
        var generation: UInt64 = 0
    }

    /// Writes the pending 304 refreshes (inside a write transaction): each only onto the representation it
    /// refreshed (the validators it confirmed) and never onto one stored later.
    ///
    /// - Parameter holdingWritten: The transaction writes nothing after this (the background flush): the entries
    ///   written are to be held decoded once it commits (`settle`). A transaction that goes on writing may replace
    ///   or evict them after this returns.
    func flushRefreshes(configuration: CacheConfiguration, holdingWritten: Bool = false, _ txn: LMDBTransaction) throws -> RefreshFlush {
        // Taken, not removed: lookups keep seeing them until the transaction is committed (`settle`).
        let pending = refreshes.withLock { $0 }
        var result = RefreshFlush(taken: pending)
        guard !pending.isEmpty else { return result }
        let crypto = self.crypto.withLock { $0 }
        result.transaction = txn.id
        result.generation = crypto.generation
        var written: [(url: String, entry: CacheEntry, key: [UInt8])] = []
        for (touchKey, refresh) in pending {
            let key = touchKey.bytes
            // The very sealed value the refresh was read from (its tag, read without the chunks of a chunked
            // value): the same representation, stored no later than the refresh — nothing to open. Otherwise
            // its metadata decides.
            let tag = try storedTag(forKey: key, txn)
            let stored: (status: Int, storedAt: Date, headers: HTTPFields, same: Bool)?
            if let tag, let known = refresh.entry.sealedTag, tag == known {
                stored = (0, .distantPast, [:], true)
            } else if let tag, let held = hot.entry(for: refresh.url, tag: tag) {
                // A value held decoded (an earlier refresh of this entry written since the read, for example).
                stored = (held.status, held.storedAt, held.headers, false)
            } else {
                stored = try withStoredValue(forKey: key, txn) { buffer in
                    buffer.flatMap { crypto.openMeta($0, key: key) }.map { ($0.status, $0.storedAt, $0.headers, false) }
                }
            }
            guard let stored else {
                result.superseded += 1
                continue
            }
            if !stored.same {
                let storedEntry = CacheEntry(status: stored.status, trustedHeaders: stored.headers, payload: Data(), storedAt: stored.storedAt)
                guard refresh.matches(storedEntry.etag, storedEntry.lastModified),
                      Self.milliseconds(stored.storedAt) <= Self.milliseconds(refresh.entry.storedAt)
                else {
                    result.superseded += 1
                    continue
                }
            }
            let sealed = try crypto.seal(refresh.entry, key: key)
            let put = try self.put(sealed: sealed, key: key, now: Date(), configuration: configuration, txn)
            result.written += 1
            result.evictions += put.count
            result.evictedBytes += put.bytes
            if holdingWritten, crypto.sealer != nil {
                var entry = refresh.entry
                entry.size = put.size
                entry.readAt = nil
                written.append((refresh.url, entry, key))
            }
        }
        // After every put (a later one may have evicted an earlier one): what is stored now, with its tag.
        for (url, entry, key) in written {
            guard let tag = try storedTag(forKey: key, txn) else { continue }
            result.held.append((url, entry, key, tag))
        }
        return result
    }

    /// After the commit of a transaction that flushed refreshes: they are on disk (or were superseded), so
    /// they are no longer held — unless a later refresh of the same key replaced one meanwhile. Until now a
    /// lookup kept seeing them: between the flush and the commit, the disk still showed the old entry.
    ///
    /// The entries it wrote are held decoded as of its commit (`HotEntries`): a flush re-seals each of them, and
    /// without this the next lookup of every refreshed URL would find its held copy's tag changed and open the
    /// value from the disk again (the HMAC of the URL, AES-GCM, the header lines decoded) — for many concurrent
    /// readers of many URLs, once per URL and flush.
    func settle(_ flush: RefreshFlush) {
        guard !flush.taken.isEmpty else { return }
        // Held first: a lookup in between sees the written entry with the same refresh still on top.
        for written in flush.held {
            hot.hold(written.entry, url: written.url, key: written.key, generation: flush.generation, tag: written.tag, at: flush.transaction)
        }
        refreshes.withLock { refreshes in
            for (key, taken) in flush.taken where refreshes[key]?.isSame(as: taken) == true {
                refreshes[key] = nil
            }
        }
    }
}
