import Foundation
import ODataCore
import Testing

@testable import ODataFixtures

@Suite struct ModelAndDataTests {
    @Test func bundledModelHasNorthwindAndEvents() async throws {
        try await withServer { server in
            let model = server.model
            let customer = try #require(model.entityTypes["NorthwindModel.Customer"])
            #expect(customer.keys == ["CustomerID"])
            let events = try #require(customer.navigationProperty("Events"))
            #expect(events.isCollection && events.targetType == "NorthwindModel.Event" && events.partner == "Customer")
            let event = try #require(model.entityTypes["NorthwindModel.Event"])
            #expect(event.keys == ["EventID"])
            #expect(event.property("EventID")?.type == "Edm.Guid")
            #expect(event.navigationProperty("Customer")?.constraints.first?.property == "CustomerID")
            let detail = try #require(model.entityTypes["NorthwindModel.Order_Detail"])
            #expect(detail.keys == ["OrderID", "ProductID"])
            #expect(model.entitySet("Events")?.bindings["Customer"] == "Customers")
            #expect(model.entitySet("Customers")?.bindings["Events"] == "Events")
        }
    }

    @Test func bundledDataHasTheDocumentedCounts() async throws {
        try await withServer { server in
            let counts = try server.read { data in
                try ["Customers", "Orders", "Order_Details", "Products", "Employees", "Events", "Invoices"].map {
                    try data.count(in: $0)
                }
            }
            #expect(counts == [91, 830, 2155, 77, 9, 16, 0])
        }
    }

    @Test func csdlWithoutContainerIsRejected() {
        let noContainer = #expect(throws: FixtureError.self) {
            try ServiceModel(csdl: "<edmx:Edmx Version=\"4.0\" xmlns:edmx=\"http://docs.oasis-open.org/odata/ns/edmx\"><edmx:DataServices><Schema Namespace=\"N\"><EntityType Name=\"T\"><Key><PropertyRef Name=\"ID\"/></Key><Property Name=\"ID\" Type=\"Edm.Int32\"/></EntityType></Schema></edmx:DataServices></edmx:Edmx>")
        }
        #expect(noContainer?.message.contains("no EntityContainer") == true)
        do {
            _ = try ServiceModel(csdl: """
                <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>
                <Schema Namespace="N"><EntityType Name="T"><Property Name="A" Type="Edm.String"/></EntityType>
                <EntityContainer Name="C"><EntitySet Name="Ts" EntityType="N.T"/></EntityContainer></Schema>
                </edmx:DataServices></edmx:Edmx>
                """)
            Issue.record("a type without key must be rejected")
        } catch {
            #expect(error == .invalidData)
            #expect(error.message.contains("no key"))
        }
    }

    @Test(arguments: ["", "<", "<Schema", "<Schema Namespace=\"", "<EntityContainer><EntitySet Name=\"X\" EntityType=\"N.Missing\"/>", "<!-- never closed"])
    func malformedCSDLIsAnErrorNotACrash(csdl: String) {
        #expect(throws: FixtureError.self) { try ServiceModel(csdl: csdl) }
    }

    @Test func mutateValidatesAndRollsBack() async throws {
        try await withServer { server in
            // A valid producer-side change.
            try server.mutate { data in
                try data.update(in: "Customers", key: ["CustomerID": "ALFKI"], changes: ["City": "Bonn"])
            }
            let city = try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"])?["City"] }
            #expect(city == "Bonn")

            // A failing closure leaves nothing behind, even the change made before the failure.
            #expect(throws: FixtureError.self) {
                try server.mutate { data in
                    try data.update(in: "Customers", key: ["CustomerID": "ALFKI"], changes: ["City": "Köln"])
                    try data.insert(["CustomerID": "ALFKI", "CompanyName": "twice"], into: "Customers")
                }
            }
            let after = try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"])?["City"] }
            #expect(after == "Bonn")

            func code(_ body: (inout FixtureData) throws -> Void) -> FixtureError? {
                do {
                    try server.mutate { data in try body(&data) }
                    return nil
                } catch let error as FixtureError { return error } catch { return nil }
            }
            #expect(code { try $0.insert(["CustomerID": "TOOLONGID", "CompanyName": "x"], into: "Customers") } == .invalidEntity)
            #expect(code { try $0.insert(["CustomerID": "NOCO"], into: "Customers") } == .invalidEntity)
            #expect(code { try $0.insert(["CustomerID": "X1", "CompanyName": "x", "Nope": 1], into: "Customers") } == .invalidEntity)
            #expect(code { try $0.insert(["OrderID": "abc"], into: "Orders") } == .invalidEntity)
            #expect(code { try $0.insert(["CustomerID": "ZZZZZ"], into: "Orders") } == .invalidEntity)
            #expect(code { try $0.delete(from: "Customers", key: ["CustomerID": "ALFKI"]) } == .conflict)
            #expect(code { try $0.delete(from: "Customers", key: ["CustomerID": "NONE"]) } == .notFound)
            #expect(code { try $0.update(in: "Nowhere", key: ["ID": 1], changes: [:]) } == .notFound)
            #expect(code { try $0.update(in: "Customers", key: ["CustomerID": "ANATR"], changes: ["CustomerID": "OTHER"]) } == .invalidEntity)
            #expect(code { try $0.delete(from: "Customers", key: ["CustomerID": "FISSA"]) } == nil)
        }
    }

    @Test func generatedKeys() async throws {
        try await withServer { server in
            let (event, order) = try server.mutate { data in
                (try data.insert(["Title": "hello", "CustomerID": "ALFKI"], into: "Events"),
                 try data.insert(["CustomerID": "ALFKI"], into: "Orders"))
            }
            let id = try #require(event["EventID"]?.stringValue)
            #expect(EntityKey.isGUID(id))
            #expect(order["OrderID"] == .int(11078))
        }
    }

    @Test func badConfigurationsAreRejected() async throws {
        await #expect(throws: FixtureError.self) { try await FixtureServer.start(FixtureConfiguration(serviceRootPath: "odata")) }
        await #expect(throws: FixtureError.self) { try await FixtureServer.start(FixtureConfiguration(defaultPageSize: 0)) }
        await #expect(throws: FixtureError.self) { try await FixtureServer.start(FixtureConfiguration(port: 70_000)) }
        do {
            _ = try await FixtureServer.start(FixtureConfiguration(dataDirectory: URL(fileURLWithPath: "/nonexistent/fixture")))
            Issue.record("a missing data directory must be rejected")
        } catch {
            #expect(error == .invalidData)
        }
    }

    @Test func portInUseIsAServerFailure() async throws {
        try await withServer { first in
            do {
                let second = try await FixtureServer.start(FixtureConfiguration(port: first.port))
                await second.stop()
                Issue.record("a second server on port \(first.port) must fail")
            } catch let error as FixtureError {
                #expect(error == .serverFailure)
            }
        }
    }

    @Test func dataDirectoryServesOtherData() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-data-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try """
            <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>
            <Schema Namespace="Demo" xmlns="http://docs.oasis-open.org/odata/ns/edm">
            <EntityType Name="Item"><Key><PropertyRef Name="ID"/></Key>
            <Property Name="ID" Type="Edm.Int32" Nullable="false"/><Property Name="Name" Type="Edm.String"/></EntityType>
            <EntityType Name="Tag"><Key><PropertyRef Name="Code"/></Key>
            <Property Name="Code" Type="Edm.String"/><Property Name="Label" Type="Edm.String"/></EntityType>
            <EntityContainer Name="C"><EntitySet Name="Items" EntityType="Demo.Item"/><EntitySet Name="Tags" EntityType="Demo.Tag"/></EntityContainer>
            </Schema></edmx:DataServices></edmx:Edmx>
            """.write(to: directory.appendingPathComponent("demo.xml"), atomically: true, encoding: .utf8)
        try #"{"value":[{"ID":1,"Name":"one"},{"ID":2,"Name":"two"}]}"#
            .write(to: directory.appendingPathComponent("Items.json"), atomically: true, encoding: .utf8)
        try await withServer(FixtureConfiguration(dataDirectory: directory)) { server in
            let result = try await Curl.run(server.serviceRoot + "Items(2)")
            #expect(result.status == 200)
            #expect(try result.json()["Name"] == "two")
            let created = try await Curl.run(
                "POST", server.serviceRoot + "Items", headers: ["Content-Type": "application/json"], body: #"{"Name":"three"}"#)
            #expect(created.status == 201)
            #expect(created.headers["location"] == server.serviceRoot + "Items(3)")
            let keyless = try await Curl.run(
                "POST", server.serviceRoot + "Tags", headers: ["Content-Type": "application/json"], body: #"{"Label":"x"}"#)
            #expect(keyless.status == 400)
        }
        try #"{"value":[{"ID":1},{"ID":1}]}"#.write(to: directory.appendingPathComponent("Items.json"), atomically: true, encoding: .utf8)
        do {
            _ = try await FixtureServer.start(FixtureConfiguration(dataDirectory: directory))
            Issue.record("duplicate keys must be rejected")
        } catch {
            #expect(error == .invalidData)
            #expect(error.message.contains("twice"))
        }
    }

    @Test func httpDatesRoundTrip() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse(HTTPDate.format(1_795_000_000)) == 1_795_000_000)
    }

    @Test(arguments: [
        ("Customers*", "Customers('ALFKI')", true), ("Customers", "Customers('ALFKI')", false),
        ("Orders(*)", "Orders(10248)", true), ("*", "$batch", true), ("*Orders", "Customers('A')/Orders", true),
        ("a*b*c", "aXbYc", true), ("a*b*c", "aXbY", false),
    ])
    func globPatterns(pattern: String, path: String, expected: Bool) {
        #expect(Glob.matches(pattern, path) == expected)
    }
}
