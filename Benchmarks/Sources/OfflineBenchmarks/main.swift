// OfflineBenchmarks: the offline store's costs, measured side by side in one run.
//
// 1. Initial download of N generated entities from the fixture producer (real HTTP, paged,
//    sealed into LMDB): entities per second.
// 2. Key lookup through the public API (`execute(GET Items(k))`): p50, p90.
// 3. A 5-clause `$filter` over the N local entities, against the same WHERE in SQLite (GRDB)
//    over the same rows.
// 4. Upload of 1,000 queued updates (PATCH of 1,000 different entities, each with its ETag):
//    one by one against `$batch` change sets of 100 and of 1,000, on loopback and with 2 ms
//    added to every HTTP request (a near network): requests per second.
//
// Needs the fixture producer's binary: build it at the repository root with
// `swift build -c release --product odata-fixture-server` (or set ODATA_FIXTURE_SERVER).
import BenchmarkKit
import CurlHTTP
import Foundation
import GRDB
import ODataCore
import OfflineStore

let count = Int(ProcessInfo.processInfo.environment["OFFLINE_BENCH_N"] ?? "") ?? 100_000
let csdl = """
    <?xml version="1.0" encoding="utf-8"?>
    <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
      <edmx:DataServices>
        <Schema Namespace="Bench" xmlns="http://docs.oasis-open.org/odata/ns/edm">
          <EntityType Name="Item">
            <Key><PropertyRef Name="ItemID"/></Key>
            <Property Name="ItemID" Type="Edm.Int32" Nullable="false"/>
            <Property Name="Name" Type="Edm.String"/>
            <Property Name="Category" Type="Edm.String"/>
            <Property Name="Price" Type="Edm.Double"/>
            <Property Name="Quantity" Type="Edm.Int32"/>
            <Property Name="Discontinued" Type="Edm.Boolean"/>
            <Property Name="Region" Type="Edm.String"/>
            <Property Name="Created" Type="Edm.DateTimeOffset"/>
          </EntityType>
          <EntityContainer Name="Container">
            <EntitySet Name="Items" EntityType="Bench.Item"/>
          </EntityContainer>
        </Schema>
      </edmx:DataServices>
    </edmx:Edmx>
    """

func json(_ item: Item) -> JSONValue {
    .object(JSONObject([
        ("ItemID", .int(Int64(item.id))), ("Name", .string(item.name)), ("Category", .string(item.category)),
        ("Price", .double(item.price)), ("Quantity", .int(Int64(item.quantity))), ("Discontinued", .bool(item.discontinued)),
        ("Region", .string(item.region)), ("Created", .string(item.created)),
    ]))
}

func fixtureBinary() -> String? {
    if let path = ProcessInfo.processInfo.environment["ODATA_FIXTURE_SERVER"] { return path }
    let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    for configuration in ["release", "debug"] {
        let path = here.appendingPathComponent(".build/\(configuration)/odata-fixture-server").path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// Starts the producer over a data directory and returns the process and its service root.
func startProducer(binary: String, data: String) throws -> (Process, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = ["--port", "0", "--data", data, "--page-size", "1000"]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    var text = ""
    while !text.contains("\n") {
        let data = output.fileHandleForReading.availableData
        if data.isEmpty { break }
        text += String(decoding: data, as: UTF8.self)
    }
    guard let start = text.range(of: "serving "), let end = text.range(of: " (Ctrl-C") else {
        process.terminate()
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the producer did not start: \(text)"])
    }
    return (process, String(text[start.upperBound..<end.lowerBound]))
}

guard let binary = fixtureBinary() else {
    print("OfflineBenchmarks: build the producer first: swift build -c release --product odata-fixture-server (at the repository root)")
    exit(1)
}

let work = FileManager.default.temporaryDirectory.appendingPathComponent("offline-bench-\(UUID().uuidString)").path
try FileManager.default.createDirectory(atPath: work + "/data", withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: work) }
let items = makeItems(count: count)
try csdl.write(toFile: work + "/data/Bench.metadata.xml", atomically: true, encoding: .utf8)
let payload = JSON.serialize(.object(JSONObject([("value", .array(items.map(json)))])))
try Data(payload).write(to: URL(fileURLWithPath: work + "/data/Items.json"))

print("# OfflineBenchmarks\n")
print("Machine: \(machineDescription())")
print("Producer: \(binary.contains("/release/") ? "release" : "debug") build of odata-fixture-server, page size 1000")
print("Entities: \(count) generated Items (8 properties, \(payload.count / count) bytes of JSON each)")

let (producer, serviceRoot) = try startProducer(binary: binary, data: work + "/data")
defer { producer.terminate() }

// 1. Initial download: pages of 1000, each committed as it arrives.
func peakResidentBytes() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss * 1024
}
let parameters = OfflineODataParameters(storeName: "bench", storePath: work, storeEncryptionKey: "benchmark key")
let provider = try OfflineODataProvider(serviceRoot: serviceRoot, parameters: parameters)
try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "items", query: "Items"))
func cpuSeconds() -> Double { processCPUNanoseconds() / 1e9 }
let residentBefore = residentBytes()
let cpuStart = cpuSeconds()
let downloadStart = DispatchTime.now().uptimeNanoseconds
try await provider.open()
let clientCPU = cpuSeconds() - cpuStart
let downloadNanoseconds = Double(DispatchTime.now().uptimeNanoseconds - downloadStart)
let storeBytes = (try? FileManager.default.attributesOfItem(atPath: work + "/bench/data.mdb")[.size] as? Int) ?? 0
printTable(title: "Initial download (\(count) entities, real HTTP, encrypted LMDB)", header: ["case", "time", "entities/s", "store file"], rows: [[
    "open() incl. $metadata, KDF (PBKDF2 600k), paging, sealing, a commit per page", formatDuration(downloadNanoseconds),
    String(format: "%.0f", Double(count) / (downloadNanoseconds / 1e9)), "\(storeBytes / 1_048_576) MiB",
], [
    "client CPU time for the whole open() (this process: HTTP, decoding, sealing, LMDB)", String(format: "%.2f s", clientCPU),
    String(format: "%.0f per CPU-second", Double(count) / clientCPU), "",
], [
    "peak resident memory of this process (before the download: \(residentBefore / 1_048_576) MiB with the generated data)",
    "\(peakResidentBytes() / 1_048_576) MiB", "", "",
]])

// 2. Key lookups.
var keyGenerator = SystemRandomNumberGenerator()
let keys = (0..<5_000).map { _ in Int.random(in: 1...count, using: &keyGenerator) }
var keyIndex = 0
let lookup = try await measureAsync("key lookup", warmup: 200, iterations: 5_000) {
    keyIndex = (keyIndex + 1) % keys.count
    let response = try await provider.execute(ODataRequest(resourcePath: "Items(\(keys[keyIndex]))"))
    precondition(response.statusCode == 200)
}
let syncLookup = try measure("key lookup, read", warmup: 200, iterations: 5_000) {
    keyIndex = (keyIndex + 1) % keys.count
    let response = try provider.read(ODataRequest(resourcePath: "Items(\(keys[keyIndex]))"))
    precondition(response.statusCode == 200)
}
printTable(title: "Key lookup (GET Items(k), \(count) entities, not cached in memory: LMDB + AES-GCM + JSON each time)", header: ["case", "p50", "p90", "p99", "target"], rows: [[
    "await execute(GET Items(k)) (through the actor) → ODataResponse (V4 JSON)", formatDuration(lookup.median), formatDuration(lookup.percentile(90)),
    formatDuration(lookup.percentile(99)), "p50 ≤ 20 µs",
], [
    "read(GET Items(k)) (nonisolated, no actor hop) → ODataResponse (V4 JSON)", formatDuration(syncLookup.median), formatDuration(syncLookup.percentile(90)),
    formatDuration(syncLookup.percentile(99)), "p50 ≤ 20 µs",
]])

// 3. A 5-clause filter, local store vs SQLite (GRDB).
let filter = "Price gt 50 and Quantity lt 500 and Category eq 'C3' and Discontinued eq false and startswith(Name,'Item 1')"
let request = ODataRequest(resourcePath: "Items", queryOptions: [.filter(filter)])
var localCount = 0
let coldStart = DispatchTime.now().uptimeNanoseconds
let cold = try await provider.execute(request)
let coldNanoseconds = Double(DispatchTime.now().uptimeNanoseconds - coldStart)
localCount = (try JSON.parse(cold.payload)["value"]?.arrayValue?.count) ?? -1
let local = try await measureAsync("local $filter", warmup: 3, iterations: 30) {
    let response = try await provider.execute(request)
    precondition(response.statusCode == 200)
}

let database = try DatabaseQueue(path: work + "/bench.sqlite")
try database.write { db in
    try db.execute(sql: """
        CREATE TABLE items (itemID INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL, quantity INTEGER,
                            discontinued INTEGER, region TEXT, created TEXT)
        """)
    let statement = try db.makeStatement(sql: "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    for item in items {
        try statement.execute(arguments: [item.id, item.name, item.category, item.price, item.quantity, item.discontinued, item.region, item.created])
    }
}
let whereClause = "price > 50 AND quantity < 500 AND category = 'C3' AND discontinued = 0 AND name LIKE 'Item 1%'"
let sqliteCount = try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items WHERE \(whereClause)") ?? -1 }
let sqlite = try measure("SQLite rows", warmup: 3, iterations: 30) {
    let rows = try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM items WHERE \(whereClause)") }
    precondition(rows.count == sqliteCount)
}
let sqliteJSON = try measure("SQLite rows + JSON", warmup: 3, iterations: 30) {
    let rows = try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM items WHERE \(whereClause)") }
    let values: [JSONValue] = rows.map { row in
        .object(JSONObject([
            ("ItemID", .int(row["itemID"])), ("Name", .string(row["name"])), ("Category", .string(row["category"])),
            ("Price", .double(row["price"])), ("Quantity", .int(row["quantity"])), ("Discontinued", .bool(row["discontinued"])),
            ("Region", .string(row["region"])), ("Created", .string(row["created"])),
        ]))
    }
    _ = JSON.serialize(.object(JSONObject([("value", .array(values))])))
}
precondition(localCount == sqliteCount, "the local store found \(localCount) entities, SQLite \(sqliteCount)")
printTable(title: "5-clause $filter over \(count) entities (\(localCount) match in both)", header: ["case", "p50", "p90", "vs SQLite rows", "vs SQLite rows+JSON"], rows: [
    ["offline store, first read (decrypts and decodes the set)", formatDuration(coldNanoseconds), "", String(format: "%.1f×", coldNanoseconds / sqlite.median), ""],
    ["offline store, execute(GET Items?$filter=…) → V4 JSON", formatDuration(local.median), formatDuration(local.percentile(90)),
     String(format: "%.2f×", local.median / sqlite.median), String(format: "%.2f×", local.median / sqliteJSON.median)],
    ["SQLite (GRDB) SELECT * WHERE … → rows, no index", formatDuration(sqlite.median), formatDuration(sqlite.percentile(90)), "1.00×", ""],
    ["SQLite (GRDB) rows → the same V4 JSON", formatDuration(sqliteJSON.median), formatDuration(sqliteJSON.percentile(90)), "", "1.00×"],
])
print("\nFilter: \(filter)")
await provider.close()

// 4. Upload: one by one vs `$batch` change sets.
let control = try CurlTransport()
/// Calls the producer's control endpoint and returns the answer's body.
func fixtureControl(_ method: String, _ path: String, _ body: String? = nil) async throws -> Data {
    let response = try await control.send(TransportRequest(method: method, url: serviceRoot + "$fixture/" + path,
                                                           headerFields: body == nil ? [:] : [.contentType: "application/json"],
                                                           body: body.map { Data($0.utf8) }))
    precondition((200..<300).contains(response.status), "control \(method) \(path): \(response.status)")
    return response.body
}
/// The PATCHes the producer executed and the HTTP requests it received since its counters were reset.
func producerCounts() async throws -> (patches: Int, httpRequests: Int) {
    let list = try JSON.parse(try await fixtureControl("GET", "counters"))["value"]?.arrayValue ?? []
    var patches = 0
    var httpRequests = 0
    for entry in list {
        if entry["method"]?.stringValue == "PATCH" { patches += Int(entry["executed"]?.intValue ?? 0) }
        httpRequests += Int(entry["received"]?.intValue ?? 0)
    }
    return (patches, httpRequests)
}

let updates = 1_000
var uploadRows: [[String]] = []
var firstItem = 1
var oneByOneRate: [Int: Double] = [:]
for latency in [0, 2] {
    if latency > 0 { _ = try await fixtureControl("POST", "faults", #"{"action": "latency", "milliseconds": \#(latency), "times": 1000000}"#) }
    for mode in [OfflineODataUploadMode.oneByOne, .batch(maxRequestsPerBatch: 100), .batch(maxRequestsPerBatch: 1_000)] {
        var modeParameters = parameters
        modeParameters.uploadMode = mode
        let uploader = try OfflineODataProvider(serviceRoot: serviceRoot, parameters: modeParameters)
        try await uploader.open()
        // 1,000 updates of 1,000 entities not touched before in this run.
        let targets = firstItem..<(firstItem + updates)
        firstItem += updates
        let queueStart = DispatchTime.now().uptimeNanoseconds
        for id in targets {
            _ = try await uploader.execute(ODataRequest(method: .patch, resourcePath: "Items(\(id))", body: Data(#"{"Name":"Uploaded \#(id)"}"#.utf8)))
        }
        let queueNanoseconds = Double(DispatchTime.now().uptimeNanoseconds - queueStart)
        _ = try await fixtureControl("DELETE", "counters")
        let start = DispatchTime.now().uptimeNanoseconds
        let result = try await uploader.upload()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        precondition(result.succeeded == updates && result.failed.isEmpty, "upload: \(result.failed.prefix(2).map(\.message))")
        let counts = try await producerCounts()
        precondition(counts.patches == updates, "the producer executed \(counts.patches) PATCHes for \(updates) updates")
        let check = try await control.send(TransportRequest(url: serviceRoot + "Items(\(targets.last!))"))
        precondition(String(decoding: check.body, as: UTF8.self).contains("Uploaded \(targets.last!)"), "the producer does not have the last update")
        let rate = Double(updates) / seconds
        if case .oneByOne = mode { oneByOneRate[latency] = rate }
        let modeName: String
        switch mode {
        case .oneByOne: modeName = "one by one"
        case .batch(let limit): modeName = "$batch, \(limit) change sets each"
        }
        uploadRows.append([
            latency == 0 ? "loopback" : "+\(latency) ms per HTTP request", modeName, String(counts.httpRequests),
            String(format: "%.2f s", seconds), String(format: "%.0f", rate), String(format: "%.2f×", rate / (oneByOneRate[latency] ?? rate)),
            formatDuration(queueNanoseconds / Double(updates)),
        ])
        await uploader.close()
    }
}
_ = try await fixtureControl("DELETE", "faults")
printTable(title: "Upload of \(updates) queued updates (PATCH of distinct entities with If-Match, encrypted store with fsync per commit)",
           header: ["network", "mode", "HTTP requests", "upload time", "requests/s", "vs one by one", "local update (queueing) each"], rows: uploadRows)
print("Resident memory at the end: \(residentBytes() / 1_048_576) MiB")
producer.terminate()
