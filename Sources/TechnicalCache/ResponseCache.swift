import Crypto
import Foundation
import LMDB
import Synchronization
import ODataCore

/// The technical cache: a persistent, encrypted, size-bounded store of responses keyed by request URL.
///
/// Entries live in LMDB under a keyed hash (HMAC-SHA256) of the partition and the literal URL; each
/// value is sealed with AES-256-GCM, the LMDB key being the authenticated data. The data and index keys
/// are random and wrapped in a ``KeyEnvelope`` under a key derived from the caller's encryption key, so
/// a wrong key fails ``open(encryption:)`` with ``CacheError/wrongKey`` and nothing is erased.
///
/// The cache is best-effort at lookup time: an entry that fails authentication or decoding is a miss,
/// is removed and is counted. The budget (``CacheConfiguration/sizeLimit``) is never exceeded: a write
/// that would exceed it evicts least-recently-used entries down to the low-water mark first.
/// Lookups record their use in memory; the LRU index is updated by the next write (or on close), so a
/// hit costs no write transaction (while another process writes to the cache, they are written within a
/// second, since that process evicts too). A crash loses only those recency updates.
///
/// Several processes on one host may open the same directory and share the cache, on LMDB's own
/// multi-process locking: every lookup sees what any of them committed, eviction keeps the shared budget
/// using the byte total and LRU order on disk, and a 304 refresh held in memory is written only onto the
/// representation it confirmed. Inside one process a directory is opened by one `ResponseCache` at a
/// time (a second is refused with ``CacheError/alreadyOpen``). ``reset()`` and ``rekey(to:)`` need the
/// cache to themselves and fail with ``CacheError/inUseElsewhere`` while another process has it open.
/// Processes that share a cache should share its configuration: each applies its own budget to its
/// own writes.
///
/// ## Topics
/// - ``init(directory:configuration:)``
/// - ``open(encryption:)``
/// - ``entry(for:)``
/// - ``store(_:for:keepingNewer:)-(CacheEntry,String,Bool)->Bool``
/// - ``refresh(for:with304Headers:revalidating:at:)-(String,[CacheEntry.Header],CacheEntry?,Date)->CacheEntry?``
/// - ``removeEntry(for:)-(String)->Bool``
/// - ``statistics``
public final class ResponseCache: Sendable {
    /// The cache's directory (0700): `data.mdb`, `lock.mdb`, `cache.lock` and, by default, `cache.key`.
    public let directory: String
    /// The configuration the cache was created with.
    public let configuration: CacheConfiguration

    private let state = LockedValue<OpenCache?>(nil)
    private let counters = LockedValue(CacheStatistics())
    /// The shared Redis tier, when ``CacheConfiguration/secondTier`` is set (see `ResponseCache+SecondTier`).
    let tier: RedisTier?

    static let lockFileName = "cache.lock"
    static let keyFileName = "cache.key"
    static let formatVersion: [UInt8] = [1]

    /// Creates a (closed) cache for `directory`; nothing is touched on disk until ``open(encryption:)``.
    ///
    /// - Parameters:
    ///   - directory: The directory that holds the cache; created (0700) on open.
    ///   - configuration: Budget, partition, key derivation and durability.
    /// - Throws: `CacheError.invalidConfiguration` naming the value out of range.
    public init(directory: String, configuration: CacheConfiguration = CacheConfiguration()) throws(CacheError) {
        guard !directory.isEmpty else { throw CacheError.invalidConfiguration.with(detail: "the cache directory is empty") }
        try configuration.validate()
        self.directory = directory
        self.configuration = configuration
        tier = try configuration.secondTier.map { tier throws(CacheError) in try RedisTier(configuration: tier, partition: configuration.partition) }
    }

    /// The default key store: the file `cache.key` (0600) in the cache directory.
    public var defaultKeyStore: FileKeyStore {
        FileKeyStore(path: directory + "/" + Self.keyFileName)
    }

    /// Whether the cache is open.
    public var isOpen: Bool { state.withLock { $0 != nil } }

    // MARK: Lifecycle

    /// Opens the cache with the default key store (a random key kept in `cache.key`, 0600).
    ///
    /// - Throws: As ``open(encryption:)``.
    public func open() throws {
        try open(encryption: .keyStore(defaultKeyStore))
    }

    /// Opens the cache, creating it if needed. Opening an open cache does nothing.
    ///
    /// - Parameter encryption: The passphrase, a key store, or ``CacheEncryption/disabled`` (explicit only).
    /// - Throws: ``CacheError/alreadyOpen`` when the directory is open elsewhere in this process;
    ///   ``CacheError/inUseElsewhere`` while another process resets or rekeys it;
    ///   ``CacheError/wrongKey`` when the key does not match (nothing is erased);
    ///   ``CacheError/keyUnavailable`` when the key store lost the key of an existing cache;
    ///   ``CacheError/encryptionMismatch`` when an encrypted cache is opened without encryption or the
    ///   other way round; ``CacheError/storage`` or ``CacheError/fileSystem`` when the files cannot be
    ///   opened.
    public func open(encryption: CacheEncryption) throws {
        if isOpen { return }
        let lock = try StorageLock.cache(directory: directory)
        do {
            // One process at a time reads or creates the key and the key-check record.
            let opened = try lock.duringSetup {
                try Self.openStorage(directory: directory, configuration: configuration, encryption: encryption, lock: lock)
            }
            let raced = state.withLock { current -> Bool in
                if current != nil { return true }
                current = opened
                return false
            }
            if raced { opened.environment.close() }
        } catch let failure as StorageLock.Failure {
            lock.release()
            throw CacheError(lockFailure: failure)
        } catch {
            lock.release()
            throw error
        }
        do { try activateSecondTier(encryption) } catch {
            close()
            throw error
        }
    }

    private static func openStorage(directory: String, configuration: CacheConfiguration, encryption: CacheEncryption, lock: StorageLock) throws -> OpenCache {
        let options = LMDBEnvironment.Options(
            mapSize: max(4 << 20, (configuration.sizeLimit * 2 + 0xFFFFF) & ~0xFFFFF),
            maxDatabases: 4,
            durability: { if case .full = configuration.durability { return .full } else { return .noSync } }(),
            fileMode: 0o600,
            createDirectory: false)
        let environment: LMDBEnvironment
        do {
            environment = try LMDBEnvironment(path: lock.directory, options: options)
        } catch {
            throw CacheError.storage.with(detail: "cannot open the cache files in \(directory): \(error)", underlying: error)
        }
        // Reader slots left by processes that were killed would keep old pages from being reused.
        _ = try? environment.clearStaleReaders()
        do {
            let setup = try environment.write { txn -> (databases: [LMDBDatabase], envelope: [UInt8]?, plaintext: Bool, bytes: Int, lastTick: UInt64?) in
                var databases: [LMDBDatabase] = []
                for name in ["entries", "info", "lru", "meta"] {
                    guard let database = try txn.openDatabase(named: name, create: true) else { throw LMDBError.badDatabase }
                    databases.append(database)
                }
                let meta = databases[3]
                if let format = try txn.value(forKey: OpenCache.formatKey, in: meta), format != formatVersion {
                    throw CacheError.corruptRecord.with(detail: "unknown cache format \(format)")
                }
                let envelope = try txn.value(forKey: OpenCache.envelopeKey, in: meta)
                let plaintext = try txn.value(forKey: OpenCache.plaintextKey, in: meta) != nil
                let bytes = try txn.value(forKey: OpenCache.bytesKey, in: meta).flatMap { UInt64(bigEndianBytes: $0) }.map(Int.init) ?? 0
                let lastTick = try txn.withCursor(in: databases[2]) { cursor in try cursor.last() }.flatMap { UInt64(bigEndianBytes: $0.key) }
                return (databases, envelope, plaintext, bytes, lastTick)
            }
            let crypto: CacheCrypto
            var newRecord: (key: [UInt8], value: [UInt8])?
            switch (encryption, setup.envelope, setup.plaintext) {
            case (.disabled, nil, _):
                crypto = CacheCrypto(sealer: nil, indexKey: SymmetricKey(data: [UInt8](repeating: 0, count: 32)), generation: 0)
                if !setup.plaintext { newRecord = (OpenCache.plaintextKey, [1]) }
            case (.disabled, .some, _):
                throw CacheError.encryptionMismatch.with(detail: "the cache is encrypted; open it with its key")
            case (_, _, true):
                throw CacheError.encryptionMismatch.with(detail: "the cache was created without encryption")
            case (_, .some(let stored), false):
                guard let passphrase = try encryption.passphrase(existing: true) else { throw CacheError.encryptionMismatch }
                let secret = try KeyEnvelope(serialized: stored).open(passphrase: passphrase)
                crypto = try Self.crypto(fromSecret: secret, generation: 0)
            case (_, nil, false):
                guard let passphrase = try encryption.passphrase(existing: false) else { throw CacheError.encryptionMismatch }
                let secret = SealingKey.random().withUnsafeBytes { Data($0) } + SealingKey.random().withUnsafeBytes { Data($0) }
                let envelope = try KeyEnvelope.seal(secret: secret, passphrase: passphrase, derivation: configuration.keyDerivation)
                crypto = try Self.crypto(fromSecret: secret, generation: 0)
                newRecord = (OpenCache.envelopeKey, Array(envelope.serialized))
            }
            if let newRecord {
                try environment.write { txn in
                    try txn.setValue(formatVersion, forKey: OpenCache.formatKey, in: setup.databases[3])
                    try txn.setValue(newRecord.value, forKey: newRecord.key, in: setup.databases[3])
                }
            }
            return OpenCache(
                environment: environment, databases: setup.databases, lock: lock, crypto: crypto,
                nextTick: (setup.lastTick ?? 0) + 1, currentBytes: setup.bytes, memoryBudget: configuration.memoryBudget)
        } catch let error as CacheError {
            environment.close()
            throw error
        } catch {
            environment.close()
            throw CacheError.storage.with(detail: "cannot open the cache in \(directory): \(error)", underlying: error)
        }
    }

    static func crypto(fromSecret secret: Data, generation: UInt64) throws(CacheError) -> CacheCrypto {
        guard secret.count == 2 * SealingKey.byteCount else {
            throw CacheError.corruptRecord.with(detail: "the key-check record holds \(secret.count) bytes of key material")
        }
        let dataKey = try SealingKey(bytes: secret.prefix(SealingKey.byteCount))
        let indexKey = SymmetricKey(data: secret.suffix(SealingKey.byteCount))
        return CacheCrypto(sealer: Sealer(key: dataKey), indexKey: indexKey, generation: generation)
    }

    /// Closes the cache: pending recency updates are written, data is flushed, files are unlocked.
    ///
    /// Operations running at that moment end normally or throw ``CacheError/notOpen``; closing a closed
    /// cache does nothing.
    public func close() {
        guard let cache = state.withLock({ current -> OpenCache? in
            defer { current = nil }
            return current
        }) else { return }
        tier?.deactivate()
        let flushed = try? cache.environment.write { txn -> OpenCache.RefreshFlush in
            let flushed = try cache.flushRefreshes(configuration: self.configuration, txn)
            try cache.flushTouches(txn)
            return flushed
        }
        if let flushed { count(flushed, cache: cache) }
        try? cache.environment.sync()
        cache.environment.close()
        cache.lock.release()
    }

    /// Deletes every entry and the cache files (the key file stays). Allowed only while closed.
    ///
    /// - Throws: ``CacheError/cacheIsOpen`` when this cache is open; ``CacheError/alreadyOpen`` when the
    ///   directory is open elsewhere in this process; ``CacheError/inUseElsewhere`` when another process
    ///   has it open (nothing is deleted); ``CacheError/fileSystem`` when a file cannot be removed.
    public func reset() throws {
        if isOpen { throw CacheError.cacheIsOpen }
        let lock = try StorageLock.cache(directory: directory, exclusive: true)
        defer { lock.release() }
        for file in ["data.mdb", "lock.mdb"] {
            let path = lock.directory + "/" + file
            guard FileManager.default.fileExists(atPath: path) else { continue }
            do { try FileManager.default.removeItem(atPath: path) } catch {
                throw CacheError.fileSystem.with(detail: "cannot remove \(path): \(error)", underlying: error)
            }
        }
        counters.withLock { $0.currentBytes = 0; $0.entryCount = 0 }
    }

    /// Changes the encryption key without losing entries: a new data key re-seals every entry and the
    /// keys are wrapped under the new passphrase, in one transaction.
    ///
    /// - Parameter encryption: The new passphrase or key store (a key store without a key gets a new
    ///   random one).
    /// Rekeying needs the cache to itself: the other processes that have it open hold the old keys.
    ///
    /// - Throws: ``CacheError/notOpen``; ``CacheError/inUseElsewhere`` while another process has the
    ///   cache open (nothing changed); ``CacheError/encryptionMismatch`` when asked to switch
    ///   encryption on or off; ``CacheError/storage`` when the transaction fails (nothing changed).
    public func rekey(to encryption: CacheEncryption) throws {
        let cache = try openCache()
        try cache.lock.makeCacheExclusive()
        defer { cache.lock.makeShared() }
        let old = cache.crypto.withLock { $0 }
        guard old.sealer != nil else {
            throw CacheError.encryptionMismatch.with(detail: "the cache was created without encryption; reset it to encrypt")
        }
        guard let passphrase = try encryption.passphrase(existing: false) else {
            throw CacheError.encryptionMismatch.with(detail: "rekey cannot switch encryption off")
        }
        let newKey = SealingKey.random()
        let secret = newKey.withUnsafeBytes { Data($0) } + old.indexKey.withUnsafeBytes { Data($0) }
        let envelope = try KeyEnvelope.seal(secret: secret, passphrase: passphrase, derivation: configuration.keyDerivation)
        let newSealer = Sealer(key: newKey)
        var failures = 0
        var refreshes = OpenCache.RefreshFlush()
        do {
            try cache.environment.write { txn in
                refreshes = try cache.flushRefreshes(configuration: self.configuration, txn)
                try cache.flushTouches(txn)
                var keys: [[UInt8]] = []
                try txn.withCursor(in: cache.entries) { cursor in
                    while let entry = try cursor.next() { keys.append(entry.key) }
                }
                var total = try cache.readBytes(txn)
                failures = 0
                let oldCrypto = old
                let newCrypto = old.rekeyed(to: newSealer, in: txn.id)
                for key in keys {
                    let opened = try txn.withValue(forKey: key, in: cache.entries) { buffer in buffer.flatMap { oldCrypto.open($0, key: key) } }
                    guard let entry = opened else {
                        total -= try cache.removeEntry(key, txn)
                        failures += 1
                        continue
                    }
                    let sealed = try newCrypto.seal(entry, key: key)
                    try txn.setValue(count: sealed.byteCount, forKey: key, in: cache.entries) { sealed.write(into: $0) }
                }
                try cache.writeBytes(total, txn)
                try txn.setValue(Array(envelope.serialized), forKey: OpenCache.envelopeKey, in: cache.meta)
                // Swap before the commit: every write after this transaction seals with the new key. A read
                // transaction that began before the commit still opens its values with the old key, which
                // the new keys keep for snapshots older than this transaction (`OpenCache.keys(for:)`).
                cache.crypto.withLock { $0 = newCrypto }
            }
        } catch {
            // Nothing was re-sealed: the old keys again, under a new generation (a write prepared with the
            // new key seals again).
            var restored = old
            restored.generation = old.generation + 2
            cache.crypto.withLock { $0 = restored }
            throw Self.storageError(error)
        }
        cache.hot.removeAll()  // held under the old generation: never answered again
        count(refreshes, cache: cache)
        if failures > 0 { counters.withLock { $0.integrityFailures += failures } }
    }

    // MARK: Lookup

    /// Returns the entry stored for `url`, or `nil` when none is (never cached, evicted, or damaged).
    ///
    /// A damaged entry (failed authentication or decoding) is removed and counted as an integrity
    /// failure; the cache stays usable.
    ///
    /// - Parameter url: The literal request URL.
    /// - Returns: The entry (with ``CacheEntry/lastUsedAt`` set to now), or `nil`.
    /// - Throws: ``CacheError/notOpen`` when the cache is closed.
    public func entry(for url: String) throws -> CacheEntry? {
        let cache = try openCache()
        let crypto = cache.crypto.withLock { $0 }
        if let hot = heldEntry(for: url, crypto: crypto, cache: cache),
           let entry = deliver(hot.entry, url: url, key: hot.key, generation: crypto.generation, transaction: hot.transaction, cache: cache) {
            return entry
        }
        // A rekey keeps the index key: the LMDB key of a URL never changes while the cache is open.
        let key = crypto.entryKey(for: url, partition: configuration.partition)
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
                guard let delivered = deliver(entry, url: url, key: key, generation: generation, transaction: transaction,
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
                let removal = (try? removeDamaged(key: key, cache: cache)) ?? .gone
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
    /// when nothing was committed since it was last checked, else after comparing the stored value's tag.
    private func heldEntry(for url: String, crypto: CacheCrypto, cache: OpenCache) -> (entry: CacheEntry, key: [UInt8], transaction: UInt64)? {
        let transaction = cache.environment.lastTransactionID
        guard let (held, current) = cache.hot.held(for: url, generation: crypto.generation, transaction: transaction) else { return nil }
        if !current {
            let stored = try? cache.environment.read { txn in
                try txn.withValue(forKey: held.key, in: cache.entries) { buffer in buffer.flatMap { CacheEntry.SealedTag(of: $0) } }
            }
            guard stored == held.tag else {
                cache.hot.forget(url)
                return nil
            }
            cache.hot.confirm(url, tag: held.tag, at: transaction)
        }
        return (held.entry, held.key, transaction)
    }

    /// A hit: the deferred refresh of the entry if one is held, the lookup recorded for the LRU order.
    ///
    /// A refresh stops being held once the transaction that wrote it commits, so an entry read before that
    /// commit and checked for a held refresh after it would miss the refresh: when none is held and a commit
    /// came after `transaction` (noted before the read), this returns `nil` while `retrying`: read again.
    private func deliver(_ found: CacheEntry, url: String, key: [UInt8], generation: UInt64, transaction: UInt64, cache: OpenCache,
                         retrying: Bool = true) -> CacheEntry? {
        var entry = found
        let now = Date()
        let touchKey = TouchKey(key)
        if let refreshed = cache.pendingRefresh(of: entry, key: touchKey) {
            entry = refreshed
        } else if retrying, cache.environment.lastTransactionID != transaction {
            return nil
        }
        entry.lastUsedAt = now
        entry.readAt = CacheEntry.ReadAt(cache: cache.identity, transaction: transaction, url: url, generation: generation, key: key)
        cache.recordUse(of: touchKey, at: Int64(now.timeIntervalSince1970 * 1000))
        counters.withLock { $0.requests += 1; $0.hits += 1 }
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
            let decoded: Lookup = try txn.withValue(forKey: key, in: cache.entries) { buffer in
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
            let found: Removal = try txn.withValue(forKey: key, in: cache.entries) { buffer in
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

    // MARK: Writes

    /// Stores `entry` for `url`, replacing the previous entry; evicts least-recently-used entries when
    /// the budget requires it.
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
    ///   ``CacheError/storage`` when the write fails (the previous state is kept).
    @discardableResult
    public func store(_ entry: CacheEntry, for url: String, keepingNewer: Bool = false) throws -> Bool {
        let stored = try storeLocally(entry, for: url, keepingNewer: keepingNewer)
        if tier != nil { secondTierDidStore(entry, for: url, stored: stored) }
        return stored
    }

    /// Stores `entry` in this cache only (not in the second tier).
    func storeLocally(_ entry: CacheEntry, for url: String, keepingNewer: Bool) throws -> Bool {
        let prepared = try prepareStore(entry, url: url, condition: keepingNewer ? .storedNoLaterThan(entry.storedAt) : .always)
        let cache = prepared.cache
        let outcome = try runWrite(cache) { txn in try self.applyStore(prepared, txn) }
        return finishStore(outcome, cache: cache)
    }

    /// Stores `entry` for `url` like ``store(_:for:keepingNewer:)-(CacheEntry,String,Bool)->Bool``,
    /// suspending instead of blocking while other writes finish.
    ///
    /// - Parameters:
    ///   - entry: The response to keep.
    ///   - url: The literal request URL.
    ///   - keepingNewer: When `true`, an entry stored with a later ``CacheEntry/storedAt`` is kept.
    /// - Returns: `true` when the entry was stored.
    /// - Throws: As the synchronous variant.
    @discardableResult
    public func store(_ entry: CacheEntry, for url: String, keepingNewer: Bool = false) async throws -> Bool {
        let prepared = try prepareStore(entry, url: url, condition: keepingNewer ? .storedNoLaterThan(entry.storedAt) : .always)
        let cache = prepared.cache
        let outcome = try await runWrite(cache) { txn in try self.applyStore(prepared, txn) }
        let stored = finishStore(outcome, cache: cache)
        if tier != nil { secondTierDidStore(entry, for: url, stored: stored) }
        return stored
    }

    /// What the entry stored for a key must be for a write to go ahead (checked in its transaction).
    private enum StoreCondition: Sendable {
        case always
        /// Nothing stored, a damaged entry, or one stored no later than this (to the millisecond).
        case storedNoLaterThan(Date)
        /// An entry with exactly these validators: the representation a 304 confirmed.
        case storedValidators(etag: String?, lastModified: String?)
    }

    private struct PreparedStore: Sendable {
        let cache: OpenCache
        let key: [UInt8]
        let entry: CacheEntry
        let sealed: SealedEntry?
        let generation: UInt64
        let storable: Bool
        let oversize: Bool
        let condition: StoreCondition
    }

    private struct StoreOutcome: Sendable {
        var stored: Bool
        var oversize: Bool
        var removed: Bool
        var evictions: Int
        var evictedBytes: Int
        var superseded = false
        /// The pending 304 refreshes this transaction wrote first.
        var refreshes = OpenCache.RefreshFlush()
    }

    private func prepareStore(_ entry: CacheEntry, url: String, condition: StoreCondition = .always) throws -> PreparedStore {
        guard (100...999).contains(entry.status) else {
            throw CacheError.invalidEntry.with(detail: "status \(entry.status) is not an HTTP status code")
        }
        let cache = try openCache()
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

    /// Whether the entry stored for the prepared key allows the write.
    private static func conditionHolds(_ prepared: PreparedStore, _ txn: LMDBTransaction) throws -> Bool {
        if case .always = prepared.condition { return true }
        let crypto = prepared.cache.crypto.withLock { $0 }
        // nil: nothing stored; .some(nil): stored but damaged.
        let meta = try txn.withValue(forKey: prepared.key, in: prepared.cache.entries) { buffer in
            buffer.map { crypto.openMeta($0, key: prepared.key) }
        }
        switch prepared.condition {
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

    private func applyStore(_ prepared: PreparedStore, _ txn: LMDBTransaction) throws -> StoreOutcome {
        let cache = prepared.cache
        // Pending refreshes first: the condition below must see every 304 already delivered.
        let refreshes = try cache.flushRefreshes(configuration: configuration, txn)
        var outcome = try applyStoreAfterRefreshes(prepared, txn)
        outcome.refreshes = refreshes
        return outcome
    }

    private func applyStoreAfterRefreshes(_ prepared: PreparedStore, _ txn: LMDBTransaction) throws -> StoreOutcome {
        let cache = prepared.cache
        guard try Self.conditionHolds(prepared, txn) else {
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

    private func finishStore(_ outcome: StoreOutcome, cache: OpenCache) -> Bool {
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

    /// Refreshes the entry for `url` after a 304: its headers are merged with the 304's and its stored
    /// time is set; the payload stays.
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
    /// - Throws: ``CacheError/notOpen``; ``CacheError/storage`` when the write fails.
    @discardableResult
    public func refresh(for url: String, with304Headers headers: [CacheEntry.Header], revalidating revalidated: CacheEntry? = nil, at date: Date = Date()) throws -> CacheEntry? {
        let refreshed = try refreshLocally(for: url, with304Headers: headers, revalidating: revalidated, at: date)
        if tier != nil { secondTierDidRefresh(refreshed, for: url) }
        return refreshed
    }

    private func refreshLocally(for url: String, with304Headers headers: [CacheEntry.Header], revalidating revalidated: CacheEntry?, at date: Date) throws -> CacheEntry? {
        switch try prepareRefresh(for: url, with304Headers: headers, revalidating: revalidated, confirmed: false, at: date) {
        case .none: return nil
        case .deferred(let entry): return entry
        case .write(let prepared):
            let outcome = try runWrite(prepared.cache) { txn in try self.applyStore(prepared, txn) }
            return finishRefresh(outcome, entry: prepared.entry, cache: prepared.cache)
        }
    }

    /// Refreshes the entry for `url` after a 304 like the synchronous variant, suspending instead of
    /// blocking while other writes finish.
    ///
    /// - Parameters:
    ///   - url: The literal request URL.
    ///   - headers: The 304 response's headers.
    ///   - revalidated: The entry whose validators the request sent; `nil` for the one stored now.
    ///   - date: The refreshed entry's ``CacheEntry/storedAt`` (never earlier than it was).
    /// - Returns: The refreshed entry, or `nil` when nothing it applies to is stored.
    /// - Throws: As the synchronous variant.
    @discardableResult
    public func refresh(for url: String, with304Headers headers: [CacheEntry.Header], revalidating revalidated: CacheEntry? = nil, at date: Date = Date()) async throws -> CacheEntry? {
        try await refresh(for: url, with304Headers: headers, revalidating: revalidated, confirmed: false, at: date)
    }

    /// Refreshes the entry for `url` after a 304 that the caller has already matched against `revalidated`
    /// (``CachePolicy/notModified(_:confirms:)``): the online store checks it once, before it decides which
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
    package func refresh(for url: String, with304Headers headers: [CacheEntry.Header], revalidating revalidated: CacheEntry?, confirmed: Bool, at date: Date) async throws -> CacheEntry? {
        let refreshed: CacheEntry?
        switch try prepareRefresh(for: url, with304Headers: headers, revalidating: revalidated, confirmed: confirmed, at: date) {
        case .none: refreshed = nil
        case .deferred(let entry): refreshed = entry
        case .write(let prepared):
            let outcome = try await runWrite(prepared.cache) { txn in try self.applyStore(prepared, txn) }
            refreshed = finishRefresh(outcome, entry: prepared.entry, cache: prepared.cache)
        }
        if tier != nil { secondTierDidRefresh(refreshed, for: url) }
        return refreshed
    }

    /// The number of entries and bytes held decoded in memory (for tests).
    var hotUsage: (count: Int, bytes: Int) { state.withLock { $0 }?.hot.usage ?? (0, 0) }

    /// The 304 refreshes held in memory, not yet written (for tests).
    var pendingRefreshCount: Int { state.withLock { $0 }?.refreshes.withLock { $0.count } ?? 0 }
    /// Whether an entry is stored for `url`, without counting as a use or opening it (for tests).
    func containsEntry(for url: String) throws -> Bool {
        let cache = try openCache()
        let key = cache.crypto.withLock { $0 }.entryKey(for: url, partition: configuration.partition)
        return try cache.environment.read { txn in try txn.value(forKey: key, in: cache.entries) != nil }
    }

    /// The lookups whose use is not yet written to the LRU index (for tests).
    var pendingTouchCount: Int { state.withLock { $0 }?.touches.withLock { $0.count } ?? 0 }

    /// How long a 304's refresh may wait in memory before a background write (it is written earlier by
    /// any other write, and at ``close()``).
    static let refreshFlushDelay: DispatchTimeInterval = .milliseconds(100)
    /// Pending refreshes beyond which the background write is not delayed.
    static let refreshFlushThreshold = 256
    private let refreshHold = LockedValue<DispatchTimeInterval>(ResponseCache.refreshFlushDelay)
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
    private func prepareRefresh(for url: String, with304Headers headers: [CacheEntry.Header], revalidating revalidated: CacheEntry?, confirmed: Bool, at date: Date) throws -> PreparedRefresh {
        guard var entry = try revalidated ?? entry(for: url) else { return .none }
        guard (confirmed && revalidated != nil) || CachePolicy.notModified(headers, confirms: entry) else {
            counters.withLock { $0.supersededWrites += 1 }
            return .none
        }
        let validators = (etag: entry.etag, lastModified: entry.lastModified)
        let condition = StoreCondition.storedValidators(etag: validators.etag, lastModified: validators.lastModified)
        // To the millisecond, as it is written: a held refresh and the written one answer alike.
        entry.refresh(with: headers, at: Date(timeIntervalSince1970: Double(OpenCache.milliseconds(max(date, entry.storedAt))) / 1000))
        if CachePolicy.hasDirective("no-store", in: entry.headers) {
            return .write(try prepareStore(entry, url: url, condition: condition))
        }
        let cache = try openCache()
        let crypto = cache.crypto.withLock { $0 }
        let key: [UInt8]
        if let readAt = entry.readAt, readAt.cache == cache.identity, readAt.generation == crypto.generation, readAt.url == url {
            key = readAt.key  // the key the lookup hashed this URL to: no second HMAC
        } else {
            key = crypto.entryKey(for: url, partition: configuration.partition)
        }
        let knownTag = entry.sealedTag
        let stillStored: Bool
        if let readAt = entry.readAt, readAt.cache == cache.identity, readAt.key == key,
           readAt.transaction == cache.environment.lastTransactionID {
            stillStored = true  // nothing was committed (by any process) since the lookup that read it: no read needed
        } else {
            do {
                stillStored = try cache.environment.read { txn in
                    let keys = cache.keys(for: txn)
                    return try txn.withValue(forKey: key, in: cache.entries) { buffer in
                        guard let buffer else { return false }
                        // The very sealed value the caller read: the same representation, nothing to open.
                        if let knownTag, CacheEntry.SealedTag(of: buffer) == knownTag { return true }
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
        let count = cache.refreshes.withLock { refreshes in
            if let held = refreshes[touchKey], held.matches(validators.etag, validators.lastModified),
               held.entry.storedAt > entry.storedAt {
                return refreshes.count  // a later refresh of the same representation is already held
            }
            refreshes[touchKey] = PendingRefresh(entry: entry, etag: validators.etag, lastModified: validators.lastModified)
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
            let flushed = try? cache.environment.write { txn in try cache.flushRefreshes(configuration: self.configuration, txn) }
            if let flushed { self.count(flushed, cache: cache) }
            self.syncIfDue(cache)
        }
    }

    /// Counts what a committed flush of refreshes did, and stops holding what it wrote.
    private func count(_ flush: OpenCache.RefreshFlush, cache: OpenCache) {
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

    /// Removes the entry for `url` (for example after a 404 or 410).
    ///
    /// - Parameter url: The literal request URL.
    /// - Returns: `true` when an entry was removed.
    /// - Throws: ``CacheError/notOpen``; ``CacheError/storage`` when the write fails.
    @discardableResult
    public func removeEntry(for url: String) throws -> Bool {
        let cache = try openCache()
        let key = cache.crypto.withLock { $0 }.entryKey(for: url, partition: configuration.partition)
        let removed = try runWrite(cache) { txn in try Self.applyRemove(key: key, cache: cache, txn) }
        finishRemove(removed, cache: cache)
        if tier != nil { secondTierDidRemove(for: url) }
        return removed
    }

    /// Removes the entry for `url`, suspending instead of blocking while other writes finish.
    ///
    /// - Parameter url: The literal request URL.
    /// - Returns: `true` when an entry was removed.
    /// - Throws: As the synchronous variant.
    @discardableResult
    public func removeEntry(for url: String) async throws -> Bool {
        let cache = try openCache()
        let key = cache.crypto.withLock { $0 }.entryKey(for: url, partition: configuration.partition)
        let removed = try await runWrite(cache) { txn in try Self.applyRemove(key: key, cache: cache, txn) }
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

    // MARK: Statistics

    /// The counters since this object was created and the current size, without the entry count (which needs a read
    /// transaction): cheap enough to read after every request.
    ///
    /// The counters are this process's; the size is the cache's, whoever wrote it (read again only when
    /// another process committed since this one last looked).
    public var counts: CacheStatistics {
        var snapshot = counters.withLock { $0 }
        snapshot.currentBytes = state.withLock { $0 }?.currentBytes() ?? 0
        return snapshot
    }

    /// The counters since this object was created (this process's), with the cache's current size and entry count.
    public var statistics: CacheStatistics {
        var snapshot = counts
        snapshot.entryCount = state.withLock { $0 }.map { cache in (try? cache.environment.read { txn in try txn.count(in: cache.entries) }) ?? 0 } ?? 0
        return snapshot
    }

    // MARK: Helpers

    private func openCache() throws(CacheError) -> OpenCache {
        guard let cache = state.withLock({ $0 }) else { throw CacheError.notOpen }
        return cache
    }

    private func runWrite<R>(_ cache: OpenCache, _ body: (LMDBTransaction) throws -> R) throws -> R {
        do {
            return try cache.environment.write(body)
        } catch {
            throw Self.storageError(error)
        }
    }

    private func runWrite<R: Sendable>(_ cache: OpenCache, _ body: @escaping @Sendable (LMDBTransaction) throws -> R) async throws -> R {
        do {
            return try await cache.environment.write(body)
        } catch {
            throw Self.storageError(error)
        }
    }

    private static func storageError(_ error: any Error) -> CacheError {
        if let error = error as? CacheError { return error }
        if LMDBError.environmentClosed ~= error { return .notOpen }
        return CacheError.storage.with(detail: "\(error)", underlying: error)
    }

    private func syncIfDue(_ cache: OpenCache) {
        guard case .periodic(let interval) = configuration.durability else { return }
        let now = ContinuousClock.now
        let due = cache.lastSync.withLock { last -> Bool in
            guard now - last >= interval else { return false }
            last = now
            return true
        }
        if due { try? cache.environment.sync() }
    }
}
