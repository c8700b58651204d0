import Foundation
import Synchronization
import ODataCore
import ODataFixtures
import ODataSession
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
        #expect(orderProgress.allSatisfy { $0.total == nil }, "no count asked for, no total")
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

    @Test func aDownloadThatFailsHalfWayResumesAtTheFailedPage() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        // The fourth page of Orders fails, and so does every re-send of it (the retry policy's three).
        let fault = try server.faults.add(FaultRule(.fail(status: 503, code: "Busy", message: "try later"), method: "GET", path: "Orders", firstMatch: 4))
        let sends = RetryPolicy().maxAttempts
        let provider = try await Northwind.provider(server, directory)
        await #expect(throws: OfflineODataError.self) { try await provider.open() }
        #expect(await provider.currentState == .closed)
        _ = server.faults.remove(fault)
        // The pages that arrived are committed; the store does not count as downloaded yet.
        let store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        let (configuration, _) = try #require(try store.configuration())
        #expect(!configuration.downloadComplete)
        #expect(configuration.resume?.query == 1)
        #expect(configuration.resume?.next?.hasSuffix("Orders?$skiptoken=300") == true)
        #expect(configuration.resume?.entities == 300)
        #expect(try store.recordCount(in: "Customers") == 91)
        store.close()
        #expect(try OfflineODataProvider.storedServiceRoot(parameters: Northwind.parameters(directory)) == nil)
        #expect(server.counters.requests(method: "GET", path: "Orders") == 3 + sends)

        // The next open goes on at the failed page: no page is read twice, and the store is the producer's.
        let delegate = RecordingDelegate()
        let resumed = try await Northwind.provider(server, directory, delegate: delegate)
        try await resumed.open()
        #expect(server.counters.requests(method: "GET", path: "Orders") == 3 + sends + 6)
        #expect(server.counters.requests(method: "GET", path: "Customers") == 1)
        #expect(server.counters.requests(method: "GET", path: "$metadata") == 1)
        for set in ["Customers", "Orders", "Order_Details", "Products", "Employees", "Shippers", "Categories", "Suppliers"] {
            let expected = try server.read { data in try data.entities(in: set) }.map(plain)
            let local = try await resumed.getAll(set).map(plain)
            let mismatch = difference(local, expected)
            #expect(mismatch == nil, "\(set): \(mismatch ?? "")")
        }
        let alfkiOrders = try await resumed.getAll("Customers('ALFKI')/Orders").compactMap { $0["OrderID"]?.intValue }
        #expect(alfkiOrders.count == 6)
        // Progress goes on from where it stopped: the first report after the resume counts 400 orders.
        let orderProgress = delegate.progress.withLock { $0.filter { $0.definingQuery == "orders" } }
        #expect(orderProgress.map(\.entities) == [400, 500, 600, 700, 800, 830])
        #expect(await resumed.configuration?.deltaLinks.keys.sorted() == Northwind.definingQueries.map(\.name).sorted())
        await resumed.close()
    }

    @Test func aSIGKILLedInitialDownloadResumesAtTheLastCommittedPage() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let queries = [OfflineODataDefiningQuery(name: "customers", query: "Customers"), OfflineODataDefiningQuery(name: "orders", query: "Orders")]
        // Every page of Orders takes 150 ms, so the kill lands in the middle of the download.
        let slow = try server.faults.add(FaultRule(.latency(.milliseconds(150)), method: "GET", path: "Orders"))
        let child = try ILODataProcess(ILODataTests.storeArguments(directory) + [
            "--kdf-rounds", "1000", "--service-root", server.serviceRoot,
            "--defining-query", "customers=Customers", "--defining-query", "orders=Orders", "--command", "get Orders/$count",
        ])
        // The fifth page is asked for only after the fourth was committed.
        for _ in 0..<1000 where server.counters.requests(method: "GET", path: "Orders") < 5 { try await Task.sleep(for: .milliseconds(5)) }
        kill(child.process.processIdentifier, SIGKILL)
        _ = await child.waitForExit()
        #expect(child.process.terminationReason == .uncaughtSignal)
        _ = server.faults.remove(slow)

        let store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        let (configuration, _) = try #require(try store.configuration())
        let committed = try #require(configuration.resume?.entities)
        #expect(!configuration.downloadComplete && configuration.resume?.query == 1)
        #expect(committed >= 400 && committed < 830 && committed % 100 == 0)
        #expect(configuration.resume?.next?.hasSuffix("Orders?$skiptoken=\(committed)") == true)
        #expect(try store.recordCount(in: "Orders") == committed)
        store.close()

        let before = server.counters.requests(method: "GET", path: "Orders")
        let provider = try await Northwind.provider(server, directory, queries: queries)
        try await provider.open()
        #expect(server.counters.requests(method: "GET", path: "Orders") - before == (830 - committed + 99) / 100)
        for set in ["Customers", "Orders"] {
            let expected = try server.read { data in try data.entities(in: set) }.map(plain)
            let local = try await provider.getAll(set).map(plain)
            #expect(difference(local, expected) == nil, "\(set)")
        }
        await provider.close()
    }

    @Test func aResumedLinkTheBackEndRefusesStartsTheDownloadOver() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let fault = try server.faults.add(FaultRule(.fail(status: 503, code: "Busy", message: "try later"), method: "GET", path: "Orders", firstMatch: 2))
        let provider = try await Northwind.provider(server, directory)
        await #expect(throws: OfflineODataError.self) { try await provider.open() }
        _ = server.faults.remove(fault)
        // The skip token expired meanwhile: the back end answers 410 to the stored link.
        let expired = try server.faults.add(FaultRule(.fail(status: 410, code: "Gone", message: "skip token expired"), method: "GET", path: "Orders", firstMatch: 1, times: 1))
        let error = try await #require(throws: OfflineODataError.self) { try await provider.open() }
        #expect(error == .downloadFailed && error.message.contains("starts it over"))
        #expect(error.httpStatus == nil)
        _ = server.faults.remove(expired)
        try await provider.open()
        #expect(try await provider.getAll("Orders").count == 830)
        #expect(server.counters.requests(method: "GET", path: "$metadata") == 2)
        await provider.close()
    }

    @Test func openReportsFailureDetailsAndNeedsDefiningQueries() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let empty = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: Northwind.parameters(directory))
        let error = await #expect(throws: OfflineODataError.self) { try await empty.open() }
        #expect(error == .invalidDefiningQuery)
        let unknown = try await Northwind.provider(server, directory, queries: [OfflineODataDefiningQuery(name: "x", query: "NoSuchSet")])
        let unknownError = await #expect(throws: OfflineODataError.self) { try await unknown.open() }
        #expect(unknownError == .invalidDefiningQuery)
        #expect(unknownError?.message.contains("NoSuchSet") == true)
    }

    /// A defining query that asks for the count (`$count=true`) sends it; the download's progress then has the back
    /// end's count as its total, on every page.
    @Test func aDefiningQueryThatAsksForTheCountGivesTheProgressATotal() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let delegate = RecordingDelegate()
        let provider = try await Northwind.provider(server, directory, queries: [OfflineODataDefiningQuery(name: "orders", query: "Orders?$count=true")],
                                                    delegate: delegate)
        try await provider.open()
        let progress = delegate.progress.withLock { $0 }
        #expect(progress.count == 9 && progress.allSatisfy { $0.total == 830 }, "\(progress)")
        #expect(progress.last?.entities == 830 && progress.last?.isComplete == true)
        #expect(try await provider.getAll("Orders").count == 830)
        await provider.close()
    }

    @Test(arguments: [
        ("Customers?$filter=", "$filter"),
        ("Customers?$filter=Country eq", "Country eq"),
        ("Customers?$top=-1", "$top"),
        ("Customers?$bogus=1", "$bogus"),
        ("Customers('ALFKI'", "unterminated key predicate"),
        ("Customers?$inlinecount=some", "$inlinecount"),
        ("Customers?$skiptoken=5", "$skiptoken"),
    ])
    func malformedDefiningQueriesAreRefusedByName(query: String, mention: String) async throws {
        let directory = try TemporaryDirectory()
        let provider = try OfflineODataProvider(serviceRoot: "http://127.0.0.1:1/svc/", parameters: Northwind.parameters(directory))
        let error = await #expect(throws: OfflineODataError.self) {
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "bad", query: query))
        }
        #expect(error == .invalidDefiningQuery)
        #expect(error?.message.contains("'bad'") == true)
        #expect(error?.message.contains(mention) == true, "\(error?.message ?? "")")
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "good", query: "Customers"))
        let duplicate = await #expect(throws: OfflineODataError.self) {
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "good", query: "Orders"))
        }
        #expect(duplicate == .invalidDefiningQuery)
    }
}
