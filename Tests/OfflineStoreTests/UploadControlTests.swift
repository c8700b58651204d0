import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataTesting
import Synchronization
import Testing

@testable import OfflineStore

/// Records upload progress.
final class UploadProgressRecorder: OfflineODataDelegate {
    let progress = LockedValue<[OfflineODataUploadProgress]>([])

    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateUploadProgress progress: OfflineODataUploadProgress) {
        self.progress.withLock { $0.append(progress) }
    }
}

@Suite struct UploadControlTests {
    static func provider(_ server: FixtureServer, _ directory: TemporaryDirectory, transport: ScriptedTransport? = nil,
                         delegate: (any OfflineODataDelegate)? = nil) async throws -> OfflineODataProvider {
        var parameters = Northwind.parameters(directory)
        parameters.enableRepeatableRequests = true
        parameters.transport = transport
        parameters.currentUser = "alice"
        parameters.credentials = ["alice": [.authorization: "Basic YWxpY2U="]]
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters, delegate: delegate)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await provider.open()
        return provider
    }

    @Test func aDryRunListsExactlyWhatTheUploadSendsAndProgressIsReported() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        let recorder = UploadProgressRecorder()
        let provider = try await Self.provider(server, directory, transport: transport, delegate: recorder)
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"City":"Kiel"}"#))
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Dry"}"#))
        _ = try await provider.execute(.local("PUT", "Shippers(1)", body: #"{"CompanyName":"Put","Phone":"1"}"#))
        _ = try await provider.execute(.local("DELETE", "Customers('PARIS')"))
        let plan = try await provider.pendingUpload()
        #expect(plan.map(\.requestID) == [1, 2, 3, 4])
        #expect(plan.map(\.method) == ["PATCH", "POST", "PUT", "DELETE"])
        #expect(plan.allSatisfy { $0.headers[.authorization] == nil }, "credentials are not listed")
        #expect(plan.allSatisfy { $0.headers[HTTPField.Name("Repeatability-Request-ID")!] != nil })
        #expect(plan[0].headers[.ifMatch] != nil && plan[3].headers[.ifMatch] != nil, "updates and deletes carry the ETag")
        #expect(plan[1].headers[.ifMatch] == nil)
        #expect(try await provider.pendingUpload() == plan, "a dry run sends and changes nothing")
        #expect(try await provider.pendingRequests().count == 4)

        transport.removeRecordedRequests()
        let result = try await provider.upload()
        #expect(result.failed.isEmpty)
        var sent = transport.requests
        // First the session's one CSRF token fetch (our producer gives none, so there is no other), made
        // with the user's credentials.
        let fetch = sent.removeFirst()
        #expect(fetch.method == "GET" && fetch.url == server.serviceRoot && fetch.headerFields[HTTPField.Name("X-CSRF-Token")!] == "Fetch")
        #expect(fetch.headerFields[.authorization] == "Basic YWxpY2U=")
        #expect(sent.count == plan.count, "the upload sent exactly the planned requests")
        for (request, planned) in zip(sent, plan) {
            #expect(request.method == planned.method)
            #expect(request.url == planned.url)
            #expect(request.body.map { String(decoding: $0, as: UTF8.self) } == planned.body)
            #expect(HTTPFields(request.headerFields.filter { $0.name != .authorization }) == planned.headers, "request \(planned.requestID)")
            #expect(request.headerFields[.authorization] == "Basic YWxpY2U=")
        }
        let progress = recorder.progress.withLock { $0 }
        #expect(progress.map(\.settled) == [1, 2, 3, 4])
        #expect(progress.map(\.total) == [4, 4, 4, 4])
        #expect(progress.map(\.requestID) == [1, 2, 3, 4])
        #expect(try await provider.pendingUpload().isEmpty)
        await provider.close()
    }

    @Test func deletingAFailedCreatesEntryRemovesTheRequestsThatDependOnIt() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Self.provider(server, directory)
        _ = try server.faults.add(FaultRule(.fail(status: 422, code: "NoPhone", message: "Phone required"), method: "POST", path: "Shippers", times: 1))
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Doomed"}"#))
        _ = try await provider.upload()
        let archive = try await provider.getAll("ErrorArchive")
        #expect(archive.map { $0["RequestMethod"] ?? .null } == ["POST"])
        // Queued after the failed upload, on the entity that never reached the back end.
        _ = try await provider.execute(.local("PATCH", "Shippers(-1)", body: #"{"Phone":"1"}"#))
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"City":"Kiel"}"#))
        #expect(try await provider.pendingRequests().count == 2)
        let id = try #require(archive.first?["RequestID"]?.intValue)
        _ = try await provider.execute(.local("DELETE", "ErrorArchive(\(id))"))
        #expect(try await provider.getAll("ErrorArchive").isEmpty)
        let left = try await provider.pendingRequests().map { $0.properties["URL"]?.stringValue ?? "" }
        #expect(left == ["Customers('ALFKI')"], "only the independent request stays")
        let result = try await provider.upload()
        #expect(result.sent == 1 && result.failed.isEmpty)
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(-1)") == 0)
        await provider.close()
    }

    @Test func foreignKeysHoldingATemporaryKeyGetTheServersKey() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Self.provider(server, directory)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "orders", query: "Orders?$filter=OrderID%20lt%2010250"))
        try await provider.download()
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Temporary Express"}"#))
        _ = try await provider.execute(.local("POST", "Orders", body: #"{"ShipVia":-1,"ShipCity":"Kiel","Customer@odata.bind":"Customers('ALFKI')"}"#))
        _ = try await provider.execute(.local("PATCH", "Orders(10248)", body: #"{"ShipVia":-1}"#))
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        let shipper = try #require(try server.read { try $0.entities(in: "Shippers") }.first { $0["CompanyName"] == "Temporary Express" })
        let shipperID = try #require(shipper["ShipperID"]?.intValue)
        #expect(shipperID > 0)
        let order = try server.read { try $0.entities(in: "Orders") }.first { $0["ShipCity"] == "Kiel" && $0["CustomerID"] == "ALFKI" }
        #expect(order?["ShipVia"]?.intValue == shipperID, "the queued create's body got the server's key")
        #expect(try server.read { try $0.entity(in: "Orders", key: ["OrderID": 10248]) }?["ShipVia"]?.intValue == shipperID)
        let local = try await provider.getAll("Orders?$filter=ShipVia%20eq%20\(shipperID)")
        #expect(local.count == 2, "local foreign keys hold the server's key")
        #expect(try await provider.getAll("Orders?$filter=ShipVia%20lt%200").isEmpty)
        await provider.close()
    }

    /// An order item keyed by (OrderID, ProductID) made for a locally created order carries the
    /// order's temporary ID in its own key: after the order's create, the item moves to the server's
    /// key, and its queued create and update are sent with it.
    @Test(arguments: [OfflineODataUploadMode.oneByOne, .batch(maxRequestsPerBatch: 10)])
    func aTemporaryKeyInsideAnotherEntitysKeyGetsTheServersKey(mode: OfflineODataUploadMode) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory)
        parameters.uploadMode = mode
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "orders", query: "Orders?$filter=OrderID%20lt%2010250"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "items", query: "Order_Details?$filter=OrderID%20lt%2010250"))
        try await provider.open()
        let order = try JSON.parse(try await provider.execute(.local("POST", "Orders", body: #"{"ShipCity":"Kiel","Customer@odata.bind":"Customers('ALFKI')"}"#)).payload)
        let temporaryID = try #require(order["OrderID"]?.intValue)
        #expect(temporaryID < 0)
        _ = try await provider.execute(.local("POST", "Order_Details", body: #"{"OrderID":\#(temporaryID),"ProductID":11,"UnitPrice":14,"Quantity":5,"Discount":0}"#))
        _ = try await provider.execute(.local("PATCH", "Order_Details(OrderID=\(temporaryID),ProductID=11)", body: #"{"Quantity":7}"#))
        #expect(try await provider.pendingRequests().count == 3)

        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        let serverOrder = try #require(try server.read { try $0.entities(in: "Orders") }.first { $0["ShipCity"] == "Kiel" && $0["CustomerID"] == "ALFKI" })
        let orderID = try #require(serverOrder["OrderID"]?.intValue)
        #expect(orderID > 0)
        let serverItem = try server.read { try $0.entity(in: "Order_Details", key: ["OrderID": .int(orderID), "ProductID": 11]) }
        #expect(serverItem?["Quantity"]?.intValue == 7, "the item was created and updated under the server's order ID")
        #expect(try server.read { try $0.entity(in: "Order_Details", key: ["OrderID": .int(temporaryID), "ProductID": 11]) } == nil)
        #expect(server.counters.executions(method: "PATCH", path: "Order_Details(OrderID=\(orderID),ProductID=11)") == 1)
        // Locally the item lives under the server's key only, and nothing waits.
        let local = try await provider.get("Order_Details(OrderID=\(orderID),ProductID=11)")
        #expect(local["Quantity"]?.intValue == 7)
        #expect(try await provider.getAll("Order_Details?$filter=OrderID%20lt%200").isEmpty)
        #expect(try await provider.getAll("Orders(\(orderID))/Order_Details").count == 1)
        #expect(try await provider.hasPendingUpload == false)
        await provider.close()
        withExtendedLifetime(directory) {}
    }

    @Test func aCancelledUploadResumesWithoutLossOrDuplication() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Self.provider(server, directory)
        let customers = try await provider.getAll("Customers?$top=12").compactMap { $0["CustomerID"]?.stringValue }
        for (index, customer) in customers.enumerated() {
            _ = try await provider.execute(.local("PATCH", "Customers('\(customer)')", body: #"{"Fax":"cancel-\#(index)"}"#))
            _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Cancel \#(index)"}"#))
        }
        server.resetCounters()
        _ = try server.faults.add(FaultRule(.latency(.milliseconds(40))))
        let executed = { @Sendable in
            server.counters.all.filter { ["POST", "PATCH"].contains($0.method) }.reduce(0) { $0 + $1.executed }
        }
        let upload = Task { try await provider.upload() }
        let deadline = ContinuousClock.now + .seconds(20)
        while executed() < 7 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(executed() >= 7, "the upload got going")
        upload.cancel()
        await #expect(throws: CancellationError.self) { try await upload.value }
        #expect(await provider.currentState == .open)
        let left = try await provider.pendingRequests().count
        #expect(left > 0 && left < customers.count * 2, "cancelled mid-way (\(left) left)")
        #expect(try await provider.getAll("ErrorArchive").isEmpty, "a cancellation is not a failure")

        let result = try await provider.upload()
        #expect(result.failed.isEmpty)
        #expect(try await provider.hasPendingUpload == false)
        for customer in customers {
            #expect(server.counters.executions(method: "PATCH", path: "Customers('\(customer)')") == 1, "\(customer)")
        }
        #expect(server.counters.executions(method: "POST", path: "Shippers") == customers.count)
        let names = try server.read { try $0.entities(in: "Shippers") }.compactMap { $0["CompanyName"]?.stringValue }.filter { $0.hasPrefix("Cancel ") }
        #expect(names.count == customers.count && Set(names).count == customers.count)
        await provider.close()
    }
}
