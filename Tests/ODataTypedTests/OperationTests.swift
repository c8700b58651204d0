import Foundation
import HTTPTypes
import NorthwindProxies
import ODataCore
import ODataFixtures
import ODataTyped
import OfflineStore
import OnlineStore
import Testing

/// Typed operations (#44, part 3) against the fixture producer's Northwind operations, through the online store: the
/// generated methods for function and action imports and for operations bound to an entity and to a collection, with
/// their results checked against the producer's data and their effects read back; the same calls to the producer's
/// V2 dialect (function imports with `m:HttpMethod`, Gateway's result forms); and the offline store's refusal.
@Suite(.serialized) struct OperationTests {
    private func online(_ server: FixtureServer, _ directory: TemporaryDirectory) async throws -> OnlineODataStore {
        let store = try OnlineODataStore(serviceRoot: server.serviceRoot, options: directory.onlineOptions())
        try await store.open()
        return store
    }

    @Test func unboundFunctionsAnswerWhatTheProducerHolds() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let store = RecordingProvider(try await online(server, directory))
        let service = NorthwindService(provider: store)

        // A primitive result (`{"value": 11}`), with a string parameter in the path and with `null`.
        let expectedGermans = try server.read { try $0.entities(in: "Customers").filter { $0["Country"] == "Germany" }.count }
        #expect(try await service.customerCount(country: "Germany") == Int32(expectedGermans))
        #expect(expectedGermans > 3)
        let all = try server.read { try $0.count(in: "Customers") }
        #expect(try await service.customerCount() == Int32(all))
        #expect(store.requests("GET").map(\.resourcePath).prefix(2) == ["CustomerCount(Country='Germany')", "CustomerCount(Country=null)"])

        // A string a path cannot hold goes as a parameter alias, and the producer reads it back.
        #expect(try await service.customerCount(country: "No/Such?Country#") == 0)
        let aliased = try #require(store.requests("GET").last)
        #expect(aliased.resourcePath == "CustomerCount(Country=@Country)")

        // A collection of entities, typed and remembering the import's entity set.
        let beverages = try await service.productsInCategory(categoryID: 1)
        let expectedIDs = try server.read { try $0.entities(in: "Products").filter { $0["CategoryID"] == 1 }.compactMap { $0["ProductID"]?.intValue } }
        #expect(beverages.map { Int64($0.productID) } == expectedIDs)
        #expect(!beverages.isEmpty && beverages.allSatisfy { $0.odata.entitySet == "Products" && $0.odata.etag != nil })

        // A complex parameter goes as an alias with JSON (`ProductsByPrice(Range=@Range)?@Range={…}`).
        let midRange = try await service.productsByPrice(range: PriceRange(min: 20, max: 30))
        #expect(store.requests("GET").last?.resourcePath == "ProductsByPrice(Range=@Range)")
        let expectedMid = try server.read { data in
            try data.entities(in: "Products").filter { ($0["UnitPrice"]?.doubleValue).map { 20 <= $0 && $0 <= 30 } ?? false }.count
        }
        #expect(midRange.count == expectedMid && expectedMid > 0)
        #expect(midRange.allSatisfy { $0.unitPrice.map { $0 >= 20 && $0 <= 30 } ?? false })

        // A complex result.
        let stock = try await service.categoryStock(categoryID: 1)
        let units = try server.read { try $0.entities(in: "Products").filter { $0["CategoryID"] == 1 }.reduce(Int64(0)) { $0 + ($1["UnitsInStock"]?.intValue ?? 0) } }
        #expect(stock.products == Int32(expectedIDs.count) && Int64(stock.unitsInStock) == units)
    }

    @Test func actionsChangeTheProducerAndBoundOperationsAddressTheirBinding() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let store = RecordingProvider(try await online(server, directory))
        let service = NorthwindService(provider: store)

        // An unbound action: POST with the parameters as a JSON body; a collection of primitives back.
        let before = try server.read { try $0.entities(in: "Products").filter { $0["CategoryID"] == 2 } }
        let raised = try await service.raisePrices(categoryID: 2, percent: 10)
        #expect(raised.map(Int64.init) == before.compactMap { $0["ProductID"]?.intValue })
        let post = try #require(store.requests("POST").last)
        #expect(post.resourcePath == "RaisePrices")
        #expect(try store.bodies("POST").last == ["CategoryID": 2, "Percent": 10])
        let after = try server.read { try $0.entities(in: "Products").filter { $0["CategoryID"] == 2 } }
        for (old, new) in zip(before, after) {
            let price = try #require(old["UnitPrice"]?.doubleValue)
            #expect(new["UnitPrice"]?.doubleValue == (price * 1.1 * 100).rounded() / 100)
        }

        // Bound to an entity: a function (`Customers('ALFKI')/NorthwindModel.OrderCount()`).
        let customer = try await service.fetchCustomer(customerID: "ALFKI")
        let orders = try server.read { try $0.entities(in: "Orders").filter { $0["CustomerID"] == "ALFKI" }.count }
        #expect(try await service.orderCount(customer) == Int32(orders))
        #expect(store.requests("GET").last?.resourcePath == "Customers('ALFKI')/NorthwindModel.OrderCount()")

        // Bound to the collection: the entity set's path first.
        let top = try await service.mostExpensive()
        let maxPrice = try server.read { try $0.entities(in: "Products").compactMap { $0["UnitPrice"]?.doubleValue }.max() }
        #expect(top.unitPrice.map { NSDecimalNumber(decimal: $0).doubleValue } == maxPrice)
        #expect(store.requests("GET").last?.resourcePath == "Products/NorthwindModel.MostExpensive()")

        // Bound actions: one returns the changed entity, one returns nothing; the producer shows both effects.
        var chai = try await service.fetchProduct(productID: 1)
        #expect(!chai.discontinued)
        chai = try await service.discontinue(chai)
        #expect(chai.discontinued && chai.odata.etag != nil)
        try await service.restock(chai, units: 5)
        #expect(store.requests("POST").last?.resourcePath == "Products(1)/NorthwindModel.Restock")
        let stored = try server.read { try $0.entity(in: "Products", key: ["ProductID": 1]) }
        #expect(stored?["Discontinued"] == true)
        #expect(stored?["UnitsInStock"]?.intValue == Int64(chai.unitsInStock ?? 0) + 5)

        // The producer's refusal arrives as its error: a function called with POST is not the function.
        let wrong = OperationCall(.action, "CustomerCount", parameters: [OperationParameter("Country", "x")])
        await #expect(throws: ODataServiceError.self) { try await service.dataService.call(wrong, returning: Int32.self) }
    }

    @Test func v2FunctionImportsWithTheirHTTPMethodAndGatewaysResultForms() async throws {
        var configuration = FixtureConfiguration()
        configuration.protocolVersion = .v2
        let server = try await FixtureServer.start(configuration)
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let store = RecordingProvider(try await online(server, directory))
        let service = DataService(provider: store, version: .v2)

        // The producer's V2 `$metadata` declares them as function imports with m:HttpMethod.
        let metadata = try #require(try await store.executeRequest(ODataRequest(method: .get, resourcePath: "$metadata")))
        let text = String(decoding: metadata.payload, as: UTF8.self)
        #expect(text.contains(#"<FunctionImport Name="RaisePrices" ReturnType="Collection(Edm.Int32)" m:HttpMethod="POST">"#))

        // GET with the parameter in the query, `{"d": {"CustomerCount": 11}}`.
        let germans = try server.read { try $0.entities(in: "Customers").filter { $0["Country"] == "Germany" }.count }
        let count = try await service.call(
            OperationCall(.function, "CustomerCount", parameters: [OperationParameter("Country", "Germany")]), returning: Int32.self)
        #expect(count == Int32(germans))
        let get = try #require(store.requests("GET").last)
        #expect(get.resourcePath == "CustomerCount")
        #expect(try get.relativeURL() == "CustomerCount?Country='Germany'")

        // Entities in `{"d": {"results": […]}}`.
        let products = try await service.call(
            OperationCall(.function, "ProductsInCategory", parameters: [OperationParameter("CategoryID", Int32(1))], entitySet: "Products"),
            returning: [Product].self)
        #expect(products.count == (try server.read { try $0.entities(in: "Products").filter { $0["CategoryID"] == 1 }.count }))
        #expect(products.allSatisfy { $0.categoryID == 1 && $0.odata.entitySet == "Products" })

        // POST (the import's m:HttpMethod), parameters in the query (a decimal as `10.0M`), no body.
        let raised = try await service.call(
            OperationCall(.function, "RaisePrices", parameters: [OperationParameter("CategoryID", Int32(2)), OperationParameter("Percent", Decimal(10))],
                          httpMethod: "POST"), returning: [Int32].self)
        #expect(!raised.isEmpty)
        let post = try #require(store.requests("POST").last)
        let url = try post.relativeURL()
        #expect(url == "RaisePrices?CategoryID=2&Percent=10.0M")
        #expect(post.body == nil)

        // What V2 cannot express is refused before anything is sent.
        let sent = store.requests("GET").count + store.requests("POST").count
        await #expect(throws: DataServiceError.invalidQuery) {
            try await service.call(OperationCall(.function, "NorthwindModel.OrderCount", binding: .collection(EntitySet<Customer>("Customers"))), returning: Int32.self)
        }
        await #expect(throws: DataServiceError.invalidQuery) {
            try await service.call(OperationCall(.function, "ProductsByPrice", parameters: [OperationParameter("Range", PriceRange(min: 1, max: 2))]), returning: [Product].self)
        }
        #expect(store.requests("GET").count + store.requests("POST").count == sent)
    }

    @Test func theOfflineStoreRefusesOperationsWithATypedError() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: directory.offlineParameters())
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "Products"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        defer { Task { await provider.close() } }
        let service = NorthwindService(provider: provider)
        let chai = try await service.fetchProduct(productID: 1)
        let customer = try await service.fetchCustomer(customerID: "ALFKI")
        let calls: [(String, () async throws -> Void)] = [
            ("CustomerCount", { _ = try await service.customerCount(country: "Germany") }),
            ("ProductsByPrice", { _ = try await service.productsByPrice(range: PriceRange(min: 1, max: 2)) }),
            ("RaisePrices", { _ = try await service.raisePrices(categoryID: 1, percent: 5) }),
            ("NorthwindModel.OrderCount", { _ = try await service.orderCount(customer) }),
            ("NorthwindModel.MostExpensive", { _ = try await service.mostExpensive() }),
            ("NorthwindModel.Discontinue", { _ = try await service.discontinue(chai) }),
        ]
        for (name, call) in calls {
            let error = await #expect(throws: OfflineODataError.operationNotAvailableOffline) { try await call() }
            #expect(error?.message.contains("'\(name)'") == true, "\(name): \(error?.message ?? "")")
            #expect(error?.errorNumber == -10022)
        }
        // Nothing was queued, nothing changed locally.
        #expect(try await service.dataService.fetch(EntitySet<Product>("Products"), matching: DataQuery().filter(Product.discontinued == true)).count
            == (try server.read { try $0.entities(in: "Products").filter { $0["Discontinued"] == true }.count }))
        let queue = try provider.read(ODataRequest(method: .get, resourcePath: "RequestQueue"))
        #expect(try JSON.parse(queue.payload).objectValue?["value"]?.arrayValue?.isEmpty == true)
        // A navigation property that shares a name with no import is still read.
        _ = try await service.fetchProducts(matching: DataQuery().top(1))
    }
}
