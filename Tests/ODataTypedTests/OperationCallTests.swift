import Foundation
import HTTPTypes
import NorthwindProxies
import ODataCore
import ODataTyped
import Synchronization
import Testing

/// A provider that answers every request with one canned response and keeps the requests: the pure forms of
/// operation calls, without a producer.
private final class CannedProvider: DataServiceProvider {
    let response: ODataResponse?
    let sent = Mutex<[ODataRequest]>([])
    init(_ status: Int = 200, _ body: String = "") {
        response = ODataResponse(statusCode: status, payload: Data(body.utf8))
    }
    var serviceRoot: String { "http://127.0.0.1:1/" }
    func executeRequest(_ request: ODataRequest) async throws -> ODataResponse? {
        sent.withLock { $0.append(request) }
        return response
    }
    func executeNextLink(_ nextLink: String) async throws -> ODataResponse? { nil }
}

/// How ``DataService`` writes operation calls for each version and kind, and how it reads each result form.
@Suite struct OperationCallTests {
    private let v4 = DataService(provider: CannedProvider(), version: .v4, entitySets: [EntitySet<Product>("Products")])
    private let v2 = DataService(provider: CannedProvider(), version: .v2)

    @Test func v4FunctionsWriteLiteralsInThePathAndEverythingElseAsAliases() throws {
        let plain = try v4.request(for: OperationCall(.function, "F", parameters: [
            OperationParameter("S", "it's"), OperationParameter("I", Int64(7)), OperationParameter("B", true),
            OperationParameter("D", Decimal(string: "1.5")!), OperationParameter("G", UUID(uuidString: "615F74A5-0000-4000-8000-000000000001")!),
            OperationParameter("N", String?.none),
        ]))
        #expect(plain.method == .get && plain.queryOptions.isEmpty)
        #expect(plain.resourcePath == "F(S='it''s',I=7,B=true,D=1.5,G=615f74a5-0000-4000-8000-000000000001,N=null)")
        #expect(try v4.request(for: OperationCall(.function, "NoArguments")).resourcePath == "NoArguments()")

        let aliased = try v4.request(for: OperationCall(.function, "F", parameters: [
            OperationParameter("Range", PriceRange(min: 1, max: 2)), OperationParameter("IDs", [Int32(1), 2]),
            OperationParameter("Path", "a/b?c#d%e"),
        ]))
        #expect(aliased.resourcePath == "F(Range=@Range,IDs=@IDs,Path=@Path)")
        #expect(try aliased.relativeURL().contains("@IDs=%5B1,2%5D") || (try aliased.relativeURL()).contains("@IDs=[1,2]"))
        let options = aliased.queryOptions.map { ($0.name, $0.value) }
        #expect(options.map(\.0) == ["@Range", "@IDs", "@Path"])
        #expect(try JSON.parse(options[0].1) == ["Min": 1, "Max": 2])
        #expect(options[2].1 == "'a/b?c#d%e'")
    }

    @Test func v4ActionsPostAJSONBodyAndBoundCallsStartAtTheirBinding() throws {
        let action = try v4.request(for: OperationCall(.action, "Raise", parameters: [
            OperationParameter("Percent", Decimal(10)), OperationParameter("Range", PriceRange(min: 1, max: 2)), OperationParameter("Note", String?.none),
        ]))
        #expect(action.method == .post && action.resourcePath == "Raise")
        #expect(action.headerFields[.contentType] == "application/json")
        #expect(try JSON.parse(action.body ?? Data()) == ["Percent": 10, "Range": ["Min": 1, "Max": 2], "Note": nil])
        let empty = try v4.request(for: OperationCall(.action, "Reset"))
        #expect(try JSON.parse(empty.body ?? Data()) == [:])

        let product = Product(productID: 7, productName: "x")
        let onEntity = try v4.request(for: OperationCall(.action, "NS.Discontinue", binding: .entity(product)))
        #expect(onEntity.resourcePath == "Products(7)/NS.Discontinue")
        let onSet = try v4.request(for: OperationCall(.function, "NS.Top", parameters: [OperationParameter("N", Int32(3))],
                                                      binding: .collection(EntitySet<Product>("Products"))))
        #expect(onSet.resourcePath == "Products/NS.Top(N=3)")
        // An entity whose set the service cannot tell is refused, not sent to a guessed path.
        let lonely = DataService(provider: CannedProvider())
        #expect(throws: DataServiceError.invalidEntity) { try lonely.request(for: OperationCall(.action, "NS.A", binding: .entity(product))) }
    }

    @Test func v2FunctionImportsPutParametersInTheQuery() throws {
        let get = try v2.request(for: OperationCall(.function, "Find", parameters: [
            OperationParameter("Name", "O'Neil"), OperationParameter("Since", Date(timeIntervalSince1970: 0)),
            OperationParameter("Big", Int64(5)), OperationParameter("Left", Int32?.none),
        ]))
        #expect(get.method == .get && get.resourcePath == "Find")
        #expect(get.queryOptions.map(\.name) == ["Name", "Since", "Big"])  // a parameter without a value is left out
        #expect(get.queryOptions.map(\.value) == ["'O''Neil'", "datetime'1970-01-01T00:00:00'", "5L"])
        #expect(try v2.request(for: OperationCall(.action, "Post")).method == .post)
        #expect(try v2.request(for: OperationCall(.function, "Confirm", httpMethod: "post")).method == .post)
        #expect(try v2.request(for: OperationCall(.function, "Merge", httpMethod: "MERGE")).method.rawValue == "MERGE")
        #expect(throws: DataServiceError.invalidQuery) { try v2.request(for: OperationCall(.function, "F", httpMethod: "NOT A METHOD")) }
        #expect(throws: DataServiceError.invalidQuery) {
            try v2.request(for: OperationCall(.function, "NS.F", binding: .collection(EntitySet<Product>("Products"))))
        }
        #expect(throws: DataServiceError.invalidQuery) {
            try v2.request(for: OperationCall(.function, "F", parameters: [OperationParameter("IDs", [Int32(1)])]))
        }
    }

    private func result<R: ODataValue>(
        _ body: String, status: Int = 200, version: ODataVersion = .v4, _ operation: OperationCall = OperationCall(.function, "NS.Count"),
        as type: R.Type
    ) async throws -> R {
        try await DataService(provider: CannedProvider(status, body), version: version).call(operation, returning: R.self)
    }

    @Test func resultsAreReadInEveryFormProducersWrite() async throws {
        // V4: a primitive or collection in `value`; a structured value itself.
        #expect(try await result(#"{"@odata.context":"x","value":42}"#, as: Int32.self) == 42)
        #expect(try await result(#"{"value":["a","b"]}"#, as: [String].self) == ["a", "b"])
        #expect(try await result(#"{"value":null}"#, as: Int32?.self) == nil)
        let stock = try await result(#"{"@odata.context":"x","Products":3,"UnitsInStock":40,"Discontinued":1}"#, as: StockSummary.self)
        #expect(stock.products == 3 && stock.unitsInStock == 40)
        let products = try await result(
            #"{"value":[{"ProductID":1,"ProductName":"Chai","Discontinued":false}]}"#,
            OperationCall(.function, "Top", entitySet: "Products"), as: [Product].self)
        #expect(products.map(\.productName) == ["Chai"] && products[0].odata.entitySet == "Products")
        let one = try await result(#"{"@odata.etag":"W/\"1\"","ProductID":2,"ProductName":"Chang","Discontinued":true}"#,
                                   OperationCall(.action, "NS.One", entitySet: "Products"), as: Product.self)
        #expect(one.productID == 2 && one.odata.etag == "W/\"1\"" && one.odata.entitySet == "Products")
        // No content: nil for an optional result.
        #expect(try await result("", status: 204, as: Product?.self) == nil)

        // V2: Gateway's `{"d": {"Name": …}}`, `{"d": {"results": […]}}`, `{"d": […]}`, an entity in `d`.
        #expect(try await result(#"{"d":{"Count":42}}"#, version: .v2, as: Int32.self) == 42)
        #expect(try await result(#"{"d":{"Count":"42"}}"#, version: .v2, as: Int64.self) == 42)
        #expect(try await result(#"{"d":{"results":[1,2]}}"#, version: .v2, as: [Int32].self) == [1, 2])
        #expect(try await result(#"{"d":[1,2]}"#, version: .v2, as: [Int32].self) == [1, 2])
        let summary = try await result(
            #"{"d":{"Count":{"__metadata":{"type":"NS.S"},"Products":3,"UnitsInStock":4,"Discontinued":0}}}"#, version: .v2, as: StockSummary.self)
        #expect(summary.unitsInStock == 4)
        let entity = try await result(#"{"d":{"__metadata":{"etag":"W/\"3\""},"ProductID":3,"ProductName":"Aniseed","Discontinued":false}}"#,
                                      version: .v2, as: Product.self)
        #expect(entity.productName == "Aniseed" && entity.odata.etag == "W/\"3\"")
    }

    @Test func aResultThatDoesNotFitIsATypedError() async throws {
        await #expect(throws: DataServiceError.typeMismatch) { try await result("", status: 204, as: Int32.self) }
        await #expect(throws: DataServiceError.typeMismatch) { try await result(#"{"count":1}"#, as: Int32.self) }
        await #expect(throws: DataServiceError.typeMismatch) { try await result(#"{"value":"many"}"#, as: Int32.self) }
        await #expect(throws: DataServiceError.typeMismatch) { try await result(#"[1]"#, as: StockSummary.self) }
        await #expect(throws: DataServiceError.malformedPayload) { try await result(#"{"value":"#, as: Int32.self) }
        // A producer's error status arrives as its error (the online store throws before; a provider may not).
        await #expect(throws: ODataServiceError.self) {
            try await result(#"{"error":{"code":"X","message":"no"}}"#, status: 400, as: Int32.self)
        }
        // An action without a result ignores what comes back.
        try await DataService(provider: CannedProvider(204)).call(OperationCall(.action, "Reset"))
    }
}
