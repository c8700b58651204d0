public import Logging

/// How often a cache's commits reach the disk.
public enum CacheDurability: Sendable, Hashable {
    /// Every commit is flushed (`fsync`, about 0.5 ms here): nothing committed is lost even on power failure.
    case full
    /// Commits are not flushed (`MDB_NOSYNC`); the cache flushes when a write finds the last flush older
    /// than `interval`, and on close. A killed process loses nothing (the data is in the page cache);
    /// a system crash or power failure may undo the writes since the last flush, and on a file system
    /// that does not keep write order may damage the file (the cache can then be `reset()`).
    case periodic(interval: Duration)
}

/// The settings of a ``ResponseCache``.
public struct CacheConfiguration: Sendable, Hashable {
    /// The byte budget: the total stored size (sealed values, keys and metadata) never exceeds it.
    /// The default is 64 MiB.
    public var sizeLimit: Int
    /// When a write would exceed the budget, least-recently-used entries are evicted until the total is
    /// at most this fraction of ``sizeLimit``: a bounded number of entries per write (beyond those it needs to
    /// fit under the budget), in that write and the ones that follow. The default is 0.8.
    public var lowWaterMark: Double
    /// An entry whose stored size exceeds this fraction of ``sizeLimit`` is not stored (and is counted
    /// as an oversize reject). The default is 1.0: only entries larger than the whole budget are refused.
    public var maxEntryFraction: Double
    /// A user or tenant name mixed into every key, so that two partitions never see each other's entries.
    /// The default is `nil` (no partition).
    public var partition: String?
    /// The passphrase-to-key derivation for a new cache and for `rekey`. The default is
    /// ``KeyDerivation/standard`` (PBKDF2-HMAC-SHA256, 600,000 rounds). An existing cache keeps the
    /// derivation recorded in it.
    public var keyDerivation: KeyDerivation
    /// How often commits reach the disk. The default is ``CacheDurability/full``.
    public var durability: CacheDurability
    /// The bytes of recently read entries held decoded in this process's memory, so that reading one again
    /// costs neither decryption nor the URL's keyed hash (a held entry is answered only while the disk still
    /// stores it, checked by its sealed value's tag after any commit). An entry larger than a quarter of
    /// this is not held. The default is 16 MiB; 0 holds nothing (every lookup decrypts from the disk).
    public var memoryBudget: Int
    /// A Redis server shared by a fleet's caches: read on a local miss, written after each stored answer
    /// (see ``RedisTierConfiguration``). Needs an encrypted cache. The default is `nil`: local only.
    public var secondTier: RedisTierConfiguration? = nil
    /// Where the cache logs what it cannot tell a caller: the first storage failure of each kind
    /// (``CacheStorageOperation``; all are counted in ``CacheStatistics/storageFailures``). No URL, key or
    /// payload is logged. It takes no part in equality. The default is `nil`: a logger labelled
    /// `ODataStores.TechnicalCache` (the online store passes its telemetry's logger).
    public var logger: Logger? = nil
    /// The LMDB map's fixed size in bytes, for tests that make the map fill (then writes fail with
    /// `MDB_MAP_FULL`); `nil`, the default, sizes the map from ``sizeLimit`` and lets it grow.
    var mapSizeLimit: Int? = nil

    /// Creates a configuration; every parameter has the default documented on its property.
    ///
    /// - Parameters:
    ///   - sizeLimit: The byte budget.
    ///   - lowWaterMark: The fraction of the budget eviction goes down to.
    ///   - maxEntryFraction: The largest entry, as a fraction of the budget.
    ///   - partition: The user or tenant partition.
    ///   - keyDerivation: The key derivation for new keys.
    ///   - durability: How often commits reach the disk.
    ///   - memoryBudget: The bytes of decoded entries held in memory.
    public init(
        sizeLimit: Int = 64 << 20,
        lowWaterMark: Double = 0.8,
        maxEntryFraction: Double = 1.0,
        partition: String? = nil,
        keyDerivation: KeyDerivation = .standard,
        durability: CacheDurability = .full,
        memoryBudget: Int = 16 << 20
    ) {
        self.sizeLimit = sizeLimit
        self.lowWaterMark = lowWaterMark
        self.maxEntryFraction = maxEntryFraction
        self.partition = partition
        self.keyDerivation = keyDerivation
        self.durability = durability
        self.memoryBudget = memoryBudget
    }

    /// Configurations are equal in everything but their logger.
    ///
    /// - Parameters:
    ///   - lhs: A configuration.
    ///   - rhs: Another configuration.
    /// - Returns: Whether every setting but the logger is equal.
    public static func == (lhs: CacheConfiguration, rhs: CacheConfiguration) -> Bool {
        lhs.sizeLimit == rhs.sizeLimit && lhs.lowWaterMark == rhs.lowWaterMark && lhs.maxEntryFraction == rhs.maxEntryFraction
            && lhs.partition == rhs.partition && lhs.keyDerivation == rhs.keyDerivation && lhs.durability == rhs.durability
            && lhs.memoryBudget == rhs.memoryBudget && lhs.secondTier == rhs.secondTier && lhs.mapSizeLimit == rhs.mapSizeLimit
    }

    /// Hashes everything but the logger.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(sizeLimit)
        hasher.combine(lowWaterMark)
        hasher.combine(maxEntryFraction)
        hasher.combine(partition)
        hasher.combine(keyDerivation)
        hasher.combine(durability)
        hasher.combine(memoryBudget)
        hasher.combine(secondTier)
        hasher.combine(mapSizeLimit)
    }

    func validate() throws(CacheError) {
        guard sizeLimit >= 4096 else {
            throw CacheError.invalidConfiguration.with(detail: "sizeLimit must be at least 4096 bytes, got \(sizeLimit)")
        }
        guard lowWaterMark > 0, lowWaterMark <= 1 else {
            throw CacheError.invalidConfiguration.with(detail: "lowWaterMark must be in (0, 1], got \(lowWaterMark)")
        }
        guard maxEntryFraction > 0, maxEntryFraction <= 1 else {
            throw CacheError.invalidConfiguration.with(detail: "maxEntryFraction must be in (0, 1], got \(maxEntryFraction)")
        }
        guard memoryBudget >= 0 else {
            throw CacheError.invalidConfiguration.with(detail: "memoryBudget must not be negative, got \(memoryBudget)")
        }
        if case .periodic(let interval) = durability, interval < .zero {
            throw CacheError.invalidConfiguration.with(detail: "the sync interval must not be negative")
        }
        do { try keyDerivation.validate() } catch { throw CacheError(error) }
        try secondTier?.validate()
    }

    var maxEntryBytes: Int { Int(Double(sizeLimit) * maxEntryFraction) }
    var lowWaterBytes: Int { Int(Double(sizeLimit) * lowWaterMark) }
}

/// Counters of a ``ResponseCache`` since it was created.
public struct CacheStatistics: Sendable, Hashable {
    /// Lookups (`entry(for:)` calls on an open cache).
    public var requests = 0
    /// Lookups that found an entry.
    public var hits = 0
    /// The ``hits`` answered by an entry held decoded in memory (``CacheConfiguration/memoryBudget``): no read
    /// of the disk's value, no decryption. The others read the stored value and opened it.
    public var memoryHits = 0
    /// Lookups that found nothing (including integrity failures).
    public var misses = 0
    /// Entries stored.
    public var writes = 0
    /// Entries refreshed by a 304. A refresh is visible to lookups at once and written with the next write
    /// transaction, by a background write within 100 ms, or at `close()` — many in one transaction.
    public var refreshes = 0
    /// Writes dropped because the stored entry had moved on meanwhile: a 304 refresh whose entry was
    /// replaced by another representation, or a store that was told to keep a newer entry.
    public var supersededWrites = 0
    /// Answers not stored because the cache's writer was behind by more than it may hold in memory (32 MiB): an
    /// online read's answer is handed to the writer and never waits for it (``ResponseCache/storeBehind(_:for:keepingNewer:completion:)``).
    public var shedWrites = 0
    /// Entries evicted to stay within the budget.
    public var evictions = 0
    /// Bytes evicted to stay within the budget.
    public var evictedBytes = 0
    /// Entries not stored because they exceed the largest allowed entry.
    public var oversizeRejects = 0
    /// Entries that failed authentication or decoding, were treated as misses and removed.
    public var integrityFailures = 0
    /// Entries removed on request (404/410, no-store, `removeEntry`).
    public var removals = 0
    /// The bytes currently stored (0 while closed).
    public var currentBytes = 0
    /// The number of entries currently stored (0 while closed).
    public var entryCount = 0
    /// Storage operations that failed (LMDB or the disk): writes, 304 refreshes, removals, flushes of held
    /// refreshes and recency updates, removals of damaged entries, syncs. A failed write keeps the previous
    /// state; a read through a ``CachingTransport`` still gets the server's answer. The first failure of each
    /// kind is also logged (``CacheConfiguration/logger``).
    public var storageFailures = 0
    /// ``storageFailures`` by operation.
    public var storageFailuresByOperation: [CacheStorageOperation: Int] = [:]
}
