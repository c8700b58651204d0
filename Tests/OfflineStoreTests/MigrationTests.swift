import CurlHTTP
import Foundation
import ODataCore
import ODataFixtures
import SQLCipher
import TechnicalCache
import Testing

@testable import OfflineStore

/// A store directory of this suite's tests.
private enum StoreDirectory {
    static let serviceRoot = "http://127.0.0.1:35571/"

    static func parameters(_ directory: TemporaryDirectory) -> OfflineODataParameters {
        OfflineODataParameters(storeName: "store", storePath: directory.path, storeEncryptionKey: "a passphrase", keyDerivation: .pbkdf2(rounds: 1_000))
    }

    static func files(_ directory: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path + "/store").sorted()
    }
}

@Suite struct MigrationTests {
    /// The LMDB format (format 1) was written only by development builds before SQLCipher and never released: a
    /// directory holding one is refused with a typed error that says what to do, and nothing in it changes.
    @Test func aStoreOfTheUnreleasedLMDBFormatIsRefusedAndLeftAsItIs() async throws {
        let directory = try TemporaryDirectory()
        let parameters = StoreDirectory.parameters(directory)
        try FileManager.default.createDirectory(atPath: directory.path + "/store", withIntermediateDirectories: true)
        let legacy = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try legacy.write(to: URL(fileURLWithPath: directory.path + "/store/data.mdb"))

        let opened = await #expect(throws: OfflineODataError.self) {
            try await OfflineODataProvider(serviceRoot: StoreDirectory.serviceRoot, parameters: parameters).open()
        }
        #expect(opened == .unsupportedStoreFormat)
        #expect(opened?.message.contains("LMDB format") == true)
        let read = #expect(throws: OfflineODataError.self) { try OfflineODataProvider.storedServiceRoot(parameters: parameters) }
        #expect(read == .unsupportedStoreFormat)
        #expect(try StoreDirectory.files(directory) == ["data.mdb"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/store/data.mdb")) == legacy)
    }

    @Test func aStoreOfANewerFormatIsRefusedAndLeftAsItIs() async throws {
        let directory = try TemporaryDirectory()
        let parameters = StoreDirectory.parameters(directory)
        let store = try EntityStore.open(directory: directory.path + "/store", parameters: parameters)
        try store.withWriter { connection in try connection.setUserVersion(EntityStore.format + 1) }
        store.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: EntityStore.databasePath(in: directory.path + "/store")))
        let error = await #expect(throws: OfflineODataError.self) {
            try await OfflineODataProvider(serviceRoot: StoreDirectory.serviceRoot, parameters: parameters).open()
        }
        #expect(error == .unsupportedStoreFormat)
        #expect(error?.message.contains("format \(EntityStore.format + 1)") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: EntityStore.databasePath(in: directory.path + "/store"))) == before)
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
        #expect(error == .invalidParameters && error?.message.contains("databasePageSize") == true)
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

    // MARK: The ErrorArchive indexed by its affected entity (format 5)

    /// A format-4 store's ErrorArchive (no `affected` column) opens in place: the column is added and filled from the
    /// entries, every entry reads as before, and deleting entries releases an entity only when its last entry goes.
    @Test func aFormat4ErrorArchiveIsIndexedByItsAffectedEntityInPlace() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        for insideBatch in [false, true] {
            _ = try server.faults.add(FaultRule(.fail(status: 400, code: "Refused", message: "refused"), method: "PATCH",
                                                path: "Customers(*", insideBatch: insideBatch))
        }
        for (key, city) in [("ALFKI", "One"), ("ANATR", "Two"), ("ALFKI", "Three")] {
            _ = try await provider.execute(.local("PATCH", "Customers('\(key)')", body: #"{"City":"\#(city)"}"#))
        }
        _ = try await provider.upload()
        let archive = try await provider.getAll("ErrorArchive")
        try #require(archive.count == 3)
        await provider.close()
        let path = directory.path + "/northwind"
        let store = try EntityStore.open(directory: path, parameters: Northwind.parameters(directory))
        try store.withWriter { connection in
            try connection.transaction {
                try connection.execute("""
                    CREATE TABLE "error_archive-4" (id INTEGER PRIMARY KEY, entry BLOB NOT NULL);
                    INSERT INTO "error_archive-4" SELECT id, entry FROM error_archive;
                    DROP TABLE error_archive;
                    ALTER TABLE "error_archive-4" RENAME TO error_archive;
                    """)
                try connection.setUserVersion(4)
            }
        }
        store.close()

        let reopened = try await Northwind.provider(server, directory)
        try await reopened.open()
        let migrated = try await reopened.openStore()
        #expect(try migrated.withWriter { try $0.userVersion() } == EntityStore.format)
        let unfilled = try migrated.withWriter { connection in
            let select = try connection.prepare("SELECT count(*) FROM error_archive WHERE affected IS NULL OR affected = ''")
            return try select.step() ? select.integer(at: 0) : -1
        }
        #expect(unfilled == 0)
        #expect(try await reopened.getAll("ErrorArchive") == archive)
        let ids = archive.compactMap { $0["RequestID"]?.intValue }
        #expect(try await reopened.get("ErrorArchive(\(ids[2]))/AffectedEntity")["CustomerID"] == "ALFKI")
        _ = try await reopened.execute(.local("DELETE", "ErrorArchive(\(ids[0]))"))
        #expect(try await reopened.getAll("Customers?$filter=inErrorState()").compactMap { $0["CustomerID"]?.stringValue } == ["ALFKI", "ANATR"],
                "ALFKI keeps its other entry")
        _ = try await reopened.execute(.local("DELETE", "ErrorArchive(\(ids[2]))"))
        #expect(try await reopened.getAll("Customers?$filter=inErrorState()").compactMap { $0["CustomerID"]?.stringValue } == ["ANATR"])
        await #expect(throws: OfflineODataError.self) { try await reopened.get("ErrorArchive(\(ids[0]))") }
        await reopened.close()
    }

    // MARK: Media keyed by entity and property (format 6)

    /// A format-5 store's media tables (keyed by set and key: `$value` only) open in place: each row becomes its
    /// entity's `$value` and reads as before; the stream properties arrive beside it with the next download.
    @Test func format5MediaTablesAreKeyedByPropertyInPlace() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: [MediaDownloadTests.queries[0]])
        try await provider.open()
        let media = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) })
        await provider.close()
        let store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        try store.withWriter { connection in
            try connection.transaction {
                try connection.execute("""
                    DELETE FROM media WHERE property <> '';
                    DELETE FROM media_chunks WHERE property <> '';
                    CREATE TABLE media5 ("set" TEXT NOT NULL, "key" TEXT NOT NULL, etag TEXT, content_type TEXT NOT NULL, size INTEGER NOT NULL, local INTEGER NOT NULL DEFAULT 0, PRIMARY KEY ("set", "key"));
                    INSERT INTO media5 SELECT "set", "key", etag, content_type, size, local FROM media;
                    CREATE TABLE media_chunks5 ("set" TEXT NOT NULL, "key" TEXT NOT NULL, position INTEGER NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY ("set", "key", position));
                    INSERT INTO media_chunks5 SELECT "set", "key", position, bytes FROM media_chunks;
                    DROP TABLE media;
                    DROP TABLE media_chunks;
                    ALTER TABLE media5 RENAME TO media;
                    ALTER TABLE media_chunks5 RENAME TO media_chunks;
                    """)
                try connection.setUserVersion(5)
            }
        }
        store.close()

        let reopened = try await Northwind.provider(server, directory, queries: [MediaDownloadTests.queries[0]])
        try await reopened.open()
        let migrated = try await reopened.openStore()
        #expect(try migrated.withWriter { try $0.userVersion() } == EntityStore.format)
        #expect(try await reopened.readMedia(of: "Photos(1)") == Data(media.bytes))
        #expect(try await reopened.mediaResource(of: "Photos(1)")?.etag == media.etag)
        #expect(try await reopened.mediaResource(of: "Photos(1)", property: "Thumbnail") == nil)
        try await reopened.download()
        let thumbnail = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1], property: "Thumbnail") })
        #expect(try await reopened.readMedia(of: "Photos(1)", property: "Thumbnail") == Data(thumbnail.bytes))
        #expect(server.counters.requests(method: "GET", path: "Photos(1)/$value") == 1)
        await reopened.close()
    }
}
