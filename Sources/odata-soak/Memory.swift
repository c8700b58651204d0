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
    /// pages and the program's own code included — after glibc gave the free pages of its arenas back
    /// (`malloc_trim(0)` before each sample). Without that, the set moves by 3–7 MiB with pages glibc keeps
    /// after they were freed (in one of up to 16 arenas, the one of whichever thread freed them), which the heap
    /// does not show and which no leak causes; what stays is what the process uses: the heap's pages, thread
    /// stacks, mapped files, memory mapped by other means than `malloc`.
    var resident = 0
    /// The part of `resident` that is pages of mapped files (the program's and its libraries' code, the LMDB
    /// files): `/proc/self/statm`'s shared pages. A code path run for the first time (the failover's, say) adds
    /// its pages once.
    var residentFiles = 0
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
    /// The resident set less the resident pages of malloc's arenas (``mallocArenas``), taken from the same sample: what
    /// the process holds besides the allocator's arenas — mapped files, thread stacks, chunks `malloc` maps on their
    /// own, memory mapped by other means. Judged with `heap`: a leak of `malloc`'s raises the heap in use, a leak outside
    /// it this; the arenas' placement of free and used chunks (up to 16 arenas whose pages hold both, which
    /// `malloc_trim(0)` cannot give back) raises neither, only the arenas' pages.
    var residentOutsideArenas = 0
    /// Resident pages of malloc's arenas (`/proc/self/smaps`): the main one (`[heap]`) and the thread arenas glibc maps
    /// for threads that allocate at once (up to 8 per core, each an anonymous mapping at a 64 MiB boundary). Part of
    /// `resident`, for information: the arenas' bytes in use (the part of `heap` not in `mmap`ped chunks) and the pages
    /// of free chunks among used ones, which `malloc_trim(0)` cannot give back.
    var mallocArenas = 0
    /// The producer's resident set (its own process), for information only.
    var producer = 0
    /// This process's threads (`/proc/self/status`), for information: a thread's stack is resident memory outside the
    /// heap, and glibc keeps ended threads' stacks for the next ones, so more threads at a peak can raise the resident
    /// set for good without a byte more of heap.
    var threads = 0

    /// The page caches together (SQLite's and LMDB's mapped pages).
    var pageCaches: Int { sqlitePageCache + lmdbMapped }

    /// Each figure the lower (`min`) or higher (`max`) of the two samples'.
    static func combining(_ a: MemorySample, _ b: MemorySample, _ pick: (Int, Int) -> Int) -> MemorySample {
        MemorySample(resident: pick(a.resident, b.resident), residentFiles: pick(a.residentFiles, b.residentFiles), heap: pick(a.heap, b.heap),
                     sqlitePageCache: pick(a.sqlitePageCache, b.sqlitePageCache), lmdbMapped: pick(a.lmdbMapped, b.lmdbMapped),
                     residentOutsideArenas: pick(a.residentOutsideArenas, b.residentOutsideArenas),
                     mallocArenas: pick(a.mallocArenas, b.mallocArenas), producer: pick(a.producer, b.producer),
                     threads: pick(a.threads, b.threads))
    }

    /// Samples this process, and the producer when given.
    static func now(producer: FixtureProcess?) -> MemorySample {
        var sample = MemorySample()
        malloc_trim(0)
        sample.resident = ResidentMemory.bytes()
        sample.residentFiles = ResidentMemory.fileBackedBytes()
        let info = mallinfo2()
        sample.heap = Int(info.uordblks) + Int(info.hblkhd)
        var current: sqlite3_int64 = 0
        var highest: sqlite3_int64 = 0
        if sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &current, &highest, 0) == SQLITE_OK { sample.sqlitePageCache = Int(current) }
        sample.lmdbMapped = residentBytesOfMappings { $0.hasSuffix("/data.mdb") || $0.hasSuffix("/lock.mdb") }
        sample.mallocArenas = residentBytesOfMappings(isMallocArena)
        sample.residentOutsideArenas = sample.resident - sample.mallocArenas
        sample.producer = producer?.residentBytes ?? 0
        sample.threads = ResidentMemory.threads()
        return sample
    }

    /// Whether a mapping's header line is one of malloc's arenas: `[heap]`, or an anonymous read-write mapping that starts
    /// at a multiple of glibc's `HEAP_MAX_SIZE` (64 MiB on 64-bit systems), where a thread arena begins. An arena whose
    /// mapping the kernel merged with an anonymous one just below it is not found, and counts outside the arenas: the
    /// error is on the judged side (as strict as judging the whole set). Another anonymous mapping passes for an arena
    /// only if it starts at a 64 MiB boundary itself: one page-aligned address in 16,384.
    static func isMallocArena(_ header: Substring) -> Bool {
        let fields = header.split(separator: " ", omittingEmptySubsequences: true)
        if fields.count >= 6 { return fields[5] == "[heap]" }
        guard fields.count == 5, fields[1] == "rw-p", fields[4] == "0",
              let start = fields[0].split(separator: "-").first.flatMap({ UInt64($0, radix: 16) })
        else { return false }
        return start % (64 << 20) == 0
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

/// The samples of one tenth of the run: each figure's lowest and highest value in it.
///
/// A sample taken at one instant holds the work in flight at that instant (requests in the transfer loop,
/// entries being sealed, responses being decoded): about 1 MiB of heap under the soak's load, more when the
/// machine is loaded and work waits. A leak, or a queue or table that grows, raises every sample, the lowest
/// too; work in flight only rises above it. So the judgement compares floors, and the peaks are printed beside.
struct MemoryTenth: Sendable {
    /// Each figure's lowest value among the tenth's samples.
    var floor: MemorySample
    /// Each figure's highest value among the tenth's samples.
    var peak: MemorySample
    /// How many samples the tenth took.
    var samples = 1

    init(_ sample: MemorySample) {
        floor = sample
        peak = sample
    }

    /// Adds a sample to the tenth.
    mutating func add(_ sample: MemorySample) {
        floor = .combining(floor, sample, min)
        peak = .combining(peak, sample, max)
        samples += 1
    }
}

/// The memory samples of a run and the judgement of its last half.
struct MemoryReport {
    /// The samples of each tenth of the run (index 0 = the first tenth); the judgement uses their floors.
    var windows: [MemoryTenth]
    /// Each tenth's floor (``MemoryTenth/floor``).
    var tenths: [MemorySample] { windows.map(\.floor) }
    /// The sample just before the load starts (the stores open, nothing read yet).
    var start: MemorySample

    /// Allowed growth of the library's heap in use and of its resident set outside malloc's arenas from the baseline to
    /// any later tenth.
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

    /// The largest growth of a figure after the baseline, in bytes and as a fraction of the level it had reached
    /// by then: the highest floor of a later tenth against the highest floor from the warm tenth to the baseline.
    /// (The level reached, not the baseline tenth's own floor: glibc gives freed pages back to the system at
    /// times, and the soak's tier outage lowers the traffic from 40 % to 70 % of the run, so a figure can dip in
    /// the baseline tenth and come back to where it was; a leak keeps rising above every earlier level.)
    func growth(_ figure: (MemorySample) -> Int) -> (bytes: Int, fraction: Double)? {
        guard let warm = warmTenth, let baseline = baselineTenth, baseline < tenths.count else { return nil }
        let base = tenths[(warm - 1)..<baseline].map(figure).max() ?? 0
        let highest = tenths[baseline...].map(figure).max() ?? base
        return (highest - base, base > 0 ? Double(highest - base) / Double(base) : 0)
    }

    /// Whether the library's memory grew by more than ``allowedGrowth`` after the baseline: its heap in use (a leak of
    /// `malloc`'s) or its resident set outside malloc's arenas (a leak of anything else: mapped memory, stacks,
    /// files). The whole resident set is printed, not judged: with the arenas' pages in it, it moved by 3–7 MiB over a
    /// 60-s run's second half with the heap in use flat — glibc's placement of chunks across up to 16 arenas, flat
    /// with `MALLOC_ARENA_MAX=2` (docs/RELIABILITY.md). A run whose page caches warmed only in its last tenth
    /// (nothing to compare) counts as grown.
    var grew: Bool {
        guard let outside = growth(\.residentOutsideArenas), let heap = growth(\.heap) else { return true }
        return outside.fraction > Self.allowedGrowth || heap.fraction > Self.allowedGrowth
    }

    /// The report's lines.
    func lines(seconds: Int) -> [String] {
        func mib(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
        func row(_ name: String, _ figure: (MemorySample) -> Int) -> String {
            "  \(name.padding(toLength: 42, withPad: " ", startingAt: 0)) \(mib(figure(start))) | " + tenths.map { mib(figure($0)) }.joined(separator: " ")
        }
        func peaks(_ name: String, _ figure: (MemorySample) -> Int) -> String {
            "  \(name.padding(toLength: 42, withPad: " ", startingAt: 0)) \(mib(figure(start))) | " + windows.map { mib(figure($0.peak)) }.joined(separator: " ")
        }
        let counts = windows.map(\.samples)
        var lines = ["  memory (MiB) at the start | each tenth's lowest of \(counts.min() ?? 0)–\(counts.max() ?? 0) samples (judged); highest for information"]
        lines.append(row("library: resident set (this process)", \.resident))
        lines.append(peaks("  highest in the tenth", \.resident))
        lines.append(row("  of it mapped files (code, LMDB)", \.residentFiles))
        lines.append(row("  outside malloc's arenas (judged)", \.residentOutsideArenas))
        lines.append(row("library: heap in use (mallinfo2)", \.heap))
        lines.append(peaks("  highest in the tenth", \.heap))
        lines.append(row("  of it SQLite (page caches, statements)", \.sqlitePageCache))
        lines.append(row("  LMDB mapped pages (resident)", \.lmdbMapped))
        lines.append(row("  malloc's arenas (resident pages)", \.mallocArenas))
        lines.append(row("producer: resident set (its process)", \.producer))
        lines.append("  \("library: threads, most in the tenth".padding(toLength: 42, withPad: " ", startingAt: 0)) \(start.threads) | "
                     + windows.map { String($0.peak.threads) }.joined(separator: " "))
        if let warm = warmTenth, let baseline = baselineTenth {
            lines.append("  page caches warm at tenth \(warm) (\(seconds * warm / 10) s); growth measured after tenth \(baseline), from the level reached by then")
        }
        if let outside = growth(\.residentOutsideArenas), let heap = growth(\.heap), let resident = growth(\.resident),
           let arenas = growth(\.mallocArenas) {
            func shown(_ growth: (bytes: Int, fraction: Double)) -> String {
                String(format: "%+.1f MiB (%+.1f %%)", Double(growth.bytes) / 1_048_576, growth.fraction * 100)
            }
            lines.append("  library growth after warm-up: heap \(shown(heap)), resident outside the arenas \(shown(outside)); "
                         + String(format: "allowed %.0f %%", Self.allowedGrowth * 100))
            lines.append("    (not judged: the whole resident set \(shown(resident)), of it the arenas' pages \(shown(arenas)))")
        }
        return lines
    }
}
