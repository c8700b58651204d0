import Crypto
import Foundation
import LMDB
import Logging
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
/// that would exceed it evicts least-recently-used entries down to the low-water mark first — those it needs
/// to fit under the limit and a bounded number more, the rest a bounded number in each following write, so
/// that no write waits for an eviction run that grows with the cache.
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
/// A write whose storage fails (LMDB, the disk) throws to its caller, and every storage failure — of a write,
/// a 304 refresh, a removal, a flush, a sync — is counted in ``CacheStatistics/storageFailures`` and logged
/// once per kind (``CacheStorageOperation``) to ``CacheConfiguration/logger``.
///
/// The files: `ResponseCache.swift` (opening, closing, reset, statistics), `+Lookup`, `+Store` (stores and
/// removals), `+Refresh` (304s), `+Rekey`, `+SecondTier` (the Redis tier) and `+StorageFailures`.
///
/// ## Topics
/// - ``init(directory:configuration:)``
/// - ``open(encryption:)``
/// - ``entry(for:)``
/// - ``store(_:for:keepingNewer:)``
/// - ``refresh(for:with304Headers:revalidating:at:)``
/// - ``removeEntry(for:)``
/// - ``statistics``
public final class ResponseCache: Sendable {
    /// The cache's directory (0700): `data.mdb`, `lock.mdb`, `cache.lock` and, by default, `cache.key`.
    public let directory: String
    /// The configuration the cache was created with.
    public let configuration: CacheConfiguration

    let state = LockedValue<OpenCache?>(nil)
    let counters = LockedValue(CacheStatistics())
    /// Where storage failures are logged (``CacheConfiguration/logger``, or a logger of the cache's own).
    let logger: Logger
    /// The kinds of storage failure already logged (each is logged once; all are counted).
    let loggedFailures = LockedValue<Set<CacheStorageOperation>>([])
    let refreshHold = LockedValue<DispatchTimeInterval>(ResponseCache.refreshFlushDelay)
    /// The shared Redis tier, when ``CacheConfiguration/secondTier`` is set (see `ResponseCache+SecondTier`).
    let tier: RedisTier?

    static let lockFileName = "cache.lock"
    static let keyFileName = "cache.key"
    /// The layout of the files: 2 since values larger than one page are stored in chunks (`OpenCache+Chunks.swift`).
    /// A cache of format 1 (every value whole under its key) is read as it is and marked 2 when opened, so that
    /// an earlier version of this library, which would take a chunked value for a damaged one and leave its
    /// chunks behind, refuses it (an unknown format) instead.
    static let formatVersion: [UInt8] = [2]
    static let earlierFormatVersions: [[UInt8]] = [[1]]

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
        logger = configuration.logger ?? Logger(label: "ODataStores.TechnicalCache")
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
                try Self.openStorage(directory: directory, configuration: configuration, encryption: encryption, lock: lock) { [weak self] operation, error in
                    self?.storageFailed(operation, error)
                }
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

    private static func openStorage(directory: String, configuration: CacheConfiguration, encryption: CacheEncryption, lock: StorageLock,
                                    onStorageFailure: @escaping @Sendable (CacheStorageOperation, any Error) -> Void) throws -> OpenCache {
        let mapSize = configuration.mapSizeLimit ?? max(4 << 20, (configuration.sizeLimit * 2 + 0xFFFFF) & ~0xFFFFF)
        let options = LMDBEnvironment.Options(
            mapSize: mapSize,
            maxMapSize: configuration.mapSizeLimit ?? LMDBEnvironment.Options().maxMapSize,
            maxDatabases: 5,
            durability: { if case .full = configuration.durability { return .full } else { return .noSync } }(),
            fileMode: 0o600,
            createDirectory: false)
        let environment: LMDBEnvironment
        do {
            environment = try LMDBEnvironment(path: lock.directory, options: options)
        } catch {
            throw CacheError.storage.with(detail: "cannot open the cache files in \(directory): \(error)", underlying: error)
        }
        // Reader slots left by processes that were killed would keep old pages from being reused; a failure
        // costs only that reuse (counted and logged).
        do { _ = try environment.clearStaleReaders() } catch { onStorageFailure(.readerCleanup, error) }
        do {
            let setup = try environment.write { txn -> (databases: [LMDBDatabase], pageSize: Int, envelope: [UInt8]?, plaintext: Bool, bytes: Int, lastTick: UInt64?) in
                var databases: [LMDBDatabase] = []
                for name in ["entries", "info", "lru", "meta", "chunks"] {
                    guard let database = try txn.openDatabase(named: name, create: true) else { throw LMDBError.badDatabase }
                    databases.append(database)
                }
                let meta = databases[3]
                if let format = try txn.value(forKey: OpenCache.formatKey, in: meta), format != formatVersion {
                    guard earlierFormatVersions.contains(format) else { throw CacheError.corruptRecord.with(detail: "unknown cache format \(format)") }
                    try txn.setValue(formatVersion, forKey: OpenCache.formatKey, in: meta)
                }
                let envelope = try txn.value(forKey: OpenCache.envelopeKey, in: meta)
                let plaintext = try txn.value(forKey: OpenCache.plaintextKey, in: meta) != nil
                let bytes = try txn.value(forKey: OpenCache.bytesKey, in: meta).flatMap { UInt64(bigEndianBytes: $0) }.map(Int.init) ?? 0
                let lastTick = try txn.withCursor(in: databases[2]) { cursor in try cursor.last() }.flatMap { UInt64(bigEndianBytes: $0.key) }
                return (databases, try txn.statistics(of: databases[0]).pageSize, envelope, plaintext, bytes, lastTick)
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
                environment: environment, databases: setup.databases, pageSize: setup.pageSize, lock: lock, crypto: crypto,
                nextTick: (setup.lastTick ?? 0) + 1, currentBytes: setup.bytes, memoryBudget: configuration.memoryBudget,
                onStorageFailure: onStorageFailure)
        } catch let error as CacheError {
            environment.close()
            throw error
        } catch let error as KeyError {
            environment.close()
            throw CacheError(error)
        } catch {
            environment.close()
            throw CacheError.storage.with(detail: "cannot open the cache in \(directory): \(error)", underlying: error)
        }
    }

    static func crypto(fromSecret secret: Data, generation: UInt64) throws(CacheError) -> CacheCrypto {
        guard secret.count == 2 * SealingKey.byteCount else {
            throw CacheError.corruptRecord.with(detail: "the key-check record holds \(secret.count) bytes of key material")
        }
        let dataKey: SealingKey
        do { dataKey = try SealingKey(bytes: secret.prefix(SealingKey.byteCount)) } catch { throw CacheError(error) }
        let indexKey = SymmetricKey(data: secret.suffix(SealingKey.byteCount))
        return CacheCrypto(sealer: Sealer(key: dataKey), indexKey: indexKey, generation: generation)
    }

    /// Closes the cache: pending recency updates are written, data is flushed, files are unlocked.
    ///
    /// Operations running at that moment end normally or throw ``CacheError/notOpen``; closing a closed
    /// cache does nothing.
    public func close() {
        // The entries handed to the writer are written first (after a group it may be writing), while the cache is
        // still open: what their completions read (the cache's size) is the committed one.
        guard let open = state.withLock({ $0 }) else { return }
        open.pending.queue.sync { self.writePending(open) }
        guard let cache = state.withLock({ current -> OpenCache? in
            defer { current = nil }
            return current
        }) else { return }
        // Handed over since (no hand-over succeeds once the state is cleared).
        cache.pending.queue.sync { self.writePending(cache) }
        tier?.deactivate()
        do {
            let flushed = try cache.environment.write { txn -> OpenCache.RefreshFlush in
                let flushed = try cache.flushRefreshes(configuration: self.configuration, txn)
                try cache.flushTouches(txn)
                return flushed
            }
            count(flushed, cache: cache)
        } catch {
            // The held refreshes and uses are lost; the entries stay as they were stored.
            storageFailed(.refreshFlush, error)
        }
        do { try cache.environment.sync() } catch { storageFailed(.sync, error) }
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
        // A read that fails reports no entries: the count is informative, and the failure is the next lookup's to see.
        snapshot.entryCount = state.withLock { $0 }.map { cache in (try? cache.environment.read { txn in try txn.count(in: cache.entries) }) ?? 0 } ?? 0
        return snapshot
    }

    // MARK: Helpers

    func openCache() throws(CacheError) -> OpenCache {
        guard let cache = state.withLock({ $0 }) else { throw CacheError.notOpen }
        return cache
    }

    /// Runs a write transaction on the calling thread (the background flushes, a Redis hit's local copy);
    /// a storage failure is counted as `operation` and thrown.
    func runWrite<R>(_ cache: OpenCache, _ operation: CacheStorageOperation, _ body: (LMDBTransaction) throws -> R) throws(CacheError) -> R {
        do {
            return try cache.environment.write(body)
        } catch {
            throw failure(operation, error)
        }
    }

    /// Runs a write transaction, suspending instead of blocking while other writes finish; a storage
    /// failure is counted as `operation` and thrown.
    func runWrite<R: Sendable>(_ cache: OpenCache, _ operation: CacheStorageOperation,
                               _ body: @escaping @Sendable (LMDBTransaction) throws -> R) async throws(CacheError) -> R {
        do {
            return try await cache.environment.write(body)
        } catch {
            throw failure(operation, error)
        }
    }

    static func storageError(_ error: any Error) -> CacheError {
        if let error = error as? CacheError { return error }
        if LMDBError.environmentClosed ~= error { return .notOpen }
        return CacheError.storage.with(detail: "\(error)", underlying: error)
    }

    /// Flushes the commits to the disk when the periodic interval is due (``CacheDurability/periodic(interval:)``).
    func syncIfDue(_ cache: OpenCache) {
        guard case .periodic(let interval) = configuration.durability else { return }
        let now = ContinuousClock.now
        let due = cache.lastSync.withLock { last -> Bool in
            guard now - last >= interval else { return false }
            last = now
            return true
        }
        guard due else { return }
        do { try cache.environment.sync() } catch { storageFailed(.sync, error) }
    }
}
