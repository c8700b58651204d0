// OfflineBenchmarks: the offline store's costs, measured side by side in one run.
//
// Each part runs in a child process of its own (clean peak RSS; and the store, which links SQLCipher, never shares
// a process with GRDB's SQLite: SQLCipher exports the same `sqlite3_*` symbols, and the store refuses to open where
// plain SQLite answers):
// 1. `download`: the initial download of N generated entities from the fixture producer (real HTTP, paged, a
//    commit per page): entities per second, client CPU, peak RSS.
// 1b. `downloadFloor`: the same pages into SQLCipher with no store layer in between (`DownloadFloor.swift`), and the
//    store's download ÷ it in client CPU (issue 45 part 5; `OFFLINE_BENCH_FLOOR=0` leaves it out).
// 2. `store`: the downloaded store opened again and queried through the public API — open, the first query after
//    open vs later ones (wall time and the querying thread's CPU time), the first after a reopen in the same
//    process (per-open costs without the once-per-process ones), key lookup (through `read(_:)`, `await execute(_:)`
//    and the typed `DataService`, with their ratios), a selective filter on an indexed
//    property (≈1 % of rows), a 5-clause filter that must scan, `$orderby` on an indexed property with `$top=20`,
//    `$count`, a live query (commit → new answer and update → new answer, p50 and p99) — and its peak RSS.
// 2b. `redownload`: after the queries, a full re-download of the store (its delta tokens expired): time, client CPU,
//    peak RSS (`OFFLINE_BENCH_REDOWNLOAD=0` skips it).
// 3. `sqlite`: the same rows in SQLite through GRDB with the same indexes, the same queries, each answer written as
//    the same V4 JSON; the live query through GRDB's `ValueObservation`.
// 4. `upload`: 1,000 queued updates (PATCH of 1,000 different entities, each with its ETag) one by one against
//    `$batch` change sets of 100 and of 1,000, on loopback and with 2 ms added to every HTTP request: requests per
//    second (`OFFLINE_BENCH_UPLOAD=0` skips it).
// 5. `upload`, after it: a large ErrorArchive — N refused updates archived, then its key read, whole read, repair
//    (DELETE of an entry), the open and an upload beside it, at each N of `OFFLINE_BENCH_ARCHIVE` (default 1000,10000).
//
// `OFFLINE_BENCH_N` sets N (default 100,000). Needs the fixture producer's binary: build it at the repository root
// with `swift build -c release --product odata-fixture-server` (or set ODATA_FIXTURE_SERVER). For iterating on
// reads: `OFFLINE_BENCH_KEEP=<directory>` keeps the downloaded store there and measures it again on the next run
// without downloading (the producer serves it on the same port; a store another build wrote is measured as it is:
// use a new directory after a change of the store's layout), `OFFLINE_BENCH_SQLITE=0` leaves the SQLite side out.
// Parts 1 and 2 run twice: over a store with the default 4 KiB pages and over one made with `databasePageSize` =
// `OFFLINE_BENCH_SMALL_PAGE` (default 1024; 0 leaves it out), side by side.
// `OFFLINE_BENCH_CSDL_KIB` pads the service's `$metadata` to about that size.
// The key lookups in instructions: `make bench-instructions-offline` (OfflineKeyInstructions under callgrind, over a
// kept store: see `scripts/bench-instructions.py`).
import BenchmarkKit
import CurlHTTP
import Foundation
import ODataCore
import OfflineBenchKit
@_spi(Instrumentation) import OfflineStore

let count = Int(ProcessInfo.processInfo.environment["OFFLINE_BENCH_N"] ?? "") ?? 100_000
/// `OFFLINE_BENCH_CSDL_KIB` pads the CSDL with entity types no set uses, to about that many KiB (SAP services'
/// `$metadata` run to megabytes): what the store does with a large CSDL while it downloads.
let csdlKiB = Int(ProcessInfo.processInfo.environment["OFFLINE_BENCH_CSDL_KIB"] ?? "") ?? 0
let csdl = benchServiceCSDL(paddingKiB: csdlKiB)

let environment = ProcessInfo.processInfo.environment
// A role may name a page size after `@` (`store@1024`): that store is made with it, in a directory of its own.
let roleAndPage = (environment["OFFLINE_BENCH_ROLE"] ?? "parent").split(separator: "@")
let role = String(roleAndPage[0])
let databasePageSize = roleAndPage.count > 1 ? Int(roleAndPage[1]) ?? 4096 : 4096
func cpuSeconds() -> Double { processCPUNanoseconds() / 1e9 }
/// A child's figure, read by the parent: `metric<TAB>value`.
func report(_ metric: String, _ value: Double) { print("\(metric)\t\(value)") }
/// The CPU time of the calling thread so far, user and system (a read runs on its caller's thread): what a query
/// cost without the time the thread waited for a core on a loaded machine.
func threadCPUNanoseconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
}
/// The minor page faults of the calling thread so far (memory the kernel maps on first touch: fresh heap, code pages).
func threadMinorFaults() -> Double {
    var usage = rusage()
    // RUSAGE_THREAD (1, Linux): Glibc's module leaves it out (it needs _GNU_SOURCE).
    getrusage(type(of: RUSAGE_SELF.rawValue).init(1), &usage)
    return Double(usage.ru_minflt)
}
func elapsed(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) }

/// The queries measured on both sides: the OData request and the SQL of the floor.
let selectiveFilter = "Price lt 2"  // ≈1 % of rows (prices 0–199.99)
let otherRowsFilter = "Price ge 198"  // ≈1 % too, none of the rows above
let scanFilter = "Price gt 50 and Quantity lt 500 and Region eq 'North' and Discontinued eq false and startswith(Name,'Item 1')"
let countFilter = "Category eq 'C3'"  // 5 % of rows
/// The page size the second store is made with, beside the default's: `OFFLINE_BENCH_SMALL_PAGE` (0 leaves it out).
let smallPage = Int(environment["OFFLINE_BENCH_SMALL_PAGE"] ?? "") ?? 1024
func storeName(page: Int) -> String { page == 4096 ? "bench" : "bench-\(page)" }
let storeDirectoryName = storeName(page: databasePageSize)
/// A child's provider over the store in `OFFLINE_BENCH_WORK`, served from `OFFLINE_BENCH_ROOT`, with the one defining
/// query (indexes on `Price` and `Category`); not opened.
func benchProvider() async throws -> (provider: OfflineODataProvider, work: String, serviceRoot: String) {
    let work = environment["OFFLINE_BENCH_WORK"]!, serviceRoot = environment["OFFLINE_BENCH_ROOT"]!
    let provider = try await makeBenchProvider(work: work, serviceRoot: serviceRoot, storeName: storeDirectoryName, pageSize: databasePageSize)
    return (provider, work, serviceRoot)
}

switch role {
case "download":
    // 1. Initial download: pages of 1000, each committed as it arrives.
    let (provider, work, _) = try await benchProvider()
    let cpuStart = cpuSeconds()
    let start = DispatchTime.now().uptimeNanoseconds
    try await provider.open()
    report("initial download (ns)", elapsed(since: start))
    report("initial download, client CPU (ns)", (cpuSeconds() - cpuStart) * 1e9)
    await provider.close()
    let size = (try? FileManager.default.attributesOfItem(atPath: work + "/\(storeDirectoryName)/store.db")[.size] as? Int) ?? 0
    report("store file (bytes)", Double(size))
    report("peak RSS, download (bytes)", Double(peakResidentBytes()))
    exit(0)
case "downloadFloor":
    // 1b. The download's floor (`DownloadFloor.swift`): the same pages into SQLCipher with no store layer.
    let floor = try await downloadFloor(work: environment["OFFLINE_BENCH_WORK"]!, serviceRoot: environment["OFFLINE_BENCH_ROOT"]!,
                                        pageSize: databasePageSize)
    precondition(floor.rows == count, "the floor inserted \(floor.rows) rows of \(count)")
    report("initial download (ns)", floor.wall)
    report("initial download, client CPU (ns)", floor.cpu)
    report("peak RSS, download (bytes)", Double(peakResidentBytes()))
    exit(0)
case "redownload":
    // 2b. A full re-download of the downloaded store, after the store's queries (every delta token expired: each page
    //     spooled into the staging table, all applied at the end): its time, client CPU and peak RSS.
    let (provider, _, serviceRoot) = try await benchProvider()
    try await provider.open()
    let expired = try await CurlTransport().send(TransportRequest(method: "POST", url: serviceRoot + "$fixture/expire-delta-tokens", headerFields: [:], body: nil))
    precondition((200..<300).contains(expired.status), "expire-delta-tokens: \(expired.status)")
    let cpuStart = cpuSeconds()
    let start = DispatchTime.now().uptimeNanoseconds
    try await provider.download()
    report("full re-download (ns)", elapsed(since: start))
    report("full re-download, client CPU (ns)", (cpuSeconds() - cpuStart) * 1e9)
    await provider.close()
    report("peak RSS, open + full re-download (bytes)", Double(peakResidentBytes()))
    exit(0)
case "store":
    // 2. The downloaded store, opened again and queried through the public API.
    let (provider, _, _) = try await benchProvider()
    var start = DispatchTime.now().uptimeNanoseconds
    let openCPUStart = cpuSeconds()
    try await provider.open()
    report("open() of the existing store (ns)", elapsed(since: start))
    report("open() of the existing store, process CPU (ns)", (cpuSeconds() - openCPUStart) * 1e9)
    func get(_ path: String, _ options: [QueryOption] = []) throws -> Data {
        let response = try provider.read(ODataRequest(resourcePath: path, queryOptions: options))
        precondition(response.statusCode == 200, "GET \(path): \(response.statusCode) \(String(decoding: response.payload, as: UTF8.self))")
        return response.payload
    }
    func entities(_ payload: Data) throws -> Int { try JSON.parse(payload)["value"]?.arrayValue?.count ?? -1 }
    start = DispatchTime.now().uptimeNanoseconds
    var cpuStart = threadCPUNanoseconds()
    var faultsStart = threadMinorFaults()
    let firstAnswer = try get("Items", [.filter(selectiveFilter)])
    // Only the read is timed, as in the later queries: parsing the answer here to count it is the benchmark's work.
    report("selective indexed filter, first query after open (ns)", elapsed(since: start))
    report("selective indexed filter, first query after open, thread CPU (ns)", threadCPUNanoseconds() - cpuStart)
    report("selective indexed filter, first query after open, thread minor page faults", threadMinorFaults() - faultsStart)
    report("selective indexed filter, matches", Double(try entities(firstAnswer)))
    // For `perf record`: open, the first query, a pause of 200 ms, the same kind of query on other rows, then the
    // process ends (the pause splits the two in the samples' timestamps).
    if environment["OFFLINE_BENCH_PROFILE"] == "first" {
        usleep(200_000)
        _ = try get("Items", [.filter(otherRowsFilter)])
        exit(0)
    }
    // The same kind of query over other rows, first time: the code and statements are warm, most of its pages are
    // not (what the first query costs beyond a later one, split into first use of code and first touch of pages).
    // Not quite cold: its rows share pages with the first query's (both are spread over the table), and it reuses the
    // heap the first query grew.
    start = DispatchTime.now().uptimeNanoseconds
    _ = try get("Items", [.filter(otherRowsFilter)])
    report("selective filter on other rows, first time (ns)", elapsed(since: start))
    report("selective indexed filter p50 (ns)", try measure("selective", warmup: 3, iterations: 50) { _ = try get("Items", [.filter(selectiveFilter)]) }.median)
    var laterCPU: [Double] = []
    var laterFaults: [Double] = []
    for _ in 0..<20 {
        cpuStart = threadCPUNanoseconds()
        faultsStart = threadMinorFaults()
        _ = try get("Items", [.filter(selectiveFilter)])
        laterCPU.append(threadCPUNanoseconds() - cpuStart)
        laterFaults.append(threadMinorFaults() - faultsStart)
    }
    report("selective indexed filter p50, thread CPU (ns)", laterCPU.sorted()[laterCPU.count / 2])
    report("selective indexed filter p50, thread minor page faults", laterFaults.sorted()[laterFaults.count / 2])

    var lookups = KeyLookups(provider: provider, count: count)
    if environment["OFFLINE_BENCH_PROFILE"] == "key" {
        // For `perf record`: key lookups only, for a while, then the process ends (the parent's table is not printed).
        for _ in 0..<300_000 { try lookups.read() }
        exit(0)
    }
    let keyMedians = try await lookups.medians(warmup: 200, rounds: 5_000)
    for (label, median) in zip([KeyLookups.read, KeyLookups.execute, KeyLookups.typed], keyMedians) { report(label + " p50 (ns)", median) }

    report("5-clause filter (scan), matches", Double(try entities(try get("Items", [.filter(scanFilter)]))))
    report("5-clause filter (scan) p50 (ns)", try measure("scan", warmup: 2, iterations: 20) { _ = try get("Items", [.filter(scanFilter)]) }.median)
    let orderOptions: [QueryOption] = [.orderBy(["Price desc"]), .top(20)]
    let ordered = try entities(try get("Items", orderOptions))
    precondition(ordered == 20)
    report("$orderby=Price desc&$top=20 p50 (ns)", try measure("order", warmup: 5, iterations: 200) { _ = try get("Items", orderOptions) }.median)
    let counted = Int(String(decoding: try get("Items/$count", [.filter(countFilter)]), as: UTF8.self)) ?? -1
    report("$count of an indexed eq (5 %), value", Double(counted))
    report("$count of an indexed eq (5 %) p50 (ns)", try measure("count", warmup: 5, iterations: 100) { _ = try get("Items/$count", [.filter(countFilter)]) }.median)
    // A live query: the selective query observed (≈1 % of the set) by a task of its own, each round a local update of
    // one of its items; from the commit (the time the store notes right after it) to the new answer's arrival at that
    // task, and from before the update (its write and commit included) to the arrival. GRDB's ValueObservation on the
    // same rows does the same in the `sqlite` part.
    let observed = (try JSON.parse(try get("Items", [.filter(selectiveFilter)]))["value"]?.arrayValue ?? []).compactMap { $0["ItemID"]?.intValue }
    let (arrivalTimes, consumer) = arrivals(of: try provider.observe(ODataRequest(resourcePath: "Items", queryOptions: [.filter(selectiveFilter)])))
    var arrived = arrivalTimes.makeAsyncIterator()
    _ = await arrived.next()
    var live: [Double] = []
    var fromCommit: [Double] = []
    // `OFFLINE_BENCH_PROFILE=live`: the rounds only, for a while, then the process ends (for `perf record`).
    let liveRounds = environment["OFFLINE_BENCH_PROFILE"] == "live" ? 20_000 : 300
    for round in 0..<liveRounds {
        let update = ODataRequest(method: .init("PATCH")!, resourcePath: "Items(\(observed[round % observed.count]))",
                                  body: Data(#"{"Name":"Live \#(round)"}"#.utf8))
        let begin = DispatchTime.now().uptimeNanoseconds
        _ = try await provider.execute(update)
        guard let time = await arrived.next() else { fatalError("the live query ended") }
        if round >= 20 {
            live.append(Double(time - begin))
            fromCommit.append(Double(time - provider.lastCommitUptimeNanoseconds))
        }
    }
    consumer.cancel()  // the observation ends
    if liveRounds > 300 { exit(0) }
    live.sort()
    fromCommit.sort()
    report("live query, commit → new answer p50 (ns)", fromCommit[fromCommit.count / 2])
    report("live query, commit → new answer p99 (ns)", fromCommit[fromCommit.count * 99 / 100])
    report("live query, update → new answer p50 (ns)", live[live.count / 2])
    report("live query, update → new answer p99 (ns)", live[live.count * 99 / 100])
    // The update alone (nothing observes), for how much of the above the observation costs.
    var alone: [Double] = []
    for round in 0..<300 {
        let update = ODataRequest(method: .init("PATCH")!, resourcePath: "Items(\(observed[round % observed.count]))",
                                  body: Data(#"{"Name":"Alone \#(round)"}"#.utf8))
        let begin = DispatchTime.now().uptimeNanoseconds
        _ = try await provider.execute(update)
        if round >= 20 { alone.append(elapsed(since: begin)) }
    }
    alone.sort()
    report("live query, the update alone p50 (ns)", alone[alone.count / 2])
    // Closed and opened again in the same process, the first query: the same rows and pages as the first query after
    // open, the reader's page cache empty again, but code, heap and the runtime's metadata already used — what a
    // first query costs per open, without what it costs once per process.
    await provider.close()
    try await provider.open()
    start = DispatchTime.now().uptimeNanoseconds
    cpuStart = threadCPUNanoseconds()
    faultsStart = threadMinorFaults()
    _ = try get("Items", [.filter(selectiveFilter)])
    report("selective indexed filter, first query after a reopen in the same process (ns)", elapsed(since: start))
    report("selective indexed filter, first query after a reopen, thread CPU (ns)", threadCPUNanoseconds() - cpuStart)
    report("selective indexed filter, first query after a reopen, thread minor page faults", threadMinorFaults() - faultsStart)
    await provider.close()
    report("peak RSS, open + queries (bytes)", Double(peakResidentBytes()))
    exit(0)
case "upload":
    break
default:
    try parent()
    if environment["OFFLINE_BENCH_UPLOAD"] == "0" { exit(0) }
}

/// Runs the parts in child processes and prints their figures side by side.
func parent() throws {
    guard let binary = fixtureBinary() else {
        print("OfflineBenchmarks: build the producer first: swift build -c release --product odata-fixture-server (at the repository root)")
        exit(1)
    }
    // Checked before the producer starts: `exit` skips the `defer` that stops it.
    let floor = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("OfflineSQLiteFloor").path
    guard FileManager.default.isExecutableFile(atPath: floor) else {
        print("OfflineBenchmarks: build its SQLite side first: swift build -c release --product OfflineSQLiteFloor (in Benchmarks/)")
        exit(1)
    }
    // `OFFLINE_BENCH_KEEP=<directory>` keeps the data and the downloaded store there, and a later
    // run with the same directory (and N) measures them again without downloading (for iterating on reads).
    let kept = environment["OFFLINE_BENCH_KEEP"]
    let work = kept ?? FileManager.default.temporaryDirectory.appendingPathComponent("offline-bench-\(UUID().uuidString)").path
    let reused = kept != nil && FileManager.default.fileExists(atPath: work + "/\(storeDirectoryName)/store.db")
    try FileManager.default.createDirectory(atPath: work + "/data", withIntermediateDirectories: true)
    defer { if kept == nil { try? FileManager.default.removeItem(atPath: work) } }
    let payloadBytes = try writeBenchData(makeItems(count: count), to: work + "/data", paddingKiB: csdlKiB)
    print("# OfflineBenchmarks\n")
    print("Machine: \(machineDescription())")
    print("Producer: \(binary.contains("/release/") ? "release" : "debug") build of odata-fixture-server, page size 1000")
    print("Entities: \(count) generated Items (8 properties, \(payloadBytes / count) bytes of JSON each); indexes on Price and Category; CSDL \(csdl.utf8.count / 1024) KiB")
    // A kept store belongs to its service root: the producer serves it on the same port again.
    let portFile = work + "/port"
    let keptPort = kept == nil ? 0 : Int((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "") ?? 0
    let (producer, serviceRoot) = try startProducer(binary: binary, data: work + "/data", port: keptPort)
    defer { producer.terminate() }
    if kept != nil, let port = URL(string: serviceRoot)?.port { try String(port).write(toFile: portFile, atomically: true, encoding: .utf8) }
    var figures: [String: [String: Double]] = [:]
    var order: [String] = []
    func child(_ name: String, executable: String = CommandLine.arguments[0]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        var childEnvironment = environment
        childEnvironment["OFFLINE_BENCH_ROLE"] = name
        childEnvironment["OFFLINE_BENCH_WORK"] = work
        childEnvironment["OFFLINE_BENCH_ROOT"] = serviceRoot
        process.environment = childEnvironment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { fatalError("\(name) failed:\n\(output)") }
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            guard fields.count == 2, let value = Double(fields[1]) else { continue }
            let metric = String(fields[0])
            if !order.contains(metric) { order.append(metric) }
            figures[metric, default: [:]][name] = value
        }
    }
    if !reused { try child("download") }
    // `OFFLINE_BENCH_FLOOR=0` leaves the download's floor out.
    if environment["OFFLINE_BENCH_FLOOR"] != "0" { try child("downloadFloor") }
    try child("store")
    let small = smallPage == 0 || smallPage == 4096 ? nil : "@\(smallPage)"
    if let small {
        if !(kept != nil && FileManager.default.fileExists(atPath: work + "/\(storeName(page: smallPage))/store.db")) { try child("download" + small) }
        try child("store" + small)
    }
    // `OFFLINE_BENCH_REDOWNLOAD=0` leaves the full re-download out.
    if environment["OFFLINE_BENCH_REDOWNLOAD"] != "0" { try child("redownload") }
    // `OFFLINE_BENCH_SQLITE=0` leaves SQLite out (the store's figures only, for iterating).
    if environment["OFFLINE_BENCH_SQLITE"] != "0" { try child("sqlite", executable: floor) }

    func format(_ metric: String, _ value: Double?) -> String {
        guard let value else { return "–" }
        if metric.hasSuffix("(ns)") { return formatDuration(value) }
        if metric.contains("bytes") { return String(format: "%.1f MiB", value / 1_048_576) }
        return String(format: "%.0f", value)
    }
    let smallLabel = "store, \(smallPage / 1024) KiB pages"
    var header = ["metric", "offline store"]
    if small != nil { header.append(smallLabel) }
    header += ["SQLite (GRDB)", "store / SQLite"]
    if small != nil { header.append(smallLabel + " / SQLite") }
    let pages = small == nil ? "4 KiB pages" : "4 KiB and \(smallPage / 1024) KiB pages"
    printTable(title: "Offline store (\(pages)) vs SQLite (GRDB, same rows, same indexes), each in its own process, N = \(count)",
               header: header,
               rows: order.map { metric in
        let row = figures[metric] ?? [:]
        let store = row["download"] ?? row["store"] ?? row["redownload"]
        let smallStore = small.flatMap { row["download" + $0] ?? row["store" + $0] }
        func ratio(_ value: Double?) -> String {
            guard let value, let floor = row["sqlite"], floor > 0, metric.hasSuffix("(ns)") || metric.contains("bytes") else { return "" }
            return String(format: "%.2f×", value / floor)
        }
        var cells = [metric, format(metric, store)]
        if small != nil { cells.append(format(metric, smallStore)) }
        cells += [format(metric, row["sqlite"]), ratio(store)]
        if small != nil { cells.append(ratio(smallStore)) }
        return cells
    })
    if let store = figures["live query, commit → new answer p50 (ns)"]?["store"], let grdb = figures["live query, commit → new answer p50 (ns)"]?["sqlite"] {
        print("\nLive query, commit → new answer p50 ÷ GRDB's ValueObservation: \(String(format: "%.2f×", store / grdb)) (target ≤ 1×)")
    }
    for (name, label) in [("store", "4 KiB pages")] + (small.map { [("store" + $0, "\(smallPage / 1024) KiB pages")] } ?? []) {
        let row = { (metric: String) in figures["selective indexed filter" + metric]?[name] }
        if let first = row(", first query after open (ns)"), let later = row(" p50 (ns)") {
            print("\nFirst query after open ÷ later p50, \(label): \(String(format: "%.2f×", first / later)) (target ≤ 2×)")
            if let cpu = row(", first query after open, thread CPU (ns)"), let laterCPU = row(" p50, thread CPU (ns)") {
                print("  in thread CPU: \(String(format: "%.2f×", cpu / laterCPU))", terminator: "")
                if let reopen = row(", first query after a reopen, thread CPU (ns)") {
                    print("; the first after a reopen in the same process: \(String(format: "%.2f×", reopen / laterCPU))", terminator: "")
                }
                print()
            }
        }
    }
    print("\nKey lookup (N = \(count)) through execute and the typed DataService ÷ through read() (target ≤ 2×):")
    for (name, label) in [("store", "4 KiB pages")] + (small.map { [("store" + $0, "\(smallPage / 1024) KiB pages")] } ?? []) {
        guard let read = figures[KeyLookups.read + " p50 (ns)"]?[name] else { continue }
        let ratios = [("await execute()", KeyLookups.execute), ("typed", KeyLookups.typed)].compactMap { door, metric in
            figures[metric + " p50 (ns)"]?[name].map { "\(door) ÷ read() \(String(format: "%.2f×", $0 / read))" }
        }
        print("  \(label): " + ratios.joined(separator: ", "))
    }
    for name in ["download"] + (small.map { ["download" + $0] } ?? []) {
        if let downloadCPU = figures["initial download, client CPU (ns)"]?[name] {
            print("\nInitial download\(name == "download" ? "" : " (\(smallPage / 1024) KiB pages)"): \(String(format: "%.0f", Double(count) / (downloadCPU / 1e9))) entities per client CPU-second")
        }
    }
    if let store = figures["initial download, client CPU (ns)"]?["download"], let floor = figures["initial download, client CPU (ns)"]?["downloadFloor"],
       let storeWall = figures["initial download (ns)"]?["download"], let floorWall = figures["initial download (ns)"]?["downloadFloor"] {
        print(String(format: "\nInitial download against its floor (the same pages, JSON.parse, prepared inserts into SQLCipher, no store layer): "
                     + "store %.0f, floor %.0f entities per client CPU-second; store ÷ floor %.2f× in client CPU (target ≤ 1.5×), %.2f× in wall time",
                     Double(count) / (store / 1e9), Double(count) / (floor / 1e9), store / floor, storeWall / floorWall))
    }
    for metric in ["selective indexed filter, matches", "5-clause filter (scan), matches", "$count of an indexed eq (5 %), value"] {
        let row = figures[metric] ?? [:]
        if row["sqlite"] != nil { precondition(row["store"] == row["sqlite"], "\(metric): the store answered \(row["store"] ?? -1), SQLite \(row["sqlite"] ?? -1)") }
        if let small { precondition(row["store" + small] == row["store"], "\(metric): the stores answered \(row["store"] ?? -1) and \(row["store" + small] ?? -1)") }
    }
    print("\nFilters: selective `\(selectiveFilter)`; scan `\(scanFilter)`; count `\(countFilter)`")
}
// 4. Upload: one by one vs `$batch` change sets.
guard role == "upload" || role == "parent" else { exit(0) }
// The upload runs in a process of its own over a fresh store of its own.
guard let uploadBinary = fixtureBinary() else { exit(1) }
let uploadWork = FileManager.default.temporaryDirectory.appendingPathComponent("offline-bench-upload-\(UUID().uuidString)").path
defer { try? FileManager.default.removeItem(atPath: uploadWork) }
try writeBenchData(makeItems(count: min(count, 10_000)), to: uploadWork + "/data", paddingKiB: csdlKiB)
let (producer, serviceRoot) = try startProducer(binary: uploadBinary, data: uploadWork + "/data")
defer { producer.terminate() }
let parameters = OfflineODataParameters(storeName: "bench", storePath: uploadWork, storeEncryptionKey: "benchmark key")
do {
    let downloader = try OfflineODataProvider(serviceRoot: serviceRoot, parameters: parameters)
    try await downloader.add(definingQuery: OfflineODataDefiningQuery(name: "items", query: "Items"))
    try await downloader.open()
    await downloader.close()
}
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

// 5. A large ErrorArchive: N updates the producer refuses (400, in `$batch` change sets of 1,000), then what the
//    archive costs to make, read, repair and carry along (`OFFLINE_BENCH_ARCHIVE`, sizes separated by commas; `0`
//    skips it): each figure at every size, side by side, to show how it grows.
let archiveSizes = (environment["OFFLINE_BENCH_ARCHIVE"] ?? "1000,10000").split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
var archiveFigures: [(String, [String])] = []
@MainActor func archiveFigure(_ name: String, _ value: String) {
    if let index = archiveFigures.firstIndex(where: { $0.0 == name }) { archiveFigures[index].1.append(value) } else { archiveFigures.append((name, [value])) }
}
let archiveItems = min(count, 10_000)
for size in archiveSizes {
    var archiveParameters = parameters
    archiveParameters.storeName = "archive-\(size)"
    archiveParameters.uploadMode = .batch(maxRequestsPerBatch: 1_000)
    let provider = try OfflineODataProvider(serviceRoot: serviceRoot, parameters: archiveParameters)
    try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "items", query: "Items"))
    try await provider.open()
    for index in 0..<size {
        let id = index % archiveItems + 1
        _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Items(\(id))", body: Data(#"{"Name":"Refused \#(index)"}"#.utf8)))
    }
    _ = try await fixtureControl("POST", "faults", #"{"action": "fail", "status": 400, "code": "Refused", "method": "PATCH", "insideBatch": true}"#)
    var start = DispatchTime.now().uptimeNanoseconds
    let refused = try await provider.upload()
    archiveFigure("upload that archives every request, per request", formatDuration(elapsed(since: start) / Double(size)))
    _ = try await fixtureControl("DELETE", "faults")
    let entries = try provider.read(ODataRequest(resourcePath: "ErrorArchive/$count"))
    let archived = Int(String(decoding: entries.payload, as: UTF8.self)) ?? -1
    precondition(refused.failed.count == size && archived == size, "\(refused.failed.count) failed, \(archived) archived of \(size)")
    let ids = refused.failed.map(\.requestID).shuffled()
    var next = 0
    archiveFigure("ErrorArchive(k), read() p50", formatDuration(try measure("archive key", warmup: 20, iterations: 500) {
        next = (next + 1) % ids.count
        let status = try provider.read(ODataRequest(resourcePath: "ErrorArchive(\(ids[next]))")).statusCode
        precondition(status == 200)
    }.median))
    archiveFigure("ErrorArchive(k)/AffectedEntity, read() p50", formatDuration(try measure("archive affected", warmup: 20, iterations: 500) {
        next = (next + 1) % ids.count
        let status = try provider.read(ODataRequest(resourcePath: "ErrorArchive(\(ids[next]))/AffectedEntity")).statusCode
        precondition(status == 200)
    }.median))
    archiveFigure("whole ErrorArchive, read() p50", formatDuration(try measure("archive all", warmup: 1, iterations: 5) {
        _ = try provider.read(ODataRequest(resourcePath: "ErrorArchive"))
    }.median))
    // One more update, accepted: the upload reads the archive's failed creates before it sends.
    _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Items(1)", body: Data(#"{"Name":"Accepted"}"#.utf8)))
    start = DispatchTime.now().uptimeNanoseconds
    let accepted = try await provider.upload()
    precondition(accepted.succeeded == 1, "\(accepted.failed.map(\.message))")
    archiveFigure("upload of 1 accepted request beside the archive", formatDuration(elapsed(since: start)))
    await provider.close()
    start = DispatchTime.now().uptimeNanoseconds
    try await provider.open()
    archiveFigure("open() of the store with the archive", formatDuration(elapsed(since: start)))
    let deletions = min(200, ids.count)
    var deleted = 0
    archiveFigure("DELETE ErrorArchive(k) (repair), await execute() p50", formatDuration(try await measureAsync("archive delete", warmup: 0, iterations: deletions) {
        _ = try await provider.execute(ODataRequest(method: .delete, resourcePath: "ErrorArchive(\(ids[deleted]))"))
        deleted += 1
    }.median))
    await provider.close()
}
if !archiveSizes.isEmpty {
    printTable(title: "A large ErrorArchive: N refused updates (400), encrypted store, the producer on loopback",
               header: ["figure"] + archiveSizes.map { "N = \($0)" },
               rows: archiveFigures.map { [$0.0] + $0.1 })
}
producer.terminate()
