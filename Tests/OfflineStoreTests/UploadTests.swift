import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataTyped
import Synchronization
import Testing

@testable import OfflineStore

/// Records failed-request reports.
final class FailureRecorder: OfflineODataDelegate {
    let failures = LockedValue<[ErrorArchiveEntry]>([])

    func offlineODataProvider(_ provider: OfflineODataProvider, requestDidFail failure: ErrorArchiveEntry) {
        failures.withLock { $0.append(failure) }
    }
}

@Suite struct UploadTests {
    @Test func tenRequestsThreeFailingCompleteWithErrorArchiveAndErrorState() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let recorder = FailureRecorder()
        let provider = try await Northwind.provider(server, directory, delegate: recorder)
        try await provider.open()
        _ = try server.faults.add(FaultRule(.fail(status: 400, code: "InvalidCity", message: "City is not allowed"), method: "PATCH", path: "Customers('ANATR')"))
        _ = try server.faults.add(FaultRule(.fail(status: 409, code: "HasOrders", message: "Employee has orders"), method: "DELETE", path: "Employees(2)"))
        _ = try server.faults.add(FaultRule(.fail(status: 422, code: "NoPhone", message: "Phone required"), method: "POST", path: "Shippers"))
        let requests: [(String, String, String?)] = [
            ("PATCH", "Customers('ALFKI')", #"{"City":"Hamburg"}"#),                                  // 1 ok
            ("PATCH", "Customers('ANATR')", #"{"City":"Nowhere"}"#),                                  // 2 fails 400
            ("POST", "Orders", #"{"Customer@odata.bind":"Customers('ALFKI')","ShipCity":"Kiel"}"#),  // 3 ok, temp key
            ("DELETE", "Employees(2)", nil),                                                          // 4 fails 409
            ("POST", "Shippers", #"{"CompanyName":"No Phone"}"#),                                     // 5 fails 422
            ("PATCH", "Shippers(-2)", #"{"CompanyName":"Still No Phone"}"#),                          // 6 depends on 5
            ("PATCH", "Products(1)", #"{"UnitPrice":19.5}"#),                                         // 7 ok
            ("DELETE", "Order_Details(OrderID=10248,ProductID=11)", nil),                             // 8 ok
            ("PUT", "Categories(1)", #"{"CategoryName":"Drinks","Description":"All drinks"}"#),       // 9 ok
            ("PATCH", "Orders(-1)", #"{"ShipCity":"Lübeck"}"#),                                       // 10 ok, on the new key
        ]
        for (method, url, body) in requests { _ = try await provider.execute(.local(method, url, body: body)) }
        #expect(try await provider.pendingRequests().count == 10)
        server.resetCounters()

        let result = try await provider.upload()
        #expect(try await provider.hasPendingUpload == false)
        #expect(result.succeeded == 6)
        #expect(result.sent == 9, "the dependent update is not sent")
        let failures = recorder.failures.withLock { $0 }
        #expect(failures.map(\.requestID) == [2, 4, 5, 6], "each failure reported once, in queue order")
        #expect(failures.map(\.httpStatusCode) == [400, 409, 422, nil])
        #expect(failures[0].code == "InvalidCity")
        #expect(failures[3].message.contains("request 5"))
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(-2)") == 0)

        // The ErrorArchive holds the producer's status, code and message.
        let archive = try await provider.getAll("ErrorArchive?$orderby=RequestID")
        #expect(archive.map { $0["RequestID"]?.intValue ?? 0 } == [2, 4, 5, 6])
        #expect(archive.map { $0["HTTPStatusCode"] ?? .null } == [400, 409, 422, .null])
        #expect(archive.map { $0["Code"] ?? .null } == ["InvalidCity", "HasOrders", "NoPhone", .null])
        #expect(archive[1]["Message"] == "Employee has orders")
        #expect(archive[0]["RequestMethod"] == "PATCH")
        #expect(archive[0]["RequestBody"] == #"{"City":"Nowhere"}"#)
        // A failed request has one type: the delegate and the result report the entries the archive holds.
        let page = try await provider.execute(ODataRequest(resourcePath: "ErrorArchive", queryOptions: [.orderBy(["RequestID"])]))
        var entries = try QueryResult<ErrorArchiveEntry>.decode(page.payload).entities
        for index in entries.indices { entries[index].odata = ODataMetadata() }
        #expect(entries == failures)
        #expect(result.failed == failures)
        let counted = try await provider.get("ErrorArchive?$filter=HTTPStatusCode%20ge%20400&$count=true&$top=1")
        #expect(counted["@odata.count"] == 3)

        // Entities in error state; the failed delete reappears with isDeleteError.
        let inError = try await provider.getAll("Customers?$filter=inErrorState()").compactMap { $0["CustomerID"]?.stringValue }
        #expect(inError == ["ANATR"])
        let employee = try await provider.get("Employees(2)")
        #expect(employee[EntityRecord.isDeleteErrorAnnotation] == true)
        #expect(employee[EntityRecord.inErrorStateAnnotation] == true)
        #expect(try await provider.get("ErrorArchive(4)/AffectedEntity")["EmployeeID"] == 2)
        #expect(try await provider.get("ErrorArchive(2)/AffectedEntity")["City"] == "Nowhere")

        // Successful requests reached the producer once each; the new order has the server's key.
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"]) }?["City"] == "Hamburg")
        #expect(try server.read { try $0.entity(in: "Order_Details", key: ["OrderID": 10248, "ProductID": 11]) } == nil)
        await #expect(throws: OfflineODataError.self) { try await provider.get("Order_Details(OrderID=10248,ProductID=11)") }
        let localOrders = try await provider.getAll("Orders?$filter=ShipCity%20eq%20'L%C3%BCbeck'")
        let newID = try #require(localOrders.first?["OrderID"]?.intValue)
        #expect(newID > 11_077, "the temporary key was replaced by the server's")
        #expect(try server.read { try $0.entity(in: "Orders", key: ["OrderID": .int(newID)]) }?["ShipCity"] == "Lübeck")
        #expect(try await provider.getAll("Orders?$filter=OrderID%20lt%200").isEmpty)
        #expect(server.counters.executions(method: "POST", path: "Orders") == 1)

        // Deleting an entry releases its entity from error state.
        _ = try await provider.execute(.local("DELETE", "ErrorArchive(2)"))
        #expect(try await provider.getAll("Customers?$filter=inErrorState()").isEmpty)
        #expect(try await provider.getAll("ErrorArchive").count == 3)
        await provider.close()
    }

    @Test func createUpdateDeleteOfOneEntityAreThreeRequestsInOrder() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Short Lived","Phone":"1"}"#))
        _ = try await provider.execute(.local("PATCH", "Shippers(-1)", body: #"{"Phone":"2"}"#))
        _ = try await provider.execute(.local("DELETE", "Shippers(-1)"))
        #expect(try await provider.pendingRequests().map { $0.properties["Method"]?.stringValue ?? "" } == ["POST", "PATCH", "DELETE"])
        server.resetCounters()
        let result = try await provider.upload()
        #expect(result.sent == 3)
        #expect(result.failed.isEmpty, "\(result.failed)")
        #expect(server.counters.executions(method: "POST", path: "Shippers") == 1)
        // The update and the delete went to the server's key, not the temporary one.
        let shippers = try server.read { try $0.entities(in: "Shippers") }
        #expect(shippers.count == 3, "created and deleted again on the producer")
        #expect(server.counters.executions(method: "PATCH", path: "Shippers(-1)") == 0)
        #expect(try await provider.getAll("Shippers").count == 3)
        #expect(try await provider.hasPendingUpload == false)
    }

    @Test func aStaleETagGives412IntoTheErrorArchive() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        // Someone else changes the customer on the back end after the download.
        _ = try server.mutate { data in try data.update(in: "Customers", key: ["CustomerID": "BERGS"], changes: ["Phone": "0921-99 99 99"]) }
        _ = try await provider.execute(.local("PATCH", "Customers('BERGS')", body: #"{"City":"Umeå"}"#))
        let queued = try await provider.pendingRequests()
        #expect(queued.count == 1)
        let result = try await provider.upload()
        #expect(result.failed.map(\.httpStatusCode) == [412])
        let archive = try await provider.getAll("ErrorArchive")
        #expect(archive.map { $0["HTTPStatusCode"] ?? .null } == [412])
        #expect(archive.first?["Code"] == "PreconditionFailed")
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "BERGS"]) }?["City"] == "Luleå")
        #expect(try await provider.getAll("Customers?$filter=inErrorState()").map { $0["CustomerID"] } == ["BERGS"])
    }

    /// The repair of a 412: a download in between skips the entity (its local state wins) although
    /// its delta moves on; deleting the entry gives the failed change up (downloaded state again)
    /// and the next download reads the entity from the back end, so the change made again carries
    /// the current ETag and succeeds.
    @Test func a412IsRepairedByDeletingTheEntryDownloadingAndChangingAgain() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        _ = try server.mutate { data in try data.update(in: "Customers", key: ["CustomerID": "BERGS"], changes: ["Phone": "0921-99 99 99"]) }
        _ = try await provider.execute(.local("PATCH", "Customers('BERGS')", body: #"{"City":"Umeå"}"#))
        #expect(try await provider.upload().failed.map(\.httpStatusCode) == [412])
        // The usual "upload, then download": the entity in error state keeps its local state.
        try await provider.download()
        #expect(try await provider.get("Customers('BERGS')")["City"] == "Umeå")
        #expect(try await provider.get("Customers('BERGS')")["Phone"] != "0921-99 99 99")
        let entry = try #require(try await provider.getAll("ErrorArchive").first)
        let requestID = try #require(entry["RequestID"]?.intValue)
        _ = try await provider.execute(.local("DELETE", "ErrorArchive(\(requestID))"))
        // Given up: the downloaded state again, out of error state.
        let released = try await provider.get("Customers('BERGS')")
        #expect(released["City"] == "Luleå")
        #expect(released[EntityRecord.inErrorStateAnnotation] == nil)
        #expect(try await provider.getAll("Customers?$filter=inErrorState()").isEmpty)
        // The next download reads it again, although the delta has nothing new for it.
        try await provider.download()
        let current = try await provider.get("Customers('BERGS')")
        #expect(current["Phone"] == "0921-99 99 99")
        let producerETag = try #require(try await Producer.get(server, "Customers('BERGS')").1?["@odata.etag"])
        #expect(current["@odata.etag"] == producerETag)
        // The change made again goes through.
        _ = try await provider.execute(.local("PATCH", "Customers('BERGS')", body: #"{"City":"Umeå"}"#))
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        let remote = try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "BERGS"]) }
        #expect(remote?["City"] == "Umeå")
        #expect(remote?["Phone"] == "0921-99 99 99")
        await provider.close()
    }

    /// Deleting the entry of a failed create removes the never-created entity (and what was queued on
    /// it); an entity whose failed delete is given up and that is gone on the back end goes at the
    /// next download.
    @Test func givingUpAFailedCreateOrDeleteLeavesNoGhost() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        _ = try server.faults.add(FaultRule(.fail(status: 400, code: "Invalid", message: "refused"), method: "POST", path: "Customers", times: 1))
        _ = try server.faults.add(FaultRule(.fail(status: 403, code: "Forbidden", message: "not yours"), method: "DELETE", path: "Customers('PARIS')", times: 1))
        _ = try await provider.execute(.local("POST", "Customers", body: #"{"CustomerID":"GHOST","CompanyName":"Never"}"#))
        _ = try await provider.execute(.local("PATCH", "Customers('GHOST')", body: #"{"City":"Nowhere"}"#))
        _ = try await provider.execute(.local("DELETE", "Customers('PARIS')"))
        let result = try await provider.upload()
        #expect(result.failed.map(\.httpStatusCode) == [400, nil, 403])
        for entry in try await provider.getAll("ErrorArchive") {
            _ = try await provider.execute(.local("DELETE", "ErrorArchive(\(entry["RequestID"]?.intValue ?? 0))"))
        }
        #expect(try await provider.getAll("ErrorArchive").isEmpty)
        // The never-created customer is gone.
        await #expect(throws: OfflineODataError.self) { try await provider.get("Customers('GHOST')") }
        #expect(try await provider.getAll("Customers?$filter=CustomerID%20eq%20'GHOST'").isEmpty)
        // The failed delete is given up: the customer is back as downloaded.
        #expect(try await provider.get("Customers('PARIS')")["CustomerID"] == "PARIS")
        // Someone else deletes it on the back end; the next download removes it here.
        _ = try server.mutate { data in try data.delete(from: "Customers", key: ["CustomerID": "PARIS"]) }
        try await provider.download()
        await #expect(throws: OfflineODataError.self) { try await provider.get("Customers('PARIS')") }
        #expect(try await provider.hasPendingUpload == false)
        await provider.close()
    }

    @Test(arguments: [true, false])
    func aLostAcknowledgementIsRetriedAndExecutedOnceWithRepeatableRequests(repeatable: Bool) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory)
        parameters.enableRepeatableRequests = repeatable
        parameters.uploadRetryDelay = .milliseconds(10)
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        _ = try await provider.execute(.local("POST", "Customers", body: #"{"CustomerID":"NEWCO","CompanyName":"New Co"}"#))
        let headers = try #require(try await provider.store?.queuedRequests().first?.headers)
        #expect((headers[HTTPField.Name("Repeatability-Request-ID")!] != nil) == repeatable)
        #expect((headers[HTTPField.Name("Repeatability-First-Sent")!] != nil) == repeatable)
        _ = try server.faults.add(FaultRule(.executeThenDropConnection, method: "POST", path: "Customers", times: 1))
        server.resetCounters()
        let result: OfflineODataUploadResult
        if repeatable {
            result = try await provider.upload()
        } else {
            // The connection died after the POST went out: it is archived, and the upload stops (the back end gave no answer).
            let error = try await #require(throws: OfflineODataError.self) { try await provider.upload() }
            #expect(error == .backEndUnreachable, "\(error)")
            result = try #require(error.uploadResult)
            #expect(result.stillQueued == 0)
        }
        let executions = server.counters.executions(method: "POST", path: "Customers")
        if repeatable {
            #expect(result.failed.isEmpty, "\(result.failed)")
            #expect(executions == 1, "the retry carried the same Repeatability-Request-ID and was not executed again")
            #expect(server.counters.entry(method: "POST", path: "Customers")?.replayed == 1)
        } else {
            // Without the headers a POST whose answer was lost is not sent again (it may have been executed):
            // it is reported as possibly executed, and the producer executed it once.
            #expect(executions == 1)
            #expect(server.counters.requests(method: "POST", path: "Customers") == 1, "\(result.failed.map(\.message))")
            #expect(result.failed.count == 1)
            #expect(result.failed.first?.message.contains("the back end may have executed it") == true)
        }
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "NEWCO"]) }?["CompanyName"] == "New Co")
        await provider.close()
    }
}
