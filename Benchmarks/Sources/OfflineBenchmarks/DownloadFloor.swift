// The initial download's floor (issue 45 part 5): the same pages from the same producer through the same transport,
// parsed with the fastest JSON reader here (ODataCore's `JSON.parse`, the one the store uses: 2.2× faster than
// Foundation's `JSONDecoder` in TypedBenchmarks), and the same rows inserted with one prepared statement into
// SQLCipher — same page size, a 256-bit raw key, the store's table layout (`$key`, `$order`, `$state`, `$record` with
// the entity's JSON, a column per property, the integer key as the row ID) and its indexes (natural order, `Price`,
// `Category`, the flagged rows), built after the rows as the store builds them — one transaction per page, `synchronous =
// FULL` and a write-ahead log as the store's connection. No layer of the store in between: no records, no change
// feed, no delta bookkeeping, no writer thread.
import BenchmarkKit
import CurlHTTP
import Foundation
import ODataCore
import SQLCipher

/// Runs the floor's download into a database of its own in `work`; returns its wall and process CPU nanoseconds and
/// the rows it inserted.
func downloadFloor(work: String, serviceRoot: String, pageSize: Int) async throws -> (wall: Double, cpu: Double, rows: Int) {
    let directory = work + "/floor-\(pageSize)"
    // A leftover of an earlier run goes; one that cannot go fails the run rather than being measured into.
    if FileManager.default.fileExists(atPath: directory) { try FileManager.default.removeItem(atPath: directory) }
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let transport = try CurlTransport()
    let cpuStart = processCPUNanoseconds()
    let start = DispatchTime.now().uptimeNanoseconds
    let connection = try SQLCipherConnection(path: directory + "/floor.db", key: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) },
                                             options: .init(pageSize: pageSize))
    defer { connection.close() }
    try connection.execute("""
        CREATE TABLE items ("$key" TEXT NOT NULL, "$order" INTEGER NOT NULL, "$state" TEXT NOT NULL, "$record" BLOB NOT NULL,
          "ItemID" INTEGER PRIMARY KEY, "Name" TEXT, "Category" TEXT, "Price" REAL, "Quantity" INTEGER, "Discontinued" INTEGER,
          "Region" TEXT, "Created" TEXT)
        """)
    let insert = try connection.prepare("INSERT INTO items VALUES (?, ?, 'd', ?, ?, ?, ?, ?, ?, ?, ?, ?)")
    var url = serviceRoot + "Items"
    var order: Int64 = 0
    while true {
        let reply = try await transport.send(TransportRequest(url: url))
        precondition(reply.status == 200, "GET \(url): \(reply.status)")
        let page = try JSON.parse(reply.body)
        guard let rows = page["value"]?.arrayValue else { fatalError("a page without value: \(url)") }
        try connection.transaction {
            for row in rows {
                guard let id = row["ItemID"]?.intValue else { fatalError("a row without ItemID") }
                order += 1
                func text(_ name: String) -> SQLCipherValue { row[name]?.stringValue.map { .text($0) } ?? .null }
                try insert.bind(.text(String(id)), at: 1)
                try insert.bind(.integer(order), at: 2)
                try insert.bind(.blob(Array(JSON.serialize(row))), at: 3)
                try insert.bind(.integer(id), at: 4)
                try insert.bind(text("Name"), at: 5)
                try insert.bind(text("Category"), at: 6)
                try insert.bind(row["Price"]?.doubleValue.map { .real($0) } ?? .null, at: 7)
                try insert.bind(row["Quantity"]?.intValue.map { .integer($0) } ?? .null, at: 8)
                try insert.bind(row["Discontinued"]?.boolValue.map { .integer($0 ? 1 : 0) } ?? .null, at: 9)
                try insert.bind(text("Region"), at: 10)
                try insert.bind(text("Created"), at: 11)
                _ = try insert.step()
                insert.reset()
            }
        }
        guard let next = page["@odata.nextLink"]?.stringValue else { break }
        url = next.hasPrefix("http") ? next : serviceRoot + next
    }
    try connection.execute("""
        CREATE INDEX "items:$natural" ON items ("ItemID", "$order", "$state");
        CREATE INDEX "items:Price" ON items ("Price", "ItemID", "$order", "$state");
        CREATE INDEX "items:Category" ON items ("Category", "ItemID", "$order", "$state");
        CREATE INDEX "items:$flagged" ON items ("$state") WHERE ("$state" <> 'd' OR instr("$record", '"rf":true') > 0);
        """)
    return (Double(DispatchTime.now().uptimeNanoseconds - start), processCPUNanoseconds() - cpuStart, Int(order))
}
