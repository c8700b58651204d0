// OfflineSQLiteFloor: the SQLite side of OfflineBenchmarks (which runs it as a child process, `sqlite` role).
//
// The same generated Items in SQLite through GRDB, with the same indexes as the offline store's (Price, Category;
// the key), and the same queries; every answer that returns entities is written as the same OData V4 JSON the
// store answers with. Prints `metric<TAB>value` lines for the parent.
import BenchmarkKit
import Foundation
import GRDB
import ODataCore
import Synchronization

let environment = ProcessInfo.processInfo.environment
let count = Int(environment["OFFLINE_BENCH_N"] ?? "") ?? 100_000
let work = environment["OFFLINE_BENCH_WORK"] ?? FileManager.default.temporaryDirectory.path
let path = work + "/floor-\(UUID().uuidString).sqlite"
defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }

func report(_ metric: String, _ value: Double) { print("\(metric)\t\(value)") }
func elapsed(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) }

var configuration = Configuration()
configuration.journalMode = .wal
do {
    // Built in pages of 1,000 rows, a transaction each, as the store's download commits them.
    let database = try DatabaseQueue(path: path, configuration: configuration)
    try database.write { db in
        try db.execute(sql: """
            CREATE TABLE items (itemID INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL, quantity INTEGER,
                                discontinued INTEGER, region TEXT, created TEXT);
            CREATE INDEX items_price ON items (price, itemID);
            CREATE INDEX items_category ON items (category, itemID);
            """)
    }
    var generator = ItemGenerator()
    var written = 0
    while written < count {
        let page = min(1_000, count - written)
        try database.write { db in
            let statement = try db.makeStatement(sql: "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
            for _ in 0..<page {
                let item = generator.next()
                try statement.execute(arguments: [item.id, item.name, item.category, item.price, item.quantity, item.discontinued, item.region, item.created])
            }
        }
        written += page
    }
    try database.close()
}

/// The rows of a query as the V4 JSON of a collection.
func answer(_ db: Database, _ sql: String, _ arguments: StatementArguments = []) throws -> (Data, Int) {
    let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
    var values: [JSONValue] = []
    while let row = try rows.next() {
        values.append(.object(JSONObject([
            ("ItemID", .int(row["itemID"])), ("Name", .string(row["name"])), ("Category", .string(row["category"])),
            ("Price", .double(row["price"])), ("Quantity", .int(row["quantity"])), ("Discontinued", .bool(row["discontinued"])),
            ("Region", .string(row["region"])), ("Created", .string(row["created"])),
        ])))
    }
    let payload = JSON.serialize(.object(JSONObject([("@odata.context", .string("$metadata#Items")), ("value", .array(values))])))
    return (Data(payload), values.count)
}

var start = DispatchTime.now().uptimeNanoseconds
let database = try DatabaseQueue(path: path, configuration: configuration)
report("open() of the existing store (ns)", elapsed(since: start))
start = DispatchTime.now().uptimeNanoseconds
let firstMatches = try database.read { db in try answer(db, "SELECT * FROM items WHERE price < 2").1 }
report("selective indexed filter, first query after open (ns)", elapsed(since: start))
report("selective indexed filter, matches", Double(firstMatches))
report("selective indexed filter p50 (ns)", try measure("selective", warmup: 3, iterations: 50) {
    _ = try database.read { db in try answer(db, "SELECT * FROM items WHERE price < 2") }
}.median)

var keyGenerator = SystemRandomNumberGenerator()
let keys = (0..<5_000).map { _ in Int.random(in: 1...count, using: &keyGenerator) }
var keyIndex = 0
report("key lookup, read() p50 (ns)", try measure("key", warmup: 200, iterations: 5_000) {
    keyIndex = (keyIndex + 1) % keys.count
    _ = try database.read { db in try answer(db, "SELECT * FROM items WHERE itemID = ?", [keys[keyIndex]]) }
}.median)

let scan = "price > 50 AND quantity < 500 AND region = 'North' AND discontinued = 0 AND name >= 'Item 1' AND name < 'Item 2'"
report("5-clause filter (scan), matches", Double(try database.read { db in try answer(db, "SELECT * FROM items WHERE \(scan)").1 }))
report("5-clause filter (scan) p50 (ns)", try measure("scan", warmup: 2, iterations: 20) {
    _ = try database.read { db in try answer(db, "SELECT * FROM items WHERE \(scan)") }
}.median)
report("$orderby=Price desc&$top=20 p50 (ns)", try measure("order", warmup: 5, iterations: 200) {
    _ = try database.read { db in try answer(db, "SELECT * FROM items ORDER BY price DESC, itemID LIMIT 20") }
}.median)
report("$count of an indexed eq (5 %), value", Double(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM items WHERE category = 'C3'") ?? -1 }))
report("$count of an indexed eq (5 %) p50 (ns)", try measure("count", warmup: 5, iterations: 100) {
    _ = try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM items WHERE category = 'C3'") }
}.median)
// The live query: GRDB's ValueObservation of the same selective query (its region: the items table), each round an
// update of one of its rows; from the commit and from before the update to the new answer, as the store's.
func liveLatencies(_ database: DatabaseQueue) async throws -> (fromUpdate: [Double], fromCommit: [Double]) {
    let observed = try await database.read { db in try Int.fetchAll(db, sql: "SELECT itemID FROM items WHERE price < 2") }
    // Added before the observation starts, so GRDB tells it of a commit first: the commit's time.
    let commits = CommitTimes()
    try await database.write { db in db.add(transactionObserver: commits, extent: .databaseLifetime) }
    let observation = ValueObservation.tracking { db in try answer(db, "SELECT * FROM items WHERE price < 2").0 }
    let (arrivalTimes, consumer) = arrivals(of: observation.values(in: database, scheduling: .async(onQueue: DispatchQueue(label: "observation"))))
    var arrived = arrivalTimes.makeAsyncIterator()
    _ = await arrived.next()
    var live: [Double] = []
    var fromCommit: [Double] = []
    for round in 0..<300 {
        let begin = DispatchTime.now().uptimeNanoseconds
        try await database.write { db in
            try db.execute(sql: "UPDATE items SET name = ? WHERE itemID = ?", arguments: ["Live \(round)", observed[round % observed.count]])
        }
        guard let time = await arrived.next() else { fatalError("the observation ended") }
        if round >= 20 {
            live.append(Double(time - begin))
            fromCommit.append(Double(time - commits.last.withLock { $0 }))
        }
    }
    consumer.cancel()
    try await database.write { db in db.remove(transactionObserver: commits) }
    return (live, fromCommit)
}
/// Notes the time of each commit (GRDB calls it on the writer's queue right after the commit).
final class CommitTimes: TransactionObserver, Sendable {
    let last = Mutex<UInt64>(0)
    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { true }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseDidCommit(_ db: Database) { last.withLock { $0 = DispatchTime.now().uptimeNanoseconds } }
    func databaseDidRollback(_ db: Database) {}
}
/// The update alone (nothing observes).
func updateAlone(_ database: DatabaseQueue) async throws -> Double {
    let observed = try await database.read { db in try Int.fetchAll(db, sql: "SELECT itemID FROM items WHERE price < 2") }
    var alone: [Double] = []
    for round in 0..<300 {
        let begin = DispatchTime.now().uptimeNanoseconds
        try await database.write { db in
            try db.execute(sql: "UPDATE items SET name = ? WHERE itemID = ?", arguments: ["Alone \(round)", observed[round % observed.count]])
        }
        if round >= 20 { alone.append(elapsed(since: begin)) }
    }
    alone.sort()
    return alone[alone.count / 2]
}
var (live, fromCommit) = try await liveLatencies(database)
live.sort()
fromCommit.sort()
report("live query, commit → new answer p50 (ns)", fromCommit[fromCommit.count / 2])
report("live query, commit → new answer p99 (ns)", fromCommit[fromCommit.count * 99 / 100])
report("live query, update → new answer p50 (ns)", live[live.count / 2])
report("live query, update → new answer p99 (ns)", live[live.count * 99 / 100])
report("live query, the update alone p50 (ns)", try await updateAlone(database))
try database.close()
report("peak RSS, open + queries (bytes)", Double(peakResidentBytes()))
