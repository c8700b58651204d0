import Foundation
import NorthwindProxies
import ODataCore
import ODataFixtures
import ODataTyped
import OfflineStore
import OnlineStore
import Testing

/// `DataService.observe(_:matching:)` over generated types: the offline store's live query, page by page.
@Suite struct ObservationTypedTests {
    @Test func aTypedObservationFollowsLocalChanges() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: directory.offlineParameters())
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        defer { Task { await provider.close() } }
        let service = NorthwindService(provider: provider)
        let query = DataQuery<Customer>().filter(Customer.country == "Germany")
        var pages = try service.dataService.observe(NorthwindService.customers, matching: query).makeAsyncIterator()
        let germans = try #require(try await pages.next()).entities
        #expect(!germans.isEmpty && germans.allSatisfy { $0.country == "Germany" })
        let alfki = try await service.fetchCustomer(customerID: "ALFKI")
        _ = try await service.updateCustomer(alfki) { $0.country = "Austria" }
        let after = try #require(try await pages.next()).entities
        #expect(after.count == germans.count - 1 && !after.contains { $0.customerID == "ALFKI" })
    }

    /// The online store cannot keep a query live this way: a typed error says so.
    @Test func anOnlineStoreIsRefused() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let store = try OnlineODataStore(serviceRoot: server.serviceRoot, options: directory.onlineOptions())
        try await store.open()
        defer { store.close() }
        let service = NorthwindService(provider: store)
        #expect(throws: DataServiceError.invalidQuery) { try service.dataService.observe(NorthwindService.customers) }
    }
}
