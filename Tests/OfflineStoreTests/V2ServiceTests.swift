import Foundation
import ODataCore
import ODataFixtures
import ODataSession
import Testing

@testable import OfflineStore

/// The offline store against OData V2 services: the fixture producer in V2 mode (EDMX 1.0 `$metadata`,
/// `{"d": {"results": …, "__next": …}}` pages, `PATCH` refused) and mock-sap's GWSAMPLE_BASIC.
@Suite struct V2ServiceTests {
    static let queries = [
        OfflineODataDefiningQuery(name: "customers", query: "Customers"),
        OfflineODataDefiningQuery(name: "orders", query: "Orders"),
    ]

    /// A V2 producer paging by 20 (Customers: 5 pages, Orders: 42).
    static func v2Server(_ nextLink: FixtureConfiguration.V2NextLink = .string) async throws -> FixtureServer {
        var configuration = FixtureConfiguration(defaultPageSize: 20)
        configuration.protocolVersion = .v2
        configuration.v2NextLink = nextLink
        return try await FixtureServer.start(configuration)
    }

    static func provider(_ server: FixtureServer, _ directory: TemporaryDirectory, updateMethod: UpdateMethod? = nil) async throws -> OfflineODataProvider {
        var parameters = Northwind.parameters(directory)
        if let updateMethod { parameters.session.updateMethod = updateMethod }
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        for query in queries { try await provider.add(definingQuery: query) }
        return provider
    }

    /// The next link as a string (the V2 JSON format) and as an object with a `uri` (a foreign producer): every page
    /// is read, at the initial download and at a later download.
    @Test(arguments: [FixtureConfiguration.V2NextLink.string, .object])
    func everyPageIsReadWhateverFormTheNextLinkTakes(form: FixtureConfiguration.V2NextLink) async throws {
        let server = try await Self.v2Server(form)
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Self.provider(server, directory)
        try await provider.open()
        defer { Task { await provider.close() } }
        let store = try await provider.openStore()
        let (customers, orders) = try server.read { (try $0.count(in: "Customers"), try $0.count(in: "Orders")) }
        #expect(customers == 91 && orders == 830)
        #expect(try store.recordCount(in: "Customers") == customers)
        #expect(try store.recordCount(in: "Orders") == orders)
        #expect(server.counters.requests(method: "GET", path: "Customers") == 5, "every page of Customers was asked for")

        try await provider.download()
        #expect(try store.recordCount(in: "Customers") == customers)
        #expect(try store.recordCount(in: "Orders") == orders)
        #expect(server.counters.requests(method: "GET", path: "Orders") == 2 * 42)
    }

    /// A next link that cannot be read fails the download with a typed error naming the entity set and the page,
    /// and applies nothing; at the initial download, the open fails the same way.
    @Test(arguments: [FixtureConfiguration.V2NextLink.number, .objectWithNumberURI])
    func anUnreadableNextLinkFailsTheDownloadNamingSetAndPageAndAppliesNothing(form: FixtureConfiguration.V2NextLink) async throws {
        let server = try await Self.v2Server()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Self.provider(server, directory)
        try await provider.open()
        defer { Task { await provider.close() } }
        let store = try await provider.openStore()
        let before = (try store.recordCount(in: "Customers"), try store.recordCount(in: "Orders"))
        let city = try await provider.get("Customers('ALFKI')")["City"]
        let shipCity = try await provider.get("Orders(11077)")["ShipCity"]
        // The back end changes an entity of the first page of Customers, and one of the last page of Orders: a download
        // would apply both.
        try server.mutate { data in
            _ = try data.update(in: "Customers", key: ["CustomerID": "ALFKI"], changes: ["City": "Elsewhere"])
            _ = try data.update(in: "Orders", key: ["OrderID": 11077], changes: ["ShipCity": "Elsewhere"])
        }
        server.v2NextLink = form

        let error = await #expect(throws: OfflineODataError.self) { try await provider.download() }
        #expect(error == .invalidNextLink)
        #expect(error?.entitySet == "Customers" && error?.page == 1, "\(String(describing: error))")
        #expect(error?.message.contains("'Customers'") == true && error?.message.contains("page 1") == true)
        #expect((try store.recordCount(in: "Customers"), try store.recordCount(in: "Orders")) == before, "nothing applied")
        #expect(try await provider.get("Customers('ALFKI')")["City"] == city)
        #expect(try await provider.get("Orders(11077)")["ShipCity"] == shipCity)

        // A new store over that producer: the open fails, naming the set and the page.
        let second = try TemporaryDirectory()
        let fresh = try await Self.provider(server, second)
        let opening = await #expect(throws: OfflineODataError.self) { try await fresh.open() }
        #expect(opening == .invalidNextLink && opening?.entitySet == "Customers" && opening?.page == 1)
        #expect(await fresh.state == .closed)
    }

    /// An update to a service whose `$metadata` is EDMX 1.0 goes as `MERGE` unless the parameters name a method; an
    /// explicit `.patch` goes as `PATCH` (which this producer refuses with 400); a V4 service still gets `PATCH`.
    @Test(arguments: [
        (FixtureConfiguration.ProtocolVersion.v2, UpdateMethod?.none, "MERGE"),
        (.v2, .patch, "PATCH"),
        (.v4, nil, "PATCH"),
    ])
    func anUpdateToAV2ServiceGoesAsMergeByDefault(version: FixtureConfiguration.ProtocolVersion, configured: UpdateMethod?, method: String) async throws {
        var configuration = FixtureConfiguration()
        configuration.protocolVersion = version
        let server = try await FixtureServer.start(configuration)
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Self.provider(server, directory, updateMethod: configured)
        try await provider.open()
        defer { Task { await provider.close() } }
        _ = try await provider.execute(.local("PATCH", "Customers('BERGS')", body: #"{"City":"Umeå"}"#))
        let result = try await provider.upload()

        #expect(server.counters.executions(method: method, path: "Customers('BERGS')") == 1, "sent as \(method)")
        #expect(server.counters.executions(method: method == "MERGE" ? "PATCH" : "MERGE", path: "Customers('BERGS')") == 0)
        let city = try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "BERGS"]) }?["City"]
        if version == .v2 && configured == .patch {
            #expect(result.failed.map(\.httpStatusCode) == [400], "this V2 producer refuses PATCH")
            #expect(result.failed.first?.message.contains("PATCH not supported") == true, "\(result.failed.map(\.message))")
            #expect(city == "Luleå")
        } else {
            #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
            #expect(result.succeeded == 1)
            #expect(city == "Umeå")
        }
    }

    /// The same against a V2 producer nobody here wrote (mock-sap's GWSAMPLE_BASIC): `MERGE` by default, `PATCH` when
    /// the parameters say so; both succeed there.
    @Test(arguments: [UpdateMethod?.none, .patch])
    func anUpdateToMockSAPGoesAsMergeByDefault(configured: UpdateMethod?) async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory, name: "sap")
        if let configured { parameters.session.updateMethod = configured }
        let provider = try OfflineODataProvider(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "partners", query: "BusinessPartnerSet"))
        try await provider.open()
        defer { Task { await provider.close() } }
        let partner = try #require(try await provider.getAll("BusinessPartnerSet?$orderby=BusinessPartnerID&$top=1").first?["BusinessPartnerID"]?.stringValue)
        _ = try await provider.execute(.local("PATCH", "BusinessPartnerSet('\(partner)')", body: #"{"CompanyName":"Merged offline"}"#))
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        let (sent, other) = configured == .patch ? ("PATCH", "MERGE") : ("MERGE", "PATCH")
        #expect(try sap.logged(method: sent, path: "BusinessPartnerSet").map(\.status) == [204])
        #expect(try sap.logged(method: other, path: "BusinessPartnerSet").isEmpty)
    }
}
