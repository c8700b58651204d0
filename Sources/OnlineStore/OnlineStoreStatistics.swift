public import TechnicalCache

/// Counters of an ``OnlineODataStore``.
public struct OnlineStoreStatistics: Sendable, Hashable {
    /// Executions started.
    public var requests = 0
    /// Requests that went to the network.
    public var networkRequests = 0
    /// Identical reads that shared another request's network round trip.
    public var coalesced = 0
    /// Header and body bytes received on the wire.
    public var bytesReceived = 0
    /// Revalidations answered with `304 Not Modified`.
    public var notModified = 0
    /// Cache lookups that found an entry.
    public var cacheHits = 0
    /// Cache lookups that found nothing.
    public var cacheMisses = 0
    /// Reads answered from the cache without the server: within ``OnlineStoreOptions/maxAge``, or
    /// asked with `Cache-Control: only-if-cached`.
    public var servedFresh = 0
    /// The technical cache's own counters, when the store has one.
    public var cache: CacheStatistics?
    /// The cache's Redis tier's counters, when ``OnlineStoreOptions/secondTier`` is set.
    public var secondTier: SecondTierStatistics?
}
