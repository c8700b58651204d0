// OnlineBenchmarks: reads through OnlineODataStore — uncached, active (cache + 304) and passive — beside their
// floors (the TechnicalCache lookup, CurlTransport alone, the cache's refresh write) and URLSession with a
// URLCache, against one nginx on loopback; then time to first data with a slow back end, and 64 and 256 concurrent
// reads. Every comparison is measured side by side in interleaved rounds (the order rotating), so that a burst
// of load elsewhere on this shared machine hits all rows alike.
import BenchmarkKit
import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import OnlineStore
import TechnicalCache
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// One measured operation: its wall-clock samples pooled over the rounds, and its CPU time per call.
final class Row {
    let label: String
    let bytes: String
    let body: () async throws -> Void
    var timings: [Double] = []
    var cpu: Double = 0
    var calls = 0

    init(_ label: String, bytes: String, _ body: @escaping () async throws -> Void) {
        self.label = label
        self.bytes = bytes
        self.body = body
    }

    func run(_ iterations: Int) async throws {
        for _ in 0..<10 { try await body() }
        let cpuStart = processCPUNanoseconds()
        for _ in 0..<iterations {
            let start = DispatchTime.now().uptimeNanoseconds
            try await body()
            timings.append(Double(DispatchTime.now().uptimeNanoseconds - start))
        }
        // The CPU of what the calls left to do in the background (a 304's refresh is written within 100 ms) is
        // theirs, and must not fall into the next row's batch: settle before reading the clock.
        try await Task.sleep(for: settle)
        cpu += processCPUNanoseconds() - cpuStart
        calls += iterations
    }

    var samples: Samples { Samples(name: label, nanoseconds: timings) }
    var cpuPerCall: Double { cpu / Double(max(calls, 1)) }
}

/// How long a row's batch waits after its last call before its CPU time is read: longer than the cache's hold of a
/// 304's refresh before its background write (100 ms).
let settle = Duration.milliseconds(150)

/// `ONLINE_BENCH_ONLY=text` runs only the rows whose label contains `text` (`=label`: exactly that label; several
/// separated by `|`), and
/// `ONLINE_BENCH_SIZE=1 KiB` only that size, `ONLINE_BENCH_PART=concurrent` only the concurrent readers (for a
/// profiler).
let only = ProcessInfo.processInfo.environment["ONLINE_BENCH_ONLY"]
let onlySize = ProcessInfo.processInfo.environment["ONLINE_BENCH_SIZE"]
let onlyConcurrent = ProcessInfo.processInfo.environment["ONLINE_BENCH_PART"]?.hasPrefix("concurrent") == true
/// `ONLINE_BENCH_PART=concurrent-active` / `concurrent-uncached`: only that half of the concurrent readers.
let concurrentHalf = ProcessInfo.processInfo.environment["ONLINE_BENCH_PART"].flatMap { ["concurrent-active": true, "concurrent-uncached": false][$0] }
/// `ONLINE_BENCH_READERS=64`: only that many concurrent readers (the default runs 64, then 256).
let concurrentReaders = ProcessInfo.processInfo.environment["ONLINE_BENCH_READERS"].flatMap { Int($0) }.map { [$0] } ?? [64, 256]

func selected(_ label: String) -> Bool {
    guard let only else { return true }
    return only.split(separator: "|").contains { $0.hasPrefix("=") ? label == $0.dropFirst() : label.contains($0) }
}

/// Runs every row for `rounds` rounds of `iterations / rounds` calls, rotating the order each round.
func interleave(_ rows: [Row], iterations: Int, rounds: Int = 5) async throws {
    let rows = rows.filter { selected($0.label) }
    for round in 0..<rounds {
        for offset in 0..<rows.count {
            try await rows[(offset + round) % rows.count].run(iterations / rounds)
        }
    }
}

/// Two operations timed call by call in alternation (A then B, then B then A, …), so that drift, load bursts and
/// whatever the previous batch left running hit both alike: a difference of a few per cent, which the rows' batches
/// of 400 cannot resolve on this machine, shows here. Returns the median of each and the median of the per-pair
/// differences as a fraction of B's median.
func paired(iterations: Int, _ a: () async throws -> Void, _ b: () async throws -> Void) async throws -> (a: Double, b: Double, difference: Double) {
    for _ in 0..<20 {
        try await a()
        try await b()
    }
    var timesA: [Double] = [], timesB: [Double] = [], differences: [Double] = []
    func time(_ body: () async throws -> Void) async throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        return Double(DispatchTime.now().uptimeNanoseconds - start)
    }
    for index in 0..<iterations {
        let (ta, tb): (Double, Double)
        if index % 2 == 0 {
            ta = try await time(a)
            tb = try await time(b)
        } else {
            tb = try await time(b)
            ta = try await time(a)
        }
        timesA.append(ta)
        timesB.append(tb)
        differences.append(ta - tb)
    }
    let medianB = Samples(name: "b", nanoseconds: timesB).median
    return (Samples(name: "a", nanoseconds: timesA).median, medianB, Samples(name: "d", nanoseconds: differences).median / medianB)
}

/// A back end that answers after a fixed delay, with ETags and 304s: Python's http.server on 127.0.0.1.
final class DelayServer {
    let port: Int
    private let process: Process

    init(delayMilliseconds: Int) throws {
        let script = """
            import http.server, sys, time
            BODY = b'{"value":[' + b','.join(b'{"ID":%d,"Name":"Product %d"}' % (i, i) for i in range(30)) + b']}'
            class H(http.server.BaseHTTPRequestHandler):
                protocol_version = 'HTTP/1.1'
                def log_message(self, *a): pass
                def do_GET(self):
                    time.sleep(\(Double(delayMilliseconds) / 1000))
                    if self.headers.get('If-None-Match') == '"v1"':
                        self.send_response(304); self.send_header('ETag', '"v1"'); self.send_header('Content-Length', '0'); self.end_headers(); return
                    self.send_response(200); self.send_header('ETag', '"v1"'); self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(BODY))); self.end_headers(); self.wfile.write(BODY)
            s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
            print(s.server_address[1], flush=True)
            s.serve_forever()
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard let listening = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw ODataError(.invalidState, "the delay server did not start: \(line)")
        }
        port = listening
        self.process = process
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// A transport with no I/O: it replays the answers nginx gave (a 200 with its body, or a 304 to a request carrying
/// the ETag), so that a row over it measures the store's own work around a response and nothing of the network.
final class ReplayTransport: HTTPTransport {
    private let full: TransportResponse
    private let notModified: TransportResponse

    init(full: TransportResponse, notModified: TransportResponse) {
        self.full = full
        self.notModified = notModified
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        request.headerFields[.ifNoneMatch] == full.headerFields[.eTag] ? notModified : full
    }
}

/// Everything runs off the main actor, as service code does: top-level code is main-actor isolated,
/// and every await from it would add two thread hops to each measured read.
nonisolated func runBenchmarks() async throws {
    let iterations = Int(ProcessInfo.processInfo.environment["ONLINE_BENCH_ITERATIONS"] ?? "") ?? 2_000
    var files = ["small.json": jsonFile(bytes: 1_024), "medium.json": jsonFile(bytes: 64 * 1_024)]
    for index in 0..<256 { files["c\(index).json"] = jsonFile(bytes: 1_024) }
    // Under valgrind, nginx cannot be started from here (valgrind 3.19 fails the close_range of Foundation's
    // Process with EBADF): the instruction-count mode serves the files from a run of its own (`servesOnly`) and
    // reads them from `ONLINE_BENCH_ROOT`.
    if servesOnly { return try serve(files) }
    let nginx = serverRoot == nil ? try Nginx.start(files: files) : nil
    defer { nginx?.stop() }
    let root = serverRoot ?? "http://127.0.0.1:\(nginx!.port)/"
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("online-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }

    var options = OnlineStoreOptions()
    options.storeDirectory = directory
    options.cacheEncryptionKey = "benchmark passphrase"
    options.cacheSizeLimit = 64 << 20
    options.cacheDurability = .full
    let store = try OnlineODataStore(serviceRoot: root, options: options)
    try await store.open()
    var periodicOptions = options
    periodicOptions.storeName = "periodic"
    periodicOptions.cacheDurability = .periodic(interval: .seconds(1))
    let periodicStore = try OnlineODataStore(serviceRoot: root, options: periodicOptions)
    try await periodicStore.open()
    var passiveOptions = periodicOptions
    passiveOptions.storeName = "passive"
    let passiveStore = try OnlineODataStore(serviceRoot: root, options: passiveOptions)
    try await passiveStore.open()
    // The same stores without any telemetry (not even no-op backends): what reporting costs.
    var quietOptions = options
    quietOptions.storeName = "quiet"
    quietOptions.telemetry = .disabled
    let quietStore = try OnlineODataStore(serviceRoot: root, options: quietOptions)
    try await quietStore.open()
    // Its twin: the A/A control that says how far two identical stores differ in the same run.
    quietOptions.storeName = "quiet-twin"
    let quietTwin = try OnlineODataStore(serviceRoot: root, options: quietOptions)
    try await quietTwin.open()
    var quietPassiveOptions = passiveOptions
    quietPassiveOptions.storeName = "quiet-passive"
    quietPassiveOptions.telemetry = .disabled
    let quietPassiveStore = try OnlineODataStore(serviceRoot: root, options: quietPassiveOptions)
    try await quietPassiveStore.open()

    // Floors: the same kind of entry looked up straight from a ResponseCache of its own; the transport alone.
    let floorCache = try ResponseCache(directory: directory.appendingPathComponent("floor").path,
                                       configuration: CacheConfiguration(durability: .periodic(interval: .seconds(1))))
    try floorCache.open(encryption: .key("benchmark passphrase"))
    // The same lookup with no entries held in memory: every read decrypts from LMDB (the floor before issue 21).
    let diskFloorCache = try ResponseCache(directory: directory.appendingPathComponent("disk-floor").path,
                                           configuration: CacheConfiguration(durability: .periodic(interval: .seconds(1)), memoryBudget: 0))
    try diskFloorCache.open(encryption: .key("benchmark passphrase"))
    let transport = try CurlTransport()
    defer { transport.shutdown() }
    if let instructionIterations {
        try await countInstructions(InstructionSubjects(store: store, periodicStore: periodicStore, quietStore: quietStore, passiveStore: passiveStore,
                                                        quietPassiveStore: quietPassiveStore, floorCache: floorCache,
                                                        transport: transport, root: root, files: files),
                                    iterations: instructionIterations)
        return
    }

    // The peer a Swift user would otherwise pick. On Linux, URLCache stores nothing by itself, never revalidates and
    // keys on the URL without its query: entries are stored by hand, then read with .returnCacheDataDontLoad.
    let urlCache = URLCache(memoryCapacity: 64 << 20, diskCapacity: 0, diskPath: nil)
    let configuration = URLSessionConfiguration.default
    configuration.urlCache = urlCache
    let session = URLSession(configuration: configuration)

    func bytesPerRead(_ body: () async throws -> Void) async rethrows -> Int {
        let before = store.statistics.bytesReceived
        try await body()
        return store.statistics.bytesReceived - before
    }

    if onlyConcurrent {
        for readers in concurrentReaders { try await concurrentReads(store: periodicStore, readers: readers, reads: iterations * 4) }
        return
    }
    var table: [[String]] = []
    var verdicts: [String] = []
    for (name, label) in [("small.json", "1 KiB"), ("medium.json", "64 KiB")] where onlySize == nil || onlySize == label {
        let cached = ODataRequest.get(name)
        let uncached = ODataRequest(resourcePath: name, useCache: false)
        _ = try await store.response(for: cached) // fill the caches
        _ = try await periodicStore.response(for: cached)
        try passiveStore.setMode(.active)
        _ = try await passiveStore.response(for: cached)
        try passiveStore.setMode(.passive)
        try quietPassiveStore.setMode(.active)
        _ = try await quietPassiveStore.response(for: cached)
        try quietPassiveStore.setMode(.passive)
        let fullBytes = try await bytesPerRead { _ = try await store.response(for: uncached) }
        let revalidationBytes = try await bytesPerRead { _ = try await store.response(for: cached) }

        let url = root + name
        _ = try await floorCache.store(CacheEntry(status: 200, headers: [.contentType: "application/json"], payload: files[name]!), for: url)
        _ = try await diskFloorCache.store(CacheEntry(status: 200, headers: [.contentType: "application/json"], payload: files[name]!), for: url)
        let plain = try await transport.send(TransportRequest(url: url))
        let conditional = TransportRequest(url: url, headerFields: [.ifNoneMatch: plain.headerFields[.eTag] ?? ""])
        _ = try await floorCache.store(CacheEntry(status: 200, headers: [.eTag: plain.headerFields[.eTag] ?? ""], payload: files[name]!), for: url + "#etag")
        let stored = try floorCache.entry(for: url + "#etag")

        // The same store over a transport that replays these answers: the store's own work, without the network.
        let replayed = try await transport.send(conditional)
        precondition(replayed.status == 304)
        var replayOptions = periodicOptions
        replayOptions.storeName = "replay-\(label)"
        let replayStore = try OnlineODataStore(serviceRoot: root, options: replayOptions,
                                               transport: ReplayTransport(full: plain, notModified: replayed))
        try await replayStore.open()
        _ = try await replayStore.response(for: cached)

        var urlRequest = URLRequest(url: URL(string: url)!)
        let (data, response) = try await session.data(for: urlRequest)
        urlCache.storeCachedResponse(CachedURLResponse(response: response, data: data), for: urlRequest)
        urlRequest.cachePolicy = .returnCacheDataDontLoad
        let peerCached = urlRequest
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        let peerUncached = urlRequest

        let rows = [
            Row("store, uncached GET", bytes: "\(fullBytes)") { _ = try await store.response(for: uncached) },
            Row("store, active read (cache + 304), fsync per stored write", bytes: "\(revalidationBytes)") { _ = try await store.response(for: cached) },
            Row("store, active read (cache + 304), periodic sync", bytes: "\(revalidationBytes)") { _ = try await periodicStore.response(for: cached) },
            Row("store, passive read", bytes: "0") { _ = try await passiveStore.response(for: cached) },
            Row("store, passive read through execute(_:), result()", bytes: "0") { _ = try await passiveStore.execute(cached).result() },
            Row("store, passive read through execute(_:), every event", bytes: "0") {
                for await event in passiveStore.execute(cached).events { if case .finished = event { break } }
            },
            Row("TechnicalCache lookup (floor of a passive read)", bytes: "0") { _ = try floorCache.entry(for: url) },
            Row("TechnicalCache lookup from disk (memoryBudget 0)", bytes: "0") { _ = try diskFloorCache.entry(for: url) },
            Row("CurlTransport alone, GET 200 (floor of an uncached read)", bytes: "\(fullBytes)") { _ = try await transport.send(TransportRequest(url: url)) },
            Row("CurlTransport alone, conditional GET → 304", bytes: "\(revalidationBytes)") {
                let reply = try await transport.send(conditional)
                precondition(reply.status == 304)
            },
            Row("store over a replayed answer (no network), uncached GET", bytes: "0") { _ = try await replayStore.response(for: uncached) },
            Row("store over a replayed answer (no network), active read (cache + 304)", bytes: "0") { _ = try await replayStore.response(for: cached) },
            Row("TechnicalCache refresh after a 304", bytes: "0") {
                _ = try await floorCache.refresh(for: url + "#etag", with304Headers: [:], revalidating: stored)
            },
            Row("URLSession + URLCache, cached (entries stored by hand)", bytes: "0") { _ = try await session.data(for: peerCached) },
            Row("URLSession, uncached GET", bytes: "\(data.count)+headers") { _ = try await session.data(for: peerUncached) },
            Row("store, uncached GET, telemetry disabled", bytes: "\(fullBytes)") { _ = try await quietStore.response(for: uncached) },
            Row("store, passive read, telemetry disabled", bytes: "0") { _ = try await quietPassiveStore.response(for: cached) },
        ]
        try await interleave(rows, iterations: iterations)
        if only != nil {
            for row in rows where !row.timings.isEmpty {
                print("\(label) | \(row.label) | median \(formatDuration(row.samples.median)) | CPU \(formatDuration(row.cpuPerCall))")
            }
            continue
        }
        for row in rows {
            table.append([label, row.label, formatDuration(row.samples.median), formatDuration(row.samples.percentile(99)),
                          formatDuration(row.cpuPerCall), row.bytes])
        }
        let uncachedRow = rows[0], activeRow = rows[2], passiveRow = rows[3], executeRow = rows[4], eventsRow = rows[5], floorRow = rows[6], diskFloorRow = rows[7]
        verdicts.append(String(format: "%@: active read %.2f× the uncached GET (target ≤ %@), client CPU %@ vs %@ (target ≤ uncached + 15 µs); passive %.1f× faster than uncached, %.2f× the lookup floor; execute + result() %.2f× and every event %.2f× the direct passive read (target ≤ 2×), every event %.2f× the held lookup and %.2f× the lookup from disk (target ≤ 3×); a 304 costs %.2f%% of a full read's bytes",
                               label, activeRow.samples.median / uncachedRow.samples.median, label == "1 KiB" ? "1.15×" : "1.0×",
                               formatDuration(activeRow.cpuPerCall), formatDuration(uncachedRow.cpuPerCall),
                               uncachedRow.samples.median / passiveRow.samples.median, passiveRow.samples.median / floorRow.samples.median,
                               executeRow.samples.median / passiveRow.samples.median, eventsRow.samples.median / passiveRow.samples.median,
                               eventsRow.samples.median / floorRow.samples.median, eventsRow.samples.median / diskFloorRow.samples.median,
                               Double(revalidationBytes) / Double(fullBytes) * 100))
        let replayedUncached = rows[10], replayedActive = rows[11]
        verdicts.append(String(format: "%@: the store's own work over a replayed answer (no network): active read (cache + 304) %@ (CPU %@) vs uncached GET %@ (CPU %@) — the 304's cache work costs the store %@",
                               label, formatDuration(replayedActive.samples.median), formatDuration(replayedActive.cpuPerCall),
                               formatDuration(replayedUncached.samples.median), formatDuration(replayedUncached.cpuPerCall),
                               formatDuration(replayedActive.samples.median - replayedUncached.samples.median)))
        let quietUncached = rows[rows.count - 2], quietPassive = rows[rows.count - 1]
        verdicts.append(String(format: "%@: telemetry with no-op backends (the default) costs %+.1f%% on the uncached GET (CPU %+.1f%%) and %+.1f%% on the passive read (CPU %+.1f%%) against the same stores with telemetry disabled (target ≤ 2%%)",
                               label, (uncachedRow.samples.median / quietUncached.samples.median - 1) * 100,
                               (uncachedRow.cpuPerCall / quietUncached.cpuPerCall - 1) * 100,
                               (passiveRow.samples.median / quietPassive.samples.median - 1) * 100,
                               (passiveRow.cpuPerCall / quietPassive.cpuPerCall - 1) * 100))
        if only == nil {
            let uncachedPair = try await paired(iterations: iterations, { _ = try await store.response(for: uncached) },
                                                { _ = try await quietStore.response(for: uncached) })
            let control = try await paired(iterations: iterations, { _ = try await quietTwin.response(for: uncached) },
                                           { _ = try await quietStore.response(for: uncached) })
            let passivePair = try await paired(iterations: iterations, { _ = try await passiveStore.response(for: cached) },
                                               { _ = try await quietPassiveStore.response(for: cached) })
            let barePair = try await paired(iterations: iterations, { _ = try await store.response(for: uncached) },
                                            { _ = try await transport.send(TransportRequest(url: url)) })
            verdicts.append(String(format: "%@: store uncached GET ÷ bare CurlTransport GET, call by call in alternation (%d pairs): %.3f× (%@ vs %@; median difference %+.1f%%) (target ≤ 1.10×)",
                                   label, iterations, barePair.a / barePair.b, formatDuration(barePair.a), formatDuration(barePair.b), barePair.difference * 100))
            let activePair = try await paired(iterations: iterations, { _ = try await periodicStore.response(for: cached) },
                                              { _ = try await store.response(for: uncached) })
            let executePair = try await paired(iterations: iterations, { _ = try await passiveStore.execute(cached).result() },
                                               { _ = try await passiveStore.response(for: cached) })
            verdicts.append(String(format: "%@: call by call in alternation (%d pairs): active read (periodic sync) ÷ uncached GET %.3f× (%@ vs %@; target ≤ %@); execute + result() ÷ the direct passive read %.3f× (%@ vs %@; target ≤ 2×)",
                                   label, iterations, activePair.a / activePair.b, formatDuration(activePair.a), formatDuration(activePair.b),
                                   label == "1 KiB" ? "1.15×" : "1.0×", executePair.a / executePair.b, formatDuration(executePair.a),
                                   formatDuration(executePair.b)))
            verdicts.append(String(format: "%@: telemetry with no-op backends, call by call in alternation (%d pairs): uncached GET %+.1f%% (%@ vs %@), passive read %+.1f%% (%@ vs %@); A/A control, two stores with telemetry disabled: %+.1f%% (target ≤ 2%%)",
                                   label, iterations, uncachedPair.difference * 100, formatDuration(uncachedPair.a), formatDuration(uncachedPair.b),
                                   passivePair.difference * 100, formatDuration(passivePair.a), formatDuration(passivePair.b), control.difference * 100))
        }
    }

    if only != nil { return }
    print("Machine: \(machineDescription()); load average at the start: \(loadAverage())")
    printTable(title: "OnlineODataStore reads vs their floors and URLSession (nginx on loopback, \(iterations) samples each, 5 interleaved rounds)",
               header: ["size", "read", "median", "p99", "client CPU / read", "bytes on the wire / read"], rows: table)
    print("")
    for verdict in verdicts { print("- " + verdict) }

    try await slowBackEnds(directory: directory, iterations: max(iterations / 20, 40))
    for readers in concurrentReaders { try await concurrentReads(store: periodicStore, readers: readers, reads: iterations * 4) }

    store.close()
    periodicStore.close()
    quietStore.close()
    quietTwin.close()
    quietPassiveStore.close()
    passiveStore.close()
    floorCache.close()
    diskFloorCache.close()
}

/// Time to first data: with a back end that answers after 5 or 50 ms, the cached copy reaches the caller of an
/// active read (its `cacheResponse` event) long before the server's answer.
func slowBackEnds(directory: URL, iterations: Int) async throws {
    var table: [[String]] = []
    var verdicts: [String] = []
    for delay in [5, 50] {
        let server = try DelayServer(delayMilliseconds: delay)
        defer { server.stop() }
        var options = OnlineStoreOptions()
        options.storeDirectory = directory
        options.storeName = "slow-\(delay)"
        options.cacheEncryptionKey = "benchmark passphrase"
        let store = try OnlineODataStore(serviceRoot: "http://127.0.0.1:\(server.port)/", options: options)
        try await store.open()
        defer { store.close() }
        let request = ODataRequest.get("Products")
        _ = try await store.response(for: request)
        var firstData: [Double] = []
        var serverAnswer: [Double] = []
        for _ in 0..<iterations {
            let start = DispatchTime.now().uptimeNanoseconds
            for await event in store.execute(request).events {
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
                if case .cacheResponse(let cached) = event, cached != nil { firstData.append(elapsed) }
                if case .serverResponse = event { serverAnswer.append(elapsed) }
                if case .finished = event { break }
            }
        }
        try store.setMode(.passive)
        let passive = try await measureAsync("passive", iterations: iterations) { _ = try await store.response(for: request) }
        // The same passive read after the same idle wait as each active read above (cold caches, a parked thread).
        var idle: [Double] = []
        for _ in 0..<iterations {
            try await Task.sleep(for: .milliseconds(delay))
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try await store.response(for: request)
            idle.append(Double(DispatchTime.now().uptimeNanoseconds - start))
        }
        let passiveAfterIdle = Samples(name: "idle", nanoseconds: idle)
        let first = Samples(name: "first", nanoseconds: firstData)
        let answer = Samples(name: "answer", nanoseconds: serverAnswer)
        table.append(["\(delay) ms", formatDuration(first.median), formatDuration(answer.median), formatDuration(passive.median),
                      formatDuration(passiveAfterIdle.median)])
        verdicts.append(String(format: "%d ms back end: the cached copy arrives in %.2f× a passive read after the same idle wait (%.2f× one in a hot loop; target ≤ 2×), %.0f× sooner than the server's answer",
                               delay, first.median / passiveAfterIdle.median, first.median / passive.median, answer.median / first.median))
    }
    printTable(title: "Active reads from a slow back end (Python http.server adding a fixed delay; 1 KiB, with ETag)",
               header: ["back end delay", "cached copy (first event with data), median", "server's answer (304), median", "passive read in a hot loop",
                        "passive read after the same idle wait"], rows: table)
    print("")
    for verdict in verdicts { print("- " + verdict) }
}

/// `readers` concurrent readers, each on its own URL: active reads against uncached reads, requests per second.
func concurrentReads(store: OnlineODataStore, readers: Int, reads: Int) async throws {
    func run(cached: Bool) async throws -> (perSecond: Double, cpu: Double) {
        let perTask = reads / readers
        let cpuStart = processCPUNanoseconds()
        let start = DispatchTime.now().uptimeNanoseconds
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<readers {
                group.addTask {
                    let request = ODataRequest(resourcePath: "c\(index).json", useCache: cached)
                    for _ in 0..<perTask { _ = try await store.response(for: request) }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        // The CPU of the refreshes the run left to write in the background is the run's (see `settle`).
        try await Task.sleep(for: settle)
        return (Double(perTask * readers) / seconds, (processCPUNanoseconds() - cpuStart) / Double(perTask * readers))
    }
    for index in 0..<readers { _ = try await store.response(for: .get("c\(index).json")) }
    var active: [Double] = [], uncached: [Double] = [], activeCPU: [Double] = [], uncachedCPU: [Double] = []
    for round in 0..<5 {
        for cached in round % 2 == 0 ? [true, false] : [false, true] where concurrentHalf == nil || concurrentHalf == cached {
            let result = try await run(cached: cached)
            if cached { active.append(result.perSecond); activeCPU.append(result.cpu) } else { uncached.append(result.perSecond); uncachedCPU.append(result.cpu) }
        }
    }
    func median(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.sorted()[values.count / 2] }
    printTable(title: "\(readers) concurrent readers, 1 KiB each on its own URL (\(reads / readers * readers) reads per run, median of 5 interleaved runs)",
               header: ["read", "requests/s", "client CPU / read"],
               rows: [["active (cache + 304)", String(format: "%.0f", median(active)), formatDuration(median(activeCPU))],
                      ["uncached", String(format: "%.0f", median(uncached)), formatDuration(median(uncachedCPU))]])
    print("")
    print(String(format: "- %d concurrent active reads: %.2f× the requests/s of %d concurrent uncached reads (target ≥ 1.0×)", readers, median(active) / median(uncached), readers))
}

// The main thread waits on a semaphore rather than running an async main: an async main parks it in libdispatch's
// sigsuspend, whose signal mask valgrind 3.19 writes to (read-only memory: valgrind dies), and the instruction-count
// mode runs under valgrind.
let finished = DispatchSemaphore(value: 0)
nonisolated(unsafe) var failure: (any Error)?
Task.detached {
    do { try await runBenchmarks() } catch { failure = error }
    finished.signal()
}
finished.wait()
if let failure {
    print("OnlineBenchmarks failed: \(failure)")
    exit(1)
}
