import Foundation
import ODataCore
import ODataFixtures
import ODataQuery
import TechnicalCache
import Testing

@testable import OfflineStore

/// A local request is read by ODataQuery (issue 28): its path by `ResourcePath`, its options decoded as RFC 3986
/// says — a `+` is a plus, as a producer reads it, not a form-encoded space.
@Suite struct LocalRequestTests {
    static let root = "http://127.0.0.1:8080/odata/"

    @Test(arguments: [
        ("Orders?$filter=OrderDate gt 2024-03-01T10:00:00+01:00", "OrderDate gt 2024-03-01T10:00:00+01:00"),
        ("Orders?$filter=OrderDate%20gt%202024-03-01T10:00:00%2B01:00", "OrderDate gt 2024-03-01T10:00:00+01:00"),
        ("Orders?$filter=OrderDate%20gt%202024-03-01T10:00:00+01:00", "OrderDate gt 2024-03-01T10:00:00+01:00"),
        ("Customers?$filter=CompanyName eq 'a+b'", "CompanyName eq 'a+b'"),
        ("http://127.0.0.1:8080/odata/Customers?$filter=CompanyName%20eq%20'a%2Bb'", "CompanyName eq 'a+b'"),
    ])
    func aPlusInALocalQueryOptionStaysAPlus(url: String, filter: String) throws {
        let request = try LocalRequest(url, serviceRoot: Self.root)
        #expect(request.value(of: "$filter") == filter)
        // Written back (a local next link) the plus is percent-encoded, so no reader can take it for a space.
        #expect(!request.relativeURL().contains("+"))
        #expect(try LocalRequest(request.relativeURL(), serviceRoot: Self.root).value(of: "$filter") == filter)
    }

    @Test func aPlusInACustomOptionStaysAPlus() throws {
        let request = try LocalRequest("Orders?sap-client=1+2&$top=1", serviceRoot: Self.root)
        #expect(request.options == [.init(name: "sap-client", value: "1+2"), .init(name: "$top", value: "1")])
        let fromRequest = try LocalRequest(request: ODataRequest.local("GET", "Orders?x=a+b%2Bc"))
        #expect(fromRequest.value(of: "x") == "a+b+c")
    }

    /// The store's own refusals keep their messages (ODataQuery parses, the store decides what it takes).
    @Test(arguments: [
        ("Orders?$bogus=1", "unknown system query option '$bogus'"),
        ("Orders?$top=1&$top=2", "the query option '$top' is given twice"),
        ("Orders?$filter=", "the query option '$filter' has no value"),
        ("Orders?$top=-1", "$top must be a non-negative integer, got '-1'"),
        ("Orders?$skip=x", "$skip must be a non-negative integer, got 'x'"),
        ("Orders?$count=yes", "$count must be true or false, got 'yes'"),
        ("Orders?$filter=a%ZZ", "is malformed: in $filter: invalid percent-encoding"),
        ("Orders('x'", "is malformed: unterminated key predicate"),
    ])
    func malformedRequestsAreInvalidRequests(url: String, message: String) {
        #expect {
            _ = try LocalRequest(url, serviceRoot: Self.root)
        } throws: { error in
            guard let error = error as? OfflineODataError else { return false }
            return error == .invalidRequest && error.message.contains(message)
        }
    }

    /// OData V2's key literal forms, as `LocalPath` read them before: the value as written, numbers as numbers.
    @Test(arguments: [
        ("Things(guid'0050568D-3C2A-1EDA-8B9F-aaaaaaaaaaaa')", [nil], ["\"0050568D-3C2A-1EDA-8B9F-aaaaaaaaaaaa\""]),
        ("Things(GUID'0050568d-3c2a-1eda-8b9f-aaaaaaaaaaaa')", [nil], ["\"0050568d-3c2a-1eda-8b9f-aaaaaaaaaaaa\""]),
        ("Things(0050568D-3C2A-1EDA-8B9F-AAAAAAAAAAAA)", [nil], ["\"0050568D-3C2A-1EDA-8B9F-AAAAAAAAAAAA\""]),
        ("Things(datetime'2024-03-01T10:00:00')", [nil], ["\"2024-03-01T10:00:00\""]),
        ("Things(DateTime'2024-03-01T10:00:00')", [nil], ["\"2024-03-01T10:00:00\""]),
        ("Things(datetimeoffset'2024-03-01T10:00:00+01:00')", [nil], ["\"2024-03-01T10:00:00+01:00\""]),
        ("Things(datetimeoffset'2024-03-01T10:00:00%2B01:00')", [nil], ["\"2024-03-01T10:00:00+01:00\""]),
        ("Things(time'PT13H20M')", [nil], ["\"PT13H20M\""]),
        ("Things(12L)", [nil], ["12"]),
        ("Things(12)", [nil], ["12"]),
        ("Things(1.5M)", [nil], ["1.5"]),
        ("Things(1.5m)", [nil], ["1.5"]),
        ("Things(1.5D)", [nil], ["1.5"]),
        ("Things(1.5d)", [nil], ["1.5"]),
        ("Things(1.5F)", [nil], ["1.5"]),
        ("Things(1.5f)", [nil], ["1.5"]),
        ("Things('O''Neil')", [nil], ["\"O'Neil\""]),
        ("Things(A = 1, B = 'x y', C = guid'0050568D-3C2A-1EDA-8B9F-AAAAAAAAAAAA')", ["A", "B", "C"],
         ["1", "\"x y\"", "\"0050568D-3C2A-1EDA-8B9F-AAAAAAAAAAAA\""]),
        ("Things(A%20=%201,%20B%20=%20'x%20y')", ["A", "B"], ["1", "\"x y\""]),
    ] as [(String, [String?], [String])])
    func v2KeyLiteralsKeepTheirValues(path: String, names: [String?], values: [String]) throws {
        let key = try #require(try LocalRequest.path(path).segments[0].key)
        #expect(key.parts.map(\.name) == names, "\(path)")
        #expect(key.parts.map { JSON.string($0.value) } == values, "\(path)")
    }

    /// The key values a V2 literal gives render canonically by the key property's Edm type (`CanonicalKey.coerce`).
    @Test func v2KeyLiteralsRenderByTheKeyType() throws {
        let model = EntityIDTests.model
        let orders = try #require(model.entityType(ofSet: "Orders"))
        let details = try #require(model.entityType(ofSet: "Order_Details"))
        for path in ["Orders(10248L)", "Orders(10248)", "Orders(OrderID=10248L)"] {
            let key = try #require(try LocalRequest.path(path).segments[0].key)
            #expect(try CanonicalKey.render(predicate: key, type: orders, set: "Orders") == "(10248)", "\(path)")
        }
        let composite = try #require(try LocalRequest.path("Order_Details( ProductID = 11L , OrderID = 10248 )").segments[0].key)
        #expect(try CanonicalKey.render(predicate: composite, type: details, set: "Order_Details") == "(OrderID=10248,ProductID=11)")
    }
}

/// A local `$filter` on an `Edm.DateTimeOffset` with a `+` offset answers as the producer does, whether the `+` is
/// percent-encoded or not. The producer is mock-sap's V4 API_PRODUCT service (`Product/CreationDate`).
///
/// mock-sap reads a literal `+` in a query as a space (form decoding: it answers 400 "Invalid token" to
/// `CreationDate gt 2024-03-01T10:00:00+01:00` written with a bare `+`), so its `%2B` answer is the reference.
@Suite(.serialized) struct PlusOffsetAgainstMockSAPTests {
    /// `CreationDate gt T`, for instants whose `+01:00` decides the answer: 2024-05-01T00:30:00+01:00 is 2024-04-30T23:30Z,
    /// before TG12's 2024-05-01T00:00Z (read as UTC, TG12 would drop out).
    static let instants = ["2024-03-01T10:00:00+01:00", "2024-05-01T00:30:00+01:00"]

    @Test func aDateTimeOffsetWithAPlusAnswersAsMockSAPDoes() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let root = sap.serviceRoot(MockSAP.productV4)
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let provider = try OfflineODataProvider(serviceRoot: root, parameters: OfflineODataParameters(
            storeName: "plus", storePath: directory.path, storeEncryptionKey: "k", keyDerivation: .pbkdf2(rounds: 1_000)))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "Product", query: "Product"))
        try await provider.open()
        defer { Task { await provider.close() } }
        let total = try await LocalAnswerTests.localAnswer(provider, "Product", key: ["Product"]).keys.count
        for instant in Self.instants {
            let filter = "CreationDate gt " + instant
            let encoded = "Product?$orderby=Product&$filter=" + PercentEncoding.encodeQueryValue(filter)
            #expect(encoded.contains("%2B"))
            let literal = encoded.replacingOccurrences(of: "%2B", with: "+")
            let remote = try await LocalAnswerTests.producerAnswer(root: root, encoded, key: ["Product"])
            #expect(!remote.keys.isEmpty && remote.keys.count < total, "\(filter): \(remote.keys) of \(total)")
            for url in [encoded, literal] {
                // An ODataRequest's options, …
                let local = try await LocalAnswerTests.localAnswer(provider, url, key: ["Product"])
                #expect(local.keys == remote.keys, "\(url): local \(local.keys), mock-sap \(remote.keys)")
                // … and the same URL as text (a next link), parsed by the store itself.
                let page = try JSON.parse(try await provider.execute(nextLink: root + url).payload)
                let keys = LocalAnswerTests.keys((page["value"]?.arrayValue ?? []).compactMap(\.objectValue), ["Product"])
                #expect(keys == remote.keys, "\(url) as a link: local \(keys), mock-sap \(remote.keys)")
            }
            // Unencoded, as an application writes it.
            let typed = try await provider.execute(ODataRequest.get("Product", .filter(filter), .orderBy(["Product"])))
            let typedKeys = LocalAnswerTests.keys((try JSON.parse(typed.payload)["value"]?.arrayValue ?? []).compactMap(\.objectValue), ["Product"])
            #expect(typedKeys == remote.keys, "\(filter): local \(typedKeys), mock-sap \(remote.keys)")
        }
    }
}
