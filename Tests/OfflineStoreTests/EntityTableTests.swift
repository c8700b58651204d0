import Foundation
import ODataCore
import ODataFixtures
import SQLCipher
import Testing

@testable import OfflineStore

@Suite struct EntityTableTests {
    /// A model with one entity set whose type has a property of each column kind, and one that has none.
    private static let model: OfflineStore.ServiceModel = {
        var model = OfflineStore.ServiceModel()
        model.entityTypes["NS.Item"] = OfflineStore.ServiceModel.EntityType(
            name: "NS.Item", key: ["ID"],
            propertyTypes: ["ID": "Edm.Int32", "Name": "Edm.String", "Price": "Edm.Double", "Amount": "Edm.Decimal",
                            "Active": "Edm.Boolean", "Big": "Edm.Int64", "Shape": "Edm.GeographyPoint", "name": "Edm.String"],
            propertyOrder: ["ID", "Name", "Price", "Amount", "Active", "Big", "Shape", "name"], navigation: [:])
        model.entitySets["Items"] = OfflineStore.ServiceModel.EntitySet(name: "Items", entityType: "NS.Item", bindings: [:])
        return model
    }()

    @Test func aTableHasAColumnPerPrimitivePropertyAndRecordsRoundTripExactly() throws {
        let table = EntityTable.make(set: "Items", model: Self.model, taken: ["entities:items"])
        #expect(table.name == "entities:Items#2")  // SQL names ignore case
        // A column per primitive property, the second spelling of "name" and the geography point in "$record" only.
        #expect(table.columns.map(\.property) == ["ID", "Name", "Price", "Amount", "Active", "Big"])
        #expect(table.columns.map(\.kind) == [EntityTable.Kind.integer, .text, .real, .real, .boolean, .integer])

        let directory = NSTemporaryDirectory() + "entity-table-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let connection = try SQLCipherConnection(path: directory + "/t.db", key: Array(repeating: 7, count: 32))
        defer { connection.close() }
        try connection.execute(table.createSQL)
        let records: [EntityRecord] = [
            // Exact values in every column, members in an unusual order, an etag and a member without a column.
            EntityRecord(set: "Items", key: "(1)", order: 1, state: .downloaded,
                         entity: ["@odata.etag": "W/\"1\"", "Name": "Ä \"quoted\" name", "ID": 1, "Price": 2.5, "Amount": 3.25,
                                  "Active": true, "Big": .int(Int64.max), "Shape": ["type": "Point"], "name": "lower"],
                         links: JSONObject()),
            // Values a column cannot hold exactly: an integer Double, a decimal as a string, an Int64 as a string
            // (V2), an object in a text column; nulls, and absent members.
            EntityRecord(set: "Items", key: "(2)", order: 2, state: .updated,
                         entity: ["ID": 2, "Price": 18, "Amount": "12.3400", "Big": "9007199254740993", "Name": ["odd": true], "Active": .null],
                         original: ["ID": 2, "Price": 17], links: ["Orders": .array([])], inErrorState: true, isDeleteError: false,
                         queries: ["items"], needsRefresh: true),
        ]
        let insert = try connection.cachedStatement(table.insertSQL)
        for record in records {
            insert.reset()
            try table.bind(record, to: insert)
            _ = try insert.step()
        }
        let select = try connection.prepare(table.selectSQL + " ORDER BY \"$order\"")
        var read: [EntityRecord] = []
        while try select.step() { read.append(try table.record(from: select)) }
        #expect(read == records)
        #expect(read.map { Array($0.entity.keys) } == records.map { Array($0.entity.keys) })
        // What SQL sees: typed, comparable values (the approximations of the inexact ones included).
        let columns = try connection.prepare("SELECT \"Price\", \"Amount\", \"Big\", \"Name\", typeof(\"Active\") FROM \(EntityTable.quote(table.name)) ORDER BY \"$order\"")
        #expect(try columns.step())
        #expect(columns.value(at: 0) == .real(2.5) && columns.value(at: 3) == .text("Ä \"quoted\" name") && columns.value(at: 4) == .text("integer"))
        #expect(try columns.step())
        #expect(columns.value(at: 0) == .real(18) && columns.value(at: 1) == .real(12.34) && columns.value(at: 2) == .integer(9_007_199_254_740_993))
        #expect(columns.value(at: 3) == .null && columns.value(at: 4) == .text("null"))
    }

    /// One integer key property: its column is the row ID, a key lookup one descent of the table; a key that is not an
    /// integer is refused, an entity without its key property (or with another value) keeps what it holds.
    @Test func anIntegerKeyIsTheRowID() throws {
        let table = EntityTable.make(set: "Items", model: Self.model, taken: [])
        #expect(table.integerKey == "ID")
        #expect(table.createSQL.contains(#""ID" INTEGER PRIMARY KEY"#) && !table.createSQL.contains("TEXT PRIMARY KEY"))
        #expect(try EntityTable.decode(set: "Items", name: table.name, columns: table.encodedColumns) == table)
        #expect(EntityTable.integer(ofKey: "(42)") == 42 && EntityTable.integer(ofKey: "(-7)") == -7)
        #expect(EntityTable.integer(ofKey: "(042)") == nil && EntityTable.integer(ofKey: "('42')") == nil && EntityTable.integer(ofKey: "(ID=4)") == nil)
        // A string key, two key properties: the `"$key"` layout, the catalog row a list (as format 2 wrote it).
        var model = Self.model
        model.entityTypes["NS.Item"]?.key = ["ID", "Name"]
        let composite = EntityTable.make(set: "Items", model: model, taken: [])
        #expect(composite.integerKey == nil && composite.createSQL.contains(#""$key" TEXT PRIMARY KEY"#))
        #expect(try JSON.parse(composite.encodedColumns).arrayValue != nil)

        let directory = try TemporaryDirectory()
        let connection = try SQLCipherConnection(path: directory.path + "/t.db", key: Array(repeating: 7, count: 32))
        defer { connection.close() }
        try connection.execute(table.createSQL)
        let records: [EntityRecord] = [
            EntityRecord(set: "Items", key: "(7)", order: 1, state: .downloaded, entity: ["ID": 7, "Name": "seven"], links: JSONObject()),
            EntityRecord(set: "Items", key: "(-1)", order: 2, state: .created, entity: ["Name": "no key member"], links: JSONObject()),
            EntityRecord(set: "Items", key: "(9)", order: 3, state: .downloaded, entity: ["ID": "9", "Name": "V2 text"], links: JSONObject()),
            // Every member in its column, in the columns' order: `"$record"` keeps no entity.
            EntityRecord(set: "Items", key: "(8)", order: 4, state: .downloaded,
                         entity: ["ID": 8, "Name": "eight", "Price": 1.5, "Amount": .null, "Active": false, "Big": 3],
                         links: JSONObject(), queries: ["items"]),
            // The same after an ETag: `"$record"` keeps the ETag.
            EntityRecord(set: "Items", key: "(10)", order: 5, state: .downloaded,
                         entity: ["@odata.etag": "W/\"3\"", "ID": 10, "Name": "ten", "Price": 1.5, "Amount": 2.5, "Active": true, "Big": 3],
                         links: JSONObject(), queries: ["items"]),
        ]
        let insert = try connection.cachedStatement(table.insertSQL)
        for record in records {
            insert.reset()
            try table.bind(record, to: insert)
            _ = try insert.step()
        }
        insert.reset()
        #expect(throws: OfflineODataError.self) {
            try table.bind(EntityRecord(set: "Items", key: "('x')", order: 4, state: .created, entity: ["ID": "x"], links: JSONObject()), to: insert)
        }
        for record in records {
            let select = try connection.prepare(table.selectKeySQL)
            try table.bindKey(record.key, to: select)
            #expect(try select.step())
            #expect(try table.record(from: select) == record)
            let rowID = try connection.prepare("SELECT rowid FROM \(EntityTable.quote(table.name)) WHERE \"$key\" = ?")
            try rowID.bind(.text(record.key), at: 1)
            #expect(try rowID.step() && rowID.integer(at: 0) == EntityTable.integer(ofKey: record.key))
        }
        let rest = try connection.prepare("SELECT \"$record\" FROM \(EntityTable.quote(table.name)) ORDER BY \"$order\"")
        var rests: [String] = []
        while try rest.step() { rests.append(String(decoding: rest.blob(at: 0), as: UTF8.self)) }
        #expect(rests.map { $0.contains(#""e":"#) } == [true, true, true, false, false], "\(rests)")
        #expect(rests[3] == #"{"q":["items"]}"# && rests[4] == #"{"t":"W/\"3\"","q":["items"]}"#)
        // The estimate of the rows is the span of the keys, read from the ends of the table, not by a scan.
        let steps = connection.fullScanSteps
        #expect(try TableReader(table: table, connection: connection).estimatedRows() == 12)
        #expect(connection.fullScanSteps == steps)
        let missing = try connection.prepare(table.selectKeySQL)
        try table.bindKey("('7')", to: missing)
        #expect(try !missing.step())
        let plan = try connection.prepare("EXPLAIN QUERY PLAN " + table.selectKeySQL)
        try table.bindKey("(7)", to: plan)
        #expect(try plan.step() && plan.text(at: 3).contains("INTEGER PRIMARY KEY"), "\(plan.text(at: 3))")
    }

    /// Reads hold one read transaction until the writer commits: each read still sees the last commit, and the
    /// transaction never keeps the write-ahead log from being checkpointed and started over (the log stays near
    /// SQLite's checkpoint size however much is written, with a read between every two commits).
    @Test func aHeldReadTransactionSeesEachCommitAndNeverHoldsTheLogBack() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/held"
        let store = try EntityStore.open(directory: path, parameters: Northwind.parameters(directory, name: "held"))
        defer { store.close() }
        let filler = String(repeating: "x", count: 1_000)
        var largestLog = 0
        for batch in 0..<600 {
            try store.writeBlocking { changes in
                for item in 0..<20 {
                    try changes.put(EntityRecord(set: "Things", key: "('\(batch)-\(item)')", order: Int64(batch * 20 + item), state: .downloaded,
                                                 entity: ["Filler": .string(filler), "Batch": .int(Int64(batch))], links: JSONObject()))
                }
            }
            // The commit just made is seen (the held transaction was let go of), the one before too.
            #expect(try store.record(set: "Things", key: "('\(batch)-19')")?.entity["Batch"] == .int(Int64(batch)))
            let size = (try? FileManager.default.attributesOfItem(atPath: EntityStore.databasePath(in: path) + "-wal")[.size] as? Int) ?? 0
            largestLog = max(largestLog, size)
        }
        // ≈ 12 MB written; SQLite checkpoints at 1,000 pages (≈ 4 MiB of log): a transaction held back would let it grow.
        #expect(largestLog < 8 << 20, "the log grew to \(largestLog) bytes")
    }

    @Test func sqlFiltersTheColumnsOfADownloadedStoreAsODataDoes() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        let germans = try await provider.getAll("Customers?$filter=Country%20eq%20'Germany'").count
        let expensive = try await provider.getAll("Products?$filter=UnitPrice%20gt%2050").count
        let discontinued = try await provider.getAll("Products?$filter=Discontinued%20eq%20true").count
        await provider.close()
        #expect(germans > 0 && expensive > 0 && discontinued > 0)
        let store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        defer { store.close() }
        func count(_ sql: String) throws -> Int {
            try store.withWriter { connection in
                let select = try connection.prepare(sql)
                #expect(try select.step())
                return Int(select.integer(at: 0))
            }
        }
        #expect(try count(#"SELECT count(*) FROM "entities:Customers" WHERE "Country" = 'Germany'"#) == germans)
        #expect(try count(#"SELECT count(*) FROM "entities:Products" WHERE "UnitPrice" > 50"#) == expensive)
        #expect(try count(#"SELECT count(*) FROM "entities:Products" WHERE "Discontinued""#) == discontinued)
        #expect(try count(#"SELECT count(*) FROM "entities:Customers" WHERE "$key" = '(''ALFKI'')'"#) == 1)
    }

    /// A stored `$metadata` that no longer parses is a typed error for the write that needs it (a table made
    /// without its model would have no columns), never a silent "no model"; the store is left as it was.
    @Test func aStoredMetadataThatDoesNotParseFailsTheWriteThatNeedsIt() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        await provider.close()
        let path = directory.path + "/northwind"
        let damaged = try EntityStore.open(directory: path, parameters: Northwind.parameters(directory))
        try damaged.writeBlocking { changes in try changes.putMeta("metadata", Array("<edmx:Edmx>not a document".utf8)) }
        damaged.close()

        let store = try EntityStore.open(directory: path, parameters: Northwind.parameters(directory))
        defer { store.close() }
        let record = EntityRecord(set: "Regions", key: "(1)", order: 1, state: .downloaded, entity: ["RegionID": .int(1)],
                                  original: nil, links: JSONObject(), inErrorState: false, isDeleteError: false, queries: [],
                                  needsRefresh: false)
        let error = #expect(throws: OfflineODataError.self) { try store.writeBlocking { changes in try changes.put(record) } }
        #expect(error == .invalidMetadata)
        #expect(error?.message.contains("$metadata does not parse") == true)
        #expect(store.table("Regions") == nil)
    }

    @Test func aProcessWhereAnotherSQLiteAnswersRefusesToOpenTheStore() async throws {
        let library = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"
        // Under `make sanitize` the child is instrumented, and a sanitizer runtime must come first in the process:
        // preloading another library there tests the sanitizer, not the store. The plain run tests the check.
        guard FileManager.default.fileExists(atPath: library), !Sanitizers.active else { return }
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let arguments = ILODataTests.storeArguments(directory) + [
            "--kdf-rounds", "1000", "--service-root", server.serviceRoot, "--defining-query", "shippers=Shippers", "--command", "get Shippers",
        ]
        // Plain SQLite loaded first takes the sqlite3_* symbols: PRAGMA key would be ignored.
        let (status, output) = try await ILODataProcess.run(arguments, environment: ["LD_PRELOAD": library])
        #expect(status != 0)
        #expect(output.contains("not SQLCipher"), "\(output)")
        let database = EntityStore.databasePath(in: directory.path + "/northwind")
        #expect((try? FileManager.default.attributesOfItem(atPath: database)[.size] as? Int) ?? 0 == 0)
        // With SQLCipher answering, the same command works, and the store is encrypted.
        let (okStatus, okOutput) = try await ILODataProcess.run(arguments)
        #expect(okStatus == 0)
        #expect(okOutput.contains("Speedy Express"))
        #expect(try filesContain(directory.path + "/northwind", "Speedy Express") == false)
    }
}
