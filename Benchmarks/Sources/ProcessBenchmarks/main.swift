// ProcessBenchmarks: "one process, many jobs" (issue 45 part 4). 64 concurrent online reads — each reader on its own
// 1 KiB URL of one nginx on loopback, alternating an active read (cache + 304) and an uncached GET — first alone, then
// while the same process runs, on its own tasks as service code would:
// (a) an offline initial download of `PROCESS_BENCH_N` entities (default 1,000,000) from the fixture producer;
// (b) an upload of `PROCESS_BENCH_UPLOAD` queued updates (default 10,000) to it;
// (c) a response-cache fill with eviction of `PROCESS_BENCH_FILL` entries (default 1,000,000) of 0.5–64 KiB, budget
//     60 % of their bytes, through `ResponseCache.store` (a cache other than the readers'), run on `BackgroundExecutor`
//     as service code's bulk work should be (`PROCESS_BENCH_FILL_ON_POOL=1`: on the cooperative pool).
// The fixture producer runs at `SCHED_IDLE` (`PROCESS_BENCH_PRODUCER_IDLE=0`: at the default priority): it stands in for
// a back end on another machine.
// The readers pause `PROCESS_BENCH_PACE_MS` between reads (a service under load, not a saturating loop).
// Each read is timed on its own: p50, p99 and max per phase, and the ratio of each phase's p99 to that of an alone window
// measured just before it (this shared machine's own p99 drifts 3× between minutes; one baseline at the start made the
// ratios of later phases a measure of the drift). Before each alone window the program waits until the kernel has written
// back what earlier work left dirty (an earlier run's files removed, a download's database).
// Targets (2 cores): p99 under load ≤ 1.5× alone, max ≤ 20 ms.
// Beside the readers a `HiccupMeter` thread sleeps 1 ms again and again: a moment where reads stalled and the meter woke
// late too is the machine's (the scheduler's, the hypervisor's), not a lock or a queue of the library's.
//
// Needs nginx and the fixture producer (`swift build -c release --product odata-fixture-server` at the repository
// root, else its debug build, or ODATA_FIXTURE_SERVER).
import BenchmarkKit
import Foundation
import ODataCore
import OfflineBenchKit
import OfflineStore
import OnlineStore
import Synchronization
import TechnicalCache

let environment = ProcessInfo.processInfo.environment
let downloadCount = Int(environment["PROCESS_BENCH_N"] ?? "") ?? 1_000_000
let uploadCount = Int(environment["PROCESS_BENCH_UPLOAD"] ?? "") ?? 10_000
let fillCount = Int(environment["PROCESS_BENCH_FILL"] ?? "") ?? 1_000_000
let readers = 64
/// `PROCESS_BENCH_PACE_MS`: each reader's pause between two reads (default 10 ms: 6,400 reads/s in all, about a quarter of
/// what this machine serves; 0 reads back to back, and then every job's CPU shows in the reads' times).
let pace = Int(environment["PROCESS_BENCH_PACE_MS"] ?? "") ?? 10
/// `PROCESS_BENCH_PRODUCER_IDLE=0`: the fixture producer runs at the default priority and competes with the process
/// measured for the same two cores; by default it runs at `SCHED_IDLE`, standing in for a back end on another machine.
let producerIdle = environment["PROCESS_BENCH_PRODUCER_IDLE"] != "0"
/// `PROCESS_BENCH_FILL_ON_POOL=1`: the fill runs on a task of the cooperative pool, as any task would, instead of on
/// `BackgroundExecutor` (where service code runs its bulk work).
let fillOnPool = environment["PROCESS_BENCH_FILL_ON_POOL"] == "1"
/// `PROCESS_BENCH_FILL_DIR`: where the fill's cache lives (default: the run's temporary directory, on disk; `/dev/shm`
/// puts it on tmpfs, where no writeback follows the fill: what the disk's part of its cost is).
let fillDirectory = environment["PROCESS_BENCH_FILL_DIR"]
/// `PROCESS_BENCH_PHASES`: the jobs to run beside the readers, of `a`, `b`, `c` (default all three).
let phases = Set((environment["PROCESS_BENCH_PHASES"] ?? "a,b,c").split(separator: ",").map(String.init))

/// The reads of one phase: each read's time, active and uncached apart.
struct PhaseReads: Sendable {
    var active: [Double] = []
    var uncached: [Double] = []
    /// When each read slower than 10 ms began, in seconds since the phase began (where in a job the stalls fall).
    var slowAt: [Double] = []
    mutating func add(_ other: PhaseReads) {
        active += other.active
        uncached += other.uncached
        slowAt += other.slowAt
    }
}

/// A flag the job sets when it is done; the readers stop at their next read.
final class Stop: Sendable {
    private let stopped = Mutex(false)
    var isSet: Bool { stopped.withLock { $0 } }
    func set() { stopped.withLock { $0 = true } }
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// 64 readers until `stop` is set (and at least `minimum` reads each), alternating active and uncached reads.
func read(_ store: OnlineODataStore, until stop: Stop, minimum: Int, since phaseStart: UInt64 = now()) async throws -> PhaseReads {
    try await withThrowingTaskGroup(of: PhaseReads.self) { group in
        for index in 0..<readers {
            group.addTask {
                var reads = PhaseReads()
                let active = ODataRequest(resourcePath: "c\(index).json", useCache: true)
                let uncached = ODataRequest(resourcePath: "c\(index).json", useCache: false)
                var count = 0
                while count < minimum || !stop.isSet {
                    let cached = count % 2 == 0
                    let start = now()
                    let response = try await store.response(for: cached ? active : uncached)
                    let elapsed = Double(now() - start)
                    precondition(response?.statusCode == 200, "a read failed: \(String(describing: response?.statusCode))")
                    if cached { reads.active.append(elapsed) } else { reads.uncached.append(elapsed) }
                    if elapsed > 10e6 { reads.slowAt.append(Double(start - phaseStart) / 1e9) }
                    count += 1
                    if pace > 0 { try await Task.sleep(for: .milliseconds(pace)) }
                }
                return reads
            }
        }
        var all = PhaseReads()
        for try await reads in group { all.add(reads) }
        return all
    }
}

/// Runs `job` on a task of its own while the readers read; returns the reads, the job's seconds and when the phase began.
func phase(_ store: OnlineODataStore, _ job: @escaping @Sendable () async throws -> Void) async throws -> (PhaseReads, Double, UInt64) {
    let stop = Stop()
    let start = now()
    let jobTask = Task {
        defer { stop.set() }
        try await job()
        return Double(now() - start) / 1e9
    }
    let reads = try await read(store, until: stop, minimum: 20, since: start)
    return (reads, try await jobTask.value, start)
}

/// Waits (at most 120 s) until the kernel has written all but 64 MiB of what earlier work left dirty — an earlier
/// phase's or an earlier run's writeback and file removal would otherwise land in the next alone window; returns the
/// seconds waited.
func settle() async throws -> Double {
    let start = now()
    func unwritten() throws -> Int { let pages = try dirtyPages(); return (pages.dirty + pages.writeback) * 4096 }
    while try unwritten() > 64 << 20, now() - start < 120_000_000_000 { try await Task.sleep(for: .milliseconds(200)) }
    return Double(now() - start) / 1e9
}

/// One row of the table: the reads of a phase, and those of the alone window measured just before it, which its
/// ratios divide by (the machine drifts by more than the targets between minutes: a baseline of its own per job).
struct Row {
    let name: String
    let reads: PhaseReads
    let seconds: Double?
    let from: UInt64
    let to: UInt64
    let baseline: PhaseReads
    /// The hypervisor's share of the CPUs during the phase (steal, `/proc/stat`).
    var steal = 0.0
}

func runBenchmarks() async throws {
    guard let producerBinary = fixtureBinary() else {
        print("ProcessBenchmarks: build the fixture producer first (swift build -c release --product odata-fixture-server at the repository root)")
        exit(1)
    }
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("process-bench-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: work) }
    print("# ProcessBenchmarks: one process, many jobs\n")
    print("Machine: \(machineDescription()); load average at the start: \(loadAverage())")
    print("Producer: \(producerBinary.contains("/release/") ? "release" : "debug") build of odata-fixture-server, page size 1000, \(producerIdle ? "at SCHED_IDLE (a back end on another machine)" : "at the default priority")")

    // The online side: nginx with 64 files of 1 KiB, one store with the default cache.
    var files: [String: Data] = [:]
    for index in 0..<readers { files["c\(index).json"] = jsonFile(bytes: 1024) }
    let nginx = try Nginx.start(files: files)
    defer { nginx.stop() }
    var options = OnlineStoreOptions()
    options.storeDirectory = URL(fileURLWithPath: work + "/online")
    options.cacheEncryptionKey = "benchmark passphrase"
    options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
    let store = try OnlineODataStore(serviceRoot: "http://127.0.0.1:\(nginx.port)/", options: options)
    try await store.open()
    defer { store.close() }
    for index in 0..<readers { _ = try await store.response(for: .get("c\(index).json")) }
    await store.waitForCacheWrites()

    // The offline side's data, written before any phase (not measured).
    try writeBenchData(makeItems(count: downloadCount), to: work + "/data")
    let (producer, serviceRoot) = try startProducer(binary: producerBinary, data: work + "/data", idle: producerIdle)
    defer { producer.terminate() }

    // The machine's own stalls, seen by a thread that shares nothing with the readers but the process.
    let meter = HiccupMeter()
    defer { meter.stop() }
    var rows: [Row] = []
    var settled: [Double] = []
    var cpuAtStart = try MachineCPU.now()
    /// Appends `row` with the steal since `cpuAtStart` (marked when the alone window before its phase ended).
    func append(_ row: Row) throws {
        var row = row
        let cpu = try MachineCPU.now()
        row.steal = cpu.stealPercent(since: cpuAtStart)
        rows.append(row)
    }
    // Alone for 800 reads per reader (~9 s): a baseline long enough that the machine's own noise is in it.
    settled.append(try await settle())
    cpuAtStart = try MachineCPU.now()
    let aloneStart = now()
    let alone = try await read(store, until: { let stop = Stop(); stop.set(); return stop }(), minimum: pace > 0 ? 800 : 1_600, since: aloneStart)
    try append(Row(name: "alone", reads: alone, seconds: nil, from: aloneStart, to: now(), baseline: alone))
    /// The alone window before a job: 300 reads per reader (~3.4 s), once the disk has settled.
    func baseline() async throws -> PhaseReads {
        settled.append(try await settle())
        let reads = try await read(store, until: { let stop = Stop(); stop.set(); return stop }(), minimum: pace > 0 ? 300 : 600)
        cpuAtStart = try MachineCPU.now()
        return reads
    }

    if phases.contains("a") || phases.contains("b") {
        let provider = try await makeBenchProvider(work: work + "/offline", serviceRoot: serviceRoot)
        let downloadBaseline = try await baseline()
        let (downloadReads, downloadSeconds, downloadStart) = try await phase(store) { try await provider.open() }
        if phases.contains("a") {
            try append(Row(name: "(a) during an initial download of \(downloadCount) entities", reads: downloadReads, seconds: downloadSeconds,
                       from: downloadStart, to: now(), baseline: downloadBaseline))
        }
        if phases.contains("b") {
            for id in 1...uploadCount {
                _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Items(\(id))", body: Data(#"{"Name":"Uploaded \#(id)"}"#.utf8)))
            }
            let uploadBaseline = try await baseline()
            let (uploadReads, uploadSeconds, uploadStart) = try await phase(store) {
                let result = try await provider.upload()
                precondition(result.succeeded == uploadCount && result.failed.isEmpty, "upload: \(result.failed.prefix(2).map(\.message))")
            }
            try append(Row(name: "(b) during an upload of \(uploadCount) updates", reads: uploadReads, seconds: uploadSeconds,
                       from: uploadStart, to: now(), baseline: uploadBaseline))
        }
        await provider.close()
    }

    if phases.contains("c") {
        let workingSet = (0..<fillCount).reduce(0) { $0 + scalePayloadSize($1) + 300 }
        let fillPath = fillDirectory.map { $0 + "/process-bench-fill-\(UUID().uuidString)" } ?? work + "/fill"
        defer {
            if fillDirectory != nil {
                do { try FileManager.default.removeItem(atPath: fillPath) } catch { print("ProcessBenchmarks: \(fillPath) is left behind: \(error)") }
            }
        }
        let fillCache = try ResponseCache(directory: fillPath, configuration: CacheConfiguration(
            sizeLimit: workingSet * 6 / 10, keyDerivation: .pbkdf2(rounds: 1_000), durability: .periodic(interval: .seconds(3600))))
        try fillCache.open(encryption: .key("fill key"))
        let noise = Data((0..<(64 << 10)).map { _ in UInt8.random(in: 0...255) })
        let fill: @Sendable () async throws -> Void = {
            for index in 0..<fillCount {
                try await fillCache.store(CacheEntry(status: 200, headers: [.eTag: "W/\"\(index)\""], payload: noise.prefix(scalePayloadSize(index))),
                                          for: "https://services.example/odata/Items(\(index))")
            }
        }
        // Service code's own bulk work, run as the library recommends (on `BackgroundExecutor`), unless asked otherwise.
        let fillBaseline = try await baseline()
        let (fillReads, fillSeconds, fillStart) = try await phase(store) {
            if fillOnPool { try await fill() } else { try await BackgroundExecutor.shared.run(fill) }
        }
        let evictions = fillCache.statistics.evictions
        fillCache.close()
        try append(Row(name: "(c) during a cache fill of \(fillCount) entries (\(evictions) evicted) \(fillOnPool ? "on the cooperative pool" : "on BackgroundExecutor")\(fillDirectory.map { ", in \($0)" } ?? "")",
                   reads: fillReads, seconds: fillSeconds, from: fillStart, to: now(), baseline: fillBaseline))
    }

    func triple(_ values: [Double]) -> String { Samples(name: "", nanoseconds: values).p50p99Max }
    func p99(_ values: [Double]) -> Double { Samples(name: "", nanoseconds: values).percentile(99) }
    /// The row's p99 over its baseline's, active and uncached.
    func ratios(_ row: Row) -> (active: Double, uncached: Double) {
        (p99(row.reads.active) / p99(row.baseline.active), p99(row.reads.uncached) / p99(row.baseline.uncached))
    }
    printTable(title: "64 concurrent 1 KiB reads (each reader alternates active and uncached, \(pace) ms between reads), p50 / p99 / max; load at the end: \(loadAverage())",
               header: ["phase", "job took", "reads", "active read", "uncached read", "alone just before: p99 active / uncached", "p99 ÷ alone just before (active / uncached)"],
               rows: rows.map { row in
        let (active, uncached) = ratios(row)
        return [row.name, row.seconds.map { String(format: "%.1f s", $0) } ?? "—", String(row.reads.active.count + row.reads.uncached.count),
                triple(row.reads.active), triple(row.reads.uncached),
                row.name == "alone" ? "—" : "\(formatDuration(p99(row.baseline.active))) / \(formatDuration(p99(row.baseline.uncached)))",
                row.name == "alone" ? "—" : String(format: "%.2f× / %.2f×", active, uncached)]
    })
    print("\nBefore each alone window the program waited for the kernel's writeback to settle: " + settled.map { String(format: "%.1f s", $0) }.joined(separator: ", "))
    print("")
    for row in rows {
        let (name, reads, from, to) = (row.name, row.reads, row.from, row.to)
        let worstMax = max(reads.active.max() ?? 0, reads.uncached.max() ?? 0)
        if name == "alone" {
            print(String(format: "- %@: max %@ (target ≤ 20 ms)", name, formatDuration(worstMax)))
        } else {
            let (active, uncached) = ratios(row)
            print(String(format: "- %@: p99 %.2f× the alone window before it (target ≤ 1.5×), max %@ (target ≤ 20 ms)", name, max(active, uncached), formatDuration(worstMax)))
        }
        let slow = reads.slowAt.sorted()
        if !slow.isEmpty {
            // Reads that stalled together (in the same tenth of a second) are one moment: the whole process waited.
            var moments: [(at: Double, reads: Int)] = []
            for at in slow {
                if let last = moments.last, at - last.at < 0.1 { moments[moments.count - 1].reads += 1 } else { moments.append((at, 1)) }
            }
            // A moment the meter's thread woke late in too (within 50 ms of it) was the machine's: marked "(machine N ms)".
            let hiccups = meter.hiccups(from: from, to: to).map { (at: Double($0.at - from) / 1e9, late: $0.late) }
            func machine(_ at: Double) -> String {
                let late = hiccups.filter { abs($0.at - at) < 0.05 }.map(\.late).max()
                return late.map { String(format: " (machine %.0f ms)", $0 / 1e6) } ?? ""
            }
            let shared = moments.filter { !machine($0.at).isEmpty }.count
            // The phase's start on the monotonic clock, to find a moment in a trace (`perf record -k CLOCK_MONOTONIC`).
            print("  \(slow.count) reads over 10 ms in \(moments.count) moments, \(shared) of them while the meter's thread woke late too; "
                  + String(format: "at (s into the phase, which began at %.3f s of the monotonic clock × reads): ", Double(from) / 1e9)
                  + moments.prefix(16).map { String(format: "%.1f ×%d", $0.at, $0.reads) + machine($0.at) }.joined(separator: ", ")
                  + (moments.count > 16 ? ", …" : ""))
        }
        let hiccups = meter.hiccups(from: from, to: to)
        print(String(format: "  the machine: the meter's thread woke more than 2 ms late %d times, at most %@ late; the hypervisor took %.1f %% of the CPUs (steal)",
                     hiccups.count, formatDuration(hiccups.map(\.late).max() ?? 0), row.steal))
    }
}

try await runBenchmarks()
