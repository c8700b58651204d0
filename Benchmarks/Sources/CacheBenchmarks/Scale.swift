// The cache at scale (issue 31): N entries of mixed sizes under a budget below their bytes, so that eviction
// runs all the time, then a Zipf-like mix of lookups, writes and 304 refreshes — each operation timed on its
// own, the longest pause a caller saw, the evictions each store saw, and the resident memory by kind.
//
// `CACHE_SCALE=1000,100000` picks the Ns (default 1k, 100k, 1M); `CACHE_SCALE_OPS` the operations of the
// mix (default: N, at least 50k and at most 300k).
import BenchmarkKit
import Foundation
import HTTPTypes
import TechnicalCache

/// A deterministic 64-bit mix (SplitMix64's finalizer): the same N gives the same sizes and keys.
func splitMix(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

/// The payload size of key `index`: log-uniform between 0.5 and 64 KiB.
func scalePayloadSize(_ index: Int) -> Int {
    let unit = Double(splitMix(UInt64(index)) >> 11) / Double(1 << 53)
    return Int(512 * pow(128, unit))
}

struct ScaleResult {
    var n: Int
    var fillPerEntry: Double
    var fillStore: Samples
    var lookup: Samples
    var store: Samples
    var refresh: Samples
    var longestPause: Double
    var evictionsPerStore: Double
    var maxEvictionsInOneStore: Int
    var hitRate: Double
    var peakRSS: Int
    var peakAnonymous: Int
    var peakFile: Int
    var entries: Int
    var budget: Int
    /// The load average (1, 5, 15 minutes) when the run ended: the machine may be shared.
    var load: String
}

func loadAverage() -> String {
    let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}

func runScale(n: Int, operations: Int, root: String, headers: HTTPFields) async throws -> ScaleResult {
    let directory = root + "/scale-\(n)"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    // The working set's bytes (payload plus the headers, sealing and bookkeeping, about 300 bytes): the budget is 60 % of it.
    let workingSet = (0..<n).reduce(0) { $0 + scalePayloadSize($1) + 300 }
    let budget = workingSet * 6 / 10
    let cache = try ResponseCache(directory: directory, configuration: CacheConfiguration(
        sizeLimit: budget, keyDerivation: .pbkdf2(rounds: 1000), durability: .periodic(interval: .seconds(3600))))
    try cache.open(encryption: .key("benchmark key"))
    var generator = SystemRandomNumberGenerator()
    let noise = Data((0..<(64 << 10)).map { _ in UInt8.random(in: 0...255, using: &generator) })
    func url(_ index: Int) -> String { "https://services.example/sap/opu/odata4/svc/Items(\(index))?$select=ID,Name,Price" }
    func entry(_ index: Int, version: Int) -> CacheEntry {
        var fields = headers
        fields[.eTag] = "W/\"\(index)-\(version)\""
        return CacheEntry(status: 200, headers: fields, payload: noise.prefix(scalePayloadSize(index)))
    }
    func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    resetPeakResidentBytes()
    var peak = residentBreakdown()
    func sample() {
        let current = residentBreakdown()
        peak = (max(peak.anonymous, current.anonymous), max(peak.file, current.file))
    }
    var longest: UInt64 = 0
    var evictionsSeen = 0
    var maxEvictions = 0
    var stores = 0
    func timedStore(_ index: Int, version: Int) async throws -> Double {
        let before = cache.statistics.evictions
        let start = now()
        try await cache.store(entry(index, version: version), for: url(index))
        let elapsed = now() - start
        let evicted = cache.statistics.evictions - before
        evictionsSeen += evicted
        maxEvictions = max(maxEvictions, evicted)
        stores += 1
        longest = max(longest, elapsed)
        return Double(elapsed)
    }

    // The fill: every key once, in order; eviction starts at 60 %.
    var fillTimes: [Double] = []
    fillTimes.reserveCapacity(n)
    let fillStart = now()
    for index in 0..<n {
        fillTimes.append(try await timedStore(index, version: 0))
        if index % 10_000 == 0 { sample() }
    }
    let fillPerEntry = Double(now() - fillStart) / Double(n)

    // The mix: keys by a Zipf-like law (rank r with probability ∝ 1/r), spread over the key space; 80 %
    // lookups, 10 % writes of a new version, 10 % a lookup answered by a 304 refresh (a write when it misses).
    var lookups: [Double] = []
    var writes: [Double] = []
    var refreshes: [Double] = []
    var hits = 0
    var versions: [Int: Int] = [:]
    for operation in 0..<operations {
        let unit = Double.random(in: 0..<1, using: &generator)
        let rank = min(Int(pow(Double(n), unit)) - 1, n - 1)
        let index = Int((UInt64(rank) &* 2_654_435_761) % UInt64(n))
        let kind = Int.random(in: 0..<10, using: &generator)
        if kind == 0 {
            versions[index, default: 0] += 1
            writes.append(try await timedStore(index, version: versions[index, default: 0]))
            continue
        }
        let start = now()
        let found = try cache.entry(for: url(index))
        let elapsed = now() - start
        longest = max(longest, elapsed)
        lookups.append(Double(elapsed))
        if found != nil { hits += 1 }
        if kind == 1 {
            if let found {
                let refreshStart = now()
                _ = try await cache.refresh(for: url(index), with304Headers: [.eTag: found.etag ?? ""], revalidating: found)
                let refreshElapsed = now() - refreshStart
                longest = max(longest, refreshElapsed)
                refreshes.append(Double(refreshElapsed))
            } else {
                writes.append(try await timedStore(index, version: versions[index, default: 0]))
            }
        }
        if operation % 10_000 == 0 { sample() }
    }
    sample()
    let statistics = cache.statistics
    cache.close()
    return ScaleResult(
        n: n, fillPerEntry: fillPerEntry, fillStore: Samples(name: "fill store", nanoseconds: fillTimes),
        lookup: Samples(name: "lookup", nanoseconds: lookups), store: Samples(name: "store", nanoseconds: writes),
        refresh: Samples(name: "refresh", nanoseconds: refreshes), longestPause: Double(longest),
        evictionsPerStore: Double(evictionsSeen) / Double(max(stores, 1)), maxEvictionsInOneStore: maxEvictions,
        hitRate: Double(hits) / Double(max(lookups.count, 1)), peakRSS: peakResidentBytes(),
        peakAnonymous: peak.anonymous, peakFile: peak.file, entries: statistics.entryCount, budget: budget, load: loadAverage())
}

func megabytes(_ bytes: Int) -> String { String(format: "%.0f MiB", Double(bytes) / 1_048_576) }

func printScale(_ results: [ScaleResult]) {
    func triple(_ samples: Samples) -> String {
        "\(formatDuration(samples.median)) / \(formatDuration(samples.percentile(99))) / \(formatDuration(samples.nanoseconds.last ?? .nan))"
    }
    printTable(title: "The cache at scale: N keys of 0.5–64 KiB (log-uniform), budget 60 % of their bytes, `.periodic` durability; p50 / p99 / max",
               header: ["N", "load at end", "entries kept", "fill per entry", "fill store p99.9", "lookup", "store", "store p99.9", "refresh (304)",
                        "longest pause", "evictions per store (max in one)", "hit rate", "peak RSS (anon / file max)"],
               rows: results.map { result in
        [String(result.n), result.load, String(result.entries), formatDuration(result.fillPerEntry), formatDuration(result.fillStore.percentile(99.9)),
         triple(result.lookup), triple(result.store), formatDuration(result.store.percentile(99.9)), triple(result.refresh),
         formatDuration(result.longestPause),
         String(format: "%.2f (%d)", result.evictionsPerStore, result.maxEvictionsInOneStore),
         String(format: "%.0f %%", result.hitRate * 100),
         "\(megabytes(result.peakRSS)) (\(megabytes(result.peakAnonymous)) / \(megabytes(result.peakFile)))"]
    })
    guard let first = results.first, let last = results.last, last.n > first.n else { return }
    func ratio(_ a: Double, _ b: Double) -> String { String(format: "%.2f×", b / a) }
    func growth(_ name: String, _ pick: (ScaleResult) -> Samples) -> [String] {
        let a = pick(first), b = pick(last)
        return [name, ratio(a.median, b.median), ratio(a.percentile(99), b.percentile(99)), ratio(a.nanoseconds.last ?? .nan, b.nanoseconds.last ?? .nan)]
    }
    printTable(title: "Growth from N = \(first.n) to N = \(last.n)", header: ["operation", "p50", "p99", "max"], rows: [
        growth("lookup", \.lookup), growth("store", \.store), growth("refresh", \.refresh), growth("fill store", \.fillStore),
        ["longest pause", "", "", ratio(first.longestPause, last.longestPause)],
        ["fill per entry", ratio(first.fillPerEntry, last.fillPerEntry), "", ""],
    ])
    if let middle = results.dropLast().last(where: { $0.n < last.n && $0.n >= last.n / 10 }) {
        print(String(format: "Fill per entry at %d ÷ at %d: %.2f× (target ≤ 1.5×)", last.n, middle.n, last.fillPerEntry / middle.fillPerEntry))
    }
    print(String(format: "Targets at N = %d: lookup p99 ÷ p50 %.2f× (≤ 3×), lookup max %@ (≤ 5 ms), store p99.9 %@ (≤ 1 ms), store max %@ (≤ 10 ms)",
                 last.n, last.lookup.percentile(99) / last.lookup.median, formatDuration(last.lookup.nanoseconds.last ?? .nan),
                 formatDuration(last.store.percentile(99.9)), formatDuration(max(last.store.nanoseconds.last ?? 0, last.fillStore.nanoseconds.last ?? 0))))
}
