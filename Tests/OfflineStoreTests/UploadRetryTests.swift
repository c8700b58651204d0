import CurlHTTP
import Foundation
import ODataCore
import ODataFixtures
import ODataTesting
import Testing
@testable import OfflineStore

/// The re-send rule for requests that are not idempotent, and a create whose answer gives no key, against the real
/// fixture producer (its request counters tell what it received and executed).
struct UploadRetryTests {
    static func provider(_ server: FixtureServer, _ directory: TemporaryDirectory, transport: (any HTTPTransport)? = nil) async throws -> OfflineODataProvider {
        var parameters = Northwind.parameters(directory)
        parameters.uploadRetryDelay = .milliseconds(10)
        parameters.transport = transport
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "orders", query: "Orders"))
        try await provider.open()
        return provider
    }

    /// With repeatability off (the default), a `POST` the producer executed and then answered `500` is sent once
    /// and archived as possibly executed; the entity exists once on the back end.
    @Test func aPostExecutedThenAnswered500IsSentOnceAndArchivedAsPossiblyExecuted() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Self.provider(server, directory)
        _ = try await provider.execute(.local("POST", "Customers", body: #"{"CustomerID":"NEWCO","CompanyName":"New Co"}"#))
        _ = try server.faults.add(FaultRule(.executeThenFail(status: 500), method: "POST", path: "Customers", times: 1))
        server.resetCounters()
        let result = try await provider.upload()
        #expect(server.counters.requests(method: "POST", path: "Customers") == 1, "not re-sent")
        #expect(server.counters.executions(method: "POST", path: "Customers") == 1)
        #expect(result.failed.map(\.httpStatusCode) == [500])
        #expect(result.failed.first?.message.contains("the back end may have executed it") == true, "\(result.failed.map(\.message))")
        let archive = try await provider.getAll("ErrorArchive")
        #expect(archive.count == 1)
        #expect(archive.first?["Message"]?.stringValue?.contains("may have executed") == true)
        #expect(archive.first?["Domain"] == "OData")
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "NEWCO"]) }?["CompanyName"] == "New Co")
        #expect(try await provider.hasPendingUpload == false)
        await provider.close()
    }

    /// A `POST` refused at connect (`CURLE_COULDNT_CONNECT`, scripted) never reached the back end: it is re-sent,
    /// and executed once.
    /// A failure that proves the request never left (refused at connect, a TLS handshake refused) lets a `POST`
    /// be re-sent without repeatable requests.
    @Test(arguments: [ScriptedReply.connectionRefused, .failure(CurlError(kind: .tls, curlCode: 60, message: "SSL certificate problem: certificate has expired"))])
    func aPostRefusedAtConnectIsResentAndExecutedOnce(refusal: ScriptedReply) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        transport.on("POST", "Customers", replies: [refusal])
        let provider = try await Self.provider(server, directory, transport: transport)
        _ = try await provider.execute(.local("POST", "Customers", body: #"{"CustomerID":"NEWCO","CompanyName":"New Co"}"#))
        server.resetCounters()
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        #expect(result.succeeded == 1)
        #expect(transport.requests("POST", "Customers").count == 2, "the first send was refused, the second reached the producer")
        #expect(server.counters.requests(method: "POST", path: "Customers") == 1)
        #expect(server.counters.executions(method: "POST", path: "Customers") == 1)
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "NEWCO"]) }?["CompanyName"] == "New Co")
        await provider.close()
    }

    /// A create the producer accepted with an answer that is not an entity: its key was made locally, so the
    /// back end's key is unknown. It is not sent again; it is archived (with the status) and reported, the entity
    /// keeps its temporary key in error state, a later change on it fails unsent; deleting the entry and
    /// downloading brings the back end's copy.
    @Test(arguments: ["", "<html>created</html>"])
    func aCreateAcceptedWithAnUnreadableAnswerIsArchivedNotKeptSilently(answer: String) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        // Every accepted create's answer body is replaced by `answer`.
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        transport.on("POST", "*", reply: .forward { response in
            guard (200..<300).contains(response.status) else { return response }
            return TransportResponse(status: response.status, headerFields: response.headerFields, body: Data(answer.utf8), metrics: response.metrics)
        })
        let provider = try await Self.provider(server, directory, transport: transport)
        let before = try await provider.getAll("Orders").count
        let created = try JSON.parse(try await provider.execute(.local("POST", "Orders", body: #"{"ShipCity":"Kiel","CustomerID":"ALFKI"}"#)).payload)
        let temporary = try #require(created.objectValue?["OrderID"]?.intValue)
        _ = try await provider.execute(.local("PATCH", "Orders(\(temporary))", body: #"{"ShipCity":"Lübeck"}"#))
        server.resetCounters()
        let result = try await provider.upload()
        #expect(server.counters.executions(method: "POST", path: "Orders") == 1)
        #expect(result.failed.map(\.requestID).count == 2)
        #expect(result.failed.first?.httpStatusCode == 201)
        #expect(result.failed.first?.message.contains("keeps its temporary key") == true)
        #expect(server.counters.requests(method: "PATCH", path: "Orders(\(temporary))") == 0, "the change on the unknown entity is not sent")
        let archive = try await provider.getAll("ErrorArchive?$orderby=RequestID")
        #expect(archive.map { $0["Domain"] ?? .null } == ["OData", "Dependency"])
        #expect(try await provider.get("Orders(\(temporary))")["ShipCity"] == "Lübeck")
        for entry in archive {
            _ = try await provider.execute(.local("DELETE", "ErrorArchive(\(entry["RequestID"]?.intValue ?? 0))"))
        }
        try await provider.download()
        let orders = try await provider.getAll("Orders")
        #expect(orders.count == before + 1, "the back end's copy, once")
        #expect(!orders.contains { $0["OrderID"]?.intValue == temporary })
        await provider.close()
    }
}
