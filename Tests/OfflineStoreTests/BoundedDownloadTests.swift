import Foundation
import ODataCore
import ODataFixtures
import SQLCipher
import TechnicalCache
import Testing

@testable import OfflineStore

/// A download holds a page in memory, not its answers (issue #16, "delta merge in bounded memory"): proven by
/// ``EntityStore/heldRecordsPeak`` — the most records held at once in a spooled page or a chunk read back — against
/// Order_Details (2,155 rows, 22 pages of the producer's 100), with the outcomes checked. Before the staging table
/// the whole answer (2,155 records on a full re-download) was held until the one write at the end.
@Suite struct BoundedDownloadTests {
    static let queries = [
        OfflineODataDefiningQuery(name: "orders", query: "Orders"),
        OfflineODataDefiningQuery(name: "details", query: "Order_Details"),
    ]
    /// The producer's page (`FixtureConfiguration.defaultPageSize`).
    static let page = 100

    static func stagedRows(_ store: EntityStore) throws -> Int {
        try store.reading("the staging table") { connection in
            let select = try connection.prepare("SELECT count(*) FROM \(EntityStore.stagingTable)")
            return try select.step() ? Int(select.integer(at: 0)) : -1
        }
    }

    @Test func aFullReDownloadAndADeltaOfManyPagesHoldAtMostAPage() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let delegate = RecordingDelegate()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries, delegate: delegate)
        try await provider.open()
        defer { Task { await provider.close() } }
        let store = try await provider.openStore()
        #expect(try store.recordCount(in: "Order_Details") == 2155)

        // A full re-download (every delta token expired: 410, then each set read in full), with a local change that
        // wins, a producer change and an entity the producer no longer has (released by the walk of holders).
        _ = try await provider.execute(.local("PATCH", "Order_Details(OrderID=10248,ProductID=11)", body: #"{"Quantity":1}"#))
        try server.mutate { data in
            _ = try data.update(in: "Order_Details", key: ["OrderID": 10249, "ProductID": 14], changes: ["Quantity": 77])
            try data.delete(from: "Order_Details", key: ["OrderID": 10250, "ProductID": 41])
        }
        server.expireDeltaTokens()
        var asked = server.counters.requests(method: "GET", path: "Order_Details")
        let writesBefore = store.entityWrites.withLock { $0 }
        try await provider.download()
        // 830 Orders and 2,152 details came back unchanged: no write. The three that changed: the local change's
        // record (flagged to be read again), the producer's change, the producer's deletion.
        let writes = store.entityWrites.withLock { $0 } - writesBefore
        #expect(writes == 3, "a full re-download of 2,985 entities, 3 of them changed, wrote \(writes) rows")
        #expect(server.counters.requests(method: "GET", path: "Order_Details") - asked >= 23, "the delta request, then 22 pages")
        var peak = store.heldRecordsPeak.withLock { $0 }
        #expect(peak > 0 && peak <= Self.page, "a full re-download held \(peak) records at once")
        #expect(try store.recordCount(in: "Order_Details") == 2154)
        #expect(try await provider.get("Order_Details(OrderID=10249,ProductID=14)")["Quantity"] == 77)
        #expect(try await provider.get("Order_Details(OrderID=10248,ProductID=11)")["Quantity"] == 1, "the local change wins")
        #expect(try store.record(set: "Order_Details", key: "(OrderID=10250,ProductID=41)") == nil, "gone on the producer")
        #expect(try Self.stagedRows(store) == 0, "the apply emptied the staging table")

        // A delta of many pages: 450 details changed on the producer.
        let details = try server.read { try $0.entities(in: "Order_Details") }.prefix(450)
        try server.mutate { data in
            for (index, detail) in details.enumerated() {
                _ = try data.update(in: "Order_Details", key: ["OrderID": detail["OrderID"]!, "ProductID": detail["ProductID"]!],
                                    changes: ["Discount": .double(Double(index % 7 + 1) / 100)])
            }
        }
        delegate.progress.withLock { $0.removeAll() }
        asked = server.counters.requests(method: "GET", path: "Order_Details")
        try await provider.download()
        let final = delegate.progress.withLock { $0 }.filter { $0.isComplete && $0.definingQuery == "details" }.map(\.entities)
        #expect(final == [450], "the delta brought the changes only")
        #expect(server.counters.requests(method: "GET", path: "Order_Details") - asked >= 5, "in pages")
        peak = store.heldRecordsPeak.withLock { $0 }
        #expect(peak > 0 && peak <= Self.page, "a delta download held \(peak) records at once")
        for (index, detail) in details.enumerated() where index % 50 == 3 {
            let key = "Order_Details(OrderID=\(detail["OrderID"]!.intValue!),ProductID=\(detail["ProductID"]!.intValue!))"
            if key == "Order_Details(OrderID=10248,ProductID=11)" { continue }
            #expect(try await provider.get(key)["Discount"]?.doubleValue == Double(index % 7 + 1) / 100, "\(key)")
        }
        #expect(try store.recordCount(in: "Order_Details") == 2154)
        #expect(try Self.stagedRows(store) == 0)
    }

    @Test func stagingLeftByAKilledOrFailedDownloadIsNeverRead() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        defer { Task { await provider.close() } }
        let store = try await provider.openStore()
        let before = try await provider.get("Orders(10249)")

        // What a killed download left: staged pages that were never applied.
        try await store.beginStaging()
        var ghost = try #require(try store.record(set: "Orders", key: "(10249)"))
        ghost.entity["ShipCity"] = "Staged ghost"
        try await store.stage([ghost], kind: .full, removals: [EntityStore.StagedRemoval(query: "orders", set: "Orders", key: "(10250)")])
        #expect(try Self.stagedRows(store) == 2)

        // A download that fails half way (the third page of Order_Details) changes nothing and leaves no rows.
        try server.mutate { data in _ = try data.update(in: "Orders", key: ["OrderID": 10251], changes: ["ShipCity": "Remote City"]) }
        server.expireDeltaTokens()
        let failure = try server.faults.add(FaultRule(.fail(status: 500, code: "Broken", message: "broken"), method: "GET", path: "Order_Details", firstMatch: 3))
        await #expect(throws: OfflineODataError.self) { try await provider.download() }
        _ = server.faults.remove(failure)
        #expect(try Self.stagedRows(store) == 0)
        #expect(try await provider.get("Orders(10251)")["ShipCity"] != "Remote City", "nothing applied")

        try await store.beginStaging()
        try await store.stage([ghost], kind: .full)
        try await provider.download()
        #expect(try await provider.get("Orders(10249)")["ShipCity"] == before["ShipCity"], "the staged ghost was never read")
        #expect(try await provider.get("Orders(10250)")["OrderID"] == 10250, "nor its staged removal")
        #expect(try await provider.get("Orders(10251)")["ShipCity"] == "Remote City")
        #expect(try Self.stagedRows(store) == 0)
    }

    /// The same against a producer nobody here wrote: mock-sap's GWSAMPLE_BASIC (OData V2: `/Date(…)/`, decimals as
    /// strings, `__metadata`; no change tracking, so every download reads each set in full). A second download of
    /// unchanged sets reads them again and writes no entity.
    @Test func aFullReDownloadFromMockSAPOfUnchangedSetsWritesNoEntity() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        let parameters = OfflineODataParameters(storeName: "sap", storePath: directory.path, storeEncryptionKey: Northwind.key,
                                                keyDerivation: .pbkdf2(rounds: 1_000))
        let provider = try OfflineODataProvider(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), parameters: parameters)
        for set in ["ProductSet", "BusinessPartnerSet", "SalesOrderSet"] {
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: set, query: set))
        }
        try await provider.open()
        defer { Task { await provider.close() } }
        let store = try await provider.openStore()
        let products = try store.recordCount(in: "ProductSet")
        #expect(products > 0)
        let asked = try sap.logged(method: "GET", path: "ProductSet").count
        let writesBefore = store.entityWrites.withLock { $0 }
        try await provider.download()
        #expect(try sap.logged(method: "GET", path: "ProductSet").count > asked, "read again in full")
        let writes = store.entityWrites.withLock { $0 } - writesBefore
        #expect(writes == 0, "a full re-download of unchanged V2 entities wrote \(writes) rows")
        #expect(try store.recordCount(in: "ProductSet") == products)
        #expect(try Self.stagedRows(store) == 0)
    }
}

