import Foundation
import Synchronization
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

@Suite struct DownloadTests {
    @Test func initialDownloadMatchesTheProducerExactly() async throws {
        let server = try await FixtureServer.start()
        let directory = try TemporaryDirectory()
        let delegate = RecordingDelegate()
        let provider = try await Northwind.provider(server, directory, delegate: delegate)
        try await provider.open()
        for set in ["Customers", "Orders", "Order_Details", "Products", "Employees", "Shippers", "Categories", "Suppliers"] {
            let expected = try server.read { data in try data.entities(in: set) }.map(plain)
            let local = try await provider.getAll(set).map(plain)
            let mismatch = difference(local, expected)
            #expect(mismatch == nil, "\(set): \(mismatch ?? "")")
        }
        // Paged Orders: 830 orders arrive in pages of 100, progress counts them all.
        let orderProgress = delegate.progress.withLock { $0.filter { $0.definingQuery == "orders" } }
        #expect(orderProgress.count == 9)
        #expect(orderProgress.last?.entities == 830)
        #expect(orderProgress.last?.isComplete == true)
        #expect((orderProgress.last?.bytes ?? 0) > 100_000)
        #expect(delegate.states.withLock { $0 } == [.opening, .open])
        // The `$expand` kept the relationship: ALFKI's orders, also through navigation.
        let alfkiOrders = try await provider.getAll("Customers('ALFKI')/Orders").compactMap { $0["OrderID"]?.intValue }
        let expectedOrders = try server.read { data in try data.entities(in: "Orders") }
            .filter { $0["CustomerID"] == "ALFKI" }.compactMap { $0["OrderID"]?.intValue }
        #expect(alfkiOrders == expectedOrders)
        #expect(alfkiOrders.count == 6)

        // Close, stop the producer, reopen: the same data without network.
        await provider.close()
        await server.stop()
        let reopened = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: Northwind.parameters(directory))
        try await reopened.open()
        let customers = try await reopened.getAll("Customers").map(plain)
        #expect(customers.count == 91)
        #expect(customers.first?["CompanyName"] == "Alfreds Futterkiste")
        #expect(await reopened.definingQueries.map(\.name) == Northwind.definingQueries.map(\.name))
        let order = try await reopened.get("Orders(10248)/Customer")
        #expect(order["CustomerID"] == "VINET")
        await reopened.close()
    }

    @Test func aDownloadThatFailsHalfWayLeavesNoHalfStore() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        // The fourth page of Orders fails.
        let fault = try server.faults.add(FaultRule(.fail(status: 503, code: "Busy", message: "try later"), method: "GET", path: "Orders", firstMatch: 4, times: 1))
        let provider = try await Northwind.provider(server, directory)
        await #expect(throws: OfflineODataError.self) { try await provider.open() }
        #expect(await provider.currentState == .closed)
        _ = server.faults.remove(fault)
        // Nothing of the first pages was kept: the store files hold no configuration.
        let store = try EntityStore(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        #expect(try store.configuration() == nil)
        #expect(try store.allRecords().isEmpty)
        store.close()
        // The next open starts over and completes.
        try await provider.open()
        #expect(try await provider.getAll("Orders").count == 830)
        await provider.close()
    }

    @Test func openReportsFailureDetailsAndNeedsDefiningQueries() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let empty = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: Northwind.parameters(directory))
        let error = await #expect(throws: OfflineODataError.self) { try await empty.open() }
        #expect(error?.code == .invalidDefiningQuery)
        let unknown = try await Northwind.provider(server, directory, queries: [OfflineODataDefiningQuery(name: "x", query: "NoSuchSet")])
        let unknownError = await #expect(throws: OfflineODataError.self) { try await unknown.open() }
        #expect(unknownError?.code == .invalidDefiningQuery)
        #expect(unknownError?.message.contains("NoSuchSet") == true)
    }

    @Test(arguments: [
        ("Customers?$filter=", "$filter"),
        ("Customers?$filter=Country eq", "Country eq"),
        ("Customers?$top=-1", "$top"),
        ("Customers?$bogus=1", "$bogus"),
        ("Customers('ALFKI'", "unclosed"),
        ("Customers?$count=true", "$count"),
    ])
    func malformedDefiningQueriesAreRefusedByName(query: String, mention: String) async throws {
        let directory = try TemporaryDirectory()
        let provider = try OfflineODataProvider(serviceRoot: "http://127.0.0.1:1/svc/", parameters: Northwind.parameters(directory))
        let error = await #expect(throws: OfflineODataError.self) {
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "bad", query: query))
        }
        #expect(error?.code == .invalidDefiningQuery)
        #expect(error?.message.contains("'bad'") == true)
        #expect(error?.message.contains(mention) == true, "\(error?.message ?? "")")
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "good", query: "Customers"))
        let duplicate = await #expect(throws: OfflineODataError.self) {
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "good", query: "Orders"))
        }
        #expect(duplicate?.code == .invalidDefiningQuery)
    }
}
