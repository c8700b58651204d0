import Foundation
import APIProductProxies
import GWSampleBasicProxies
import ODataCore
import ODataFixtures
import ODataTyped
import OfflineStore
import OnlineStore
import Testing

/// The typed scenario against mock-sap's V2 `GWSAMPLE_BASIC` (a producer nobody here wrote, CSRF on), through
/// both stores, with the proxies generated from its own `$metadata`.
@Suite(.serialized) struct SAPScenarioTests {
    private func makeStore(_ kind: StoreKind, _ sap: MockSAP, _ directory: TemporaryDirectory) async throws -> any DataServiceProvider {
        let root = sap.serviceRoot(MockSAP.gwsampleBasic)
        switch kind {
        case .online:
            let store = try OnlineODataStore(serviceRoot: root, options: directory.onlineOptions())
            try await store.open()
            return store
        case .offline:
            let provider = try OfflineODataProvider(serviceRoot: root, parameters: directory.offlineParameters())
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "ProductSet"))
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "partners", query: "BusinessPartnerSet?$expand=ToSalesOrders"))
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "orders", query: "SalesOrderSet?$expand=ToLineItems"))
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "items", query: "SalesOrderLineItemSet"))
            try await provider.open()
            return provider
        }
    }

    /// What mock-sap itself answers: the keys of a V2 query, in its order.
    private func producerKeys(_ sap: MockSAP, _ query: String, key: String) throws -> [String] {
        let parts = query.split(separator: "?", maxSplits: 1)
        let options = parts[1].split(separator: "&").map { option in
            let pair = option.split(separator: "=", maxSplits: 1)
            return pair[0] + "=" + PercentEncoding.encodeQueryValue(String(pair[1]))
        }
        let data = try curl(sap.serviceRoot(MockSAP.gwsampleBasic) + parts[0] + "?" + options.joined(separator: "&") + "&$format=json")
        let results = try JSON.parse(data)["d"]?["results"]?.arrayValue ?? []
        return results.compactMap { $0[key]?.stringValue }
    }

    /// A GET straight to the producer, past both stores.
    private func curl(_ url: String) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-g", url]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return data
    }

    /// The bodies mock-sap logged for requests with `method` whose path contains `path`.
    private func loggedBodies(_ sap: MockSAP, method: String, path: String) throws -> [String] {
        let (_, body) = try sap.admin("GET", "requests?limit=200&verbose=1")
        return (try JSON.parse(body)["results"]?.arrayValue ?? []).compactMap { entry in
            guard entry["method"]?.stringValue == method, entry["path"]?.stringValue?.contains(path) == true else { return nil }
            return entry["body"]?.stringValue
        }
    }

    @Test(arguments: StoreKind.allCases)
    func typedQueryCreateUpdateDeleteAndNavigation(kind: StoreKind) async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        let store = RecordingProvider(try await makeStore(kind, sap, directory))
        let service = GWSampleBasicService(provider: store)

        // A query with a V2 filter, order and expand gives mock-sap's own answer.
        let notebooks = try await service.fetchProductSet(matching: DataQuery()
            .filter(Product.category == "Notebooks" && Product.price > Decimal(500))
            .orderBy(Product.price, .descending).orderBy(Product.productID))
        let expected = try producerKeys(sap, "ProductSet?$filter=Category eq 'Notebooks' and Price gt 500M&$orderby=Price desc,ProductID", key: "ProductID")
        #expect(notebooks.map(\.productID) == expected && !expected.isEmpty)
        let orders = try await service.fetchSalesOrderSet(matching: DataQuery().expand(SalesOrder.toLineItems).orderBy(SalesOrder.salesOrderID).top(3))
        #expect(orders.count == 3 && orders.allSatisfy { !($0.toLineItems ?? []).isEmpty })
        #expect(orders[0].grossAmount != nil && orders[0].createdAt != nil)

        // A create, an update of one property, a delete.
        let created = try await service.createProduct(Product(productID: "ZZ-TYPED", typeCode: "PR", category: "Notebooks", name: "Typed",
                                                              supplierID: "0100000005", taxTarifCode: 1, measureUnit: "EA",
                                                              currencyCode: "EUR", price: Decimal(string: "12.5")))
        #expect(created.productID == "ZZ-TYPED")
        let partner = try #require(try await service.fetchBusinessPartnerSet(matching: DataQuery().orderBy(BusinessPartner.businessPartnerID).top(1)).first)
        let renamed = try await service.updateBusinessPartner(partner) { $0.companyName = "Typed GmbH" }
        #expect(renamed.companyName == "Typed GmbH")
        #expect(try store.bodies("PATCH") == [["CompanyName": "Typed GmbH"]])
        let doomed = try await service.fetchProduct(productID: notebooks[notebooks.count - 1].productID)
        try await service.deleteProduct(doomed)

        // A navigation load.
        var loaded = partner
        try await service.dataService.loadProperty(BusinessPartner.toSalesOrders, into: &loaded)
        let partnerOrders = try producerKeys(sap, "SalesOrderSet?$filter=CustomerID eq '\(partner.businessPartnerID)'", key: "SalesOrderID")
        #expect(Set(loaded.toSalesOrders?.map(\.salesOrderID) ?? []) == Set(partnerOrders))

        if let provider = store.base as? OfflineODataProvider {
            let result = try await provider.upload()
            #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
            await provider.close()
        } else if let online = store.base as? OnlineODataStore {
            online.close()
        }
        // mock-sap holds the changes, and the update it received carried the one property.
        #expect(try producerKeys(sap, "ProductSet?$filter=ProductID eq 'ZZ-TYPED'", key: "ProductID") == ["ZZ-TYPED"])
        #expect(try producerKeys(sap, "ProductSet?$filter=ProductID eq '\(doomed.productID)'", key: "ProductID").isEmpty)
        #expect(try producerKeys(sap, "BusinessPartnerSet?$filter=CompanyName eq 'Typed GmbH'", key: "BusinessPartnerID") == [partner.businessPartnerID])
        let updates = try loggedBodies(sap, method: "PATCH", path: "BusinessPartnerSet") + loggedBodies(sap, method: "MERGE", path: "BusinessPartnerSet")
        let sentKeys = try updates.map { try JSON.parse($0).objectValue?.keys ?? [] }
        #expect(sentKeys == [["CompanyName"]], "\(updates)")
    }

    /// mock-sap's V4 product service, through the proxies generated from its V4 `$metadata`: a filtered, ordered,
    /// expanded query equals the producer's own answer, and a navigation load fills the collection.
    @Test(arguments: StoreKind.allCases)
    func v4ServiceQueryExpandAndNavigation(kind: StoreKind) async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        let root = sap.serviceRoot(MockSAP.productV4)
        let provider: any DataServiceProvider
        switch kind {
        case .online:
            let store = try OnlineODataStore(serviceRoot: root, options: directory.onlineOptions())
            try await store.open()
            provider = store
        case .offline:
            let store = try OfflineODataProvider(serviceRoot: root, parameters: directory.offlineParameters())
            try await store.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "Product?$expand=to_Description"))
            try await store.add(definingQuery: OfflineODataDefiningQuery(name: "descriptions", query: "ProductDescription"))
            try await store.open()
            provider = store
        }
        let service = ProductService(provider: provider)
        let all = try await service.fetchProduct(matching: DataQuery().orderBy(ProductType.product))
        let type = try #require(all.first?.productType)
        let products = try await service.fetchProduct(matching: DataQuery()
            .filter(ProductType.productType == type && ProductType.grossWeight > Decimal(0))
            .orderBy(ProductType.grossWeight, .descending).orderBy(ProductType.product)
            .expand(ProductType.toDescription))
        let body = try curl(root + "Product?$filter=" + PercentEncoding.encodeQueryValue("ProductType eq '\(type)' and GrossWeight gt 0")
            + "&$orderby=" + PercentEncoding.encodeQueryValue("GrossWeight desc,Product"))
        let expected = (try JSON.parse(body)["value"]?.arrayValue ?? []).compactMap { $0["Product"]?.stringValue }
        #expect(products.map(\.product) == expected && !expected.isEmpty)
        #expect(products.allSatisfy { !($0.toDescription ?? []).isEmpty }, "expanded descriptions")
        var first = try #require(all.first)
        #expect(first.toDescription == nil)
        try await service.dataService.loadProperty(ProductType.toDescription, into: &first)
        #expect(first.toDescription?.contains { $0.product == first.product } == true)
        if let store = provider as? OfflineODataProvider { await store.close() } else if let store = provider as? OnlineODataStore { store.close() }
    }

    @Test func aFailedUploadIsFoundThroughErrorArchiveAndInErrorState() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        let provider = try await makeStore(.offline, sap, directory) as! OfflineODataProvider
        defer { Task { await provider.close() } }
        let service = GWSampleBasicService(provider: provider)
        // The offline store sends an update to this V2 service as MERGE (its $metadata is EDMX 1.0).
        _ = try sap.admin("POST", "faults", json: #"{"match":"BusinessPartnerSet","method":"MERGE","scenario":"precondition"}"#)

        let partner = try #require(try await service.fetchBusinessPartnerSet(matching: DataQuery().orderBy(BusinessPartner.businessPartnerID).top(1)).first)
        _ = try await service.updateBusinessPartner(partner) { $0.phoneNumber = "+49 30 1234" }
        let result = try await provider.upload()
        #expect(result.failed.count == 1)

        let inError = try await service.fetchBusinessPartnerSet(matching: DataQuery().filter(OfflineQueryFunction.inErrorState()))
        #expect(inError.map(\.businessPartnerID) == [partner.businessPartnerID])
        var entry = try #require(try await service.dataService.fetch(ErrorArchiveEntry.entitySet).first)
        #expect(entry.httpStatusCode == 412 && entry.requestMethod == "PATCH")
        try await service.dataService.loadProperty(ErrorArchiveEntry.affectedEntity, into: &entry)
        let affected = try #require(ErrorArchiveEntry.affectedEntity.entityValue(from: entry) as? BusinessPartner)
        #expect(affected.businessPartnerID == partner.businessPartnerID && affected.phoneNumber == "+49 30 1234")
    }
}
