import ODataCore
import SQLCipher

/// Reads of an entity table by the SQL the planner (`Query/`) made: rows stepped one at a time, counts.
struct TableReader {
    let table: EntityTable
    let connection: SQLCipherConnection

    /// The number of rows `condition` holds for.
    func count(where condition: SQLCondition) throws -> Int {
        let select = try connection.prepare("SELECT count(*) FROM \(EntityTable.quote(table.name)) WHERE \(condition.sql)")
        try bind(condition.arguments, to: select)
        return try select.step() ? Int(select.integer(at: 0)) : 0
    }

    /// Steps through the rows `condition` holds for in the order given (SQL terms), `offset` rows skipped, at
    /// most `limit` read; `body` returns false to stop.
    func forEach(where condition: SQLCondition, orderBy: [String], limit: Int? = nil, offset: Int? = nil,
                 _ body: (EntityRecord) throws -> Bool) throws {
        var sql = table.selectSQL + " WHERE " + condition.sql
        if !orderBy.isEmpty { sql += " ORDER BY " + orderBy.joined(separator: ", ") }
        var arguments = condition.arguments
        if limit != nil || offset != nil {
            sql += " LIMIT ? OFFSET ?"
            arguments += [.integer(limit.map { Int64($0) } ?? -1), .integer(Int64(offset ?? 0))]
        }
        let select = try connection.prepare(sql)
        try bind(arguments, to: select)
        while try select.step() {
            guard try body(try table.record(from: select)) else { return }
        }
    }

    /// The number of rows `condition` holds for, counted up to `limit` (what a planner probes an index with).
    func count(where condition: SQLCondition, upTo limit: Int) throws -> Int {
        let select = try connection.prepare("SELECT count(*) FROM (SELECT 1 FROM \(EntityTable.quote(table.name)) WHERE \(condition.sql) LIMIT ?)")
        try bind(condition.arguments + [.integer(Int64(limit))], to: select)
        return try select.step() ? Int(select.integer(at: 0)) : 0
    }

    /// About how many rows the table holds, read in constant time (the two ends of the table's B-tree): its largest
    /// row ID (rows replaced get new ones, so it can only overestimate); with an ``EntityTable/integerKey`` (the row
    /// ID is the key) the span of its keys, an overestimate where keys leave gaps.
    func estimatedRows() throws -> Int {
        // Each end in a subquery of its own: SQLite reads `max(rowid)` or `min(rowid)` alone from the edge of the
        // B-tree, while `max(rowid) - min(rowid)` in one query scans the table.
        let name = EntityTable.quote(table.name)
        let sql = table.integerKey == nil
            ? "SELECT max(rowid) FROM \(name)"
            : "SELECT (SELECT max(rowid) FROM \(name)) - (SELECT min(rowid) FROM \(name)) + 1"
        let select = try connection.cachedStatement(sql)
        defer { select.reset() }
        return try select.step() ? Int(clamping: select.integer(at: 0)) : 0
    }

    /// The properties that lead a secondary index of the table (declared, or foreign keys).
    func indexedProperties() throws -> Set<String> {
        let select = try connection.cachedStatement("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?")
        defer { select.reset() }
        try select.bind(.text(table.name), at: 1)
        var result: Set<String> = []
        let prefix = table.name + ":"
        while try select.step() {
            let name = select.text(at: 0)
            // `$natural`, `$flagged`: the store's own (OData names never hold `$`).
            if name.hasPrefix(prefix), case let property = String(name.dropFirst(prefix.count)), !property.hasPrefix("$") { result.insert(property) }
        }
        return result
    }

    /// What SQLite plans for a query (`EXPLAIN QUERY PLAN`), one line per step.
    func explain(where condition: SQLCondition, orderBy: [String], limit: Int?) throws -> [String] {
        var sql = "EXPLAIN QUERY PLAN " + table.selectSQL + " WHERE " + condition.sql
        if !orderBy.isEmpty { sql += " ORDER BY " + orderBy.joined(separator: ", ") }
        if let limit { sql += " LIMIT \(limit)" }
        let select = try connection.prepare(sql)
        try bind(condition.arguments, to: select)
        var lines: [String] = []
        while try select.step() { lines.append(select.text(at: 3)) }
        return lines
    }

    private func bind(_ arguments: [SQLCipherValue], to statement: SQLCipherStatement) throws {
        for (index, argument) in arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    }
}

extension EntityStore {
    /// Runs `body` with a reader of the table of `set` in one read transaction; `nil` when the set has no table
    /// (nothing of it was ever stored).
    func withTable<R>(_ set: String, _ body: (TableReader) throws -> R) throws -> R? {
        guard let table = table(set) else { return nil }
        return try reading("the entities of \(set)") { connection in try body(TableReader(table: table, connection: connection)) }
    }
}
