// The soak's memory figures: the library's (this process: the stores, their caches and transports, without
// the producer, which runs in a process of its own) and the producer's, for information.
import Foundation
import CMalloc
import CSQLCipher
import ODataFixtures
#if canImport(Glibc)
import Glibc
#endif

/// One sample of memory, taken at each tenth of the run.
struct MemorySample: Sendable {
    /// This process's resident set (`/proc/self/statm`): everything the library holds in RAM, the mapped LMDB
    /// pages and the program's own code included.
    var resident = 0
    /// The bytes the heap has handed out and not taken back (glibc `mallinfo2()`: `uordblks + hblkhd`, every
    /// arena, chunks served by `mmap` included). Unlike the resident set, this moves with allocations alone, not
    /// with fragmentation, freed pages not yet returned, or pages of mapped files.
    var heap = 0
    /// SQLite's heap (the offline stores' SQLCipher connections), mostly their page caches, with schemas and
    /// prepared statements: `sqlite3_status64(SQLITE_STATUS_MEMORY_USED)`. (`SQLITE_STATUS_PAGECACHE_OVERFLOW`
    /// alone misses pages the cache allocates in bulk: 24 KiB where this says 18 MiB.) Part of `heap`.
    var sqlitePageCache = 0
    /// Resident pages of mapped LMDB files (`data.mdb`, `lock.mdb`; `/proc/self/smaps`): the technical cache's
    /// page cache. Part of `resident`, not of `heap`.
    var lmdbMapped = 0
    /// The producer's resident set (its own process), for information only.
    var producer = 0

    /// The page caches together (SQLite's and LMDB's mapped pages).
    var pageCaches: Int { sqlitePageCache + lmdbMapped }

    /// Samples this process, and the producer when given.
    static func now(producer: FixtureProcess?) -> MemorySample {
        var sample = MemorySample()
        sample.resident = ResidentMemory.bytes()
        let info = mallinfo2()
        sample.heap = Int(info.uordblks) + Int(info.hblkhd)
        var current: sqlite3_int64 = 0
        var highest: sqlite3_int64 = 0
        if sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &current, &highest, 0) == SQLITE_OK { sample.sqlitePageCache = Int(current) }
        sample.lmdbMapped = residentBytesOfMappings { $0.hasSuffix("/data.mdb") || $0.hasSuffix("/lock.mdb") }
        sample.producer = producer?.residentBytes ?? 0
        return sample
    }

    /// The resident bytes of this process's mappings whose header line (`start-end perms offset dev inode path`)
    /// matches (`/proc/self/smaps`).
    static func residentBytesOfMappings(_ matches: (Substring) -> Bool) -> Int {
        // Read to the end through a handle: /proc files report a size of 0.
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/smaps") else { return 0 }
        defer { try? handle.close() }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        var total = 0
        var counting = false
        for line in text.split(separator: "\n") {
            let head = line.prefix { $0 != " " }
            if head.contains("-") && head.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                // A mapping's header: `start-end perms offset dev inode [path]`.
                counting = matches(line)
            } else if counting, line.hasPrefix("Rss:") {
                total += (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
            }
        }
        return total
    }
}

/// The memory samples of a run and the judgement of its last half.
struct MemoryReport {
    /// One sample per tenth of the run (index 0 = the end of the first tenth).
    var tenths: [MemorySample]
    /// The sample just before the load starts (the stores open, nothing read yet).
    var start: MemorySample

    /// Allowed growth of the library's resident set and heap from the baseline to any later tenth.
    static let allowedGrowth = 0.05
    /// Runs shorter than this are too short to warm the page caches; their memory is reported, not judged.
    static let shortestJudgedRun = 60

    /// The first tenth (1-based) at which the page caches were warm: at 95 % or more of the largest value
    /// they reached in the run, and staying there. `nil` if there are no samples.
    var warmTenth: Int? {
        guard let peak = tenths.map(\.pageCaches).max() else { return nil }
        let floor = Double(peak) * 0.95
        var warm = tenths.count
        while warm > 1 && Double(tenths[warm - 2].pageCaches) >= floor { warm -= 1 }
        return warm
    }

    /// The tenth the growth is measured from: the later of the half (tenth 5) and the tenth the page caches were warm.
    var baselineTenth: Int? { warmTenth.map { max(5, $0) } }

    /// The largest growth of a figure from the baseline to any later tenth, in bytes and as a fraction of the baseline.
    func growth(_ figure: (MemorySample) -> Int) -> (bytes: Int, fraction: Double)? {
        guard let baseline = baselineTenth, baseline < tenths.count else { return nil }
        let base = figure(tenths[baseline - 1])
        let highest = tenths[baseline...].map(figure).max() ?? base
        return (highest - base, base > 0 ? Double(highest - base) / Double(base) : 0)
    }

    /// Whether the library's memory (resident set and heap) grew by more than ``allowedGrowth`` after the baseline;
    /// a run whose page caches warmed only in its last tenth (nothing to compare) counts as grown.
    var grew: Bool {
        guard let resident = growth(\.resident), let heap = growth(\.heap) else { return true }
        return resident.fraction > Self.allowedGrowth || heap.fraction > Self.allowedGrowth
    }

    /// The report's lines.
    func lines(seconds: Int) -> [String] {
        func mib(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
        func row(_ name: String, _ figure: (MemorySample) -> Int) -> String {
            "  \(name.padding(toLength: 42, withPad: " ", startingAt: 0)) \(mib(figure(start))) | " + tenths.map { mib(figure($0)) }.joined(separator: " ")
        }
        var lines = ["  memory (MiB) at the start | at each tenth of the run"]
        lines.append(row("library: resident set (this process)", \.resident))
        lines.append(row("library: heap in use (mallinfo2)", \.heap))
        lines.append(row("  of it SQLite (page caches, statements)", \.sqlitePageCache))
        lines.append(row("  LMDB mapped pages (resident)", \.lmdbMapped))
        lines.append(row("producer: resident set (its process)", \.producer))
        if let warm = warmTenth, let baseline = baselineTenth {
            lines.append("  page caches warm at tenth \(warm) (\(seconds * warm / 10) s); growth measured from tenth \(baseline)")
        }
        if let resident = growth(\.resident), let heap = growth(\.heap) {
            lines.append(String(format: "  library growth after warm-up: resident %+.1f MiB (%+.1f %%), heap %+.1f MiB (%+.1f %%); allowed %.0f %%",
                                Double(resident.bytes) / 1_048_576, resident.fraction * 100, Double(heap.bytes) / 1_048_576, heap.fraction * 100,
                                Self.allowedGrowth * 100))
        }
        return lines
    }
}
