import CurlHTTP
import Foundation
import LMDB
import ODataCore
import ODataFixtures
import SQLCipher
import TechnicalCache
import Testing

@testable import OfflineStore

/// The store in `Fixtures/LMDBStoreV1` (the LMDB format, written by `ilodata` before SQLCipher; see its README).
private enum LegacyStore {
    static let serviceRoot = "http://127.0.0.1:35571/"
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/LMDBStoreV1/data.mdb")

    /// A copy of the fixture store in `directory` (as the store `legacy`), and its parameters.
    static func copy(into directory: TemporaryDirectory, key: String? = "legacy-passphrase") throws -> OfflineODataParameters {
        try FileManager.default.createDirectory(atPath: directory.path + "/legacy", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.copyItem(atPath: fixture.path, toPath: directory.path + "/legacy/data.mdb")
        return OfflineODataParameters(storeName: "legacy", storePath: directory.path, storeEncryptionKey: key, keyDerivation: .pbkdf2(rounds: 1_000))
    }

    static func files(_ directory: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path + "/legacy").sorted()
    }

    static func data(_ directory: TemporaryDirectory) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: directory.path + "/legacy/data.mdb"))
    }
}

/// Sends what the provider addresses to the fixture's recorded service root to a live producer instead.
private struct RedirectingTransport: HTTPTransport {
    let from: String
    let to: String
    let base: CurlTransport

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var request = request
        if request.url.hasPrefix(from) { request.url = to + request.url.dropFirst(from.count) }
        return try await base.send(request)
    }
}

@Suite struct MigrationTests {
    @Test func aStoreOfTheLMDBFormatIsMigratedAtOpenWithItsQueueAndErrorArchive() async throws {
        let directory = try TemporaryDirectory()
        let parameters = try LegacyStore.copy(into: directory)
        #expect(try LegacyStore.files(directory) == ["data.mdb"])
        let provider = try OfflineODataProvider(serviceRoot: LegacyStore.serviceRoot, parameters: parameters)
        try await provider.open()
        // The LMDB files are gone; the SQLCipher database and its key-check record are there.
        #expect(try LegacyStore.files(directory).filter { !$0.hasPrefix("store.db-") } == ["keycheck", "store.db"])
        // Entities with their local changes, the queue and the ErrorArchive came along.
        #expect(try await provider.getAll("Customers").count == 91)
        #expect(try await provider.get("Customers('ALFKI')")["City"] == "Hamburg")
        #expect(try await provider.get("Customers('ANATR')")["City"] == "Berlin")
        let shippers = try await provider.getAll("Shippers").compactMap { $0["CompanyName"]?.stringValue }
        #expect(Set(shippers) == ["Speedy Express", "United Package", "Rejected Freight Zq", "Pending Freight Qx"])
        let pending = try await provider.pendingRequests().map { "\($0.properties["Method"]?.stringValue ?? "") \($0.properties["URL"]?.stringValue ?? "")" }
        #expect(pending == ["PATCH Customers('ANATR')", "DELETE Shippers(3)", "POST Shippers"])
        let archive = try await provider.getAll("ErrorArchive")
        #expect(archive.count == 1)
        #expect(archive.first?["RequestMethod"] == "POST")
        #expect(archive.first?["HTTPStatusCode"]?.intValue == 400)
        #expect(try await provider.get("Shippers(-1)")[EntityRecord.inErrorStateAnnotation] == true)
        // A change after the migration gets the next request ID (the counters came along).
        _ = try await provider.execute(.local("PATCH", "Customers('BERGS')", body: #"{"City":"Uppsala Nord"}"#))
        #expect(try await provider.pendingRequests().last?.properties["RequestID"]?.intValue == 6)
        await provider.close()
        // Nothing readable in the files; the next open is a plain open.
        for needle in ["Alfreds Futterkiste", "Pending Freight Qx", "Uppsala Nord", "Customers"] {
            #expect(try filesContain(directory.path + "/legacy", needle) == false, "'\(needle)' is readable")
        }
        let again = try OfflineODataProvider(serviceRoot: LegacyStore.serviceRoot, parameters: parameters)
        try await again.open()
        #expect(try await again.pendingRequests().count == 4)
        #expect(try await again.get("Customers('BERGS')")["City"] == "Uppsala Nord")
        await again.close()

        // The migrated queue uploads to the back end (addressed at the fixture's recorded root, sent to a live one).
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        var live = parameters
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        live.transport = RedirectingTransport(from: LegacyStore.serviceRoot, to: server.serviceRoot, base: curl)
        let uploader = try OfflineODataProvider(serviceRoot: LegacyStore.serviceRoot, parameters: live)
        try await uploader.open()
        let result = try await uploader.upload()
        // The producer refuses to delete a shipper that orders still reference: that one lands in the ErrorArchive.
        #expect(result.failed.map(\.url) == ["Shippers(3)"])
        #expect(result.failed.first?.statusCode == 409)
        #expect(try await uploader.pendingRequests().isEmpty)
        #expect(try await uploader.getAll("ErrorArchive").count == 2)
        await uploader.close()
        #expect(server.counters.requests(method: "PATCH", path: "Customers('ANATR')") == 1)
        #expect(server.counters.requests(method: "DELETE", path: "Shippers(3)") == 1)
        let (status, anatr) = try await Producer.get(server, "Customers('ANATR')")
        #expect(status == 200 && anatr?["City"] == "Berlin")
        #expect(server.counters.requests(method: "POST", path: "Shippers") == 1)
        #expect(server.counters.requests(method: "PATCH", path: "Customers('BERGS')") == 1)
    }

    @Test func aWrongKeyLeavesTheLMDBStoreAsItWas() async throws {
        let directory = try TemporaryDirectory()
        let parameters = try LegacyStore.copy(into: directory, key: "not the passphrase")
        let before = try LegacyStore.data(directory)
        let error = await #expect(throws: OfflineODataError.self) {
            try await OfflineODataProvider(serviceRoot: LegacyStore.serviceRoot, parameters: parameters).open()
        }
        #expect(error?.code == .wrongKey)
        #expect(try LegacyStore.data(directory) == before)
        #expect(try LegacyStore.files(directory).filter { $0 != "lock.mdb" } == ["data.mdb"])
    }

    @Test func aMigrationThatFailsIsATypedErrorAndLeavesTheLMDBStoreAsItWas() async throws {
        let directory = try TemporaryDirectory()
        let parameters = try LegacyStore.copy(into: directory)
        // One sealed entity record is tampered with: it fails authentication when the migration reads it.
        let environment = try LMDBEnvironment(path: directory.path + "/legacy", options: .init(mapSize: 64 << 20, maxDatabases: 5))
        try await environment.write { (txn: LMDBTransaction) throws -> Void in
            let database = try #require(try txn.openDatabase(named: "entities", create: false))
            let (key, value) = try #require(try txn.withCursor(in: database) { cursor in try cursor.next() })
            var sealed = value
            sealed[sealed.count / 2] ^= 0x40
            try txn.setValue(sealed, forKey: key, in: database)
        }
        environment.close()
        let before = try LegacyStore.data(directory)
        let error = await #expect(throws: OfflineODataError.self) {
            try await OfflineODataProvider(serviceRoot: LegacyStore.serviceRoot, parameters: parameters).open()
        }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("left as it was") == true)
        #expect(try LegacyStore.data(directory) == before)
        #expect(try LegacyStore.files(directory) == ["data.mdb", "lock.mdb"])
    }

    @Test func aMigrationCommittedBeforeACrashIsFinishedNotRepeated() async throws {
        let directory = try TemporaryDirectory()
        let parameters = try LegacyStore.copy(into: directory)
        let provider = try OfflineODataProvider(serviceRoot: LegacyStore.serviceRoot, parameters: parameters)
        try await provider.open()
        _ = try await provider.execute(.local("PATCH", "Customers('BERGS')", body: #"{"City":"After Migration"}"#))
        await provider.close()
        // As if the process had died after the migration's commit, before the LMDB files were removed.
        try FileManager.default.copyItem(atPath: LegacyStore.fixture.path, toPath: directory.path + "/legacy/data.mdb")
        let reopened = try OfflineODataProvider(serviceRoot: LegacyStore.serviceRoot, parameters: parameters)
        try await reopened.open()
        #expect(try await reopened.get("Customers('BERGS')")["City"] == "After Migration")
        #expect(try await reopened.pendingRequests().count == 4)
        #expect(!(try LegacyStore.files(directory).contains("data.mdb")))
        await reopened.close()
    }

    @Test func aStoreOfANewerFormatIsRefusedAndLeftAsItIs() async throws {
        let directory = try TemporaryDirectory()
        let parameters = try LegacyStore.copy(into: directory)
        let store = try EntityStore.open(directory: directory.path + "/legacy", parameters: parameters)
        try store.withWriter { connection in try connection.setUserVersion(EntityStore.format + 1) }
        store.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: EntityStore.databasePath(in: directory.path + "/legacy")))
        let error = await #expect(throws: OfflineODataError.self) {
            try await OfflineODataProvider(serviceRoot: LegacyStore.serviceRoot, parameters: parameters).open()
        }
        #expect(error?.code == .unsupportedStoreFormat)
        #expect(error?.message.contains("format \(EntityStore.format + 1)") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: EntityStore.databasePath(in: directory.path + "/legacy"))) == before)
    }

    /// A format-2 store (every entity table found by `"$key"`) opens in place: it is marked format 3, its tables keep
    /// their layout and answer reads and writes as before, and an older version now refuses it (its format is newer).
    @Test func aFormat2StoreOpensInPlaceAndKeepsItsTables() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        let orders = try await provider.getAll("Orders")
        let order = try await provider.get("Orders(10248)")
        await provider.close()
        // Rewrite Orders as format 2 made it: `"$key"` the primary key, the catalog row a list, `user_version` 2.
        let path = directory.path + "/northwind"
        let store = try EntityStore.open(directory: path, parameters: Northwind.parameters(directory))
        let table = try #require(store.table("Orders"))
        #expect(table.integerKey == "OrderID")
        let old = EntityTable(set: table.set, name: table.name, columns: table.columns)
        try store.withWriter { connection in
            try connection.transaction {
                try connection.execute("ALTER TABLE \(EntityTable.quote(table.name)) RENAME TO \"orders-before\"")
                try connection.execute(old.createSQL)
                try connection.execute("INSERT INTO \(EntityTable.quote(table.name)) SELECT * FROM \"orders-before\"")
                try connection.execute("DROP TABLE \"orders-before\"")
                let update = try connection.prepare("UPDATE entity_sets SET columns = ? WHERE name = 'Orders'")
                try update.bind(.blob(old.encodedColumns), at: 1)
                _ = try update.step()
                try connection.setUserVersion(2)
            }
        }
        store.close()
        #expect(try JSON.parse(old.encodedColumns).arrayValue != nil)

        let reopened = try await Northwind.provider(server, directory)
        try await reopened.open()
        #expect(try await reopened.getAll("Orders") == orders)
        #expect(try await reopened.get("Orders(10248)") == order)
        _ = try await reopened.execute(.local("PATCH", "Orders(10248)", body: #"{"ShipCity":"Format 2"}"#))
        #expect(try await reopened.get("Orders(10248)")["ShipCity"] == "Format 2")
        #expect(try await reopened.getAll("Orders?$filter=ShipCity%20eq%20'Format%202'").count == 1)
        await reopened.close()
        let after = try EntityStore.open(directory: path, parameters: Northwind.parameters(directory))
        defer { after.close() }
        #expect(after.table("Orders")?.integerKey == nil)
        #expect(after.table("Customers")?.integerKey == nil)  // a string key: the `"$key"` layout in every format
        #expect(try after.withWriter { try $0.userVersion() } == EntityStore.format)
        // Its key is the primary key again (the index SQLite made for it), and a lookup goes through it.
        let plan = try after.withWriter { connection in
            let select = try connection.prepare("EXPLAIN QUERY PLAN " + (after.table("Orders")?.selectKeySQL ?? ""))
            try select.bind(.text("(10248)"), at: 1)
            var lines: [String] = []
            while try select.step() { lines.append(select.text(at: 3)) }
            return lines.joined(separator: "; ")
        }
        #expect(plan.contains("sqlite_autoindex"), "\(plan)")
    }

    // MARK: The page size

    /// The page size of a store's database file, as a connection found it.
    private func pageSize(of directory: TemporaryDirectory, _ parameters: OfflineODataParameters) throws -> Int {
        let store = try EntityStore.open(directory: directory.path + "/" + parameters.storeName, parameters: parameters)
        defer { store.close() }
        return try store.withWriter { $0.pageSize }
    }

    @Test func aStoreKeepsThePageSizeItWasMadeWithWhateverTheParametersSayLater() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let queries = [OfflineODataDefiningQuery(name: "shippers", query: "Shippers"), OfflineODataDefiningQuery(name: "orders", query: "Orders")]
        var small = Northwind.parameters(directory)
        small.databasePageSize = 1024
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: small)
        for query in queries { try await provider.add(definingQuery: query) }
        try await provider.open()
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Small Pages"}"#))
        await provider.close()
        #expect(try pageSize(of: directory, small) == 1024)
        // Smaller pages, the same promise: no value in any file of the store.
        #expect(try !filesContain(directory.path + "/northwind", "Small Pages"))
        #expect(try !filesContain(directory.path + "/northwind", "Speedy Express"))
        // Opened with the default (4,096) it keeps its 1,024: every row and the queued change are there.
        let reopened = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: Northwind.parameters(directory))
        for query in queries { try await reopened.add(definingQuery: query) }
        try await reopened.open()
        #expect(try await reopened.getAll("Orders").count == 830)
        #expect(try await reopened.getAll("Shippers?$filter=CompanyName%20eq%20'Small%20Pages'").count == 1)
        #expect(try await reopened.pendingRequests().count == 1)
        await reopened.close()
        #expect(try pageSize(of: directory, Northwind.parameters(directory)) == 1024)
        // A size SQLite does not accept is refused before anything is opened.
        var odd = Northwind.parameters(directory)
        odd.databasePageSize = 1000
        let error = await #expect(throws: OfflineODataError.self) {
            try await OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: odd).open()
        }
        #expect(error?.code == .invalidParameters && error?.message.contains("databasePageSize") == true)
    }

    /// A store whose last commit sits only in the write-ahead log of a process that was killed (the files copied while
    /// it runs), opened with another page size given: the attempt with the wrong size must not lose the log. Both
    /// ways: a 4 KiB store tried with 1 KiB first, a 1 KiB store tried with 4 KiB first.
    @Test(arguments: [(made: 4096, given: 1024), (made: 1024, given: 4096)])
    func aKilledWritersLogSurvivesAnOpenThatTriesAnotherPageSizeFirst(sizes: (made: Int, given: Int)) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory)
        parameters.databasePageSize = sizes.made
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await provider.open()
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Only In The Log"}"#))
        let copy = try TemporaryDirectory()
        try FileManager.default.copyItem(atPath: directory.path + "/northwind", toPath: copy.path + "/northwind")
        await provider.close()
        let log = try #require(try FileManager.default.attributesOfItem(atPath: copy.path + "/northwind/store.db-wal")[.size] as? Int)
        #expect(log > 0)
        var other = Northwind.parameters(copy)
        other.databasePageSize = sizes.given
        let reopened = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: other)
        try await reopened.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await reopened.open()
        #expect(try await reopened.getAll("Shippers?$filter=CompanyName%20eq%20'Only%20In%20The%20Log'").count == 1)
        #expect(try await reopened.pendingRequests().count == 1)
        await reopened.close()
        #expect(try pageSize(of: copy, other) == sizes.made)
    }

    // MARK: The CSDL apart from the configuration (format 4)

    @Test func theCSDLIsWrittenOnceNotWithEveryPageAndAFormat3RecordIsRead() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        // Orders in 9 pages, Order_Details in 22: the configuration is written with each of them.
        let provider = try await Northwind.provider(server, directory)
        try await provider.open()
        let store = try await provider.openStore()
        #expect(store.metadataWrites.withLock { $0 } == 1, "the CSDL of a new store is written once")
        try await provider.download()
        #expect(store.metadataWrites.withLock { $0 } == 1, "a download with the same $metadata does not write it")
        let config = try store.withWriter { connection in
            let select = try connection.prepare("SELECT value FROM meta WHERE name = 'config'")
            #expect(try select.step())
            return try JSON.parse(select.blob(at: 0))
        }
        #expect(config["metadata"] == nil, "the configuration record holds no CSDL")
        await provider.close()

        // A record as format 3 wrote it (the CSDL inside, no row of its own) opens in place and is moved by the
        // next configuration write.
        let path = directory.path + "/northwind"
        let legacy = try EntityStore.open(directory: path, parameters: Northwind.parameters(directory))
        try legacy.withWriter { connection in
            let select = try connection.prepare("SELECT value FROM meta WHERE name = 'metadata'")
            #expect(try select.step())
            var object = try #require(config.objectValue)
            object.append(.string(String(decoding: select.blob(at: 0), as: UTF8.self)), forKey: "metadata")
            let update = try connection.prepare("UPDATE meta SET value = ? WHERE name = 'config'")
            try update.bind(.blob(JSON.serialize(.object(object))), at: 1)
            _ = try update.step()
            try connection.execute("DELETE FROM meta WHERE name = 'metadata'")
            try connection.setUserVersion(3)
        }
        legacy.close()
        let reopened = try await Northwind.provider(server, directory)
        try await reopened.open()
        #expect(try await reopened.getAll("Shippers").count == 3)
        let migrated = try await reopened.openStore()
        #expect(try migrated.withWriter { try $0.userVersion() } == EntityStore.format)
        try await reopened.download()
        #expect(migrated.metadataWrites.withLock { $0 } == 1, "moved to its own row")
        #expect(try await reopened.get("Orders(10248)")["ShipCity"] == "Reims")
        await reopened.close()
    }
}
