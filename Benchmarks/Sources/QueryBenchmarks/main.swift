// Query benchmarks: parsing a 20-clause $filter, and evaluating a 5-clause $filter over 100,000
// Northwind-shaped Orders, beside the same WHERE clause in SQLite (GRDB, in-memory) over the same rows.
import BenchmarkKit
import Foundation
import GRDB
import ODataCore
import ODataQuery

// MARK: Setup: 100,000 generated orders

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

let entityCount = ProcessInfo.processInfo.environment["QUERY_BENCH_ENTITIES"].flatMap(Int.init) ?? 100_000
let countries = ["Germany", "France", "USA", "Brazil", "UK", "Spain", "Italy", "Mexico", "Sweden", "Venezuela"]
let cities = ["Berlin", "Reims", "Seattle", "Rio de Janeiro", "London", "Madrid", "Bergamo", "México D.F.", "Luleå", "Caracas"]
let customers = ["ALFKI", "ANATR", "ANTON", "AROUT", "BERGS", "BLAUS", "BLONP", "BOLID", "BONAP", "BOTTM", "VINET", "TOMSP"]
var random = SplitMix(state: 2026)

func isoDate(_ days: Int) -> String {
    // Days since 1996-07-04.
    var y = 1996, m = 7, d = 4 + days
    let lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    while true {
        let length = m == 2 && y % 4 == 0 ? 29 : lengths[m - 1]
        if d <= length { break }
        d -= length
        m += 1
        if m > 12 { m = 1; y += 1 }
    }
    return String(format: "%04d-%02d-%02dT00:00:00Z", y, m, d)
}

struct OrderRow {
    var orderID: Int64, customerID: String, employeeID: Int64, orderDate: String, requiredDate: String
    var shippedDate: String?, shipVia: Int64, freight: Double, shipName: String, shipAddress: String
    var shipCity: String, shipRegion: String?, shipPostalCode: String, shipCountry: String
}

var rows: [OrderRow] = []
rows.reserveCapacity(entityCount)
for i in 0..<entityCount {
    let c = Int.random(in: 0..<countries.count, using: &random)
    let day = Int.random(in: 0..<700, using: &random)
    rows.append(OrderRow(
        orderID: Int64(10248 + i), customerID: customers.randomElement(using: &random)!,
        employeeID: Int64.random(in: 1...9, using: &random), orderDate: isoDate(day), requiredDate: isoDate(day + 28),
        shippedDate: Bool.random(using: &random) ? isoDate(day + Int.random(in: 1...20, using: &random)) : nil,
        shipVia: Int64.random(in: 1...3, using: &random), freight: Double(Int.random(in: 1...100_000, using: &random)) / 100,
        shipName: "Ship \(i % 997)", shipAddress: "\(i % 313) Main Street", shipCity: cities[c],
        shipRegion: Bool.random(using: &random) ? nil : "R\(i % 7)", shipPostalCode: String(10000 + i % 89999),
        shipCountry: countries[c]))
}

// The same rows as OData V4 JSON entities, members in Northwind's order.
let entities: [JSONObject] = rows.map { r in
    JSONObject([
        ("OrderID", .int(r.orderID)), ("CustomerID", .string(r.customerID)), ("EmployeeID", .int(r.employeeID)),
        ("OrderDate", .string(r.orderDate)), ("RequiredDate", .string(r.requiredDate)),
        ("ShippedDate", r.shippedDate.map(JSONValue.string) ?? .null), ("ShipVia", .int(r.shipVia)),
        ("Freight", .double(r.freight)), ("ShipName", .string(r.shipName)), ("ShipAddress", .string(r.shipAddress)),
        ("ShipCity", .string(r.shipCity)), ("ShipRegion", r.shipRegion.map(JSONValue.string) ?? .null),
        ("ShipPostalCode", .string(r.shipPostalCode)), ("ShipCountry", .string(r.shipCountry)),
    ])
}

// Profiling mode (for callgrind): only evaluate filter B, then stop.
if let passes = ProcessInfo.processInfo.environment["QUERY_BENCH_PROFILE"].flatMap(Int.init) {
    let profiled = try CompiledFilter(parsing: "ShipCountry ne 'Atlantis' and Freight ge 0 and EmployeeID lt 100 and ShipVia in (1,2,3) and CustomerID ne 'XXXXX'")
    var n = 0
    for _ in 0..<passes { for entity in entities where profiled.matches(entity) { n += 1 } }
    print(n)
    exit(0)
}

let database = try DatabaseQueue()  // in-memory
try database.write { db in
    try db.execute(sql: """
        CREATE TABLE Orders (OrderID INTEGER PRIMARY KEY, CustomerID TEXT, EmployeeID INTEGER, OrderDate TEXT,
          RequiredDate TEXT, ShippedDate TEXT, ShipVia INTEGER, Freight REAL, ShipName TEXT, ShipAddress TEXT,
          ShipCity TEXT, ShipRegion TEXT, ShipPostalCode TEXT, ShipCountry TEXT)
        """)
    let statement = try db.makeStatement(sql: "INSERT INTO Orders VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
    for r in rows {
        try statement.execute(arguments: [
            r.orderID, r.customerID, r.employeeID, r.orderDate, r.requiredDate, r.shippedDate, r.shipVia, r.freight,
            r.shipName, r.shipAddress, r.shipCity, r.shipRegion, r.shipPostalCode, r.shipCountry,
        ])
    }
}

// MARK: Filters

/// Five clauses; every entity runs at least the first, and most run several (and short-circuits).
let filterText = "Freight gt 20 and ShipVia ne 2 and EmployeeID le 6 and ShipCountry eq 'Germany' and OrderDate ge 1997-01-01T00:00:00Z"
let whereClause = "Freight > 20 AND ShipVia <> 2 AND EmployeeID <= 6 AND ShipCountry = 'Germany' AND OrderDate >= '1997-01-01T00:00:00Z'"
/// Five clauses without date parsing, where every clause must run for most rows (or-chain of ands).
let filterText2 = "ShipCountry ne 'Atlantis' and Freight ge 0 and EmployeeID lt 100 and ShipVia in (1,2,3) and CustomerID ne 'XXXXX'"
let whereClause2 = "ShipCountry <> 'Atlantis' AND Freight >= 0 AND EmployeeID < 100 AND ShipVia IN (1,2,3) AND CustomerID <> 'XXXXX'"

let twentyClauses = (0..<20).map { i -> String in
    switch i % 5 {
    case 0: return "Freight gt \(i).5"
    case 1: return "startswith(ShipName,'Ship \(i)')"
    case 2: return "OrderDate lt 1998-0\(1 + i % 9)-01T00:00:00Z"
    case 3: return "(EmployeeID eq \(i) or ShipVia in (1,2))"
    default: return "not (ShipCountry eq 'Country \(i)')"
    }
}.joined(separator: " and ")

// MARK: Measure

let filter = try CompiledFilter(parsing: filterText)
let filter2 = try CompiledFilter(parsing: filterText2)
let ourCount = entities.reduce(0) { $0 + (filter.matches($1) ? 1 : 0) }
let ourCount2 = entities.reduce(0) { $0 + (filter2.matches($1) ? 1 : 0) }
let sqlCount = try database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM Orders WHERE \(whereClause)")! }
let sqlCount2 = try database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM Orders WHERE \(whereClause2)")! }
precondition(ourCount == sqlCount, "filter 1: ODataQuery \(ourCount) vs SQLite \(sqlCount)")
precondition(ourCount2 == sqlCount2, "filter 2: ODataQuery \(ourCount2) vs SQLite \(sqlCount2)")

let iterations = 15
var sink = 0
let parse20 = measure("parse 20-clause $filter", warmup: 50, iterations: 2000) {
    sink &+= (try? FilterExpression.parse(twentyClauses)) == nil ? 0 : 1
}
let compile20 = measure("parse + compile 20-clause $filter", warmup: 50, iterations: 2000) {
    sink &+= (try? CompiledFilter(parsing: twentyClauses)) == nil ? 0 : 1
}
let parseOptions = measure("QueryOptions.parse (filter+orderby+select+expand+top)", warmup: 50, iterations: 2000) {
    sink &+= (try? QueryOptions.parse("$filter=\(filterText.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&$orderby=Freight%20desc,OrderID&$select=OrderID,Freight&$expand=Customer($select=CompanyName)&$top=20"))?.top ?? 0
}

@MainActor func evaluation(_ name: String, _ compiled: CompiledFilter) -> Samples {
    measure(name, warmup: 2, iterations: iterations) {
        var n = 0
        for entity in entities where compiled.matches(entity) { n += 1 }
        sink &+= n
    }
}
@MainActor func sqlite(_ name: String, _ clause: String) throws -> Samples {
    try database.read { db in
        let statement = try db.makeStatement(sql: "SELECT COUNT(*) FROM Orders WHERE \(clause)")
        return try measure(name, warmup: 2, iterations: iterations) {
            sink &+= try Int.fetchOne(statement)!
        }
    }
}

let ours1 = evaluation("ODataQuery CompiledFilter, filter A (dates)", filter)
let sql1 = try sqlite("SQLite (GRDB, in-memory) COUNT(*), filter A", whereClause)
let ours2 = evaluation("ODataQuery CompiledFilter, filter B (all clauses run)", filter2)
let sql2 = try sqlite("SQLite (GRDB, in-memory) COUNT(*), filter B", whereClause2)
let options = try QueryOptions.parse("$filter=\(filterText)&$orderby=Freight desc&$top=50&$count=true")
let pipeline = try measure("QueryEvaluator.apply: filter A + orderby + count + top 50", warmup: 2, iterations: iterations) {
    sink &+= try QueryEvaluator.apply(options, to: entities).count ?? 0
}
let sqlPipeline = try database.read { db in
    let statement = try db.makeStatement(
        sql: "SELECT * FROM Orders WHERE \(whereClause) ORDER BY Freight DESC LIMIT 50")
    let countStatement = try db.makeStatement(sql: "SELECT COUNT(*) FROM Orders WHERE \(whereClause)")
    return try measure("SQLite: SELECT * … ORDER BY Freight DESC LIMIT 50 + COUNT(*)", warmup: 2, iterations: iterations) {
        sink &+= try Row.fetchAll(statement).count + Int.fetchOne(countStatement)!
    }
}

// Several cores: one CompiledFilter shared by all tasks.
let cores = ProcessInfo.processInfo.activeProcessorCount
let parallel = measure("ODataQuery filter A on \(cores) threads (shared CompiledFilter)", warmup: 2, iterations: iterations) {
    let chunk = (entities.count + cores - 1) / cores
    nonisolated(unsafe) let counts = UnsafeMutableBufferPointer<Int>.allocate(capacity: cores)
    defer { counts.deallocate() }
    DispatchQueue.concurrentPerform(iterations: cores) { part in
        var n = 0
        for entity in entities[(part * chunk)..<min(entities.count, (part + 1) * chunk)] where filter.matches(entity) { n += 1 }
        counts[part] = n
    }
    sink &+= counts.reduce(0, +)
}

// MARK: Report

func perSecond(_ samples: Samples) -> String {
    String(format: "%.2f M", Double(entityCount) / (samples.median / 1e9) / 1e6)
}
func bestPerSecond(_ samples: Samples) -> String {
    String(format: "%.2f M", Double(entityCount) / (samples.percentile(0) / 1e9) / 1e6)
}
func fmt(_ samples: Samples, _ count: Int? = nil) -> [String] {
    [samples.name, formatDuration(samples.median), formatDuration(samples.percentile(0)), formatDuration(samples.percentile(90)),
     count.map { _ in perSecond(samples) } ?? "–", count.map { _ in bestPerSecond(samples) } ?? "–"]
}

var report = "# Query benchmarks (ODataQuery)\n\n"
report += "Machine: \(machineDescription())  \n"
report += "Load average when the run ended (1, 5, 15 min): \(loadAverage()); the machine is shared with other builds, so medians move with the load: compare the two engines within one run, and see the best-run column for the unloaded rate.  \n"
report += "Built with `swift build -c release --product QueryBenchmarks`; run `.build/release/QueryBenchmarks` from `Benchmarks/`.\n\n"
report += "Data: \(entityCount) generated Northwind-shaped `Orders` (14 members each, same rows in JSON entities and in an in-memory SQLite table, no index but the primary key). "
report += "Matches: filter A \(ourCount) rows, filter B \(ourCount2) rows (identical counts from both engines, checked at start).\n\n"
report += "- filter A: `\(filterText)`\n- SQL A: `\(whereClause)`\n- filter B: `\(filterText2)`\n- SQL B: `\(whereClause2)`\n\n"
report += "## Evaluating a 5-clause filter over \(entityCount) entities (median of \(iterations) runs)\n\n"
report += "| operation | median | best | p90 | entity-checks / s (median) | entity-checks / s (best) |\n|---|---|---|---|---|---|\n"
for row in [fmt(ours1, 1), fmt(sql1, 1), fmt(ours2, 1), fmt(sql2, 1), fmt(parallel, 1), fmt(pipeline), fmt(sqlPipeline)] {
    report += "| " + row.joined(separator: " | ") + " |\n"
}
let medianRate = Double(entityCount) / (max(ours1.median, ours2.median) / 1e9)
let bestRate = Double(entityCount) / (max(ours1.percentile(0), ours2.percentile(0)) / 1e9)
report += String(format: "\nRatio ODataQuery / SQLite time (medians): filter A %.2f×, filter B %.2f×.  \n", ours1.median / sql1.median, ours2.median / sql2.median)
report += String(format: "Target ≥ 5 M entity-checks/s single-threaded (slower of the two filters): median %.2f M/s (%@), best run %.2f M/s (%@).\n",
    medianRate / 1e6, medianRate >= 5e6 ? "met" : "not met", bestRate / 1e6, bestRate >= 5e6 ? "met" : "not met")
report += "\n## Parsing (median of 2000 runs)\n\n| operation | median | p90 |\n|---|---|---|\n"
for s in [parse20, compile20, parseOptions] {
    report += "| \(s.name) | \(formatDuration(s.median)) | \(formatDuration(s.percentile(90))) |\n"
}
report += "\nThe 20-clause filter (\(twentyClauses.utf8.count) bytes):\n\n```\n\(twentyClauses)\n```\n"
print(report)
let output = CommandLine.arguments.dropFirst().first ?? "../BENCHMARKS-query.md"
try report.write(toFile: output, atomically: true, encoding: .utf8)
print("(written to \(output); sink \(sink % 10))")
