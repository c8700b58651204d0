import Foundation
import ODataCore
import ODataFixtures
import Synchronization
import Testing

@testable import OfflineStore

@Suite struct RefreshTests {
    static let queries = [
        OfflineODataDefiningQuery(name: "employees", query: "Employees"),
        OfflineODataDefiningQuery(name: "shippers", query: "Shippers"),
    ]

    /// The local entities of a set compared with the producer's, property by property.
    func expectSameAsProducer(_ provider: OfflineODataProvider, _ server: FixtureServer, _ set: String,
                              except: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let local = try await provider.getAll(set)
        let remote = try server.read { try $0.entities(in: set) }
        #expect(local.count == remote.count, "\(set): \(local.count) local vs \(remote.count) on the producer", sourceLocation: sourceLocation)
        for (mine, theirs) in zip(local, remote) {
            for (name, value) in theirs where !name.hasPrefix("@") && !except.contains(mine["@odata.id"]?.stringValue ?? "") {
                #expect(mine[name] == value, "\(set) \(mine["@odata.id"] ?? .null) \(name)", sourceLocation: sourceLocation)
            }
        }
    }

    /// Adds an employee and a shipper nobody references (the producer refuses deletes of referenced ones).
    func spares(_ server: FixtureServer) throws -> (employee: Int64, shipper: Int64) {
        try server.mutate { data in
            let employee = try data.insert(["LastName": "Spare", "FirstName": "Sam"], into: "Employees")
            let shipper = try data.insert(["CompanyName": "Spare Shipping"], into: "Shippers")
            return (employee["EmployeeID"]?.intValue ?? 0, shipper["ShipperID"]?.intValue ?? 0)
        }
    }

    func expectGone(_ provider: OfflineODataProvider, _ url: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            _ = try await provider.execute(.local("GET", url))
            Issue.record("\(url) is still there", sourceLocation: sourceLocation)
        } catch let error as OfflineODataError {
            #expect(error == .entityNotFound, sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func deltaDownloadAppliesProducerUpdatesDeletesAndInsertsKeepingLocalEdits() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let delegate = RecordingDelegate()
        let spare = try spares(server)
        let provider = try await Northwind.provider(server, directory, queries: Self.queries, delegate: delegate)
        try await provider.open()
        defer { Task { await provider.close() } }
        #expect(await provider.configuration?.deltaLinks.keys.sorted() == ["employees", "shippers"], "the initial download keeps delta links")

        // A local edit on an entity the producer changes too.
        _ = try await provider.execute(.local("PATCH", "Employees(2)", body: #"{"City":"Local City"}"#))
        try server.mutate { data in
            _ = try data.update(in: "Employees", key: ["EmployeeID": 1], changes: ["City": "Remote City"])
            _ = try data.update(in: "Employees", key: ["EmployeeID": 2], changes: ["City": "Remote Too"])
            try data.delete(from: "Employees", key: ["EmployeeID": .int(spare.employee)])
            _ = try data.update(in: "Shippers", key: ["ShipperID": 2], changes: ["Phone": "(555) 000-0000"])
        }
        delegate.progress.withLock { $0.removeAll() }
        try await provider.download()

        let progress = delegate.progress.withLock { $0 }
        let final = Dictionary(progress.filter(\.isComplete).map { ($0.definingQuery, $0.entities) }, uniquingKeysWith: { $1 })
        #expect(final == ["employees": 3, "shippers": 1], "only the changes travel (delta), not 8 and 3 entities")
        let one = try await provider.get("Employees(1)")
        #expect(one["City"] == "Remote City")
        let two = try await provider.get("Employees(2)")
        #expect(two["City"] == "Local City", "an entity with a pending request keeps its local state")
        await expectGone(provider, "Employees(\(spare.employee))")
        try await expectSameAsProducer(provider, server, "Employees", except: ["Employees(2)"])
        try await expectSameAsProducer(provider, server, "Shippers")
        #expect(try await provider.pendingRequests().count == 1, "the queue is untouched")

        // A second delta with no changes transports nothing and changes nothing.
        delegate.progress.withLock { $0.removeAll() }
        try await provider.download(definingQueries: ["shippers"])
        #expect(delegate.progress.withLock { $0 }.map(\.definingQuery) == ["shippers"])
        #expect(delegate.progress.withLock { $0 }.last?.entities == 0)
        try await expectSameAsProducer(provider, server, "Shippers")
        await #expect(throws: OfflineODataError.self) { try await provider.download(definingQueries: ["nope"]) }
    }

    @Test func expiredDeltaTokenFallsBackToFullReadMergedByKey() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let delegate = RecordingDelegate()
        let spare = try spares(server)
        let provider = try await Northwind.provider(server, directory, queries: Self.queries, delegate: delegate)
        try await provider.open()
        defer { Task { await provider.close() } }
        try server.mutate { data in
            _ = try data.update(in: "Employees", key: ["EmployeeID": 3], changes: ["Title": "Boss"])
            try data.delete(from: "Employees", key: ["EmployeeID": .int(spare.employee)])
            try data.delete(from: "Shippers", key: ["ShipperID": .int(spare.shipper)])
        }
        server.expireDeltaTokens()
        server.resetCounters()
        delegate.progress.withLock { $0.removeAll() }
        try await provider.download()
        #expect(server.counters.requests(method: "GET", path: "Employees") == 2, "the delta request (410), then the full read")
        let final = Dictionary(delegate.progress.withLock { $0 }.filter(\.isComplete).map { ($0.definingQuery, $0.entities) }, uniquingKeysWith: { $1 })
        #expect(final == ["employees": 9, "shippers": 3], "full reads")
        #expect(try await provider.get("Employees(3)")["Title"] == "Boss")
        await expectGone(provider, "Employees(\(spare.employee))")
        await expectGone(provider, "Shippers(\(spare.shipper))")
        try await expectSameAsProducer(provider, server, "Employees")
        try await expectSameAsProducer(provider, server, "Shippers")

        // The full read gave a fresh delta link: the next download is a delta again.
        try server.mutate { data in _ = try data.update(in: "Shippers", key: ["ShipperID": 1], changes: ["Phone": "1"]) }
        delegate.progress.withLock { $0.removeAll() }
        try await provider.download()
        #expect(delegate.progress.withLock { $0 }.filter { $0.definingQuery == "shippers" }.last?.entities == 1)
        try await expectSameAsProducer(provider, server, "Shippers")
    }

    @Test func localEditsDuringADownloadSurvive() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let spare = try spares(server)
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        defer { Task { await provider.close() } }
        try server.mutate { data in
            _ = try data.update(in: "Employees", key: ["EmployeeID": 4], changes: ["City": "Remote"])
            _ = try data.update(in: "Shippers", key: ["ShipperID": 1], changes: ["Phone": "remote"])
        }
        _ = try server.faults.add(FaultRule(.latency(.milliseconds(600)), method: "GET", path: "Shippers"))
        let download = Task { try await provider.download() }
        try await Task.sleep(for: .milliseconds(250))
        // While the download waits for the producer: an update, a create and a delete.
        _ = try await provider.execute(.local("PATCH", "Employees(4)", body: #"{"City":"Local"}"#))
        _ = try await provider.execute(.local("PATCH", "Shippers(1)", body: #"{"Phone":"local"}"#))
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"New","Phone":"x"}"#))
        _ = try await provider.execute(.local("DELETE", "Employees(\(spare.employee))"))
        try await download.value
        #expect(try await provider.get("Employees(4)")["City"] == "Local")
        #expect(try await provider.get("Shippers(1)")["Phone"] == "local")
        #expect(try await provider.get("Shippers(-1)")["CompanyName"] == "New")
        await expectGone(provider, "Employees(\(spare.employee))")
        #expect(try await provider.pendingRequests().map { $0.properties["Method"]?.stringValue ?? "" } == ["PATCH", "PATCH", "POST", "DELETE"])
        // Upload: the two updates carry the ETag from before the producer's change → 412 into the
        // ErrorArchive (the local state stays, in error state); the create and the delete go through.
        _ = try await provider.upload()
        let archive = try await provider.getAll("ErrorArchive?$orderby=RequestID")
        #expect(archive.map { $0["HTTPStatusCode"] ?? .null } == [412, 412])
        #expect(archive.map { $0["AffectedEntityReference"] ?? .null } == ["Employees(4)", "Shippers(1)"])
        try await provider.download()
        #expect(try await provider.get("Employees(4)")["City"] == "Local", "in error state: a download does not overwrite it")
        try await expectSameAsProducer(provider, server, "Employees", except: ["Employees(4)"])
        try await expectSameAsProducer(provider, server, "Shippers", except: ["Shippers(1)"])
        #expect(try server.read { try $0.entities(in: "Shippers") }.contains { $0["CompanyName"] == "New" })
    }

    @Test func removedDefiningQueryDataGoesAddedOneArrives() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        defer { Task { await provider.close() } }
        #expect(try await provider.getAll("Shippers").count == 3)
        #expect(await provider.remove(definingQuery: "shippers"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "categories", query: "Categories"))
        try await provider.download()
        #expect(try await provider.getAll("Shippers").isEmpty, "the removed defining query's data goes")
        try await expectSameAsProducer(provider, server, "Categories")
        try await expectSameAsProducer(provider, server, "Employees")
        await provider.close()
        let reopened = try await Northwind.provider(server, directory, queries: [])
        try await reopened.open()
        #expect(await reopened.definingQueries.map(\.name) == ["employees", "categories"], "the change is stored")
        #expect(try await reopened.getAll("Categories").count == 8)
        await reopened.close()
    }
}
