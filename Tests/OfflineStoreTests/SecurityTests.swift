import Foundation
import SQLCipher
import ODataCore
import ODataFixtures
import TechnicalCache
import Testing

@testable import OfflineStore

@Suite struct SecurityTests {
    @Test func aWrongKeyIsRefusedAndTheRightOneStillOpens() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"City":"Hamburg"}"#))
        await provider.close()
        await server.stop()
        let wrong = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: Northwind.parameters(directory, key: "not the key"))
        let error = await #expect(throws: OfflineODataError.self) { try await wrong.open() }
        #expect(error == .wrongKey)
        #expect(await wrong.currentState == .closed)
        // Nothing was erased: the right key opens the same data and queue, without network.
        let right = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: Northwind.parameters(directory))
        try await right.open()
        #expect(try await right.get("Customers('ALFKI')")["City"] == "Hamburg")
        #expect(try await right.pendingRequests().count == 1)
        await right.close()
        // A plaintext open of an encrypted store is refused too.
        var plaintext = Northwind.parameters(directory, key: nil)
        plaintext.disableDefaultEncryptionKey = true
        let mismatch = await #expect(throws: OfflineODataError.self) {
            try await OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: plaintext).open()
        }
        #expect(mismatch == .encryptionMismatch)
    }

    @Test func noPlaintextOfAKnownValueReachesTheStoreFiles() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Zyxwvut Unique Freight"}"#))
        await provider.close()
        for needle in ["Alfreds Futterkiste", "ALFKI", "Obere Str. 57", "Zyxwvut Unique Freight", "Customers", "ShipCity"] {
            #expect(try filesContain(directory.path, needle) == false, "'\(needle)' is readable in the store files")
        }
        // Owner-only files.
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path + "/northwind") {
            let mode = try FileManager.default.attributesOfItem(atPath: directory.path + "/northwind/" + file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file) has mode \(String(mode ?? 0, radix: 8))")
        }
    }

    @Test func theDefaultKeyIsRandomAndKeptAndPlaintextOnlyWhenAsked() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let queries = [OfflineODataDefiningQuery(name: "customers", query: "Customers")]
        // Default key: a 0600 key file next to the store; the data is still unreadable.
        var parameters = Northwind.parameters(directory, key: nil, name: "default")
        let store = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await store.add(definingQuery: queries[0])
        try await store.open()
        await store.close()
        let keyFile = directory.path + "/default.key"
        let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try filesContain(directory.path + "/default", "Alfreds Futterkiste") == false)
        let again = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await again.open()
        #expect(try await again.getAll("Customers").count == 91)
        await again.close()
        // Losing the key file makes the store unopenable, but not erased.
        try FileManager.default.removeItem(atPath: keyFile)
        let lost = await #expect(throws: OfflineODataError.self) {
            try await OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters).open()
        }
        #expect(lost == .wrongKey)
        // Switched off explicitly: plaintext (the check above can see plaintext when it is there).
        parameters = Northwind.parameters(directory, key: nil, name: "plain")
        parameters.disableDefaultEncryptionKey = true
        let plain = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await plain.add(definingQuery: queries[0])
        try await plain.open()
        await plain.close()
        #expect(try filesContain(directory.path + "/plain", "Alfreds Futterkiste"))
        #expect(FileManager.default.fileExists(atPath: directory.path + "/plain.key") == false)
    }

    @Test func aSecondOpenOfTheSameStoreIsRefused() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        let second = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: provider.parameters)
        let error = await #expect(throws: OfflineODataError.self) { try await second.open() }
        #expect(error == .storeLocked)
        // The first store is unharmed; after it closes the second may open.
        #expect(try await provider.getAll("Shippers").count == 3)
        await provider.close()
        try await second.open()
        #expect(try await second.getAll("Shippers").count == 3)
        // Opening an open store is harmless.
        try await second.open()
        await second.close()
        // Another service root on the same files is refused.
        let other = try OfflineODataProvider(serviceRoot: "http://127.0.0.1:9/other/", parameters: provider.parameters)
        let mismatch = await #expect(throws: OfflineODataError.self) { try await other.open() }
        #expect(mismatch == .serviceRootMismatch)
    }

    @Test func aTamperedPageIsDetected() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        await provider.close()
        let path = directory.path + "/northwind"
        // The page that holds the Shippers table (3 rows: its root page is its only page).
        var store = try EntityStore.open(directory: path, parameters: Northwind.parameters(directory))
        let (page, pageSize) = try store.withWriter { connection in
            let select = try connection.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'entities:Shippers'")
            #expect(try select.step())
            return (Int(select.integer(at: 0)), connection.pageSize)
        }
        #expect(try store.record(set: "Shippers", key: "(1)")?.entity["CompanyName"] == "Speedy Express")
        store.close()
        let file = FileHandle(forUpdatingAtPath: EntityStore.databasePath(in: path))
        let offset = UInt64((page - 1) * pageSize + pageSize / 4)
        try file?.seek(toOffset: offset)
        var byte = try #require(try file?.read(upToCount: 1))
        byte[0] ^= 0x40
        try file?.seek(toOffset: offset)
        try file?.write(contentsOf: byte)
        try file?.close()
        // The page fails its HMAC: a typed error, never another value; the other pages still read.
        store = try EntityStore.open(directory: path, parameters: Northwind.parameters(directory))
        let error = #expect(throws: OfflineODataError.self) { try store.record(set: "Shippers", key: "(1)") }
        #expect(error == .storage)
        #expect(try store.record(set: "Customers", key: "('ALFKI')")?.entity["CompanyName"] == "Alfreds Futterkiste")
        store.close()
    }
}
