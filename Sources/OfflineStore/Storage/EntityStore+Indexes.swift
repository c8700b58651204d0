import ODataCore
import SQLCipher

/// The indexes of the entity tables: which each table has, and building the missing ones.
///
/// A table has its primary key (`"$key"`) from the start. Its other indexes — the natural order, the flagged rows, the
/// secondary indexes its defining queries declare, the foreign keys navigation narrows by — are made with the table, except
/// during the initial download (``EntityStore/deferringIndexes``): then the rows go in with the key alone, and
/// ``EntityStore/buildMissingIndexes(model:)`` makes each index afterwards in one pass (a sort of the table) instead of
/// an insert into every index for every row. Each index is built in a write transaction of its own, so a process
/// killed in the middle leaves each one built or not at all; every `open()` of a downloaded store builds those
/// still missing.
extension EntityStore {
    /// The indexes `table` should have beyond its key: name and `CREATE INDEX IF NOT EXISTS` statement — the natural
    /// order, the flagged rows (``EntityTable/flaggedIndexSQL``), then the declared properties of its set and its foreign
    /// keys that have a column, each once.
    func indexes(of table: EntityTable, model: ServiceModel?) -> [(name: String, sql: String)] {
        let key = model?.entityType(ofSet: table.set)?.key ?? []
        var result = [(name: table.naturalIndexName, sql: table.naturalIndexSQL(key: key)),
                      (name: table.flaggedIndexName, sql: table.flaggedIndexSQL)]
        for property in wantedIndexes.withLock({ $0[table.set] ?? [] }) + DeclaredIndexes.foreignKeys(of: table.set, model: model) {
            let name = table.indexName(property)
            guard !result.contains(where: { $0.name == name }), let sql = table.indexSQL(property: property, key: key) else { continue }
            result.append((name, sql))
        }
        return result
    }

    /// The names of the indexes the entity tables have.
    func existingIndexNames() throws -> Set<String> {
        try reading("the indexes") { connection in
            // The entity tables' indexes (the ErrorArchive's and the staging table's are made with their tables).
            let select = try connection.cachedStatement("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN (SELECT table_name FROM entity_sets)")
            defer { select.reset() }
            var result: Set<String> = []
            while try select.step() { result.insert(select.text(at: 0)) }
            return result
        }
    }

    /// Builds the indexes of every table that are missing (``indexes(of:model:)``), each in a write transaction of
    /// its own on the writer thread (``write(_:)``: an index over a million rows does not hold a thread of the
    /// cooperative pool).
    ///
    /// - Parameter model: The service's model, when the caller has it parsed (else it is read from the configuration).
    /// - Returns: How many were built.
    /// - Throws: `OfflineODataError.storage`.
    @discardableResult
    func buildMissingIndexes(model: ServiceModel? = nil) async throws -> Int {
        let tables = allTables()
        guard !tables.isEmpty else { return 0 }
        let existing = try existingIndexNames()
        let model = try model ?? reading("the configuration") { connection in try currentModel(connection) }
        var built = 0
        for table in tables {
            for index in indexes(of: table, model: model) where !existing.contains(index.name) {
                let sql = index.sql
                try await write { changes in try changes.createIndex(sql) }
                built += 1
            }
        }
        return built
    }

    /// Adopts the secondary indexes the defining queries declare and builds every index of the existing tables that
    /// is missing: those declared since the last open, and those a process killed before it built them left out.
    ///
    /// - Parameters:
    ///   - wanted: Entity set → properties (``DeclaredIndexes/wanted(_:model:serviceRoot:)``).
    ///   - model: The service's model.
    /// - Throws: `OfflineODataError.invalidRequest` for a declared property that has no column in its set's table;
    ///   `.storage`.
    func declareIndexes(_ wanted: [String: [String]], model: ServiceModel?) async throws {
        wantedIndexes.withLock { $0 = wanted }
        for (set, properties) in wanted.sorted(by: { $0.key < $1.key }) {
            guard let table = table(set) else { continue }
            for property in properties where table.column(property) == nil {
                throw OfflineODataError(.invalidRequest, "the index '\(property)' names no primitive property of \(set)")
            }
        }
        try await buildMissingIndexes(model: model)
    }
}

extension EntityStore.Changes {
    /// Creates the secondary indexes `wanted` names (entity set → properties) on the tables that exist, where
    /// they are missing (tables made later get theirs when they are made).
    ///
    /// - Throws: `OfflineODataError.invalidRequest` for a property that has no column (not a primitive
    ///   property of the set's entity type).
    func ensureIndexes(_ wanted: [String: [String]]) throws {
        let model = try store.currentModel(connection)
        for (set, properties) in wanted.sorted(by: { $0.key < $1.key }) {
            guard let table = tables[set] else { continue }
            let key = model?.entityType(ofSet: set)?.key ?? []
            for property in properties {
                guard let sql = table.indexSQL(property: property, key: key) else {
                    throw OfflineODataError(.invalidRequest, "the index '\(property)' names no primitive property of \(set)")
                }
                try connection.execute(sql)
            }
        }
    }
}
