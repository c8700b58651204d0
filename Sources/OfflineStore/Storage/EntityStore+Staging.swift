import ODataCore
import SQLCipher

/// What a download (`OfflineODataProvider.download(definingQueries:)`) read, kept in the staging table until it is
/// applied: memory holds a page (or a chunk), never the download.
///
/// The table `"download:staging"` lives in the store's database, so it is encrypted as every table there (nothing
/// goes to a temporary file: the connections keep `temp_store = MEMORY`). It is made when a download first needs it
/// (`CREATE TABLE IF NOT EXISTS`: no format change; a version that does not know it leaves it alone) and emptied
/// when a download begins (``beginStaging()``): what a killed or failed download left is never read. Each page goes
/// in with its own small write transaction (``stage(_:kind:removals:links:)``); the entity tables are written only
/// by the one transaction that applies the download, which reads the staging table back in chunks of
/// ``stagingChunk`` rows in the order they came and empties it (``Changes/clearStaging()``).
///
/// Rows: `kind` (``StagedKind``), the entity's set and key, the defining query of a removal or link change, and `value`: an entity's record (``EntityRecord/encodedRest(entity:etag:)``,
/// merged by key and kind as pages come: ``EntityRecord/merging(downloaded:)``), nothing for a removal, a link
/// change. Two indexes: `(set, key, kind)` finds an entity's row, `(kind)` (with the row ID) reads a kind in order.
extension EntityStore {
    /// What a staging row holds.
    enum StagedKind: String, Sendable {
        /// An entity a full read brought (it replaces the local copy).
        case full = "f"
        /// A changed entity of a delta (merged into the local copy unless a full read of the download brought it too).
        case delta = "d"
        /// An entity a delta removed from a defining query.
        case removal = "r"
        /// An OData 4.0 added or deleted link of a delta.
        case link = "l"
    }

    /// A `@removed` member of a delta: the defining query no longer holds the entity.
    struct StagedRemoval: Sendable {
        var query: String
        var set: String
        var key: String
    }

    /// An OData 4.0 added or deleted link of a delta answer (§15.5.2), resolved: the source entity's navigation
    /// `relationship` gains or loses `target` (a reference `Set(key)`; `nil` for a deleted link without a target: all go).
    struct StagedLink: Sendable {
        /// The defining query whose delta brought it.
        var query: String
        var set: String
        var key: String
        var relationship: String
        var target: String?
        var isRemoved: Bool
    }

    /// Rows read back at once by the apply (and records of a set by the walk of holders).
    static let stagingChunk = 100
    static let stagingTable = "\"download:staging\""

    /// Creates the staging table when missing, empties it (a killed or failed download's rows are never read) and
    /// starts ``heldRecordsPeak`` over.
    func beginStaging() async throws {
        heldRecordsPeak.withLock { $0 = 0 }
        try await write { changes in try changes.resetStaging() }
    }

    /// Notes that a download holds `count` records in memory at once (``heldRecordsPeak``).
    func noteHeld(_ count: Int) {
        heldRecordsPeak.withLock { $0 = max($0, count) }
    }

    /// Spools one page in a write transaction of its own: `records` (each merged into the row of its entity and
    /// kind when one is there), then the delta's removals and link changes, in order.
    func stage(_ records: [EntityRecord], kind: StagedKind, removals: [StagedRemoval] = [], links: [StagedLink] = []) async throws {
        noteHeld(records.count)
        try await write { changes in
            for record in records { try changes.stage(record, kind: kind) }
            for removal in removals {
                try changes.insertStaged(kind: .removal, set: removal.set, key: removal.key, query: removal.query, value: [])
            }
            for link in links {
                let value = JSONObject([("r", .string(link.relationship)), ("t", link.target.map(JSONValue.string) ?? .null),
                                        ("x", .bool(link.isRemoved))])
                try changes.insertStaged(kind: .link, set: link.set, key: link.key, query: link.query, value: JSON.serialize(.object(value)))
            }
        }
    }

    /// Drops the removals and link changes a delta of `query` staged: its delta link expired part way (410), the
    /// query is read in full instead. (The changed entities it staged stay, as they always did: the full read's
    /// answer is applied first, these after it.)
    func discardStagedChanges(of query: String) async throws {
        try await write { changes in
            let delete = try changes.connection.cachedStatement(
                "DELETE FROM \(EntityStore.stagingTable) WHERE kind IN ('r', 'l') AND query = ?")
            try delete.bind(.text(query), at: 1)
            _ = try delete.step()
        }
    }

    /// Whether a full read or a delta of the download under way brought the entity (committed staging rows).
    func isStaged(set: String, key: String) throws -> Bool {
        try reading("the download's staging table") { connection in
            let select = try connection.cachedStatement(
                "SELECT 1 FROM \(Self.stagingTable) WHERE \"set\" = ? AND \"key\" = ? AND kind IN ('f', 'd') LIMIT 1")
            defer { select.reset() }
            try select.bind(.text(set), at: 1)
            try select.bind(.text(key), at: 2)
            return try select.step()
        }
    }
}

extension EntityStore.Changes {
    /// Creates the staging table and its indexes when missing, and empties it.
    func resetStaging() throws {
        let table = EntityStore.stagingTable
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS \(table) (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, "set" TEXT NOT NULL, "key" TEXT NOT NULL, query TEXT NOT NULL, value BLOB NOT NULL);
            CREATE INDEX IF NOT EXISTS "download:staging:entity" ON \(table) ("set", "key", kind);
            CREATE INDEX IF NOT EXISTS "download:staging:kind" ON \(table) (kind);
            DELETE FROM \(table);
            """)
    }

    /// Empties the staging table (in the transaction that applies the download).
    func clearStaging() throws {
        try connection.execute("DELETE FROM \(EntityStore.stagingTable)")
    }

    /// Adds a downloaded record to the staging table, merged into the row of the same entity and kind when there is one.
    fileprivate func stage(_ record: EntityRecord, kind: EntityStore.StagedKind) throws {
        let select = try connection.cachedStatement("SELECT id, value FROM \(EntityStore.stagingTable) WHERE \"set\" = ? AND \"key\" = ? AND kind = ?")
        try select.bind(.text(record.set), at: 1)
        try select.bind(.text(record.key), at: 2)
        try select.bind(.text(kind.rawValue), at: 3)
        let found: (id: Int64, value: [UInt8])?
        do {
            defer { select.reset() }
            found = try select.step() ? (select.integer(at: 0), select.blob(at: 1)) : nil
        }
        guard let found else {
            return try insertStaged(kind: kind, set: record.set, key: record.key, query: "", value: record.encodedRest(entity: record.entity))
        }
        let merged = try Self.stagedRecord(found.value, set: record.set, key: record.key).merging(downloaded: record)
        let update = try connection.cachedStatement("UPDATE \(EntityStore.stagingTable) SET value = ? WHERE id = ?")
        try update.bind(.blob(merged.encodedRest(entity: merged.entity)), at: 1)
        try update.bind(.integer(found.id), at: 2)
        _ = try update.step()
    }

    fileprivate func insertStaged(kind: EntityStore.StagedKind, set: String, key: String, query: String, value: [UInt8]) throws {
        let insert = try connection.cachedStatement("INSERT INTO \(EntityStore.stagingTable) (kind, \"set\", \"key\", query, value) VALUES (?, ?, ?, ?, ?)")
        try insert.bind(.text(kind.rawValue), at: 1)
        try insert.bind(.text(set), at: 2)
        try insert.bind(.text(key), at: 3)
        try insert.bind(.text(query), at: 4)
        try insert.bind(.blob(value), at: 5)
        _ = try insert.step()
    }

    private static func stagedRecord(_ bytes: [UInt8], set: String, key: String) throws -> EntityRecord {
        let decoded = try EntityRecord.decodeRest(bytes, set: set, key: key, order: 0, state: .downloaded)
        var record = decoded.record
        record.entity = decoded.entity ?? JSONObject()
        return record
    }

    /// Whether the staging table holds a row of `kind` for the entity, as this transaction sees it.
    func isStaged(set: String, key: String, kind: EntityStore.StagedKind) throws -> Bool {
        let select = try connection.cachedStatement("SELECT 1 FROM \(EntityStore.stagingTable) WHERE \"set\" = ? AND \"key\" = ? AND kind = ?")
        defer { select.reset() }
        try select.bind(.text(set), at: 1)
        try select.bind(.text(key), at: 2)
        try select.bind(.text(kind.rawValue), at: 3)
        return try select.step()
    }

    /// Reads the rows of `kind` in the order they were staged, ``EntityStore/stagingChunk`` at a time, and hands each
    /// to `body` (which may write the entity tables, not the staging table).
    private func forEachStagedRow(_ kind: EntityStore.StagedKind, _ body: (_ set: String, _ key: String, _ query: String, _ value: [UInt8]) throws -> Void) throws {
        var after = Int64.min
        while true {
            let select = try connection.cachedStatement(
                "SELECT id, \"set\", \"key\", query, value FROM \(EntityStore.stagingTable) WHERE kind = ? AND id > ? ORDER BY id LIMIT \(EntityStore.stagingChunk)")
            try select.bind(.text(kind.rawValue), at: 1)
            try select.bind(.integer(after), at: 2)
            var chunk: [(set: String, key: String, query: String, value: [UInt8])] = []
            do {
                defer { select.reset() }
                while try select.step() {
                    after = select.integer(at: 0)
                    chunk.append((select.text(at: 1), select.text(at: 2), select.text(at: 3), select.blob(at: 4)))
                }
            }
            guard !chunk.isEmpty else { return }
            store.noteHeld(chunk.count)
            for row in chunk { try body(row.set, row.key, row.query, row.value) }
        }
    }

    /// The staged records of `kind` (``EntityStore/StagedKind/full`` or ``EntityStore/StagedKind/delta``), in the order they came.
    func forEachStaged(_ kind: EntityStore.StagedKind, _ body: (EntityRecord) throws -> Void) throws {
        try forEachStagedRow(kind) { set, key, _, value in try body(try Self.stagedRecord(value, set: set, key: key)) }
    }

    /// The staged removals, in the order they came.
    func forEachStagedRemoval(_ body: (EntityStore.StagedRemoval) throws -> Void) throws {
        try forEachStagedRow(.removal) { set, key, query, _ in
            try body(EntityStore.StagedRemoval(query: query, set: set, key: key))
        }
    }

    /// The staged link changes, in the order they came.
    func forEachStagedLink(_ body: (EntityStore.StagedLink) throws -> Void) throws {
        try forEachStagedRow(.link) { set, key, query, value in
            guard let object = (try? JSON.parse(value))?.objectValue, let relationship = object["r"]?.stringValue,
                  let isRemoved = object["x"]?.boolValue
            else { throw OfflineODataError(.storage, "a staged link change of \(set) is malformed") }
            try body(EntityStore.StagedLink(query: query, set: set, key: key, relationship: relationship, target: object["t"]?.stringValue, isRemoved: isRemoved))
        }
    }

    /// Steps through the records of every set that name one of `queries`, as this transaction sees them: each table in
    /// key order, ``EntityStore/stagingChunk`` rows at a time (narrowed in SQL to rows whose record holds a query's
    /// name as a JSON string, then checked on the decoded record). `body` may change or remove the record it is handed.
    func forEachRecord(heldBy queries: Set<String>, _ body: (EntityRecord) throws -> Void) throws {
        guard !queries.isEmpty else { return }
        let names = queries.sorted().map { String(decoding: JSON.serialize(.string($0)), as: UTF8.self) }
        let filter = names.map { _ in "instr(\"$record\", ?) > 0" }.joined(separator: " OR ")
        for table in tables.values.sorted(by: { $0.name < $1.name }) {
            let keyColumn = table.integerKey.map(EntityTable.quote) ?? "\"$key\""
            // The first chunk from the smallest key (`>=`), the next ones after the last key read.
            var after: SQLCipherValue = table.integerKey == nil ? .text("") : .integer(.min)
            var first = true
            while true {
                let select = try connection.cachedStatement(table.selectSQL + " WHERE \(keyColumn) \(first ? ">=" : ">") ? AND (\(filter)) ORDER BY \(keyColumn) LIMIT \(EntityStore.stagingChunk)")
                try select.bind(after, at: 1)
                for (index, name) in names.enumerated() { try select.bind(.text(name), at: Int32(index + 2)) }
                var chunk: [EntityRecord] = []
                do {
                    defer { select.reset() }
                    while try select.step() { chunk.append(try table.record(from: select)) }
                }
                guard let last = chunk.last else { break }
                store.noteHeld(chunk.count)
                if table.integerKey == nil {
                    after = .text(last.key)
                } else {
                    guard let number = EntityTable.integer(ofKey: last.key) else {
                        throw OfflineODataError(.storage, "a stored entity of \(table.set) has a key that is not its row ID")
                    }
                    after = .integer(number)
                }
                first = false
                for record in chunk where !queries.isDisjoint(with: record.queries) { try body(record) }
            }
        }
    }
}
