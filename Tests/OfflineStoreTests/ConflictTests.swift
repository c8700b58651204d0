import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataSession
import Testing

@testable import OfflineStore

/// The conflict policies against real producers: another client changes the entity on the producer first, then the
/// store uploads its own change of it. The fixture producer (V4) and mock-sap's GWSAMPLE_BASIC (V2, CSRF on, change
/// timestamps as ETags: a producer nobody here wrote).
@Suite struct ConflictTests {
    // MARK: The fixture producer

    /// An opened store of the fixture's employees with `policy`, and its delegate.
    static func employees(_ server: FixtureServer, _ directory: TemporaryDirectory,
                          _ policy: OfflineODataConflictPolicy) async throws -> (OfflineODataProvider, RecordingDelegate) {
        var parameters = Northwind.parameters(directory)
        parameters.conflictPolicy = policy
        let delegate = RecordingDelegate()
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters, delegate: delegate)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "employees", query: "Employees"))
        try await provider.open()
        return (provider, delegate)
    }

    static func producer(_ server: FixtureServer, _ property: String) throws -> JSONValue? {
        try server.read { try $0.entity(in: "Employees", key: ["EmployeeID": 4]) }?[property]
    }

    static func otherClient(_ server: FixtureServer, _ changes: JSONObject) throws {
        _ = try server.mutate { try $0.update(in: "Employees", key: ["EmployeeID": 4], changes: changes) }
    }

    /// Disjoint fields: both changes reach the producer, nothing is archived, the local copy has both.
    @Test func mergeFieldsWithDisjointFieldsKeepsBothChanges() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let (provider, delegate) = try await Self.employees(server, directory, .mergeFields)
        defer { Task { await provider.close() } }
        try Self.otherClient(server, ["City": "Remote"])
        _ = try await provider.execute(.local("PATCH", "Employees(4)", body: #"{"Title":"Local"}"#))
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        #expect(try Self.producer(server, "City") == "Remote" && Self.producer(server, "Title") == "Local")
        #expect(try await provider.getAll("ErrorArchive").isEmpty)
        let local = try await provider.get("Employees(4)")
        #expect(local["City"] == "Remote" && local["Title"] == "Local", "the local copy takes the producer's city: \(local)")
        #expect(local[EntityRecord.inErrorStateAnnotation] == nil)
        #expect(delegate.resolutions.withLock { $0.map(\.resolution) } == [.mergeFields])
        #expect(result.resolvedConflicts.map(\.conflict.remote?["City"]) == ["Remote"])
        // The local copy's ETag is the producer's now: a further change goes through without a conflict.
        _ = try await provider.execute(.local("PATCH", "Employees(4)", body: #"{"Title":"Again"}"#))
        #expect(try await provider.upload().resolvedConflicts.isEmpty)
        #expect(try Self.producer(server, "Title") == "Again")
    }

    /// The same field on both sides: archived with both values, the entity in error state, the producer unchanged.
    @Test func mergeFieldsWithTheSameFieldArchivesBothValues() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let (provider, _) = try await Self.employees(server, directory, .mergeFields)
        defer { Task { await provider.close() } }
        let downloaded = try #require(try await provider.get("Employees(4)")["City"]?.stringValue)
        try Self.otherClient(server, ["City": "Remote"])
        _ = try await provider.execute(.local("PATCH", "Employees(4)", body: #"{"City":"Local"}"#))
        let result = try await provider.upload()
        #expect(result.failed.map(\.httpStatusCode) == [412])
        let archived = try #require(try await provider.getAll("ErrorArchive").first)
        let message = archived["Message"]?.stringValue ?? ""
        #expect(message.contains(#"City: here "Local", on the back end "Remote", downloaded "\#(downloaded)""#), "\(message)")
        #expect(try Self.producer(server, "City") == "Remote")
        let local = try await provider.get("Employees(4)")
        #expect(local["City"] == "Local" && local[EntityRecord.inErrorStateAnnotation] == true)
    }

    /// The back end wins: the local copy equals the producer's, nothing is archived or queued.
    @Test(arguments: ["PATCH", "DELETE"])
    func serverWinsMakesTheLocalCopyTheProducers(method: String) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let (provider, _) = try await Self.employees(server, directory, .serverWins)
        defer { Task { await provider.close() } }
        try Self.otherClient(server, ["City": "Remote"])
        _ = try await provider.execute(.local(method, "Employees(4)", body: method == "DELETE" ? nil : #"{"City":"Local","Title":"Local"}"#))
        let result = try await provider.upload()
        #expect(result.failed.isEmpty && result.resolvedConflicts.count == 1)
        let producer = try #require(try server.read { try $0.entity(in: "Employees", key: ["EmployeeID": 4]) })
        let local = try await provider.get("Employees(4)")
        for (name, value) in producer where !name.hasPrefix("@") && local[name] != nil {
            #expect(local[name] == value, "\(name)")
        }
        #expect(local["City"] == "Remote" && local["Title"] == producer["Title"])
        #expect(try await provider.getAll("ErrorArchive").isEmpty)
        #expect(try await provider.pendingRequests().isEmpty)
    }

    /// The client wins: the producer shows the local value (the change re-sent with the producer's ETag).
    @Test(arguments: ["PATCH", "PUT"])
    func clientWinsPutsTheLocalValueOnTheProducer(method: String) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let (provider, _) = try await Self.employees(server, directory, .clientWins)
        defer { Task { await provider.close() } }
        var body = try #require(try await provider.get("Employees(4)").objectValue)
        for name in body.keys where name.hasPrefix("@") { body[name] = nil }
        body["City"] = "Local"
        try Self.otherClient(server, ["City": "Remote"])
        _ = try await provider.execute(.local(method, "Employees(4)", body: method == "PUT" ? String(decoding: JSON.serialize(.object(body)), as: UTF8.self) : #"{"City":"Local"}"#))
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        #expect(try Self.producer(server, "City") == "Local")
        #expect(result.resolvedConflicts.map(\.resolution) == [.clientWins])
    }

    /// A custom resolver sees the three versions and its entity is sent.
    @Test func aCustomResolverDecides() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let seen = LockedValue<[OfflineODataConflict]>([])
        let (provider, _) = try await Self.employees(server, directory, .custom { conflict in
            seen.withLock { $0.append(conflict) }
            return .send(["City": .string("\(conflict.remote?["City"]?.stringValue ?? "")+\(conflict.local["City"]?.stringValue ?? "")")])
        })
        defer { Task { await provider.close() } }
        try Self.otherClient(server, ["City": "Remote"])
        _ = try await provider.execute(.local("PATCH", "Employees(4)", body: #"{"City":"Local"}"#))
        _ = try await provider.upload()
        #expect(try Self.producer(server, "City") == "Remote+Local")
        #expect(try await provider.get("Employees(4)")["City"] == "Remote+Local")
        let conflict = try #require(seen.withLock { $0.first })
        #expect(conflict.statusCode == 412 && conflict.base?["City"] != nil && conflict.remoteETag != nil)
    }

    // MARK: mock-sap

    /// Another client of mock-sap: its own session (CSRF token, cookies), a `MERGE` without `If-Match`.
    static func otherClient(_ sap: MockSAP, _ partner: String, _ body: String) async throws {
        let session = ServiceSession(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), transport: try CurlTransport())
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.accept] = "application/json"
        let response = try await session.send(TransportRequest(method: "MERGE", url: sap.serviceRoot(MockSAP.gwsampleBasic) + "BusinessPartnerSet('\(partner)')",
                                                               headerFields: fields, body: Data(body.utf8)))
        #expect(response.status == 204, "the other client's change: \(String(decoding: response.body, as: UTF8.self))")
    }

    static func producer(_ sap: MockSAP, _ partner: String) async throws -> JSONObject {
        let session = ServiceSession(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), transport: try CurlTransport())
        var fields = HTTPFields()
        fields[.accept] = "application/json"
        let response = try await session.send(TransportRequest(method: "GET", url: sap.serviceRoot(MockSAP.gwsampleBasic) + "BusinessPartnerSet('\(partner)')",
                                                               headerFields: fields))
        return try ODataPayload.decodeEntity(response.body).jsonV4
    }

    static let sapCases: [(String, String, String)] = [
        ("mergeFields", #"{"WebAddress":"http://remote.example"}"#, #"{"CompanyName":"Local AG"}"#),
        ("mergeFieldsSame", #"{"CompanyName":"Remote AG"}"#, #"{"CompanyName":"Local AG"}"#),
        ("serverWins", #"{"CompanyName":"Remote AG"}"#, #"{"CompanyName":"Local AG","WebAddress":"http://local.example"}"#),
        ("clientWins", #"{"CompanyName":"Remote AG"}"#, #"{"CompanyName":"Local AG"}"#),
    ]

    /// The four outcomes of done-when 2 against mock-sap (V2, `MERGE`, CSRF, timestamp ETags).
    @Test(arguments: sapCases)
    func eachPolicyAgainstMockSAP(scenario: (String, String, String)) async throws {
        let (name, remoteChange, localChange) = scenario
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory, name: "sap")
        parameters.conflictPolicy = switch name {
        case "serverWins": .serverWins
        case "clientWins": .clientWins
        default: .mergeFields
        }
        let provider = try OfflineODataProvider(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "partners", query: "BusinessPartnerSet"))
        try await provider.open()
        defer { Task { await provider.close() } }
        let partner = try #require(try await provider.getAll("BusinessPartnerSet?$orderby=BusinessPartnerID&$top=1").first?["BusinessPartnerID"]?.stringValue)
        try await Self.otherClient(sap, partner, remoteChange)
        _ = try await provider.execute(.local("PATCH", "BusinessPartnerSet('\(partner)')", body: localChange))
        let result = try await provider.upload()
        let producer = try await Self.producer(sap, partner)
        let local = try await provider.get("BusinessPartnerSet('\(partner)')")
        let archive = try await provider.getAll("ErrorArchive")
        switch name {
        case "mergeFields":
            #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
            #expect(producer["CompanyName"] == "Local AG" && producer["WebAddress"] == "http://remote.example")
            #expect(archive.isEmpty)
            #expect(local["WebAddress"] == "http://remote.example")
        case "mergeFieldsSame":
            #expect(archive.count == 1 && producer["CompanyName"] == "Remote AG")
            #expect(archive.first?["Message"]?.stringValue?.contains(#"CompanyName: here "Local AG", on the back end "Remote AG""#) == true, "\(archive)")
            #expect(local[EntityRecord.inErrorStateAnnotation] == true)
        case "serverWins":
            #expect(archive.isEmpty && result.resolvedConflicts.count == 1)
            for name in ["CompanyName", "WebAddress", "EmailAddress"] { #expect(local[name] == producer[name], "\(name)") }
            #expect(try await provider.pendingRequests().isEmpty)
        default:
            #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
            #expect(producer["CompanyName"] == "Local AG")
        }
        // What reached mock-sap: the refused MERGE, then (merge or client wins) the re-send; never more.
        let merges = try sap.logged(method: "MERGE", path: "BusinessPartnerSet").map(\.status)
        #expect(merges.filter { $0 == 412 }.count == 1, "\(merges)")
    }
}
