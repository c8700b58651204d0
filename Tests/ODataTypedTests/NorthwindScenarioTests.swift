import Foundation
import HTTPTypes
import NorthwindProxies
import ODataCore
import ODataFixtures
import ODataTyped
import OfflineStore
import OnlineStore
import Testing

/// The typed scenario against our fixture producer, through the online store and the offline store:
/// a query with filter, order and expand; a create; an update of one property; a delete; a navigation load;
/// and (offline) a failed upload found through ErrorArchive → AffectedEntity and `inErrorState()`.
@Suite(.serialized) struct NorthwindScenarioTests {
    private static let definingQueries = [
        OfflineODataDefiningQuery(name: "customers", query: "Customers?$expand=Orders"),
        OfflineODataDefiningQuery(name: "orders", query: "Orders"),
        OfflineODataDefiningQuery(name: "shippers", query: "Shippers"),
    ]

    private func makeStore(_ kind: StoreKind, _ server: FixtureServer, _ directory: TemporaryDirectory) async throws -> any DataServiceProvider {
        switch kind {
        case .online:
            let store = try OnlineODataStore(serviceRoot: server.serviceRoot, options: directory.onlineOptions())
            try await store.open()
            return store
        case .offline:
            let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: directory.offlineParameters())
            for query in Self.definingQueries { try await provider.add(definingQuery: query) }
            try await provider.open()
            return provider
        }
    }

    @Test(arguments: StoreKind.allCases)
    func typedQueryCreateUpdateDeleteAndNavigation(kind: StoreKind) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let store = RecordingProvider(try await makeStore(kind, server, directory))
        let service = NorthwindService(provider: store)

        // A query with filter, order and expand answers what the producer answers.
        let germans = try await service.fetchCustomers(matching: DataQuery()
            .filter(Customer.country == "Germany" && Customer.city != "Berlin")
            .orderBy(Customer.city, .descending).orderBy(Customer.customerID)
            .expand(Customer.orders))
        let expected = try server.read { data in
            try data.entities(in: "Customers").filter { $0["Country"] == "Germany" && $0["City"] != "Berlin" }
        }
        #expect(Set(germans.map(\.customerID)) == Set(expected.compactMap { $0["CustomerID"]?.stringValue }))
        #expect(germans.count > 3)
        #expect(germans.map { $0.city ?? "" } == germans.map { $0.city ?? "" }.sorted(by: >))
        let orderCount = try server.read { try $0.entities(in: "Orders").filter { $0["CustomerID"]?.stringValue == germans[0].customerID }.count }
        #expect(germans[0].orders?.count == orderCount && orderCount > 0)
        #expect(germans.allSatisfy { $0.odata.entitySet == "Customers" })

        // A create.
        let created = try await service.createShipper(Shipper(shipperID: 90, companyName: "Typed Express", phone: "(503) 555-0100"))
        #expect(created.companyName == "Typed Express")

        // An update of one property sends that property alone, with If-Match when the entity has an ETag.
        let alfki = try await service.fetchCustomer(customerID: "ALFKI")
        let moved = try await service.updateCustomer(alfki) { $0.city = "Köln" }
        #expect(moved.city == "Köln" && moved.companyName == alfki.companyName)
        #expect(try store.bodies("PATCH") == [["City": "Köln"]])
        if alfki.odata.etag != nil { #expect(store.requests("PATCH")[0].headerFields[.ifMatch] == alfki.odata.etag) }
        let unchanged = try await service.updateCustomer(moved) { $0.city = "Köln" }
        #expect(store.requests("PATCH").count == 1, "nothing changed, nothing sent")
        #expect(unchanged.city == "Köln")

        // A delete.
        try await service.deleteShipper(created)
        await #expect(throws: (any Error).self) { try await service.fetchShipper(shipperID: created.shipperID) }

        // A navigation load.
        var berlin = try await service.fetchCustomer(customerID: "ALFKI")
        #expect(berlin.orders == nil)
        try await service.dataService.loadProperty(Customer.orders, into: &berlin)
        let alfkiOrders = try server.read { try $0.entities(in: "Orders").filter { $0["CustomerID"] == "ALFKI" }.count }
        #expect(berlin.orders?.count == alfkiOrders && alfkiOrders > 0)
        var order = try #require(berlin.orders?.first)
        try await service.dataService.loadProperty(Order.customer, into: &order)
        #expect(order.customer?.customerID == "ALFKI")

        // Online the producer has the changes now; offline after the upload.
        if let provider = store.base as? OfflineODataProvider {
            #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"]) }?["City"] != "Köln")
            let result = try await provider.upload()
            #expect(result.failed.isEmpty)
            await provider.close()
        } else if let online = store.base as? OnlineODataStore {
            online.close()
        }
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"]) }?["City"] == "Köln")
        #expect(try server.read { try $0.entities(in: "Shippers") }.contains { $0["CompanyName"] == "Typed Express" } == false)
        let methods = store.requests("POST").count + store.requests("DELETE").count
        #expect(methods == 2, "one create and one delete")
    }

    @Test func aFailedUploadIsFoundThroughErrorArchiveAndInErrorState() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: directory.offlineParameters())
        for query in Self.definingQueries { try await provider.add(definingQuery: query) }
        try await provider.open()
        defer { Task { await provider.close() } }
        let service = NorthwindService(provider: provider)
        _ = try server.faults.add(FaultRule(.fail(status: 400, code: "InvalidCity", message: "City is not allowed"), method: "PATCH", path: "Customers('ANATR')"))

        let anatr = try await service.fetchCustomer(customerID: "ANATR")
        _ = try await service.updateCustomer(anatr) { $0.city = "Nowhere" }
        let alfki = try await service.fetchCustomer(customerID: "ALFKI")
        _ = try await service.updateCustomer(alfki) { $0.city = "Hamburg" }
        let result = try await provider.upload()
        #expect(result.failed.count == 1)

        // The source documents' two ways: filter by error state, and ErrorArchive → AffectedEntity.
        let inError = try await service.fetchCustomers(matching: DataQuery().filter(OfflineQueryFunction.inErrorState()))
        #expect(inError.map(\.customerID) == ["ANATR"])
        #expect(inError[0].odata.inErrorState)
        let counted = try await service.dataService.executeQuery(DataQuery<Customer>().from(NorthwindService.customers)
            .filter(OfflineQueryFunction.inErrorState()).count().top(0))
        #expect(try counted.count() == 1)

        var entry = try #require(try await service.dataService.fetch(ErrorArchiveEntry.entitySet,
                                                                      matching: DataQuery().filter(ErrorArchiveEntry.httpStatusCode == 400)).first)
        #expect(entry.code == "InvalidCity" && entry.requestMethod == "PATCH" && entry.message == "City is not allowed")
        #expect(ErrorArchiveEntry.affectedEntity.entityValue(from: entry) == nil)
        try await service.dataService.loadProperty(ErrorArchiveEntry.affectedEntity, into: &entry)
        let affected = try #require(ErrorArchiveEntry.affectedEntity.entityValue(from: entry) as? Customer)
        #expect(affected.customerID == "ANATR" && affected.city == "Nowhere")

        // Deleting the entry releases the entity from error state.
        try await service.dataService.deleteEntity(entry, in: ErrorArchiveEntry.entitySet)
        #expect(try await service.fetchCustomers(matching: DataQuery().filter(OfflineQueryFunction.inErrorState())).isEmpty)
    }
}
