import Foundation

/// The cache's side of its Redis tier (``CacheConfiguration/secondTier``); the tier itself is `RedisTier`.
extension ResponseCache {
    /// The Redis tier's counters, or `nil` when the cache has no second tier.
    public var secondTierStatistics: SecondTierStatistics? { tier?.statistics }

    /// Waits until the Redis writes asked for so far (and local copies of Redis hits) ran; returns at once
    /// without a second tier. Writes to Redis run off the callers' path, so tests and benchmarks that read
    /// from another instance call this first.
    ///
    /// The entries handed to the cache's writer (``storeBehind(_:for:keepingNewer:completion:)``) go to Redis after
    /// their local commit: those are waited for first.
    public func waitForSecondTier() {
        guard let tier else { return }
        if let cache = try? openCache() { cache.pending.queue.sync {} }  // closed: `close()` wrote them
        tier.waitForWrites()
    }

    /// Starts the tier with the passphrase the cache was opened with (the fleet's shared secret).
    func activateSecondTier(_ encryption: CacheEncryption) throws {
        guard let tier else { return }
        guard let passphrase = try encryption.passphrase(existing: true) else {
            throw CacheError.invalidConfiguration.with(detail: "a second tier needs an encrypted cache: nothing readable may reach Redis")
        }
        try tier.activate(passphrase: passphrase, derivation: configuration.keyDerivation)
    }

    /// A local miss: the entry Redis holds, copied into the local cache off the caller's path (an entry
    /// stored locally meanwhile with a later time is kept).
    func secondTierEntry(for url: String) -> CacheEntry? {
        guard let tier, let entry = tier.lookup(url) else { return nil }
        tier.fill { [weak self] in
            // A failed write is counted and logged by the cache (`storeFromSecondTier`); a closed cache takes no copy.
            do { try self?.storeFromSecondTier(entry, for: url) } catch {}
        }
        return entry
    }

    /// After a server answer went to the local cache: the same entry to Redis, or its removal when the
    /// answer must not be kept (`no-store`).
    func secondTierDidStore(_ entry: CacheEntry, for url: String, stored: Bool) {
        guard let tier else { return }
        if stored {
            tier.publish(entry, url: url)
        } else if CachePolicy.hasDirective("no-store", in: entry.headers) {
            tier.remove(url: url)
        }
    }

    /// After a 304 refreshed an entry: the refreshed entry to Redis when the tier's copy is older than the
    /// bound (``RedisTierConfiguration/republishInterval``).
    func secondTierDidRefresh(_ entry: CacheEntry?, for url: String) {
        guard let tier, let entry else { return }
        tier.publish(entry, url: url, isRefresh: true)
    }

    /// After an entry was removed on request (404, 410): its removal from Redis.
    func secondTierDidRemove(for url: String) {
        tier?.remove(url: url)
    }
}
