import Foundation
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// Live queries kept row by row (``LiveAnswer``): after every change, the observed answer equals what `read(_:)`
/// answers, byte for byte, while the query ran again whole only once (the answer's first build); a query of
/// another shape runs again at each change; a commit of many rows (a download) runs it again.
@Suite(.timeLimit(.minutes(2))) struct LiveAnswerTests {
    /// Reads the observation's answers until one equals `read(request)` now: a change the answer does not show
    /// emits nothing, so the current answer is then already the one to reach.
    static func settle(_ answers: inout AsyncThrowingStream<ODataResponse, any Error>.AsyncIterator, last: inout Data,
                       _ provider: OfflineODataProvider, _ request: ODataRequest) async throws {
        let expected = try provider.read(request).payload
        while last != expected {
            last = try #require(try await answers.next()).payload
        }
    }

    /// Executes a change of an entity the seeded rounds may have deleted already: that refusal (`.entityNotFound`) is
    /// expected and changes nothing; any other failure fails the test.
    static func changeUnlessDeleted(_ provider: OfflineODataProvider, _ request: ODataRequest) async throws {
        do { _ = try await provider.execute(request) } catch let error as OfflineODataError where error == .entityNotFound {}
    }

    /// Seeded changes of Products (integer key), Customers (text key) and Order_Details (two-part key): updates that
    /// move an entity into and out of the filter, creates, deletes, a `$select` — each observed answer equals the read.
    @Test(arguments: [
        ("Products?$filter=UnitsInStock lt 20&$select=ProductID,ProductName,UnitsInStock", "Products"),
        ("Customers?$filter=Country eq 'Germany' or Country eq 'France'", "Customers"),
        ("Order_Details?$filter=Quantity ge 40", "Order_Details"),
        ("Products", "Products"),
    ])
    func eachAnswerEqualsTheReadAndTheQueryRunsOnce(url: String, set: String) async throws {
        let (server, _, provider) = try await Northwind.openStore()
        defer { Task { await provider.close(); await server.stop() } }
        try await provider.download()
        let request = ODataRequest.local("GET", url)
        var answers = try provider.observe(request).makeAsyncIterator()
        var last = try #require(try await answers.next()).payload
        #expect(last == (try provider.read(request).payload))
        let store = try #require(await provider.store)
        // The first change builds the kept answer (the query runs once). It removes a row of the answer, so the answer
        // changes and that run is over once the new answer is here: no later commit can find it still running (a
        // first change that left the answer as it was could, and would run the query a second time).
        let answered = try JSON.parse(last)["value"]?.arrayValue?.compactMap { $0["@odata.id"]?.stringValue } ?? []
        let firstRow = try #require(answered.first, "the answer has rows")
        let before = store.changeFeed.queriesRunAgain.withLock { $0 }
        _ = try await provider.execute(.local("DELETE", firstRow.split(separator: "/").last.map(String.init) ?? firstRow))
        try await Self.settle(&answers, last: &last, provider, request)
        #expect(store.changeFeed.queriesRunAgain.withLock { $0 } - before == 1)
        let keys = try JSON.parse(try provider.read(.local("GET", set)).payload)["value"]?.arrayValue?.compactMap { $0["@odata.id"]?.stringValue } ?? []
        var random = SeededRandom(seed: 43)
        // 30 rounds, 12 under a sanitizer (`Sanitizers`): each of the six kinds of change the rounds cycle through
        // comes at least twice either way.
        for round in 0..<Sanitizers.rounds(plain: 30, sanitized: 12) {
            let reference = keys[Int.random(in: 0..<keys.count, using: &random)]
            let path = reference.split(separator: "/").last.map(String.init) ?? reference
            switch (set, round % 6) {
            case (_, 5):
                try await Self.changeUnlessDeleted(provider, .local("DELETE", path))
            case ("Products", 4):
                _ = try await provider.execute(.local("POST", "Products", body: #"{"ProductName":"New \#(round)","UnitsInStock":\#(round % 30)}"#))
            case ("Products", _):
                try await Self.changeUnlessDeleted(provider, .local("PATCH", path, body: #"{"UnitsInStock":\#(Int.random(in: 0..<40, using: &random))}"#))
            case ("Customers", 4):
                _ = try await provider.execute(.local("POST", "Customers", body: #"{"CustomerID":"N\#(round)","CompanyName":"New","Country":"France"}"#))
            case ("Customers", _):
                let country = ["Germany", "France", "Spain"][Int.random(in: 0..<3, using: &random)]
                try await Self.changeUnlessDeleted(provider, .local("PATCH", path, body: #"{"Country":"\#(country)"}"#))
            default:
                try await Self.changeUnlessDeleted(provider, .local("PATCH", path, body: #"{"Quantity":\#(Int.random(in: 1..<80, using: &random))}"#))
            }
            try await Self.settle(&answers, last: &last, provider, request)
        }
        // The changes after the first changed the kept answer by their rows.
        #expect(store.changeFeed.queriesRunAgain.withLock { $0 } - before == 1)
        // A download of many rows (the whole set again, more than 64) runs the query again, and the answer still equals the read.
        _ = try server.mutate { try $0.update(in: "Products", key: ["ProductID": 2], changes: ["UnitsInStock": 3]) }
        try await provider.download()
        try await Self.settle(&answers, last: &last, provider, request)
    }

    /// Against mock-sap (OData V2, a producer nobody here wrote; `Price` an `Edm.Decimal` written as a string): updates
    /// move products into and out of `Price lt 500`, each answer equals the read and the query runs whole once.
    @Test func aV2AnswerFromMockSAPEqualsTheReadRowByRow() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        let provider = try OfflineODataProvider(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), parameters: Northwind.parameters(directory, name: "sap"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "ProductSet"))
        try await provider.open()
        defer { Task { await provider.close() } }
        let request = ODataRequest.local("GET", "ProductSet?$filter=Price lt 500&$select=ProductID,Name,Price")
        var answers = try provider.observe(request).makeAsyncIterator()
        var last = try #require(try await answers.next()).payload
        let store = try #require(await provider.store)
        let before = store.changeFeed.queriesRunAgain.withLock { $0 }
        let products = try JSON.parse(try provider.read(.local("GET", "ProductSet?$select=ProductID")).payload)["value"]?.arrayValue?
            .compactMap { $0["ProductID"]?.stringValue } ?? []
        try #require(products.count > 2)
        var random = SeededRandom(seed: 44)
        for _ in 0..<12 {
            let product = products[Int.random(in: 0..<products.count, using: &random)]
            let price = ["9.99", "499.00", "500.00", "1250.50", "42"][Int.random(in: 0..<5, using: &random)]
            _ = try await provider.execute(.local("PATCH", "ProductSet('\(product)')", body: #"{"Price":"\#(price)"}"#))
            try await Self.settle(&answers, last: &last, provider, request)
        }
        #expect(store.changeFeed.queriesRunAgain.withLock { $0 } - before == 1)
    }

    /// A query of another shape (`$orderby`) runs again whole at each change that can change it.
    @Test func aQueryOfAnotherShapeRunsAgainAtEachChange() async throws {
        let (server, _, provider) = try await Northwind.openStore()
        defer { Task { await provider.close(); await server.stop() } }
        let request = ODataRequest.local("GET", "Shippers?$orderby=Phone")
        var answers = try provider.observe(request).makeAsyncIterator()
        var last = try #require(try await answers.next()).payload
        let store = try #require(await provider.store)
        let before = store.changeFeed.queriesRunAgain.withLock { $0 }
        for round in 1...3 {
            _ = try await provider.execute(.local("PATCH", "Shippers(1)", body: #"{"Phone":"\#(round)"}"#))
            try await Self.settle(&answers, last: &last, provider, request)
        }
        #expect(store.changeFeed.queriesRunAgain.withLock { $0 } - before == 3)
    }

    /// A filter through a navigation property follows the other set's changes (it depends on every set).
    @Test func aFilterThroughANavigationFollowsTheOtherSet() async throws {
        let (server, _, provider) = try await Northwind.openStore()
        defer { Task { await provider.close(); await server.stop() } }
        let request = ODataRequest.local("GET", "Products?$filter=Category/CategoryName eq 'Renamed'&$select=ProductID")
        var answers = try provider.observe(request).makeAsyncIterator()
        let first = try JSON.parse(try #require(try await answers.next()).payload)["value"]?.arrayValue ?? []
        #expect(first.isEmpty)
        _ = try await provider.execute(.local("PATCH", "Categories(1)", body: #"{"CategoryName":"Renamed"}"#))
        let renamed = try JSON.parse(try #require(try await answers.next()).payload)["value"]?.arrayValue ?? []
        let read = try JSON.parse(try provider.read(request).payload)["value"]?.arrayValue ?? []
        #expect(!renamed.isEmpty && renamed == read)
    }
}
