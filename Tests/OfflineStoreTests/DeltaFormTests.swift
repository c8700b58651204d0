import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataTesting
import Testing

@testable import OfflineStore

/// A download reads every form a producer may use to identify the members of a delta answer (OData JSON
/// Format 4.01 §15.3, §15.4): key properties, a relative `@id` only, an absolute percent-encoded `@odata.id`
/// only, and OData 4.0 deleted entities — for single, string and composite keys.
@Suite(.serialized) struct DeltaFormTests {
    static let queries = [
        OfflineODataDefiningQuery(name: "employees", query: "Employees"),
        OfflineODataDefiningQuery(name: "customers", query: "Customers"),
        OfflineODataDefiningQuery(name: "details", query: "Order_Details?$filter=OrderID lt 10260"),
    ]

    @Test(arguments: FixtureConfiguration.DeltaIdentification.allCases)
    func aDeltaDownloadAppliesChangesAndRemovalsInEveryForm(_ form: FixtureConfiguration.DeltaIdentification) async throws {
        var configuration = FixtureConfiguration()
        configuration.deltaIdentification = form
        let server = try await FixtureServer.start(configuration)
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let spare = try server.mutate { data in try data.insert(["LastName": "Spare", "FirstName": "Sam"], into: "Employees")["EmployeeID"]?.intValue ?? 0 }
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        defer { Task { await provider.close() } }
        let detailsBefore = try await provider.getAll("Order_Details").count

        try server.mutate { data in
            _ = try data.update(in: "Employees", key: ["EmployeeID": 1], changes: ["City": "Remote City"])
            try data.delete(from: "Employees", key: ["EmployeeID": .int(spare)])
            _ = try data.update(in: "Customers", key: ["CustomerID": "ALFKI"], changes: ["ContactName": "Maria O'Neil"])
            _ = try data.update(in: "Order_Details", key: ["OrderID": 10248, "ProductID": 42], changes: ["Quantity": 99])
            try data.delete(from: "Order_Details", key: ["OrderID": 10248, "ProductID": 11])
        }
        try await provider.download()

        #expect(try await provider.get("Employees(1)")["City"] == "Remote City", "\(form)")
        #expect(try await provider.get("Employees(1)")["EmployeeID"] == 1, "the key from the id keeps its type")
        #expect(try await provider.get("Customers('ALFKI')")["ContactName"] == "Maria O'Neil")
        #expect(try await provider.get("Order_Details(OrderID=10248,ProductID=42)")["Quantity"] == 99)
        #expect(try await provider.getAll("Order_Details").count == detailsBefore - 1)
        #expect(try await provider.getAll("Employees?$filter=EmployeeID%20eq%20\(spare)").isEmpty)
        await #expect(throws: OfflineODataError.self) { try await provider.get("Order_Details(OrderID=10248,ProductID=11)") }
        // Nothing else moved: the local copy equals the producer's.
        let remote = try server.read { try $0.entities(in: "Employees") }.count
        #expect(try await provider.getAll("Employees").count == remote)
    }

    /// A member the download cannot identify fails it with a typed error naming the set, the position and what
    /// is missing — and the store stays as it was.
    @Test func anUnreadableMemberFailsTheDownloadAndLeavesTheStoreAsItWas() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        var parameters = Northwind.parameters(directory)
        parameters.transport = transport
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "employees", query: "Employees"))
        try await provider.open()
        defer { Task { await provider.close() } }
        let before = try await provider.getAll("Employees")

        transport.on("GET", "Employees", query: ["$deltatoken": "*"], reply: .json(
            #"{"value":[{"@id":"Employees(1)","City":"Changed"},{"@removed":{"reason":"deleted"}}],"@odata.deltaLink":"Employees?$deltatoken=x"}"#))
        do {
            try await provider.download()
            Issue.record("a tombstone without id or key must fail the download")
        } catch let error as OfflineODataError {
            #expect(error == .downloadFailed)
            #expect(error.message.contains("entity 2 of 'Employees'"), "\(error.message)")
            #expect(error.message.contains("neither an @id nor its key property EmployeeID"), "\(error.message)")
        }
        #expect(try await provider.getAll("Employees") == before, "the first member's change was not applied either")
    }

    /// An OData 4.0 flattened delta (§15.5.2): an added and a deleted link change a relationship the store keeps
    /// from `$expand` (one without a referential constraint: where a foreign key defines it, the changed entity
    /// that comes with the link carries it).
    @Test func addedAndDeletedLinksChangeAnExpandedRelationship() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        var parameters = Northwind.parameters(directory)
        parameters.transport = transport
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "employees", query: "Employees?$expand=Territories"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "territories", query: "Territories"))
        try await provider.open()
        defer { Task { await provider.close() } }
        #expect(try await provider.getAll("Employees(1)/Territories").isEmpty, "the producer relates no territories")
        let territories = try await provider.getAll("Territories").compactMap { $0["TerritoryID"]?.stringValue }
        let (first, second) = (territories[0], territories[1])
        func delta(_ members: String) -> String {
            ##"{"@odata.context":"$metadata#Employees/$delta","value":["## + members + ##"],"@odata.deltaLink":"Employees?$expand=Territories&$deltatoken=x"}"##
        }
        // The next two delta requests are answered from the script: links added, then one deleted.
        transport.on("GET", "Employees", query: ["$deltatoken": "*"], replies: [.json(delta(##"""
            {"@odata.context":"#Employees/$link","source":"Employees(1)","relationship":"Territories","target":"Territories('\##(first)')"},
            {"@odata.context":"#Employees/$link","source":"\##(server.serviceRoot)Employees(1)","relationship":"Territories","target":"Territories('\##(second)')"}
            """##)), .json(delta(##"{"@odata.context":"#Employees/$deletedLink","source":"Employees(1)","relationship":"Territories","target":"Territories('\##(first)')"}"##))])
        try await provider.download(definingQueries: ["employees"])
        #expect(Set(try await provider.getAll("Employees(1)/Territories").compactMap { $0["TerritoryID"]?.stringValue }) == [first, second])

        try await provider.download(definingQueries: ["employees"])
        #expect(try await provider.getAll("Employees(1)/Territories").compactMap { $0["TerritoryID"]?.stringValue } == [second])
    }
}

/// Entity-ids of every shape a producer may write, resolved through `$metadata` only; bad ones are typed errors.
@Suite struct EntityIDTests {
    static let model: OfflineStore.ServiceModel = {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/Data/Fixture.metadata.xml")
        return try! OfflineStore.ServiceModel.parse(try! Data(contentsOf: file))
    }()
    static let root = "http://127.0.0.1:8080/odata/"

    func resolve(_ id: String) throws(OfflineODataError) -> String {
        try EntityID.resolve(id, serviceRoot: Self.root, model: Self.model).reference
    }

    @Test func everyShapeResolvesToTheCanonicalKey() throws {
        #expect(try resolve("Orders(10248)") == "Orders(10248)")
        #expect(try resolve("http://127.0.0.1:8080/odata/Orders(10248)") == "Orders(10248)")
        #expect(try resolve("https://gateway.example.com/odata/Customers('ALFKI')") == "Customers('ALFKI')", "another spelling of the host")
        #expect(try resolve("/odata/Customers(%27ALFKI%27)") == "Customers('ALFKI')")
        #expect(try resolve("Customers(CustomerID='O''NEIL')") == "Customers('O''NEIL')")
        #expect(try resolve("Order_Details(ProductID=11,OrderID=10248)") == "Order_Details(OrderID=10248,ProductID=11)")
        #expect(try resolve("Order_Details(OrderID%3D10248%2CProductID%3D11)") == "Order_Details(OrderID=10248,ProductID=11)")
        #expect(try resolve("Customers('ALFKI')/Orders(10643)") == "Orders(10643)", "through a navigation")
        #expect(try resolve("Orders(10248L)") == "Orders(10248)", "the V2 Int64 suffix")
        #expect(try EntityID.resolve("Orders(10248)", serviceRoot: Self.root, model: Self.model).values.first?.1 == 10248)
    }

    @Test func badIDsAreTypedErrorsThatSayWhy() {
        let cases: [(String, String)] = [
            ("Nowhere(1)", "does not start with an entity set"),
            ("Orders", "has no key predicate"),
            ("Orders(OrderID=1,Extra=2)", "does not fit the key"),
            ("Order_Details(10248)", "does not fit the key"),
            ("Customers('ALFKI')/Nope(1)", "no navigation property"),
            ("/elsewhere/Orders(1)", "is not under the service root"),
            ("Orders(", "is not a resource path"),
            ("", "names no entity"),
        ]
        for (id, reason) in cases {
            #expect { try resolve(id) } throws: { error in
                guard let error = error as? OfflineODataError else { return false }
                return error == .downloadFailed && error.message.contains(reason)
            }
        }
        // Arbitrary bytes never crash.
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("Orders(Customers)'=,/%27:#?ab10 L")
        for _ in 0..<2_000 {
            let id = String((0..<Int.random(in: 0..<24, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            _ = try? resolve(id)
        }
    }
}
