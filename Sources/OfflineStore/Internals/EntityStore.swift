import Foundation
import LMDB
import ODataCore
import Synchronization
import TechnicalCache

/// The LMDB side of an offline store: named databases `meta` (key-check record, sealed
/// configuration and counters), `entities` (keyed by keyed hashes of entity set and canonical
/// key) and `queue` (keyed by the big-endian request ID, so it walks in queue order).
/// Every value except the key-check record is sealed, with its LMDB key as authenticated data.
///
/// Decoded entities are cached per entity set after the first read; writes update the cache
/// after their transaction commits.
final class EntityStore: Sendable {
    let environment: LMDBEnvironment
    let cipher: StoreCipher
    private let meta: LMDBDatabase
    private let entities: LMDBDatabase
    private let queue: LMDBDatabase
    private let errors: LMDBDatabase
    private let cache = LockedValue<[String: [String: EntityRecord]]>([:])
    private let ordered = LockedValue<[String: (records: [EntityRecord], json: [JSONObject])]>([:])

    private static let keyCheckKey = Array("keycheck".utf8)
    private static let plaintextMarker = Array("plaintext-store-v1".utf8)
    private static let configKey = Array("config".utf8)
    private static let countersKey = Array("counters".utf8)

    /// Opens (creating if needed) the environment in `directory` and checks the key.
    ///
    /// - Throws: `OfflineODataError.wrongKey` (nothing is erased), `.encryptionMismatch`,
    ///   `.storage` for LMDB failures.
    init(directory: String, parameters: OfflineODataParameters, mapSize: Int = 64 << 20) throws {
        do {
            environment = try LMDBEnvironment(path: directory, options: .init(mapSize: mapSize, maxDatabases: 5))
        } catch {
            throw OfflineODataError(.storage, "cannot open the store at \(directory): \(error)")
        }
        let environment = self.environment
        do {
            let (metaDB, entitiesDB, queueDB, errorsDB) = try environment.write { txn in
                guard let meta = try txn.openDatabase(named: "meta"), let entities = try txn.openDatabase(named: "entities"),
                      let queue = try txn.openDatabase(named: "queue"), let errors = try txn.openDatabase(named: "errors")
                else { throw OfflineODataError(.storage, "cannot create the store's databases") }
                return (meta, entities, queue, errors)
            }
            let stored = try environment.read { txn in try txn.value(forKey: Self.keyCheckKey, in: metaDB) }
            cipher = try Self.keyCheck(stored: stored, parameters: parameters, directory: directory, environment: environment, meta: metaDB)
            meta = metaDB
            entities = entitiesDB
            queue = queueDB
            errors = errorsDB
        } catch {
            environment.close()
            throw error
        }
    }

    private static func keyCheck(stored: [UInt8]?, parameters: OfflineODataParameters, directory: String,
                                 environment: LMDBEnvironment, meta: LMDBDatabase) throws -> StoreCipher {
        let keyStore = parameters.keyStore ?? FileKeyStore(path: directory + ".key")
        if let stored {
            if stored == plaintextMarker {
                guard parameters.storeEncryptionKey == nil else {
                    throw OfflineODataError(.encryptionMismatch, "the store is not encrypted but an encryption key was given")
                }
                return try StoreCipher(secret: nil)
            }
            let envelope: KeyEnvelope
            do { envelope = try KeyEnvelope(serialized: stored) } catch {
                throw OfflineODataError(.storage, "the store's key-check record is corrupt")
            }
            let passphrase: String
            if let key = parameters.storeEncryptionKey {
                passphrase = key
            } else if parameters.disableDefaultEncryptionKey {
                throw OfflineODataError(.encryptionMismatch, "the store is encrypted; give its storeEncryptionKey")
            } else if let key = try? keyStore.loadKey() {
                passphrase = key
            } else {
                throw OfflineODataError(.wrongKey, "the store is encrypted with a default key but the key store holds none")
            }
            do {
                return try StoreCipher(secret: try envelope.open(passphrase: passphrase))
            } catch let error as CacheError where error == CacheError.wrongKey {
                throw OfflineODataError(.wrongKey, "the encryption key does not open this store; nothing was changed")
            }
        }
        // A new store.
        let passphrase: String?
        if let key = parameters.storeEncryptionKey {
            passphrase = key
        } else if parameters.disableDefaultEncryptionKey {
            passphrase = nil
        } else if let key = try keyStore.loadKey() {
            passphrase = key
        } else {
            let key = FileKeyStore.generateKey()
            try keyStore.saveKey(key)
            passphrase = key
        }
        let record: [UInt8]
        let cipher: StoreCipher
        if let passphrase {
            let secret = StoreCipher.randomSecret()
            record = Array(try KeyEnvelope.seal(secret: secret, passphrase: passphrase, derivation: parameters.keyDerivation).serialized)
            cipher = try StoreCipher(secret: secret)
        } else {
            record = plaintextMarker
            cipher = try StoreCipher(secret: nil)
        }
        try environment.write { txn in try txn.setValue(record, forKey: keyCheckKey, in: meta) }
        return cipher
    }

    func close() {
        environment.close()
    }

    // MARK: Keys

    func entityKey(set: String, key: String) -> [UInt8] {
        cipher.setPrefix(set) + cipher.hash("entity:" + set + key, count: 16)
    }

    static func queueKey(_ id: Int64) -> [UInt8] {
        withUnsafeBytes(of: UInt64(bitPattern: id).bigEndian) { Array($0) }
    }

    // MARK: Reads

    func configuration() throws -> (StoreConfiguration, StoreCounters)? {
        try environment.read { txn -> (StoreConfiguration, StoreCounters)? in
            guard let config = try txn.value(forKey: Self.configKey, in: meta) else { return nil }
            let counters = try txn.value(forKey: Self.countersKey, in: meta)
            return (try StoreConfiguration.decode(try cipher.open(config, key: Self.configKey)),
                    try counters.map { bytes throws(OfflineODataError) in try StoreCounters.decode(try cipher.open(bytes, key: Self.countersKey)) } ?? StoreCounters())
        }
    }

    /// The record of one entity, tombstones included.
    func record(set: String, key: String) throws -> EntityRecord? {
        if let cached = cache.withLock({ $0[set] }) { return cached[key] }
        let lmdbKey = entityKey(set: set, key: key)
        guard let sealed = try environment.read({ txn in try txn.value(forKey: lmdbKey, in: entities) }) else { return nil }
        return try EntityRecord.decode(try cipher.open(sealed, key: lmdbKey))
    }

    /// The records of an entity set (tombstones included), unordered.
    func records(in set: String) throws -> [String: EntityRecord] {
        if let cached = cache.withLock({ $0[set] }) { return cached }
        let prefix = cipher.setPrefix(set)
        let loaded = try environment.read { txn -> [String: EntityRecord] in
            try txn.withCursor(in: entities) { cursor in
                var result: [String: EntityRecord] = [:]
                var entry = try cursor.seek(atLeast: prefix)
                while let (key, value) = entry, key.starts(with: prefix) {
                    let record = try EntityRecord.decode(try cipher.open(value, key: key))
                    result[record.key] = record
                    entry = try cursor.next()
                }
                return result
            }
        }
        cache.withLock { $0[set] = loaded }
        return loaded
    }

    /// The visible records of a set in key order (the order a producer returns them in), and
    /// their JSON form; cached until the next write to the set.
    func visibleRecords(in set: String, type: ServiceModel.EntityType) throws -> (records: [EntityRecord], json: [JSONObject]) {
        if let cached = ordered.withLock({ $0[set] }) { return cached }
        let keys = type.key
        let sorted = try records(in: set).values.filter(\.isVisible).sorted { lhs, rhs in
            for key in keys {
                let order = EntityStore.compare(lhs.entity[key] ?? .null, rhs.entity[key] ?? .null)
                if order != 0 { return order < 0 }
            }
            return lhs.order < rhs.order
        }
        let result = (records: sorted, json: sorted.map(\.json))
        ordered.withLock { $0[set] = result }
        return result
    }

    static func compare(_ lhs: JSONValue, _ rhs: JSONValue) -> Int {
        switch (lhs, rhs) {
        case (.int(let a), .int(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.string(let a), .string(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.double(let a), .double(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.int(let a), .double(let b)): return Double(a) < b ? -1 : (Double(a) > b ? 1 : 0)
        case (.double(let a), .int(let b)): return a < Double(b) ? -1 : (a > Double(b) ? 1 : 0)
        default: return 0
        }
    }

    /// Every record of every set, tombstones included (for undo and checks).
    func allRecords() throws -> [EntityRecord] {
        try environment.read { txn in
            try txn.withCursor(in: entities) { cursor in
                var result: [EntityRecord] = []
                while let (key, value) = try cursor.next() {
                    result.append(try EntityRecord.decode(try cipher.open(value, key: key)))
                }
                return result
            }
        }
    }

    /// The queued requests in queue order.
    func queuedRequests() throws -> [QueuedRequest] {
        try environment.read { txn in
            try txn.withCursor(in: queue) { cursor in
                var result: [QueuedRequest] = []
                while let (key, value) = try cursor.next() {
                    result.append(try QueuedRequest.decode(try cipher.open(value, key: key)))
                }
                return result
            }
        }
    }

    /// The ErrorArchive entries in request order.
    func errorEntries() throws -> [JSONObject] {
        try environment.read { txn in
            try txn.withCursor(in: errors) { cursor in
                var result: [JSONObject] = []
                while let (key, value) = try cursor.next() {
                    guard let object = (try? JSON.parse(try cipher.open(value, key: key)))?.objectValue else {
                        throw OfflineODataError(.storage, "an ErrorArchive record is malformed")
                    }
                    result.append(object)
                }
                return result
            }
        }
    }

    func queueCount() throws -> Int {
        try environment.read { txn in try txn.count(in: queue) }
    }

    func errorCount() throws -> Int {
        try environment.read { txn in try txn.count(in: errors) }
    }

    // MARK: Writes

    /// Changes collected by one write transaction.
    final class Changes {
        fileprivate let store: EntityStore
        fileprivate let txn: LMDBTransaction
        fileprivate var records: [EntityRecord] = []
        fileprivate var removed: [(String, String)] = []
        fileprivate var wiped = false

        fileprivate init(store: EntityStore, txn: LMDBTransaction) {
            self.store = store
            self.txn = txn
        }

        func put(_ record: EntityRecord) throws {
            let key = store.entityKey(set: record.set, key: record.key)
            try txn.setValue(try store.cipher.seal(record.encoded(), key: key), forKey: key, in: store.entities)
            records.append(record)
        }

        /// The record of one entity as this transaction sees it.
        func current(set: String, key: String) throws -> EntityRecord? {
            let lmdbKey = store.entityKey(set: set, key: key)
            guard let sealed = try txn.value(forKey: lmdbKey, in: store.entities) else { return nil }
            return try EntityRecord.decode(try store.cipher.open(sealed, key: lmdbKey))
        }

        func remove(set: String, key: String) throws {
            _ = try txn.removeValue(forKey: store.entityKey(set: set, key: key), in: store.entities)
            removed.append((set, key))
        }

        func enqueue(_ request: QueuedRequest) throws {
            let key = EntityStore.queueKey(request.id)
            try txn.setValue(try store.cipher.seal(request.encoded(), key: key), forKey: key, in: store.queue)
        }

        /// The queued requests with an ID above `id`, as this transaction sees them, in queue order.
        func queuedRequests(after id: Int64) throws -> [QueuedRequest] {
            try txn.withCursor(in: store.queue) { cursor in
                var result: [QueuedRequest] = []
                var entry = try cursor.seek(atLeast: EntityStore.queueKey(id + 1))
                while let (key, value) = entry {
                    result.append(try QueuedRequest.decode(try store.cipher.open(value, key: key)))
                    entry = try cursor.next()
                }
                return result
            }
        }

        func dequeue(_ id: Int64) throws {
            _ = try txn.removeValue(forKey: EntityStore.queueKey(id), in: store.queue)
        }

        func archiveError(_ entry: JSONObject, id: Int64) throws {
            let key = EntityStore.queueKey(id)
            try txn.setValue(try store.cipher.seal(JSON.serialize(.object(entry)), key: key), forKey: key, in: store.errors)
        }

        func removeError(_ id: Int64) throws {
            _ = try txn.removeValue(forKey: EntityStore.queueKey(id), in: store.errors)
        }

        func clearQueue() throws {
            try txn.removeAll(in: store.queue)
        }

        func wipeEntities() throws {
            try txn.removeAll(in: store.entities)
            try txn.removeAll(in: store.errors)
            records.removeAll()
            removed.removeAll()
            wiped = true
        }

        func putConfiguration(_ configuration: StoreConfiguration) throws {
            try txn.setValue(try store.cipher.seal(configuration.encoded(), key: EntityStore.configKey), forKey: EntityStore.configKey, in: store.meta)
        }

        /// The counters as this transaction sees them.
        func currentCounters() throws -> StoreCounters {
            guard let sealed = try txn.value(forKey: EntityStore.countersKey, in: store.meta) else { return StoreCounters() }
            return try StoreCounters.decode(try store.cipher.open(sealed, key: EntityStore.countersKey))
        }

        func putCounters(_ counters: StoreCounters) throws {
            try txn.setValue(try store.cipher.seal(counters.encoded(), key: EntityStore.countersKey), forKey: EntityStore.countersKey, in: store.meta)
        }
    }

    /// Runs `body` in one write transaction and, once it committed, brings the cache up to date.
    func write<R: Sendable>(_ body: @escaping @Sendable (Changes) throws -> R) async throws -> R {
        let (result, records, removed, wiped) = try await environment.write { txn in
            let changes = Changes(store: self, txn: txn)
            let result = try body(changes)
            return (result, changes.records, changes.removed.map { [$0.0, $0.1] }, changes.wiped)
        }
        ordered.withLock { ordered in
            if wiped { ordered.removeAll() }
            for pair in removed { ordered[pair[0]] = nil }
            for record in records { ordered[record.set] = nil }
        }
        cache.withLock { cache in
            if wiped { cache.removeAll() }
            for pair in removed { cache[pair[0]]?[pair[1]] = nil }
            for record in records where cache[record.set] != nil { cache[record.set]?[record.key] = record }
        }
        return result
    }

    /// Drops the decoded cache (the next read decodes from LMDB again).
    func dropCache() {
        cache.withLock { $0.removeAll() }
        ordered.withLock { $0.removeAll() }
    }
}
