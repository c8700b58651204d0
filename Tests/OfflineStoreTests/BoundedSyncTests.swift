import Foundation
import ODataCore
import ODataFixtures
import SQLCipher
import Testing

@testable import OfflineStore

/// Sync and undo read the rows they need, not whole sets: proven by SQLite's count of rows stepped over in full
/// table scans (``EntityStore/fullScanSteps()``, both connections), not by timing or resident memory. The sets
/// (Orders 830, Order_Details 2,155 rows) are far larger than what each operation touches.
@Suite struct BoundedSyncTests {
    static let queries = [
        OfflineODataDefiningQuery(name: "customers", query: "Customers"),
        OfflineODataDefiningQuery(name: "orders", query: "Orders"),
        OfflineODataDefiningQuery(name: "details", query: "Order_Details"),
    ]
    /// What an operation may step over in scans: the partial index of flagged rows is walked in full (a few rows
    /// here, one step per row after the first), far below any set.
    static let catalogAllowance = 10

    @Test func theCounterSeesAWalkOfASet() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        let store = try await provider.openStore()
        let before = try store.fullScanSteps()
        // The planner reads the schema for each filtered query (`indexedProperties`: a walk of `sqlite_master`).
        let schemaRows = try store.reading("the schema") { connection in
            let select = try connection.prepare("SELECT count(*) FROM sqlite_master")
            return try select.step() ? Int(select.integer(at: 0)) : 0
        }
        // The initial download and open (the indexes each looks for) walk the schema a
        // few times and no set: the smallest set here, Customers, is 91 rows, over 3× the schema's.
        #expect(before < 3 * schemaRows && 3 * schemaRows < 90, "\(before) steps, the schema is \(schemaRows) rows")
        #expect(try store.recordCount(in: "Order_Details") == 2155)
        // SQLite counts each step to a next row of a scan: every row after the first.
        #expect(try store.fullScanSteps() - before == 2154, "a walk of the set is counted (so the counter can fail the tests below)")
        await provider.close()
    }

    @Test func aDeltaDownloadAndItsRefreshReadOnlyTheRowsTheyNeed() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        defer { Task { await provider.close() } }
        let store = try await provider.openStore()

        // A local change on an order the producer changes too, and a producer change on another one.
        _ = try await provider.execute(.local("PATCH", "Orders(10248)", body: #"{"ShipCity":"Local City"}"#))
        try server.mutate { data in
            _ = try data.update(in: "Orders", key: ["OrderID": 10248], changes: ["ShipName": "Remote Name"])
            _ = try data.update(in: "Orders", key: ["OrderID": 10249], changes: ["ShipCity": "Remote City"])
            _ = try data.update(in: "Order_Details", key: ["OrderID": 10250, "ProductID": 41], changes: ["Quantity": 99])
        }
        var steps = try store.fullScanSteps()
        try await provider.download()
        #expect(try store.fullScanSteps() - steps < Self.catalogAllowance, "the delta merge stepped over no set")
        #expect(try await provider.get("Orders(10249)")["ShipCity"] == "Remote City")
        #expect(try await provider.get("Order_Details(OrderID=10250,ProductID=41)")["Quantity"] == 99)
        let kept = try await provider.get("Orders(10248)")
        #expect(kept["ShipCity"] == "Local City" && kept["ShipName"] != "Remote Name", "the local change wins for now")
        #expect(try store.record(set: "Orders", key: "(10248)")?.needsRefresh == true)

        // The upload fails (the producer changed the order: 412); once the failed change is given up, the next
        // download reads the entity again: found through the index of flagged rows.
        #expect(try await provider.upload().failed.map(\.httpStatusCode) == [412])
        let entry = try #require(try await provider.getAll("ErrorArchive").first?["RequestID"]?.intValue)
        _ = try await provider.execute(.local("DELETE", "ErrorArchive(\(entry))"))
        #expect(try store.recordsNeedingRefresh().map(\.reference) == ["Orders(10248)"])
        steps = try store.fullScanSteps()
        try await provider.download()
        #expect(try store.fullScanSteps() - steps < Self.catalogAllowance, "finding the entities to read again stepped over no set")
        let refreshed = try await provider.get("Orders(10248)")
        #expect(refreshed["ShipName"] == "Remote Name" && refreshed["ShipCity"] != "Local City")
        #expect(try store.record(set: "Orders", key: "(10248)")?.needsRefresh == false)
        #expect(try store.recordsNeedingRefresh().isEmpty)
    }

    @Test func undoFindsTheLocalChangesThroughTheIndexOfFlaggedRows() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        defer { Task { await provider.close() } }
        let store = try await provider.openStore()
        let original = try await provider.get("Order_Details(OrderID=10248,ProductID=11)")
        _ = try await provider.execute(.local("PATCH", "Order_Details(OrderID=10248,ProductID=11)", body: #"{"Quantity":1}"#))
        _ = try await provider.execute(.local("DELETE", "Order_Details(OrderID=10248,ProductID=42)"))
        _ = try await provider.execute(.local("POST", "Order_Details", body: #"{"OrderID":10248,"ProductID":1,"UnitPrice":1,"Quantity":1,"Discount":0}"#))
        #expect(try store.locallyChangedRecords().map(\.reference).sorted() == [
            "Order_Details(OrderID=10248,ProductID=1)", "Order_Details(OrderID=10248,ProductID=11)", "Order_Details(OrderID=10248,ProductID=42)",
        ])
        // SQLite plans the read through the partial index (the condition is repeated word for word).
        let table = try #require(store.table("Order_Details"))
        let plan = try store.reading("the plan") { connection in
            let select = try connection.prepare("EXPLAIN QUERY PLAN " + table.selectSQL + " WHERE " + EntityTable.flaggedCondition + " AND \"$state\" <> 'd'")
            var lines: [String] = []
            while try select.step() { lines.append(select.text(at: 3)) }
            return lines.joined(separator: "; ")
        }
        #expect(plan.contains("USING INDEX") && plan.contains("$flagged"), "\(plan)")

        let steps = try store.fullScanSteps()
        try await provider.cancelPendingRequests()
        #expect(try store.fullScanSteps() - steps < Self.catalogAllowance, "undo stepped over no set")
        #expect(plain(try await provider.get("Order_Details(OrderID=10248,ProductID=11)").objectValue ?? [:]) == plain(original.objectValue ?? [:]))
        #expect(try await provider.get("Order_Details(OrderID=10248,ProductID=42)")["Quantity"] != nil, "the deleted entity is back")
        #expect(try await provider.getAll("Order_Details?$filter=OrderID%20eq%2010248%20and%20ProductID%20eq%201").isEmpty, "the created one is gone")
        #expect(try store.locallyChangedRecords().isEmpty)
        #expect(try await provider.pendingRequests().isEmpty)
    }

    @Test func anUploadRewritesTemporaryForeignKeysThroughTheirIndex() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        defer { Task { await provider.close() } }
        let store = try await provider.openStore()
        let order = try JSON.parse(try await provider.execute(.local("POST", "Orders", body: #"{"ShipCity":"Kiel","Customer@odata.bind":"Customers('ALFKI')"}"#)).payload)
        let temporaryID = try #require(order["OrderID"]?.intValue)
        for product in [11, 42] {
            _ = try await provider.execute(.local("POST", "Order_Details", body: #"{"OrderID":\#(temporaryID),"ProductID":\#(product),"UnitPrice":14,"Quantity":5,"Discount":0}"#))
        }
        // The column lookup finds exactly the dependents holding the temporary value.
        #expect(try store.records(in: "Order_Details", property: "OrderID", equalTo: .int(temporaryID)).count == 2)
        #expect(try store.records(in: "Order_Details", property: "OrderID", equalTo: .int(10248)).count == 3)
        #expect(try store.records(in: "Order_Details", property: "OrderID", equalTo: .string("10248")).isEmpty, "JSON equality: a string is no number")

        let steps = try store.fullScanSteps()
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        #expect(try store.fullScanSteps() - steps < Self.catalogAllowance, "the rewrite of foreign keys stepped over no set")
        let serverOrder = try #require(try server.read { try $0.entities(in: "Orders") }.first { $0["ShipCity"] == "Kiel" })
        let orderID = try #require(serverOrder["OrderID"]?.intValue)
        #expect(try await provider.getAll("Orders(\(orderID))/Order_Details").count == 2)
        #expect(try await provider.getAll("Order_Details?$filter=OrderID%20lt%200").isEmpty)
    }
}
