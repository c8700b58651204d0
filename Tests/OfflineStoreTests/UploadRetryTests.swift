import CurlHTTP
import Foundation
import ODataCore
import ODataFixtures
import Testing
@testable import OfflineStore

/// The re-send rule for requests that are not idempotent, and a create whose answer gives no key, against the real
/// fixture producer (its request counters tell what it received and executed).
struct UploadRetryTests {
    /// Sends through curl; the first `POST` goes to a closed port (a real `CURLE_COULDNT_CONNECT`), and with
    /// `createAnswer` set, every accepted create's answer body is replaced by it.
    final class Detour: HTTPTransport {
        let curl: CurlTransport
        let refusals = LockedValue(0)
        let refuseFirstPost: Bool
        let createAnswer: String?

        init(refuseFirstPost: Bool = false, createAnswer: String? = nil) throws {
            curl = try CurlTransport()
            self.refuseFirstPost = refuseFirstPost
            self.createAnswer = createAnswer
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            if refuseFirstPost, request.method == "POST", refusals.withLock({ count in count += 1; return count == 1 }) {
                var moved = request
                moved.url = "http://127.0.0.1:9/service/Customers"
                return try await curl.send(moved)
            }
            let response = try await curl.send(request)
            guard let createAnswer, request.method == "POST", (200..<300).contains(response.status) else { return response }
            return TransportResponse(status: response.status, headerFields: response.headerFields, body: Data(createAnswer.utf8), metrics: response.metrics)
        }
    }

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
        #expect(result.failed.map(\.statusCode) == [500])
        #expect(result.failed.first?.message.contains("the back end may have executed it") == true, "\(result.failed.map(\.message))")
        let archive = try await provider.getAll("ErrorArchive")
        #expect(archive.count == 1)
        #expect(archive.first?["Message"]?.stringValue?.contains("may have executed") == true)
        #expect(archive.first?["Domain"] == "OData")
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "NEWCO"]) }?["CompanyName"] == "New Co")
        #expect(try await provider.hasPendingUpload == false)
        await provider.close()
    }

    /// A `POST` refused at connect (`CURLE_COULDNT_CONNECT`) never reached the back end: it is re-sent, and
    /// executed once.
    @Test func aPostRefusedAtConnectIsResentAndExecutedOnce() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let detour = try Detour(refuseFirstPost: true)
        let provider = try await Self.provider(server, directory, transport: detour)
        _ = try await provider.execute(.local("POST", "Customers", body: #"{"CustomerID":"NEWCO","CompanyName":"New Co"}"#))
        server.resetCounters()
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        #expect(result.succeeded == 1)
        #expect(detour.refusals.withLock { $0 } == 2, "the first send was refused, the second reached the producer")
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
        let provider = try await Self.provider(server, directory, transport: try Detour(createAnswer: answer))
        let before = try await provider.getAll("Orders").count
        let created = try JSON.parse(try await provider.execute(.local("POST", "Orders", body: #"{"ShipCity":"Kiel","CustomerID":"ALFKI"}"#)).payload)
        let temporary = try #require(created.objectValue?["OrderID"]?.intValue)
        _ = try await provider.execute(.local("PATCH", "Orders(\(temporary))", body: #"{"ShipCity":"Lübeck"}"#))
        server.resetCounters()
        let result = try await provider.upload()
        #expect(server.counters.executions(method: "POST", path: "Orders") == 1)
        #expect(result.failed.map(\.requestID).count == 2)
        #expect(result.failed.first?.statusCode == 201)
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
