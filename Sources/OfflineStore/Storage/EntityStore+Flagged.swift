import ODataCore
import SQLCipher

/// The reads of sync and undo, in memory bounded by what they need (never a whole set): the flagged rows through
/// their partial index (``EntityTable/flaggedIndexSQL``), the rows holding a value through a column, and a
/// streamed walk of a table for what only a walk can find.
extension EntityStore {
    /// The records with a local change (`"$state"` other than downloaded) of every set, read through the partial
    /// index of flagged rows: their number, not the sets' sizes, is what this costs.
    func locallyChangedRecords() throws -> [EntityRecord] {
        try flaggedRecords(extra: " AND \"$state\" <> 'd'").filter { $0.state != .downloaded }
    }

    /// The records a download reads again (``EntityRecord/needsRefresh``, without local state), from the partial
    /// index of flagged rows.
    func recordsNeedingRefresh() throws -> [EntityRecord] {
        try flaggedRecords(extra: "").filter { $0.needsRefresh && !$0.hasLocalState }
    }

    private func flaggedRecords(extra: String) throws -> [EntityRecord] {
        let all = allTables()
        return try reading("the changed entities") { connection in
            var result: [EntityRecord] = []
            for table in all {
                let select = try connection.cachedStatement(table.selectSQL + " WHERE " + EntityTable.flaggedCondition + extra)
                defer { select.reset() }
                while try select.step() { result.append(try table.record(from: select)) }
            }
            return result
        }
    }

    /// The records of `set` whose `property` is `value` (JSON equality), through the property's column — its
    /// index where it has one (foreign keys always do) — or, for a property without a column, a walk of the set.
    func records(in set: String, property: String, equalTo value: JSONValue) throws -> [EntityRecord] {
        guard let table = table(set) else { return [] }
        var result: [EntityRecord] = []
        let condition = table.equalityCondition(property: property, value: value)
        try reading("the entities of \(set)") { connection in
            let select = try connection.prepare(table.selectSQL + (condition.map { " WHERE " + $0.sql } ?? ""))
            for (index, argument) in (condition?.arguments ?? []).enumerated() { try select.bind(argument, at: Int32(index + 1)) }
            while try select.step() {
                let record = try table.record(from: select)
                if record.entity[property] == value { result.append(record) }
            }
        }
        return result
    }

    /// Steps through the records of `set` (tombstones included) in one read transaction, one decoded record at a
    /// time; `body` returns false to stop.
    func forEachRecord(in set: String, _ body: (EntityRecord) throws -> Bool) throws {
        guard let table = table(set) else { return }
        try reading("the entities of \(set)") { connection in
            let select = try connection.prepare(table.selectSQL)
            while try select.step() {
                guard try body(try table.record(from: select)) else { return }
            }
        }
    }

    /// The entity sets that have a table.
    func storedSets() -> [String] { allTables().map(\.set) }

    /// The rows both connections stepped over in full table scans so far (``SQLCipherConnection/fullScanSteps``):
    /// what a test proves a bounded read with.
    func fullScanSteps() throws -> Int {
        try reading("the statistics") { $0.fullScanSteps } + withWriter { $0.fullScanSteps }
    }
}
