// The cache at scale (issue 31): N entries of mixed sizes under a budget below their bytes, so that eviction
// runs all the time, then a Zipf-like mix of lookups, writes and 304 refreshes — each operation timed on its
// own, the longest pause a caller saw, the evictions each store saw, and the resident memory by kind. Then N/2 new
// keys handed to the cache's writer as an online read's answers are (`storeBehind`): the read's wait for the cache.
//
// `CACHE_SCALE=1000,100000` picks the Ns (default 1k, 100k, 1M); `CACHE_SCALE_OPS` the operations of the
// mix (default: N, at least 50k and at most 300k); `CACHE_SCALE_MEMORY` the cache's `memoryBudget` in bytes (a
// diagnostic: 0 sends every lookup to the disk; default the configuration's 16 MiB).
//
// Besides the rows the targets read, it prints the lookups by payload band (so that the sizes' spread is told
// apart from the cost of scale) and every fill store slower than `slowStoreNanoseconds`, with the kernel's
// dirty and writeback pages right after it and the data file's size against the map LMDB was opened with.
import BenchmarkKit
import Foundation
import HTTPTypes
import TechnicalCache

/// What answered a lookup: an entry held decoded in memory (`CacheStatistics.memoryHits`), the disk's value
/// (read and decrypted), or nothing (a miss: never stored or evicted). The tiers cost differently whatever N is;
/// the mix's share of each moves with N (the tier holds the same bytes at every N).
let lookupTiers = ["memory hit", "disk read", "miss"]

/// The payload bands the lookups are split by (the payload sizes span 0.5–64 KiB: a lookup decrypts and copies it).
let payloadBands: [(name: String, bytes: Range<Int>)] = [
    ("< 2 KiB", 0..<2048), ("2–8 KiB", 2048..<8192), ("8–32 KiB", 8192..<32_768), ("≥ 32 KiB", 32_768..<Int.max),
]

/// A fill store slower than this is listed with what the kernel and the file looked like right after it.
let slowStoreNanoseconds: UInt64 = 5_000_000

/// One slow fill store: when, how many entries it evicted, and the kernel's dirty and writeback pages after it.
struct SlowStore {
    var index: Int
    var atSeconds: Double
    var nanoseconds: Double
    var evictions: Int
    var fileBytes: Int
    var dirtyPages: Int
    var writebackPages: Int
}

func fileBytes(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
}

struct ScaleResult {
    var n: Int
    var fillPerEntry: Double
    var fillStore: Samples
    var lookup: Samples
    /// The lookups by `payloadBands`.
    var lookupBands: [Samples]
    /// The lookups by what answered them (`lookupTiers`): an entry held in memory, the disk's value, nothing.
    var lookupTiers: [Samples]
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
    /// The map LMDB was opened with (`ResponseCache`: 2 × the budget, rounded up to a MiB) and the data file's size
    /// after the fill and at the end: a file larger than the map means the map grew.
    var initialMap: Int
    var fileAfterFill: Int
    var fileAtEnd: Int
    var slowFillStores: [SlowStore]
    var maxDirtyPages: Int
    var memoryBudget: Int
    /// An online read's wait for the cache (issue 45 part 3): the hand-over of each answer to the cache's writer
    /// (`storeBehind`) during a second fill of N/2 new keys, all with eviction; the same URL looked up right after.
    var readWait: Samples
    /// Lookups right after a hand-over that did not find the entry (a reader reads its own write: 0).
    var ownWriteMisses: Int
    /// The hand-overs shed (`CacheStatistics.shedWrites`): the writer was behind by more than it may hold.
    var shed: Int
    /// The second fill from its first hand-over to the last commit, per entry; the wait for the writer at its end.
    var behindFillPerEntry: Double
    var behindFlush: Double
}


func runScale(n: Int, operations: Int, root: String, headers: HTTPFields) async throws -> ScaleResult {
    let directory = root + "/scale-\(n)"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    // The working set's bytes (payload plus the headers, sealing and bookkeeping, about 300 bytes): the budget is 60 % of it.
    let workingSet = (0..<n).reduce(0) { $0 + scalePayloadSize($1) + 300 }
    let budget = workingSet * 6 / 10
    var configuration = CacheConfiguration(
        sizeLimit: budget, keyDerivation: .pbkdf2(rounds: 1000), durability: .periodic(interval: .seconds(3600)))
    if let memory = ProcessInfo.processInfo.environment["CACHE_SCALE_MEMORY"].flatMap({ Int($0) }) { configuration.memoryBudget = memory }
    let cache = try ResponseCache(directory: directory, configuration: configuration)
    try cache.open(encryption: .key("benchmark key"))
    let dataFile = directory + "/data.mdb"
    let initialMap = max(4 << 20, (budget * 2 + 0xFFFFF) & ~0xFFFFF)
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
    var lastEvictions = 0
    func timedStore(_ index: Int, version: Int) async throws -> Double {
        let before = cache.statistics.evictions
        let start = now()
        try await cache.store(entry(index, version: version), for: url(index))
        let elapsed = now() - start
        let evicted = cache.statistics.evictions - before
        evictionsSeen += evicted
        lastEvictions = evicted
        maxEvictions = max(maxEvictions, evicted)
        stores += 1
        longest = max(longest, elapsed)
        return Double(elapsed)
    }

    // The fill: every key once, in order; eviction starts at 60 %.
    var fillTimes: [Double] = []
    fillTimes.reserveCapacity(n)
    var slowStores: [SlowStore] = []
    var maxDirty = 0
    let fillStart = now()
    for index in 0..<n {
        let elapsed = try await timedStore(index, version: 0)
        fillTimes.append(elapsed)
        if UInt64(elapsed) > slowStoreNanoseconds {
            let pages = try dirtyPages()
            slowStores.append(SlowStore(index: index, atSeconds: Double(now() - fillStart) / 1e9, nanoseconds: elapsed, evictions: lastEvictions,
                                        fileBytes: fileBytes(dataFile), dirtyPages: pages.dirty, writebackPages: pages.writeback))
        }
        if index % 10_000 == 0 {
            sample()
            maxDirty = max(maxDirty, try dirtyPages().dirty)
        }
    }
    let fillPerEntry = Double(now() - fillStart) / Double(n)
    let fileAfterFill = fileBytes(dataFile)

    // The mix: keys by a Zipf-like law (rank r with probability ∝ 1/r), spread over the key space; 80 %
    // lookups, 10 % writes of a new version, 10 % a lookup answered by a 304 refresh (a write when it misses).
    var lookups: [Double] = []
    var lookupBytes: [Int] = []
    var lookupTier: [Int] = []
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
        let memoryHits = cache.counts.memoryHits
        let start = now()
        let found = try cache.entry(for: url(index))
        let elapsed = now() - start
        longest = max(longest, elapsed)
        lookups.append(Double(elapsed))
        lookupBytes.append(scalePayloadSize(index))
        lookupTier.append(found == nil ? 2 : cache.counts.memoryHits > memoryHits ? 0 : 1)
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
    let fileAtEnd = fileBytes(dataFile)

    // An online read's path (issue 45 part 3): N/2 new keys handed to the cache's writer as `CachingTransport` does
    // after a 200, each timed from the call to its return (what the read's caller waits for), then looked up.
    var waits: [Double] = []
    waits.reserveCapacity(n / 2)
    var ownWriteMisses = 0
    let behindStart = now()
    for index in n..<(n + n / 2) {
        let start = now()
        try await cache.storeBehind(entry(index, version: 0), for: url(index), keepingNewer: true)
        waits.append(Double(now() - start))
        if try cache.entry(for: url(index)) == nil { ownWriteMisses += 1 }
        if index % 10_000 == 0 { sample() }
    }
    let flushStart = now()
    await cache.flushPendingWrites()
    let behindEnd = now()
    let shed = cache.statistics.shedWrites
    cache.close()
    let bands = payloadBands.map { band in
        Samples(name: band.name, nanoseconds: zip(lookups, lookupBytes).filter { band.bytes.contains($0.1) }.map(\.0))
    }
    return ScaleResult(
        n: n, fillPerEntry: fillPerEntry, fillStore: Samples(name: "fill store", nanoseconds: fillTimes),
        lookup: Samples(name: "lookup", nanoseconds: lookups), lookupBands: bands,
        lookupTiers: lookupTiers.indices.map { tier in
            Samples(name: lookupTiers[tier], nanoseconds: zip(lookups, lookupTier).filter { $0.1 == tier }.map(\.0))
        }, store: Samples(name: "store", nanoseconds: writes),
        refresh: Samples(name: "refresh", nanoseconds: refreshes), longestPause: Double(longest),
        evictionsPerStore: Double(evictionsSeen) / Double(max(stores, 1)), maxEvictionsInOneStore: maxEvictions,
        hitRate: Double(hits) / Double(max(lookups.count, 1)), peakRSS: peakResidentBytes(),
        peakAnonymous: peak.anonymous, peakFile: peak.file, entries: statistics.entryCount, budget: budget, load: loadAverage(),
        initialMap: initialMap, fileAfterFill: fileAfterFill, fileAtEnd: fileAtEnd, slowFillStores: slowStores, maxDirtyPages: maxDirty,
        memoryBudget: configuration.memoryBudget, readWait: Samples(name: "read's wait", nanoseconds: waits), ownWriteMisses: ownWriteMisses, shed: shed,
        behindFillPerEntry: Double(behindEnd - behindStart) / Double(max(n / 2, 1)), behindFlush: Double(behindEnd - flushStart))
}

func megabytes(_ bytes: Int) -> String { String(format: "%.0f MiB", Double(bytes) / 1_048_576) }

func printScale(_ results: [ScaleResult]) {
    func triple(_ samples: Samples) -> String { samples.p50p99Max }
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
    printTable(title: "An online read's wait for the cache: N/2 new keys handed to the cache's writer (storeBehind) with eviction; p50 / p99 / p99.9 / max",
               header: ["N", "read's wait", "shed (writer behind)", "own write missed", "fill per entry (to the last commit)", "wait for the writer at the end"],
               rows: results.map { result in
        let wait = result.readWait
        return [String(result.n),
                "\(formatDuration(wait.median)) / \(formatDuration(wait.percentile(99))) / \(formatDuration(wait.percentile(99.9))) / \(formatDuration(wait.nanoseconds.last ?? .nan))",
                String(result.shed), String(result.ownWriteMisses), formatDuration(result.behindFillPerEntry), formatDuration(result.behindFlush)]
    })
    printScaleDiagnostics(results)
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
    print("The read's longest wait for the cache at N = \(last.n): \(formatDuration(last.readWait.nanoseconds.last ?? .nan)) (target ≤ 10 ms; a fill store's longest: \(formatDuration(last.fillStore.nanoseconds.last ?? .nan)))")
    print(String(format: "Targets at N = %d: lookup p99 ÷ p50 %.2f× (≤ 3×), lookup max %@ (≤ 5 ms), store p99.9 %@ (≤ 1 ms), store max %@ (≤ 10 ms)",
                 last.n, last.lookup.percentile(99) / last.lookup.median, formatDuration(last.lookup.nanoseconds.last ?? .nan),
                 formatDuration(last.store.percentile(99.9)), formatDuration(max(last.store.nanoseconds.last ?? 0, last.fillStore.nanoseconds.last ?? 0))))
}

/// The rows that explain the targets' rows: lookups by payload band, the map against the file, the slow fill stores.
func printScaleDiagnostics(_ results: [ScaleResult]) {
    func ratio(_ a: Double, _ b: Double) -> String { String(format: "%.2f×", b / a) }
    printTable(title: "Lookups by payload band: p50 / p99 / max (count), p99 ÷ p50", header: ["N", "memory budget"] + payloadBands.map(\.name),
               rows: results.map { result in
        [String(result.n), megabytes(result.memoryBudget)] + result.lookupBands.map { band in
            "\(band.p50p99Max) "
                + "(\(band.nanoseconds.count)), \(ratio(band.median, band.percentile(99)))"
        }
    })
    if let first = results.first, let last = results.last, last.n > first.n {
        print("Lookup p50 growth by band from N = \(first.n) to N = \(last.n): " + zip(first.lookupBands, last.lookupBands).enumerated().map { item in
            "\(payloadBands[item.offset].name) \(ratio(item.element.0.median, item.element.1.median))"
        }.joined(separator: ", "))
    }
    printTable(title: "Lookups by what answered them: share, p50 / p99 / max, p99 ÷ p50", header: ["N"] + lookupTiers,
               rows: results.map { result in
        let total = Double(max(result.lookup.nanoseconds.count, 1))
        return [String(result.n)] + result.lookupTiers.map { tier in
            String(format: "%.1f %%, ", Double(tier.nanoseconds.count) * 100 / total)
                + "\(tier.p50p99Max), "
                + ratio(tier.median, tier.percentile(99))
        }
    })
    if let first = results.first, let last = results.last, last.n > first.n {
        print("Lookup p50 growth by tier from N = \(first.n) to N = \(last.n): " + zip(first.lookupTiers, last.lookupTiers).map { pair in
            "\(pair.0.name) \(pair.0.nanoseconds.isEmpty || pair.1.nanoseconds.isEmpty ? "—" : ratio(pair.0.median, pair.1.median))"
        }.joined(separator: ", "))
    }
    printTable(title: "The LMDB map and the kernel's dirty pages (4 KiB pages, whole machine) during the fill",
               header: ["N", "map at open", "data file after fill", "at end", "map grew", "max nr_dirty (every 10k stores)", "fill stores > 5 ms"],
               rows: results.map { result in
        [String(result.n), megabytes(result.initialMap), megabytes(result.fileAfterFill), megabytes(result.fileAtEnd),
         result.fileAtEnd > result.initialMap ? "yes" : "no", String(result.maxDirtyPages), String(result.slowFillStores.count)]
    })
    let slow = results.flatMap { result in result.slowFillStores.map { (result.n, $0) } }.sorted { $0.1.nanoseconds > $1.1.nanoseconds }.prefix(12)
    guard !slow.isEmpty else { return }
    printTable(title: "The slowest fill stores (> 5 ms), with the kernel's state right after each",
               header: ["N", "store #", "at", "took", "evictions", "data file", "nr_dirty", "nr_writeback"], rows: slow.map { n, store in
        [String(n), String(store.index), String(format: "%.1f s", store.atSeconds), formatDuration(store.nanoseconds), String(store.evictions),
         megabytes(store.fileBytes), String(store.dirtyPages), String(store.writebackPages)]
    })
}
