import TechnicalCache

extension OnlineODataStore {
    /// Waits until the cache's writes to its Redis tier (``OnlineStoreOptions/secondTier``) asked for so far
    /// have run; returns at once without a tier. Those writes run off the callers' path: call this before
    /// another instance must see them (tests, benchmarks, a graceful shutdown).
    public func waitForSecondTier() {
        cache?.waitForSecondTier()
    }
}
