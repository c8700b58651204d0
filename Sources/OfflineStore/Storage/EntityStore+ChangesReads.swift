import ODataCore
import ODataTyped
import SQLCipher

/// The reads a write decides on, made inside its transaction with the writing connection (GRDB's rule: the read
/// that decides a write happens inside the write), so no other change can come between the read and the write.
extension EntityStore.Changes {
    /// The records of `set` whose `property` is `value` (JSON equality), as this transaction sees them.
    func records(in set: String, property: String, equalTo value: JSONValue) throws -> [EntityRecord] {
        guard let table = tables[set] else { return [] }
        let condition = table.equalityCondition(property: property, value: value)
        let select = try connection.prepare(table.selectSQL + (condition.map { " WHERE " + $0.sql } ?? ""))
        for (index, argument) in (condition?.arguments ?? []).enumerated() { try select.bind(argument, at: Int32(index + 1)) }
        var result: [EntityRecord] = []
        while try select.step() {
            let record = try table.record(from: select)
            if record.entity[property] == value { result.append(record) }
        }
        return result
    }

    /// The records with a local change, as this transaction sees them.
    func locallyChangedRecords() throws -> [EntityRecord] {
        var result: [EntityRecord] = []
        for table in tables.values.sorted(by: { $0.name < $1.name }) {
            let select = try connection.cachedStatement(table.selectSQL + " WHERE " + EntityTable.flaggedCondition + " AND \"$state\" <> 'd'")
            defer { select.reset() }
            while try select.step() {
                let record = try table.record(from: select)
                if record.state != .downloaded { result.append(record) }
            }
        }
        return result
    }

    /// The ErrorArchive entry of request `id`, as this transaction sees it, or `nil`.
    func errorEntry(_ id: Int64) throws -> ErrorArchiveEntry? {
        try EntityStore.errorEntries(connection, where: "id = ?", .integer(id)).first
    }

    /// The ErrorArchive entries that name `reference` (`Set(key)`) as their affected entity, in request order.
    func errorEntries(affecting reference: String) throws -> [ErrorArchiveEntry] {
        try EntityStore.errorEntries(connection, where: "affected = ?", .text(reference))
    }
}
