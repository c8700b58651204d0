import Foundation
import ODataCore
import ODataFixtures
import SQLCipher
import Testing

@testable import OfflineStore

/// The initial download puts rows in with their key alone and builds the other indexes once the last page is in
/// (`EntityStore+Indexes.swift`); an index a killed process did not build is built at the next `open()`.
@Suite struct IndexBuildTests {
    static let queries = [
        OfflineODataDefiningQuery(name: "customers", query: "Customers?$expand=Orders", indexes: ["Country"]),
        OfflineODataDefiningQuery(name: "orders", query: "Orders", indexes: ["ShipCountry", "Freight"]),
    ]

    /// The index names of the database.
    static func indexNames(_ store: EntityStore) throws -> Set<String> {
        try store.existingIndexNames().filter { !$0.hasPrefix("sqlite_") }
    }

    /// What the store's tables should have: natural order, the indexes its defining queries declare, foreign keys.
    static func expectedNames(_ store: EntityStore) throws -> Set<String> {
        let model = try store.reading("the model") { try store.currentModel($0) }
        let configuration = try #require(try store.configuration()).0
        let wanted = try DeclaredIndexes.wanted(configuration.definingQueries, model: model, serviceRoot: configuration.serviceRoot)
        store.wantedIndexes.withLock { $0 = wanted }
        return Set(store.allTables().flatMap { table in store.indexes(of: table, model: model).map(\.name) })
    }

    @Test func aDownloadedStoreHasEveryIndexItsTablesShouldHave() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        await provider.close()

        let store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        defer { store.close() }
        let names = try Self.indexNames(store)
        let expected = try Self.expectedNames(store)
        #expect(names == expected, "missing \(expected.subtracting(names)), unexpected \(names.subtracting(expected))")
        // The natural order, the declared properties and a foreign key of each set.
        for name in ["entities:Orders:$natural", "entities:Orders:ShipCountry", "entities:Orders:Freight", "entities:Orders:CustomerID",
                     "entities:Customers:$natural", "entities:Customers:Country"] {
            #expect(names.contains(name), "\(name)")
        }
        // SQLite reads them: a filter on a declared property and the natural order.
        let table = try #require(store.table("Orders"))
        let plan = try store.reading("plan") { connection in
            try TableReader(table: table, connection: connection).explain(where: SQLCondition("\"ShipCountry\" = ?", [.text("France")]),
                                                                          orderBy: [], limit: nil)
        }
        #expect(plan.contains { $0.contains("entities:Orders:ShipCountry") }, "\(plan)")
    }

    @Test func indexesAKilledProcessDidNotBuildAreBuiltAtTheNextOpen() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        await provider.close()

        // The state a kill after the last page's commit leaves (each index is built in a transaction of its own, so a
        // kill in the middle of one rolls it back to this): the download complete, some indexes missing.
        var store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        let expected = try Self.expectedNames(store)
        let dropped = ["entities:Orders:$natural", "entities:Orders:ShipCountry", "entities:Customers:Country", "entities:Orders:CustomerID"]
        try store.withWriter { connection in
            for name in dropped { try connection.execute("DROP INDEX \(EntityTable.quote(name))") }
        }
        #expect(try Self.indexNames(store).isDisjoint(with: dropped))
        #expect(try store.configuration()?.0.downloadComplete == true)
        store.close()

        let reopened = try await Northwind.provider(server, directory, queries: Self.queries)
        let requests = server.counters.requests(method: "GET", path: "Orders")
        try await reopened.open()
        #expect(server.counters.requests(method: "GET", path: "Orders") == requests, "no download again")
        let france = try await reopened.getAll("Orders?$filter=ShipCountry%20eq%20'France'").compactMap { $0["OrderID"]?.intValue }
        let expectedFrance = try server.read { data in try data.entities(in: "Orders") }.filter { $0["ShipCountry"] == "France" }.compactMap { $0["OrderID"]?.intValue }
        #expect(france == expectedFrance && !france.isEmpty)
        await reopened.close()

        store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        #expect(try Self.indexNames(store) == expected)
        store.close()
    }

    @Test func aDownloadKilledBeforeItsLastPageHasOnlyKeysThenResumesAndBuildsTheIndexes() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        // Every page of Orders takes 150 ms, so the kill lands in the middle of the download.
        let slow = try server.faults.add(FaultRule(.latency(.milliseconds(150)), method: "GET", path: "Orders"))
        let child = try ILODataProcess(ILODataTests.storeArguments(directory) + [
            "--kdf-rounds", "1000", "--service-root", server.serviceRoot,
            "--defining-query", "customers=Customers", "--defining-query", "orders=Orders", "--command", "get Orders/$count",
        ])
        for _ in 0..<1000 where server.counters.requests(method: "GET", path: "Orders") < 4 { try await Task.sleep(for: .milliseconds(5)) }
        kill(child.process.processIdentifier, SIGKILL)
        _ = await child.waitForExit()
        #expect(child.process.terminationReason == .uncaughtSignal)
        _ = server.faults.remove(slow)

        var store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        let (configuration, _) = try #require(try store.configuration())
        #expect(!configuration.downloadComplete)
        let committed = try store.recordCount(in: "Orders")
        #expect(committed > 0 && committed < 830)
        // Rows in, indexes not yet (beyond the keys).
        #expect(try Self.indexNames(store).isEmpty)
        store.close()

        let provider = try await Northwind.provider(server, directory, queries: [
            OfflineODataDefiningQuery(name: "customers", query: "Customers"), OfflineODataDefiningQuery(name: "orders", query: "Orders"),
        ])
        try await provider.open()
        let expected = try server.read { data in try data.entities(in: "Orders") }.map(plain)
        #expect(difference(try await provider.getAll("Orders").map(plain), expected) == nil)
        await provider.close()
        store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        let names = try Self.indexNames(store)
        #expect(names == (try Self.expectedNames(store)) && names.contains("entities:Orders:$natural"))
        store.close()
    }

    @Test func killsAroundTheLastPageAndTheIndexBuildLeaveAStoreThatReopensWhole() async throws {
        // SIGKILL at random points from the last page's request on: its commit, the index build, or after. Each time
        // the store reopens, resumes or builds what is missing, and holds the producer's data with every index.
        var random = SystemRandomNumberGenerator()
        var outcomes: [String] = []
        for _ in 0..<6 {
            let server = try await FixtureServer.start()
            let directory = try TemporaryDirectory()
            let child = try ILODataProcess(ILODataTests.storeArguments(directory) + [
                "--kdf-rounds", "1000", "--service-root", server.serviceRoot,
                "--defining-query", "customers=Customers", "--defining-query", "orders=Orders", "--command", "get Orders/$count",
            ])
            // Orders come in 9 pages of 100.
            for _ in 0..<4000 where server.counters.requests(method: "GET", path: "Orders") < 9 { try await Task.sleep(for: .milliseconds(1)) }
            try await Task.sleep(for: .microseconds(Int.random(in: 0...40_000, using: &random)))
            kill(child.process.processIdentifier, SIGKILL)
            _ = await child.waitForExit()

            var store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
            let complete = try store.configuration()?.0.downloadComplete == true
            let missing = try Self.expectedNames(store).subtracting(try Self.indexNames(store)).count
            outcomes.append(complete ? "complete, \(missing) indexes missing" : "not complete")
            store.close()

            let provider = try await Northwind.provider(server, directory, queries: [
                OfflineODataDefiningQuery(name: "customers", query: "Customers"), OfflineODataDefiningQuery(name: "orders", query: "Orders"),
            ])
            try await provider.open()
            for set in ["Customers", "Orders"] {
                let expected = try server.read { data in try data.entities(in: set) }.map(plain)
                #expect(difference(try await provider.getAll(set).map(plain), expected) == nil, "\(set) after \(outcomes.last ?? "")")
            }
            await provider.close()
            store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
            let names = try Self.indexNames(store)
            #expect(names == (try Self.expectedNames(store)) && names.contains("entities:Orders:$natural"), "after \(outcomes.last ?? "")")
            store.close()
            await server.stop()
        }
        print("IndexBuildTests kills: \(outcomes)")
    }
}
