import Foundation
import ODataCore
import ODataTyped
import SQLCipher
import Synchronization
import ODataKeys

/// The storage of an offline store: one SQLCipher database (`store.db` in the store's directory, keyed with
/// ``StoreKeyCheck/databaseKey(secret:)``; plaintext only for a store without encryption) beside its key-check
/// record (`keycheck`).
///
/// Tables: `meta` (the configuration and counters), `queue` (the request queue, by request ID), `error_archive`,
/// `entity_sets` (the catalog: which table holds which entity set, and its columns) and one table per entity set
/// (``EntityTable``: the key, a column per primitive property, the rest of the record), and the staging table of a
/// download under way, made when a download first needs it (`EntityStore+Staging.swift`). An entity and its queue
/// entry are written in one transaction. `PRAGMA user_version` is the format (``format``); a store of a newer
/// format is refused, and so is a store of the LMDB format that development builds wrote before SQLCipher
/// (``refuseLMDBFormat(in:)``; that format was never released).
///
/// Two connections: one writes (on the store's writer thread, ``write(_:)``: a writing task suspends and no
/// thread of the cooperative pool waits for the disk; transactions serialized by its lock), one reads; with the write-ahead log a
/// read sees the last commit while a write goes on. Queries read rows through ``select(_:)`` and ``count(_:)``
/// with the SQL the planner (`Query/`) made. Nothing reads a whole set into memory: sync reads the rows it needs
/// by key, by a column, or through the partial index of flagged rows (`EntityStore+Flagged.swift`).
final class EntityStore: Sendable {
    /// The format this code writes: 1 was LMDB, 2 is SQLCipher with every entity table found by `"$key"`, 3 adds
    /// tables whose integer key property is the row ID (``EntityTable/integerKey``), 4 keeps the CSDL in a `meta` row
    /// of its own (`metadata`, written when it changes) instead of inside the configuration record, which the initial
    /// download writes at every page. A format-2 or -3 store is format 4 as it is (its tables keep their layout;
    /// tables it makes from now on get the new one; a configuration that holds the CSDL is read as it is and the
    /// next configuration write moves it): open marks it 4. 5 indexes the ErrorArchive by its affected entity (a
    /// column `affected` beside each entry; open adds it to an older store and fills it from the entries). 6 keys the
    /// media tables by entity and property (stream properties beside `$value`; open gives an older store's rows the
    /// property `''`, `$value`).
    static let format = 6
    /// The oldest format this code opens in place.
    static let oldestFormat = 2
    static func databasePath(in directory: String) -> String { directory + "/store.db" }

    let directory: String
    let isEncrypted: Bool
    /// The database key and page size, for the short-lived connection a media resource is read through (`+Media`).
    let mediaAccess: (key: [UInt8]?, pageSize: Int)
    private let writer: LockedValue<SQLCipherConnection?>
    /// Where ``write(_:)`` runs its transactions, one after another: a task that writes suspends, and no thread of
    /// Swift's cooperative pool waits for the disk, for the log's sync or for another writer's transaction; the
    /// transactions run at the background threads' lower priority (``OfflineODataParameters/backgroundExecutor``).
    private let writerQueue: BackgroundQueue
    private let reader: ReadingConnection
    /// The tables of the entity sets, as committed.
    private let tables: LockedValue<[String: EntityTable]>
    /// The model the tables of new entity sets are made from: the CSDL it was parsed from, and the model.
    private let model = LockedValue<(metadata: String, model: ServiceModel?)?>(nil)
    /// The documents the `$metadata` references that the parameters give (``OfflineODataParameters/metadataReferences``).
    let metadataReferences: [Data]
    /// The secondary indexes the defining queries declare (entity set → properties); new tables get them too.
    let wantedIndexes = LockedValue<[String: [String]]>([:])
    /// While set (by the initial download), new tables get no index beyond their key and configuration writes create
    /// none: ``buildMissingIndexes(model:)`` makes them afterwards, each in one pass over its table.
    let deferringIndexes = LockedValue(false)
    /// The most records a download held in memory at once since its staging began (``beginStaging()``): a page it
    /// spooled, or a chunk of the staging table or of a set it read back. What a test proves bounded memory with.
    let heldRecordsPeak = LockedValue(0)
    /// The entity rows written or removed since the store opened (``Changes/put(_:)``, ``Changes/remove(set:key:)``).
    /// What a test proves a write-free merge of unchanged entities with.
    let entityWrites = LockedValue(0)
    /// The times the CSDL was written since the store opened (``Changes/putConfiguration(_:)``): once per change of
    /// the service's `$metadata`, not once per page of a download. What a test proves it with.
    let metadataWrites = LockedValue(0)
    /// The observers of the store's data, signalled after each commit (``ChangeFeed``).
    let changeFeed = ChangeFeed()

    /// Opens (creating when new) the database of `directory` with the store's secret. A new database gets pages of
    /// `pageSize` bytes; an existing one keeps the size it was made with (see ``connect(path:key:budget:pageSize:)``).
    init(
        directory: String, secret: Data?, cacheBudget: Int, pageSize: Int = SQLCipherConnection.defaultPageSize,
        metadataReferences: [Data] = [], background: BackgroundExecutor = .shared
    ) throws {
        writerQueue = BackgroundQueue(executor: background)
        self.metadataReferences = metadataReferences
        self.directory = directory
        isEncrypted = secret != nil
        let key = secret.map(StoreKeyCheck.databaseKey(secret:))
        let path = Self.databasePath(in: directory)
        // The reader gets most of the budget: it reads whole sets; the writer's pages are mostly new ones.
        let writerConnection = try Self.connect(path: path, key: key, budget: cacheBudget / 4, pageSize: pageSize)
        mediaAccess = (key, writerConnection.pageSize)
        do {
            try Self.prepareSchema(writerConnection, directory: directory)
            let readerConnection = try Self.connect(path: path, key: key, budget: cacheBudget - cacheBudget / 4,
                                                    pageSize: writerConnection.pageSize)
            writer = LockedValue(writerConnection)
            reader = ReadingConnection(readerConnection)
            tables = LockedValue(try Self.loadCatalog(readerConnection))
        } catch {
            writerConnection.close()
            throw Self.storageError(error, "cannot open the store at \(directory)")
        }
    }

    /// An `OfflineODataError` for any error: itself when it is one, else `.storage` with what SQLite said.
    static func storageError(_ error: any Error, _ context: String) -> OfflineODataError {
        if let error = error as? OfflineODataError { return error }
        if let error = error as? SQLCipherError { return OfflineODataError(.storage, "\(context): \(error.message)", underlying: error) }
        return OfflineODataError(.storage, "\(context): \(error)", underlying: error)
    }

    func close() {
        changeFeed.close()
        reader.close()
        writer.withLock { $0?.close(); $0 = nil }
    }

    /// Runs `body` with the reading connection in a read transaction that sees every commit made before it began
    /// (``ReadingConnection``; again on the same thread when a read is under way: an evaluator stepping through a
    /// query's rows reads related entities, in the same transaction).
    func reading<R>(_ what: @autoclosure () -> String, _ body: (SQLCipherConnection) throws -> R) throws -> R {
        do {
            return try reader.read(body)
        } catch {
            throw Self.storageError(error, "cannot read \(what())")
        }
    }

    func table(_ set: String) -> EntityTable? { tables.withLock { $0[set] } }

    /// The tables of every entity set, as committed, by table name.
    func allTables() -> [EntityTable] { tables.withLock { Array($0.values) }.sorted { $0.name < $1.name } }

    // MARK: Writes

    /// Changes collected by one write transaction.
    final class Changes {
        let store: EntityStore
        let connection: SQLCipherConnection
        fileprivate var wiped = false
        /// The catalog as this transaction sees it, published when it commits.
        fileprivate(set) var tables: [String: EntityTable]
        fileprivate var catalogChanged = false
        /// What this transaction wrote, for the observers (``ChangeFeed``).
        fileprivate var committed = CommittedChange()
        /// The statement of ``putDownloaded(_:)`` for the table it wrote last (a page's records mostly share one).
        private var lastInsert: (table: String, statement: SQLCipherStatement)?

        fileprivate init(store: EntityStore, connection: SQLCipherConnection, tables: [String: EntityTable]) {
            self.store = store
            self.connection = connection
            self.tables = tables
        }

        /// The table of `set`, created (with a column per primitive property of the current model) when new.
        private func table(for set: String) throws -> EntityTable {
            if let table = tables[set] { return table }
            let model = try store.currentModel(connection)
            let table = EntityTable.make(set: set, model: model, taken: Set(tables.values.map { $0.name.lowercased() }))
            try connection.execute(table.createSQL)
            if !store.deferringIndexes.withLock({ $0 }) {
                for index in store.indexes(of: table, model: model) { try connection.execute(index.sql) }
            }
            let insert = try connection.cachedStatement("INSERT INTO entity_sets (name, table_name, columns) VALUES (?, ?, ?)")
            try insert.bind(.text(set), at: 1)
            try insert.bind(.text(table.name), at: 2)
            try insert.bind(.blob(table.encodedColumns), at: 3)
            _ = try insert.step()
            tables[set] = table
            catalogChanged = true
            committed.wrote(set: set)
            return table
        }

        func put(_ record: EntityRecord) throws {
            store.entityWrites.withLock { $0 += 1 }
            committed.wrote(set: record.set, key: record.key)
            let table = try table(for: record.set)
            let insert = try connection.cachedStatement(table.insertSQL)
            let flags = try table.bind(record, to: insert)
            _ = try insert.step()
            if let flagged = table.adding(flags) { try replaceCatalogRow(flagged) }
        }

        /// Writes a downloaded record: inserted when its key is new (one statement, no read before it), else merged
        /// into the stored record (``EntityRecord/merging(downloaded:)``: a second defining query or an `$expand` brought it).
        func putDownloaded(_ record: EntityRecord) throws {
            committed.wrote(set: record.set, key: record.key)
            let table = try table(for: record.set)
            let insert: SQLCipherStatement
            if let last = lastInsert, last.table == table.name {
                insert = last.statement
                insert.reset()
            } else {
                insert = try connection.cachedStatement(table.insertNewSQL)
                lastInsert = (table.name, insert)
            }
            let flags = try table.bind(record, to: insert)
            _ = try insert.step()
            guard connection.changes == 1 else {
                try put(try current(set: record.set, key: record.key).map { $0.merging(downloaded: record) } ?? record)
                return
            }
            if let flagged = table.adding(flags) { try replaceCatalogRow(flagged) }
        }

        /// Runs one `CREATE INDEX` (of ``EntityStore/indexes(of:model:)``).
        func createIndex(_ sql: String) throws {
            try connection.execute(sql)
        }

        /// Writes a table's catalog row again (its columns' flags changed).
        private func replaceCatalogRow(_ table: EntityTable) throws {
            let update = try connection.cachedStatement("UPDATE entity_sets SET columns = ? WHERE name = ?")
            try update.bind(.blob(table.encodedColumns), at: 1)
            try update.bind(.text(table.set), at: 2)
            _ = try update.step()
            tables[table.set] = table
            catalogChanged = true
            committed.wrote(set: table.set)
        }

        /// The record of one entity as this transaction sees it.
        func current(set: String, key: String) throws -> EntityRecord? {
            guard let table = tables[set] else { return nil }
            return try EntityStore.record(key: key, table: table, connection)
        }

        func remove(set: String, key: String) throws {
            store.entityWrites.withLock { $0 += 1 }
            committed.wrote(set: set, key: key)
            if let table = tables[set] {
                let delete = try connection.cachedStatement(table.deleteSQL)
                try table.bindKey(key, to: delete)
                _ = try delete.step()
            }
            try removeMedia(set: set, key: key)
        }

        func enqueue(_ request: QueuedRequest) throws {
            committed.wrote(set: LocalQuery.requestQueueSet)
            let insert = try connection.cachedStatement("INSERT OR REPLACE INTO queue (id, request) VALUES (?, ?)")
            try insert.bind(.integer(request.id), at: 1)
            try insert.bind(.blob(request.encoded()), at: 2)
            _ = try insert.step()
        }

        /// The queued requests with an ID above `id`, as this transaction sees them, in queue order.
        func queuedRequests(after id: Int64) throws -> [QueuedRequest] {
            try EntityStore.queuedRequests(after: id, connection)
        }

        func dequeue(_ id: Int64) throws {
            committed.wrote(set: LocalQuery.requestQueueSet)
            let delete = try connection.cachedStatement("DELETE FROM queue WHERE id = ?")
            try delete.bind(.integer(id), at: 1)
            _ = try delete.step()
        }

        func archiveError(_ entry: ErrorArchiveEntry) throws {
            committed.wrote(set: LocalQuery.errorArchiveSet)
            let insert = try connection.cachedStatement("INSERT OR REPLACE INTO error_archive (id, entry, affected) VALUES (?, ?, ?)")
            try insert.bind(.integer(entry.requestID), at: 1)
            try insert.bind(.blob(JSON.serialize(entry.jsonValue(for: .v4))), at: 2)
            try insert.bind(.text(entry.affectedEntityReference), at: 3)
            _ = try insert.step()
        }

        func removeError(_ id: Int64) throws {
            committed.wrote(set: LocalQuery.errorArchiveSet)
            let delete = try connection.cachedStatement("DELETE FROM error_archive WHERE id = ?")
            try delete.bind(.integer(id), at: 1)
            _ = try delete.step()
        }

        func clearQueue() throws {
            committed.wrote(set: LocalQuery.requestQueueSet)
            try connection.execute("DELETE FROM queue")
        }

        /// Removes every entity (their tables go: the next download makes them from its `$metadata`) and the ErrorArchive.
        func wipeEntities() throws {
            lastInsert = nil
            connection.clearStatementCache()
            for table in tables.values { try connection.execute(table.dropSQL) }
            try connection.execute("DELETE FROM entity_sets; DELETE FROM error_archive; DELETE FROM media; DELETE FROM media_chunks")
            tables.removeAll()
            catalogChanged = true
            wiped = true
            committed.all = true
        }

        func putConfiguration(_ configuration: StoreConfiguration) throws {
            try putMeta("config", configuration.encoded())
            // The CSDL (megabytes for some SAP services) is written when it changes, not with every page's
            // configuration: a comparison reads what is stored, a write would encrypt and log all of it again.
            let metadata = Array(configuration.metadata.utf8)
            if try EntityStore.metaValue("metadata", connection) != metadata {
                try putMeta("metadata", metadata)
                store.metadataWrites.withLock { $0 += 1 }
            }
            store.adopt(metadata: configuration.metadata)
            let wanted = try DeclaredIndexes.wanted(configuration.definingQueries, model: try store.currentModel(connection),
                                                    serviceRoot: configuration.serviceRoot)
            store.wantedIndexes.withLock { $0 = wanted }
            if !store.deferringIndexes.withLock({ $0 }) { try ensureIndexes(wanted) }
        }

        /// The counters as this transaction sees them.
        func currentCounters() throws -> StoreCounters {
            guard let bytes = try EntityStore.metaValue("counters", connection) else { return StoreCounters() }
            return try StoreCounters.decode(bytes)
        }

        func putCounters(_ counters: StoreCounters) throws {
            try putMeta("counters", counters.encoded())
        }

        func putMeta(_ name: String, _ value: [UInt8]) throws {
            let insert = try connection.cachedStatement("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)")
            try insert.bind(.text(name), at: 1)
            try insert.bind(.blob(value), at: 2)
            _ = try insert.step()
        }
    }

    /// Notes the CSDL of the configuration: the tables of entity sets made from now on follow it.
    private func adopt(metadata: String) {
        model.withLock { current in
            if current?.metadata != metadata { current = (metadata, nil) }
        }
    }

    /// The model new tables are made from: parsed from the CSDL last adopted, or from the stored configuration.
    ///
    /// - Returns: The model, or nil when the store holds no configuration yet.
    /// - Throws: `OfflineODataError.invalidMetadata` when the stored CSDL does not parse (a table made without
    ///   its model would lose its columns, so the write that needs it fails instead).
    func currentModel(_ connection: SQLCipherConnection) throws -> ServiceModel? {
        let metadata: String
        if let (adopted, parsed) = model.withLock({ $0 }) {
            if let parsed { return parsed }
            metadata = adopted
        } else {
            guard let (configuration, _) = try Self.configuration(connection) else { return nil }
            metadata = configuration.metadata
        }
        let parsed: ServiceModel
        do {
            parsed = try ServiceModel.parse(Data(metadata.utf8), references: metadataReferences)
        } catch {
            throw OfflineODataError(.invalidMetadata, "the store's $metadata does not parse: \(error.message)")
        }
        model.withLock { $0 = (metadata, parsed) }
        return parsed
    }

    /// Runs `body` in one write transaction on the store's writer thread and, once it committed, publishes the
    /// catalog it changed and the change (``ChangeFeed/publish(_:)``, on that thread too).
    ///
    /// The calling task suspends until the transaction committed or failed; its thread goes on with other tasks.
    /// Writes run one after another in the order they were called.
    func write<R: Sendable>(_ body: @escaping @Sendable (Changes) throws -> R) async throws -> R {
        try await writerQueue.run { try self.writeBlocking(body) }
    }

    /// Whether the calling code runs on the store's writer thread (inside a ``write(_:)``'s body).
    var isOnWriterThread: Bool { writerQueue.isCurrent }

    /// ``write(_:)`` on the calling thread, which it blocks for the transaction (and for a write under way on
    /// another thread): for synchronous callers — opening, tests — never from a task that others share a thread with.
    func writeBlocking<R>(_ body: (Changes) throws -> R) throws -> R {
        let (result, wiped, catalog, committed) = try writer.withLock { connection in
            guard let connection else { throw OfflineODataError(.notOpen, "the offline store is closed") }
            let changes = Changes(store: self, connection: connection, tables: tables.withLock { $0 })
            reader.releaseIfIdle()
            do {
                let result = try connection.transaction { try body(changes) }
                reader.noteCommit()
                return (result, changes.wiped, changes.catalogChanged ? changes.tables : nil, changes.committed)
            } catch {
                if changes.catalogChanged { connection.clearStatementCache() }
                throw Self.storageError(error, "cannot write the store")
            }
        }
        if let catalog {
            tables.withLock { $0 = catalog }
            if wiped { reader.withConnection { $0?.clearStatementCache() } }
        }
        changeFeed.publish(committed)
        return result
    }

    /// Runs `body` with the writing connection outside any transaction (for checks and tests).
    func withWriter<R>(_ body: (SQLCipherConnection) throws -> R) throws -> R {
        try writer.withLock { connection in
            guard let connection else { throw OfflineODataError(.notOpen, "the offline store is closed") }
            reader.releaseIfIdle()
            defer { reader.noteCommit() }
            return try body(connection)
        }
    }
}
