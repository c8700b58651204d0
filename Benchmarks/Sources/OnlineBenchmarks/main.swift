// OnlineBenchmarks: reads through OnlineODataStore — uncached, active (cache + 304) and passive — beside the
// TechnicalCache lookup floor and URLSession with a URLCache, against one nginx on loopback, in one run.
import BenchmarkKit
import Foundation
import ODataCore
import OnlineStore
import TechnicalCache
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything runs off the main actor, as service code does: top-level code is main-actor isolated,
/// and every await from it would add two thread hops to each measured read.
nonisolated func runBenchmarks() async throws {
    let iterations = Int(ProcessInfo.processInfo.environment["ONLINE_BENCH_ITERATIONS"] ?? "") ?? 2_000
    let files = ["small.json": jsonFile(bytes: 1_024), "medium.json": jsonFile(bytes: 64 * 1_024)]
    let nginx = try Nginx.start(files: files)
    defer { nginx.stop() }
    let root = "http://127.0.0.1:\(nginx.port)/"
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("online-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }

    var options = OnlineStoreOptions()
    options.storeDirectory = directory
    options.cacheEncryptionKey = "benchmark passphrase"
    options.cacheSizeLimit = 64 << 20
    let store = try OnlineODataStore(serviceRoot: root, options: options)
    try await store.open()
    var periodicOptions = options
    periodicOptions.storeName = "periodic"
    periodicOptions.cacheDurability = .periodic(interval: .seconds(1))
    let periodicStore = try OnlineODataStore(serviceRoot: root, options: periodicOptions)
    try await periodicStore.open()

    // The floor: the same kind of entry looked up straight from a ResponseCache of its own.
    let floorCache = try ResponseCache(directory: directory.appendingPathComponent("floor").path, configuration: CacheConfiguration())
    try floorCache.open(encryption: .key("benchmark passphrase"))

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

    var rows: [[String]] = []
    var verdicts: [String] = []
    for (name, label) in [("small.json", "1 KiB"), ("medium.json", "64 KiB")] {
        let cached = ODataRequest.get(name)
        let uncached = ODataRequest(resourcePath: name, useCache: false)
        _ = try await store.response(for: cached) // fill the caches
        _ = try await periodicStore.response(for: cached)
        let fullBytes = try await bytesPerRead { _ = try await store.response(for: uncached) }
        let revalidationBytes = try await bytesPerRead { _ = try await store.response(for: cached) }

        let uncachedSamples = try await measureAsync("uncached", iterations: iterations) { _ = try await store.response(for: uncached) }
        let activeSamples = try await measureAsync("active", iterations: iterations) { _ = try await store.response(for: cached) }
        let periodicSamples = try await measureAsync("active periodic", iterations: iterations) { _ = try await periodicStore.response(for: cached) }
        try store.setMode(.passive)
        let passiveSamples = try await measureAsync("passive", iterations: iterations) { _ = try await store.response(for: cached) }
        let passiveTaskSamples = try await measureAsync("passive task", iterations: iterations) { _ = try await store.execute(cached).result() }
        try store.setMode(.active)

        let url = root + name
        _ = try await floorCache.store(CacheEntry(status: 200, headers: [.init(name: "Content-Type", value: "application/json")], payload: files[name]!), for: url)
        let floorSamples = try measure("floor", iterations: iterations) { _ = try floorCache.entry(for: url) }

        var urlRequest = URLRequest(url: URL(string: url)!)
        let (data, response) = try await session.data(for: urlRequest)
        urlCache.storeCachedResponse(CachedURLResponse(response: response, data: data), for: urlRequest)
        urlRequest.cachePolicy = .returnCacheDataDontLoad
        let peerCachedSamples = try await measureAsync("urlsession cached", iterations: iterations) { _ = try await session.data(for: urlRequest) }
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        let peerUncachedSamples = try await measureAsync("urlsession uncached", iterations: iterations) { _ = try await session.data(for: urlRequest) }

        func row(_ what: String, _ samples: Samples, bytes: String) -> [String] {
            [label, what, formatDuration(samples.median), formatDuration(samples.percentile(99)), bytes]
        }
        rows.append(row("store, uncached GET", uncachedSamples, bytes: "\(fullBytes)"))
        rows.append(row("store, active read (cache + 304), fsync per refresh", activeSamples, bytes: "\(revalidationBytes)"))
        rows.append(row("store, active read (cache + 304), periodic sync", periodicSamples, bytes: "\(revalidationBytes)"))
        rows.append(row("store, passive read", passiveSamples, bytes: "0"))
        rows.append(row("store, passive read through execute(_:) (a task per request)", passiveTaskSamples, bytes: "0"))
        rows.append(row("TechnicalCache lookup (floor)", floorSamples, bytes: "0"))
        rows.append(row("URLSession + URLCache, cached (entries stored by hand)", peerCachedSamples, bytes: "0"))
        rows.append(row("URLSession, uncached GET", peerUncachedSamples, bytes: "\(data.count)+headers"))

        let speedup = uncachedSamples.median / passiveSamples.median
        let overFloor = passiveSamples.median / floorSamples.median
        let wireShare = Double(revalidationBytes) / Double(fullBytes) * 100
        verdicts.append(String(format: "%@: passive is %.1f× faster than uncached (target ≥ 10× at 1 KiB), %.2f× the lookup floor (target ≤ 3×); a 304 costs %.2f%% of a full read's bytes (target ≤ 2%% at 64 KiB); passive vs URLSession+URLCache cached: %.2f×",
                               label, speedup, overFloor, wireShare, peerCachedSamples.median / passiveSamples.median))
    }

    print("Machine: \(machineDescription())")
    printTable(title: "OnlineODataStore reads vs the cache floor and URLSession (nginx on loopback, \(iterations) samples each)",
               header: ["size", "read", "median", "p99", "bytes on the wire / read"], rows: rows)
    print("")
    for verdict in verdicts { print("- " + verdict) }
    store.close()
    periodicStore.close()
    floorCache.close()
}

try await Task.detached { try await runBenchmarks() }.value
