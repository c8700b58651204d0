import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataTesting
import Testing

@testable import OfflineStore

extension ScriptedTransport {
    /// The `Authorization` of every request sent with `method`, in order.
    func authorizations(method: String) -> [String?] {
        requests(method, "*").map { $0.headerFields[.authorization] }
    }
}

@Suite struct UserSwitchTests {
    static let credentials: [String: HTTPFields] = ["alice": [.authorization: "Basic YWxpY2U="], "bob": [.authorization: "Basic Ym9i"]]

    static func provider(_ server: FixtureServer, _ directory: TemporaryDirectory, user: String,
                         transport: ScriptedTransport) throws -> OfflineODataProvider {
        var parameters = Northwind.parameters(directory)
        parameters.forceUploadOnUserSwitch = true
        parameters.currentUser = user
        parameters.credentials = credentials
        parameters.transport = transport
        parameters.uploadRetries = 0
        return try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
    }

    @Test func anotherUsersRequestsAreUploadedWithTheirCredentialsFirst() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        let alice = try Self.provider(server, directory, user: "alice", transport: transport)
        try await alice.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await alice.open()
        #expect(transport.authorizations(method: "GET").allSatisfy { $0 == "Basic YWxpY2U=" })
        _ = try await alice.execute(.local("PATCH", "Shippers(1)", body: #"{"Phone":"alice 1"}"#))
        _ = try await alice.execute(.local("PATCH", "Shippers(2)", body: #"{"Phone":"alice 2"}"#))
        await alice.close()
        #expect(transport.authorizations(method: "PATCH").isEmpty)

        let bob = try Self.provider(server, directory, user: "bob", transport: transport)
        try await bob.open()
        #expect(transport.authorizations(method: "PATCH") == ["Basic YWxpY2U=", "Basic YWxpY2U="], "sent as alice")
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(1)") == 1)
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(2)") == 1)
        #expect(try server.read { try $0.entity(in: "Shippers", key: ["ShipperID": 2]) }?["Phone"] == "alice 2")
        #expect(try await bob.hasPendingUpload == false)
        #expect(await bob.currentState == .open)

        // Bob's own requests carry his credentials; reopening as bob uploads nothing.
        _ = try await bob.execute(.local("PATCH", "Shippers(3)", body: #"{"Phone":"bob"}"#))
        _ = try await bob.upload()
        #expect(transport.authorizations(method: "PATCH").last == "Basic Ym9i")
        await bob.close()
        let again = try Self.provider(server, directory, user: "bob", transport: transport)
        try await again.open()
        #expect(transport.authorizations(method: "PATCH").count == 3)
        #expect(try await again.get("Shippers(1)")["Phone"] == "alice 1")
        await again.close()
    }

    /// Without `forceUploadOnUserSwitch`, another user's pending requests stop the open: nothing is
    /// sent with the wrong credentials, nothing is dropped, and the owner can still open and upload.
    @Test func withoutForceUploadAnotherUsersRequestsRefuseTheOpen() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        func provider(_ user: String) throws -> OfflineODataProvider {
            var parameters = Northwind.parameters(directory)
            parameters.currentUser = user
            parameters.credentials = Self.credentials
            parameters.transport = transport
            return try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        }
        let alice = try provider("alice")
        try await alice.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await alice.open()
        _ = try await alice.execute(.local("PATCH", "Shippers(1)", body: #"{"Phone":"alice"}"#))
        await alice.close()

        let bob = try provider("bob")
        do {
            try await bob.open()
            Issue.record("the open should fail")
        } catch let error as OfflineODataError {
            #expect(error == .pendingRequestsOfAnotherUser)
            #expect(error.previousUser == "alice")
            #expect(error.message.contains("1 requests queued by 'alice'"))
        }
        #expect(await bob.currentState == .closed)
        #expect(transport.authorizations(method: "PATCH").isEmpty, "nothing sent as bob")

        let back = try provider("alice")
        try await back.open()
        #expect(try await back.pendingRequests().count == 1)
        _ = try await back.upload()
        #expect(transport.authorizations(method: "PATCH") == ["Basic YWxpY2U="])
        await back.close()
        // With an empty queue the store changes hands.
        let bobAgain = try provider("bob")
        try await bobAgain.open()
        #expect(await bobAgain.currentState == .open)
        await bobAgain.close()
    }

    @Test func aFailingRequestOfThePreviousUserFailsTheOpenWith10425() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        let alice = try Self.provider(server, directory, user: "alice", transport: transport)
        try await alice.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await alice.open()
        for id in 1...3 { _ = try await alice.execute(.local("PATCH", "Shippers(\(id))", body: #"{"Phone":"alice \#(id)"}"#)) }
        await alice.close()
        _ = try server.faults.add(FaultRule(.fail(status: 403, code: "Forbidden", message: "alice may not"), method: "PATCH", path: "Shippers(2)", times: 1))

        let bob = try Self.provider(server, directory, user: "bob", transport: transport)
        do {
            try await bob.open()
            Issue.record("the open should fail")
        } catch let error as OfflineODataError {
            #expect(error == .userSwitchUploadFailed)
            #expect(error.errorNumber == -10425)
            #expect(error.previousUser == "alice")
        }
        #expect(await bob.currentState == .closed)
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(1)") == 1)
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(2)") == 0)
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(3)") == 1)

        // Nothing lost: the failed request is in the ErrorArchive with alice's change kept locally.
        let back = try Self.provider(server, directory, user: "alice", transport: transport)
        try await back.open()
        let archive = try await back.getAll("ErrorArchive")
        #expect(archive.map { $0["RequestID"]?.intValue ?? 0 } == [2])
        #expect(archive.first?["HTTPStatusCode"] == 403)
        #expect(try await back.get("Shippers(2)")["Phone"] == "alice 2")
        #expect(try await back.hasPendingUpload == false)
        await back.close()
        // Nothing sent twice: a later open as bob sends nothing more.
        let sentBefore = transport.authorizations(method: "PATCH").count
        let bobAgain = try Self.provider(server, directory, user: "bob", transport: transport)
        try await bobAgain.open()
        #expect(transport.authorizations(method: "PATCH").count == sentBefore)
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(1)") == 1)
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(3)") == 1)
        await bobAgain.close()
    }
}
