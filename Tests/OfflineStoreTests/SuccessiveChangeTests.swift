import Foundation
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// Several local changes of one entity queued before one upload (found by the soak, issue 10):
/// each later request must carry the ETag the back end gave for the earlier one, not the
/// downloaded ETag the earlier request already used up.
@Suite struct SuccessiveChangeTests {
    @Test(arguments: [OfflineODataUploadMode.oneByOne, .batch(maxRequestsPerBatch: 10)])
    func successiveUpdatesAndADeleteOfOneEntityAllSucceedInOneUpload(mode: OfflineODataUploadMode) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory)
        parameters.enableRepeatableRequests = true
        parameters.uploadMode = mode
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"Fax":"first"}"#))
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"Fax":"second"}"#))
        _ = try await provider.execute(.local("PUT", "Customers('ALFKI')", body: #"{"CompanyName":"Alfreds","Fax":"third"}"#))
        _ = try await provider.execute(.local("PATCH", "Customers('FISSA')", body: #"{"Phone":"one"}"#))
        _ = try await provider.execute(.local("DELETE", "Customers('FISSA')"))
        server.resetCounters()

        let result = try await provider.upload()
        #expect(result.failed.map(\.message) == [], "no 412 for our own earlier change")
        #expect(result.succeeded == 5)
        #expect(try await provider.hasPendingUpload == false)
        #expect(try await provider.getAll("ErrorArchive").isEmpty)
        let alfki = try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"]) }
        #expect(alfki?["Fax"] == "third")
        #expect(alfki?["CompanyName"] == "Alfreds")
        #expect(server.counters.executions(method: "PATCH", path: "Customers('ALFKI')") == 2)
        #expect(server.counters.executions(method: "PUT", path: "Customers('ALFKI')") == 1)
        #expect(server.counters.executions(method: "DELETE", path: "Customers('FISSA')") == 1)
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "FISSA"]) } == nil)

        // A change by someone else in between is still a conflict: the next local update fails with 412.
        try server.mutate { data in _ = try data.update(in: "Customers", key: ["CustomerID": "ALFKI"], changes: ["City": "Elsewhere"]) }
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"Fax":"fourth"}"#))
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"Fax":"fifth"}"#))
        let conflict = try await provider.upload()
        #expect(conflict.failed.map(\.httpStatusCode) == [412, 412])
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"]) }?["Fax"] == "third")
        await provider.close()
    }

    /// Local changes from several tasks at once: each gets its own request ID and queue entry.
    @Test func concurrentLocalChangesEachGetTheirOwnQueueEntry() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    _ = try? await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Parallel \#(index)"}"#))
                }
            }
        }
        let queue = try await provider.pendingRequests().map(\.properties)
        #expect(queue.count == 40, "one queue entry per acknowledged create")
        #expect(Set(queue.compactMap { $0["RequestID"]?.intValue }).count == 40)
        let local = try await provider.getAll("Shippers?$filter=ShipperID%20lt%200")
        #expect(local.count == 40)
        #expect(Set(local.compactMap { $0["CompanyName"]?.stringValue }).count == 40)
        await provider.close()
    }

    /// Updates of an entity made while the upload applies the answer to its create (or to an
    /// earlier update) are kept, reach the back end under the server's key with the right ETag,
    /// and leave no second local copy under the temporary key.
    @Test func localChangesDuringTheUploadOfTheirEntityAreNeitherLostNorSentWithStaleKeysOrETags() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory)
        parameters.enableRepeatableRequests = true
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await provider.open()
        for round in 0..<15 {
            let name = "Racing \(round)"
            _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"\#(name)","Phone":"0"}"#))
            let uploader = Task { try await provider.upload() }
            var last = 0
            for step in 1...30 {
                guard let key = try? JSON.parse(provider.read(.local("GET", "Shippers?$filter=CompanyName%20eq%20'Racing%20\(round)'")).payload)["value"]?
                    .arrayValue?.first?["ShipperID"]?.intValue else { continue }
                if (try? await provider.execute(.local("PATCH", "Shippers(\(key))", body: #"{"Phone":"\#(step)"}"#))) != nil { last = step }
                await Task.yield()
            }
            let first = try await uploader.value
            let second = try await provider.upload()
            #expect(first.failed.isEmpty && second.failed.isEmpty, "\((first.failed + second.failed).map(\.message))")
            let rows = try server.read { try $0.entities(in: "Shippers") }.filter { $0["CompanyName"]?.stringValue == name }
            #expect(rows.count == 1)
            #expect(rows.first?["Phone"] == .string(String(last)), "the last local update is on the producer")
            let local = try await provider.getAll("Shippers?$filter=CompanyName%20eq%20'Racing%20\(round)'")
            #expect(local.count == 1, "no second local copy under the temporary key")
        }
        #expect(try await provider.getAll("ErrorArchive").isEmpty)
        await provider.close()
    }

    /// A local change of an entity whose update is in a `$batch` on its way: the other answers of
    /// that `$batch` are applied, not dropped and sent again.
    @Test func aLocalChangeDuringABatchKeepsTheBatchsOtherAnswers() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory)
        parameters.enableRepeatableRequests = true
        parameters.uploadMode = .batch(maxRequestsPerBatch: 10)
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        for customer in ["ALFKI", "ANATR", "ANTON"] {
            _ = try await provider.execute(.local("PATCH", "Customers('\(customer)')", body: #"{"Fax":"batched"}"#))
        }
        _ = try server.faults.add(FaultRule(.latency(.milliseconds(400)), method: "POST", path: "$batch", times: 1))
        server.resetCounters()
        let uploader = Task { try await provider.upload() }
        // The `$batch` is on its way once the producer received it (it answers 400 ms later).
        try await waitFor("the $batch reached the producer") { server.counters.requests(method: "POST", path: "$batch") >= 1 }
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"Fax":"during"}"#))
        let first = try await uploader.value
        let second = try await provider.upload()
        #expect((first.failed + second.failed).isEmpty, "\((first.failed + second.failed).map(\.message))")
        #expect(first.succeeded + second.succeeded == 4)
        #expect(server.counters.executions(method: "PATCH", path: "Customers('ANATR')") == 1)
        #expect(server.counters.executions(method: "PATCH", path: "Customers('ANTON')") == 1)
        #expect(server.counters.executions(method: "PATCH", path: "Customers('ALFKI')") == 2)
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"]) }?["Fax"] == "during")
        await provider.close()
    }

    /// A create that failed in an earlier upload (still in the ErrorArchive): a later local update
    /// of its entity fails in its turn without being sent (it still has the temporary key).
    @Test func anUpdateOfAnEntityWhoseCreateFailedInAnEarlierUploadIsNotSent() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let recorder = FailureRecorder()
        let provider = try await Northwind.provider(server, directory, queries: [OfflineODataDefiningQuery(name: "shippers", query: "Shippers")],
                                                    delegate: recorder)
        try await provider.open()
        _ = try server.faults.add(FaultRule(.fail(status: 422, code: "NoPhone", message: "Phone required"), method: "POST", path: "Shippers", times: 1))
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Refused"}"#))
        let first = try await provider.upload()
        #expect(first.failed.map(\.httpStatusCode) == [422])
        _ = try await provider.execute(.local("PATCH", "Shippers(-1)", body: #"{"Phone":"555"}"#))
        server.resetCounters()
        let second = try await provider.upload()
        #expect(second.sent == 0, "nothing that cannot succeed is sent")
        #expect(second.failed.count == 1)
        #expect(second.failed.first?.message.contains("request 1") == true, "\(second.failed.map(\.message))")
        #expect(server.counters.totalRequests == 0)
        let archive = try await provider.getAll("ErrorArchive?$orderby=RequestID")
        #expect(archive.map { $0["Domain"] ?? .null } == ["OData", "Dependency"])
        #expect(recorder.failures.withLock { $0.map(\.requestID) } == [1, 2])
        await provider.close()
    }

    /// A `$batch` upload stopped after the producer executed the batch but before its answer was
    /// applied (here: cancelled while the answer trickles in; in the soak: SIGKILLed), then resumed:
    /// each request must be executed once. The re-sent `$batch` gets a new `Repeatability-Request-ID`
    /// and its parts carry their own stored `Repeatability-Request-ID`s, which the producer honours:
    /// each is answered from its record, not executed again (found by the soak with its child in
    /// `$batch` mode, `odata-soak --offline-child-batch`, before the producer honoured part IDs).
    @Test func aBatchUploadStoppedAfterTheProducerExecutedResumesWithoutDuplicates() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory)
        parameters.enableRepeatableRequests = true
        parameters.uploadMode = .batch(maxRequestsPerBatch: 10)
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        let customers = ["ALFKI", "ANATR", "ANTON"]
        for customer in customers {
            _ = try await provider.execute(.local("PATCH", "Customers('\(customer)')", body: #"{"Fax":"stopped"}"#))
        }
        // Executed at once, answered slowly: the caller gives up before the answer is complete.
        _ = try server.faults.add(FaultRule(.slowBody(chunkSize: 1, interval: .milliseconds(50)), method: "POST", path: "$batch", times: 1))
        server.resetCounters()
        let stopped = Task { try await provider.upload() }
        // Stop once the producer executed the batch (its answer trickles in for seconds).
        try await waitFor("the producer executed the batch") {
            customers.allSatisfy { server.counters.executions(method: "PATCH", path: "Customers('\($0)')") == 1 }
        }
        stopped.cancel()
        _ = try? await stopped.value
        #expect(customers.map { server.counters.executions(method: "PATCH", path: "Customers('\($0)')") } == [1, 1, 1],
                "the producer executed the batch before the stop")
        #expect(try await provider.pendingRequests().count == 3, "the stopped batch's requests are still queued")
        let resumed = try await provider.upload()
        #expect(try await provider.hasPendingUpload == false)
        // The re-sent `$batch` has a new ID, but each part carries its own, which the producer honours.
        #expect(resumed.failed.isEmpty, "\(resumed.failed.map(\.message))")
        #expect(customers.map { server.counters.executions(method: "PATCH", path: "Customers('\($0)')") } == [1, 1, 1])
        await provider.close()
    }
}

/// Waits for an event elsewhere (a producer counter), checking it every millisecond; fails after 60 s, never
/// goes on after a fixed time.
func waitFor(_ what: String, _ happened: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while !happened() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting: \(what)")
            return
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}
