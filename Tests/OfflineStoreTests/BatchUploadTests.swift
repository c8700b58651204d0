import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// What an upload of the "10 queued requests, 3 failing" scenario left behind.
private struct ScenarioOutcome: Equatable {
    var sent = 0
    var succeeded = 0
    var failures: [String] = []
    var archive: [String] = []
    var inError: [String] = []
    var employee: [String] = []
    var serverState: [String] = []
    var executions: [String: Int] = [:]
}

@Suite struct BatchUploadTests {
    private static let requests: [(String, String, String?)] = [
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

    private static let countedPaths: [(String, String)] = [
        ("PATCH", "Customers('ALFKI')"), ("PATCH", "Customers('ANATR')"), ("POST", "Orders"), ("DELETE", "Employees(2)"),
        ("POST", "Shippers"), ("PATCH", "Shippers(-2)"), ("PATCH", "Products(1)"),
        ("DELETE", "Order_Details(OrderID=10248,ProductID=11)"), ("PUT", "Categories(1)"),
    ]

    /// Runs the scenario with an upload mode; `http` gets the producer's HTTP request count.
    private static func run(_ mode: OfflineODataUploadMode) async throws -> (ScenarioOutcome, FixtureServer, http: Int) {
        let server = try await FixtureServer.start()
        let directory = try TemporaryDirectory()
        let recorder = FailureRecorder()
        var parameters = Northwind.parameters(directory)
        parameters.uploadMode = mode
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters, delegate: recorder)
        for query in Northwind.definingQueries { try await provider.add(definingQuery: query) }
        try await provider.open()
        // The same faults for HTTP requests and for `$batch` members.
        for insideBatch in [false, true] {
            _ = try server.faults.add(FaultRule(.fail(status: 400, code: "InvalidCity", message: "City is not allowed"),
                                                method: "PATCH", path: "Customers('ANATR')", insideBatch: insideBatch))
            _ = try server.faults.add(FaultRule(.fail(status: 409, code: "HasOrders", message: "Employee has orders"),
                                                method: "DELETE", path: "Employees(2)", insideBatch: insideBatch))
            _ = try server.faults.add(FaultRule(.fail(status: 422, code: "NoPhone", message: "Phone required"),
                                                method: "POST", path: "Shippers", insideBatch: insideBatch))
        }
        for (method, url, body) in requests { _ = try await provider.execute(.local(method, url, body: body)) }
        server.resetCounters()

        let result = try await provider.upload()
        let http = server.counters.totalRequests
        var outcome = ScenarioOutcome(sent: result.sent, succeeded: result.succeeded)
        #expect(try await provider.hasPendingUpload == false)
        outcome.failures = recorder.failures.withLock { $0 }.map {
            "\($0.requestID) \($0.httpStatusCode.map(String.init) ?? "-") \($0.code ?? "-") \($0.message) \($0.affectedEntityReference)"
        }
        #expect(outcome.failures == result.failed.map {
            "\($0.requestID) \($0.httpStatusCode.map(String.init) ?? "-") \($0.code ?? "-") \($0.message) \($0.affectedEntityReference)"
        })
        outcome.archive = try await provider.getAll("ErrorArchive?$orderby=RequestID").map { row in
            ["RequestID", "RequestMethod", "RequestURL", "RequestBody", "HTTPStatusCode", "Code", "Message", "Domain", "AffectedEntityReference"]
                .map { JSON.string(row[$0] ?? .null) }.joined(separator: " | ")
        }
        outcome.inError = try await provider.getAll("Customers?$filter=inErrorState()").compactMap { $0["CustomerID"]?.stringValue }
        let employee = try await provider.get("Employees(2)")
        outcome.employee = [EntityRecord.isDeleteErrorAnnotation, EntityRecord.inErrorStateAnnotation].map { JSON.string(employee[$0] ?? .null) }
        let localOrders = try await provider.getAll("Orders?$filter=ShipCity%20eq%20'L%C3%BCbeck'")
        let newID = try #require(localOrders.first?["OrderID"]?.intValue)
        #expect(newID > 11_077, "the temporary key was replaced by the server's")
        #expect(try await provider.getAll("Orders?$filter=OrderID%20lt%200").isEmpty)
        outcome.serverState = [
            JSON.string(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"]) }?["City"] ?? .null),
            JSON.string(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ANATR"]) }?["City"] ?? .null),
            String(try server.read { try $0.entity(in: "Order_Details", key: ["OrderID": 10248, "ProductID": 11]) } == nil),
            JSON.string(try server.read { try $0.entity(in: "Orders", key: ["OrderID": .int(newID)]) }?["ShipCity"] ?? .null),
            JSON.string(try server.read { try $0.entity(in: "Categories", key: ["CategoryID": 1]) }?["Description"] ?? .null),
            JSON.string(try server.read { try $0.entity(in: "Products", key: ["ProductID": 1]) }?["UnitPrice"] ?? .null),
            String(try server.read { try $0.entity(in: "Employees", key: ["EmployeeID": 2]) } != nil),
        ]
        for (method, path) in countedPaths {
            outcome.executions["\(method) \(path)"] = server.counters.executions(method: method, path: path)
        }
        outcome.executions["PATCH Orders(new)"] = server.counters.executions(method: "PATCH", path: "Orders(\(newID))")
        await provider.close()
        withExtendedLifetime(directory) {}
        return (outcome, server, http)
    }

    @Test func batchModeGivesTheSameOutcomesAsOneByOneWithFarFewerHTTPRequests() async throws {
        let (single, singleServer, singleHTTP) = try await Self.run(.oneByOne)
        await singleServer.stop()
        let (batched, batchServer, batchHTTP) = try await Self.run(.batch(maxRequestsPerBatch: 50))
        defer { Task { await batchServer.stop() } }

        #expect(batched == single, "same delegate calls, ErrorArchive entries, error states and server state")
        #expect(single.failures.map { $0.prefix(2) } == ["2 ", "4 ", "5 ", "6 "])
        #expect(single.archive.count == 4)
        #expect(single.inError == ["ANATR"])
        #expect(single.employee == ["true", "true"])
        #expect(single.sent == 9 && single.succeeded == 6)
        // Each change was executed exactly once (failed ones never; the dependent one was not sent).
        #expect(batched.executions.filter { $0.value != 1 }.keys.sorted()
            == ["DELETE Employees(2)", "PATCH Customers('ANATR')", "PATCH Shippers(-2)", "POST Shippers"])
        #expect(batched.executions.values.allSatisfy { $0 <= 1 })
        // One by one: one HTTP request per sent request. Batched: [1, 2, 3], [4, 5], [7, 8, 9, 10]. Each
        // also made the session's one CSRF token fetch before its first write.
        #expect(singleHTTP == 9 + 1)
        #expect(batchServer.counters.requests(method: "POST", path: "$batch") == 3)
        #expect(batchHTTP == 3 + 1)
    }

    @Test func aQueuedRequestKeepsItsHeadersAndRefusesARecordWithAMalformedOne() throws {
        var headers = HTTPFields()
        headers[.ifMatch] = "W/\"1\""
        headers[HTTPField.Name("Repeatability-Request-ID")!] = "3f2a"
        let request = QueuedRequest(id: 7, method: "PATCH", url: "Customers('ALFKI')", body: "{}", customTag: nil,
                                    headers: headers, entity: "Customers('ALFKI')", createdAt: "")
        #expect(try QueuedRequest.decode(request.encoded()) == request)
        let malformed = String(decoding: request.encoded(), as: UTF8.self).replacingOccurrences(of: "Repeatability-Request-ID", with: "Bad Name")
        let error = #expect(throws: OfflineODataError.self) { try QueuedRequest.decode(Array(malformed.utf8)) }
        #expect(error?.description.contains("queued request 7 has a malformed header") == true)
        #expect(error?.description.contains("3f2a") == false, "a header's value is not echoed")
    }

    @Test func aBatchEndsAfterACreateAndAtItsLimit() async throws {
        let entries = (1...6).map { id in
            QueuedRequest(id: Int64(id), method: id == 3 ? "POST" : "PATCH", url: "Customers('C\(id)')", body: "{}",
                          customTag: nil, headers: [:], entity: "Customers('C\(id)')", createdAt: "")
        }
        #expect(OfflineODataProvider.batchGroup(entries[...], limit: 10, failedCreates: [:]).map(\.id) == [1, 2, 3])
        #expect(OfflineODataProvider.batchGroup(entries[3...], limit: 2, failedCreates: [:]).map(\.id) == [4, 5])
        #expect(OfflineODataProvider.batchGroup(entries[3...], limit: 10, failedCreates: ["Customers('C5')": 1]).map(\.id) == [4])
    }

    @Test func aBatchWhoseAnswerIsLostIsRetriedAndEachRequestExecutedOnceWithRepeatableRequests() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory)
        parameters.enableRepeatableRequests = true
        parameters.uploadRetryDelay = .milliseconds(10)
        parameters.uploadMode = .batch(maxRequestsPerBatch: 10)
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"City":"Hamburg"}"#))
        _ = try await provider.execute(.local("PATCH", "Customers('ANATR')", body: #"{"City":"Bremen"}"#))
        _ = try server.faults.add(FaultRule(.executeThenDropConnection, method: "POST", path: "$batch", times: 1))
        server.resetCounters()
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed)")
        #expect(result.succeeded == 2)
        #expect(server.counters.requests(method: "POST", path: "$batch") == 2, "the lost batch was sent again")
        #expect(server.counters.executions(method: "PATCH", path: "Customers('ALFKI')") == 1)
        #expect(server.counters.executions(method: "PATCH", path: "Customers('ANATR')") == 1)
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ANATR"]) }?["City"] == "Bremen")
        await provider.close()
    }
}
