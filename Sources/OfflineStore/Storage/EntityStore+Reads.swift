import Foundation
import ODataCore
import ODataTyped
import SQLCipher

/// Reads outside a write transaction: the configuration, records, the queue and the ErrorArchive, through the
/// reading connection (``reading(_:_:)``).
extension EntityStore {
    func configuration() throws -> (StoreConfiguration, StoreCounters)? {
        try reading("the configuration") { connection in try Self.configuration(connection) }
    }

    static func metaValue(_ name: String, _ connection: SQLCipherConnection) throws -> [UInt8]? {
        let select = try connection.cachedStatement("SELECT value FROM meta WHERE name = ?")
        try select.bind(.text(name), at: 1)
        defer { select.reset() }
        return try select.step() ? select.blob(at: 0) : nil
    }

    static func configuration(_ connection: SQLCipherConnection) throws -> (StoreConfiguration, StoreCounters)? {
        guard let config = try metaValue("config", connection) else { return nil }
        let counters = try metaValue("counters", connection)
        var configuration = try StoreConfiguration.decode(config)
        // Format 4 keeps the CSDL apart; a record of format 2 or 3 holds it (until its next write).
        if configuration.metadata.isEmpty, let metadata = try metaValue("metadata", connection) {
            configuration.metadata = String(decoding: metadata, as: UTF8.self)
        }
        return (configuration, try counters.map { bytes throws(OfflineODataError) in try StoreCounters.decode(bytes) } ?? StoreCounters())
    }

    /// The record of one entity, tombstones included.
    func record(set: String, key: String) throws -> EntityRecord? {
        guard let table = table(set) else { return nil }
        return try reading("an entity of \(set)") { connection in try Self.record(key: key, table: table, connection) }
    }

    static func record(key: String, table: EntityTable, _ connection: SQLCipherConnection) throws -> EntityRecord? {
        let select = try connection.cachedStatement(table.selectKeySQL)
        try table.bindKey(key, to: select)
        defer { select.reset() }
        return try select.step() ? try table.record(from: select) : nil
    }

    /// The visible records of a set in the natural order (``EntityTable/naturalOrder(key:)``), read whole.
    func visibleRecords(in set: String, type: ServiceModel.EntityType) throws -> [EntityRecord] {
        guard let table = table(set) else { return [] }
        let sql = table.selectSQL + " WHERE \"$state\" <> 'x' ORDER BY " + table.naturalOrder(key: type.key).joined(separator: ", ")
        return try reading("the entities of \(set)") { connection in
            let select = try connection.cachedStatement(sql)
            defer { select.reset() }
            var result: [EntityRecord] = []
            while try select.step() { result.append(try table.record(from: select)) }
            return result
        }
    }

    /// The queued requests in queue order.
    func queuedRequests() throws -> [QueuedRequest] {
        try reading("the request queue") { connection in try Self.queuedRequests(after: 0, connection) }
    }

    static func queuedRequests(after id: Int64, _ connection: SQLCipherConnection) throws -> [QueuedRequest] {
        let select = try connection.cachedStatement("SELECT request FROM queue WHERE id > ? ORDER BY id")
        try select.bind(.integer(id), at: 1)
        defer { select.reset() }
        var result: [QueuedRequest] = []
        while try select.step() { result.append(try QueuedRequest.decode(select.blob(at: 0))) }
        return result
    }

    /// The ErrorArchive entries in request order.
    func errorEntries() throws -> [ErrorArchiveEntry] {
        try reading("the ErrorArchive") { connection in try Self.errorEntries(connection) }
    }

    /// The ErrorArchive entry of request `id`, or `nil` (a key lookup, whatever the archive's size).
    func errorEntry(_ id: Int64) throws -> ErrorArchiveEntry? {
        try reading("the ErrorArchive") { connection in try Self.errorEntries(connection, where: "id = ?", .integer(id)).first }
    }

    /// The ErrorArchive entries in request order, read with `connection` (the reader's, or a write transaction's):
    /// all of them, or those matching `condition` (SQL over `id` and `affected`, with one parameter).
    static func errorEntries(_ connection: SQLCipherConnection, where condition: String? = nil, _ parameter: SQLCipherValue? = nil) throws -> [ErrorArchiveEntry] {
        let select = try connection.cachedStatement("SELECT entry FROM error_archive" + (condition.map { " WHERE " + $0 } ?? "") + " ORDER BY id")
        if let parameter { try select.bind(parameter, at: 1) }
        defer { select.reset() }
        var result: [ErrorArchiveEntry] = []
        while try select.step() { result.append(try decodeErrorEntry(select.blob(at: 0))) }
        return result
    }

    static func decodeErrorEntry(_ bytes: [UInt8]) throws(OfflineODataError) -> ErrorArchiveEntry {
        do throws(DataServiceError) {
            return try ErrorArchiveEntry.decode(bytes)
        } catch {
            throw OfflineODataError(.storage, "an ErrorArchive record is malformed: \(error.message)")
        }
    }

    func queueCount() throws -> Int {
        try reading("the request queue") { connection in try Self.count("queue", connection) }
    }

    func errorCount() throws -> Int {
        try reading("the ErrorArchive") { connection in try Self.count("error_archive", connection) }
    }

    static func count(_ table: String, _ connection: SQLCipherConnection) throws -> Int {
        let select = try connection.cachedStatement("SELECT count(*) FROM \(table)")
        defer { select.reset() }
        return try select.step() ? Int(select.integer(at: 0)) : 0
    }
}
