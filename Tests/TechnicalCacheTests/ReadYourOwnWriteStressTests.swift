import Foundation
import HTTPTypes
import ODataCore
import Synchronization
import ODataFixtures
import Testing
@testable import TechnicalCache

/// A lookup never misses an entry its own task wrote just before, whatever runs meanwhile in another task:
/// a rekey, a reset of another partition, an eviction (issue 29). Each test runs its case
/// `CACHE_STRESS_ROUNDS` times (50 by default, 15 under a sanitizer: see ``Sanitizers``; `CACHE_STRESS_ROUNDS=1000`
/// for the long proof), each round on a fresh cache.
@Suite struct ReadYourOwnWriteStressTests {
    static let rounds = Int(ProcessInfo.processInfo.environment["CACHE_STRESS_ROUNDS"] ?? "") ?? Sanitizers.rounds(plain: 50, sanitized: 15)

    /// Counts the stores and lookups of all tasks, so that a miss can tell how much ran since its store.
    final class Operations: Sendable {
        let count = Atomic<Int>(0)
        func next() -> Int { count.add(1, ordering: .relaxed).newValue }
        var current: Int { count.load(ordering: .relaxed) }
    }

    /// 8 tasks each store an entry under one of their own 10 URLs and read it back at once, 40 times,
    /// while `disturb` runs in another task. Returns the misses: a lookup that answered `nil` or another
    /// payload, unless `evictable` says that enough other operations ran since its store for the budget
    /// to have evicted it.
    static func readsOwnWrites(round: Int, cache: ResponseCache, payloadBytes: Int = 200,
                               evictable: @escaping @Sendable (_ operationsSince: Int) -> Bool = { _ in false },
                               disturb: @escaping @Sendable () async throws -> Void) async throws -> (misses: [String], evictable: Int) {
        let operations = Operations()
        return try await withThrowingTaskGroup(of: (misses: [String], evictable: Int).self) { group in
            for task in 0..<8 {
                group.addTask {
                    var misses: [String] = []
                    var excused = 0
                    for step in 0..<40 {
                        let url = "https://h/\(task)/\(step % 10)"
                        let payload = patternPayload(index: round * 100_000 + task * 1000 + step, count: payloadBytes + step)
                        let before = operations.current
                        try await cache.store(CacheEntry(status: 200, headers: [:], payload: payload), for: url)
                        _ = operations.next()
                        let found = try cache.entry(for: url)
                        let since = operations.next() - before - 2
                        if found?.payload != payload {
                            if found == nil && evictable(since) {
                                excused += 1
                            } else {
                                misses.append("round \(round) task \(task) step \(step): \(found == nil ? "nil" : "another payload") (\(since) operations of other tasks since the store)")
                            }
                        }
                    }
                    return (misses, excused)
                }
            }
            group.addTask {
                try await disturb()
                return ([], 0)
            }
            var all: (misses: [String], evictable: Int) = ([], 0)
            for try await result in group {
                all.misses += result.misses
                all.evictable += result.evictable
            }
            return all
        }
    }

    @Test func aLookupDuringARekeyFindsWhatItsTaskJustStored() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        var misses: [String] = []
        for round in 0..<Self.rounds {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
            try cache.open(encryption: .key("k"))
            defer { cache.close() }
            let result = try await Self.readsOwnWrites(round: round, cache: cache) { try cache.rekey(to: .key("k2")) }
            misses += result.misses
            let stats = cache.statistics
            #expect(stats.entryCount == 80 && stats.integrityFailures == 0, "round \(round): \(stats)")
        }
        #expect(misses.isEmpty, "\(misses.count) misses in \(Self.rounds) rounds: \(misses.prefix(5))")
        print("rekey: \(Self.rounds) rounds, \(misses.count) misses, \(clock.now - start)")
    }

    /// As above with ten rekeys in a row per round: many more lookups meet a key swap.
    @Test func aLookupDuringRepeatedRekeysFindsWhatItsTaskJustStored() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        var misses: [String] = []
        for round in 0..<Self.rounds {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
            try cache.open(encryption: .key("k0"))
            defer { cache.close() }
            let result = try await Self.readsOwnWrites(round: round, cache: cache) {
                for key in 1...10 {
                    try cache.rekey(to: .key("k\(key)"))
                    await Task.yield()
                }
            }
            misses += result.misses
            let stats = cache.statistics
            #expect(stats.entryCount == 80 && stats.integrityFailures == 0, "round \(round): \(stats)")
        }
        #expect(misses.isEmpty, "\(misses.count) misses in \(Self.rounds) rounds: \(misses.prefix(5))")
        print("repeated rekeys: \(Self.rounds) rounds, \(misses.count) misses, \(clock.now - start)")
    }

    /// Another partition of the same directory is refused a reset (the directory is open), and a cache in
    /// another directory is opened, written, closed and reset meanwhile: neither touches this cache.
    @Test func aLookupDuringAResetOfAnotherPartitionFindsWhatItsTaskJustStored() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        var misses: [String] = []
        for round in 0..<Self.rounds {
            let dir = TemporaryDirectory()
            let elsewhere = TemporaryDirectory()
            defer { dir.remove(); elsewhere.remove() }
            let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(partition: "alice"))
            try cache.open(encryption: .key("k"))
            defer { cache.close() }
            let result = try await Self.readsOwnWrites(round: round, cache: cache) {
                let bob = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(partition: "bob"))
                let carol = try ResponseCache(directory: elsewhere.cachePath, configuration: testConfiguration(partition: "carol"))
                for step in 0..<5 {
                    #expect(throws: CacheError.alreadyOpen) { try bob.reset() }
                    try carol.open(encryption: .key("k"))
                    try await carol.store(CacheEntry(status: 200, headers: [:], payload: patternPayload(index: step, count: 300)), for: "https://h/\(step)")
                    carol.close()
                    try carol.reset()
                }
            }
            misses += result.misses
            let stats = cache.statistics
            #expect(stats.entryCount == 80 && stats.integrityFailures == 0, "round \(round): \(stats)")
        }
        #expect(misses.isEmpty, "\(misses.count) misses in \(Self.rounds) rounds: \(misses.prefix(5))")
        print("reset of another partition: \(Self.rounds) rounds, \(misses.count) misses, \(clock.now - start)")
    }

    /// Another process (a re-run of this test binary) stores and removes its own URLs all the time while
    /// this one's tasks store and read back theirs: its commits make every lookup here read again, never
    /// miss. The budget holds everything (no eviction); a rekey is refused while the other process has the
    /// cache open, so none runs here.
    @Test func aLookupWhileAnotherProcessWritesFindsWhatItsTaskJustStored() async throws {
        guard childRole == nil else { return }
        let clock = ContinuousClock()
        let start = clock.now
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let stopFile = dir.path + "/stop"
        let limit = 8 << 20
        let cache = try ResponseCache(directory: dir.cachePath, configuration: Shared.configuration(limit: limit))
        try cache.open(encryption: .key(Shared.key))
        defer { cache.close() }
        let child = try Child(test: "MultiProcessTests/childLoad", environment: [
            "CACHE_TEST_CHILD": "load", "CACHE_TEST_DIR": dir.cachePath, "CACHE_TEST_WORKER": "1",
            "CACHE_TEST_OPERATIONS": "100000000", "CACHE_TEST_MIX": "write", "CACHE_TEST_LIMIT": "\(limit)",
            "CACHE_TEST_STOP_FILE": stopFile,
        ])
        // Its output is read all along (a full pipe would stop it); the rounds start once it writes.
        let writing = DispatchSemaphore(value: 0)
        let output = LockedValue<[String]>([])
        let reader = DispatchGroup()
        DispatchQueue.global().async(group: reader) {
            var signalled = false
            let lines = child.readLines { lines in
                if !signalled, lines.last?.hasPrefix("PROGRESS ") == true {
                    signalled = true
                    writing.signal()
                }
                return lines.last?.hasPrefix("DONE ") == true
            }
            if !signalled { writing.signal() }
            output.withLock { $0 = lines }
        }
        writing.wait()
        var misses: [String] = []
        let rounds = Self.rounds
        for round in 0..<rounds {
            misses += try await Self.readsOwnWrites(round: round, cache: cache) {}.misses
        }
        #expect(FileManager.default.createFile(atPath: stopFile, contents: Data()), "the stop file could not be made")
        reader.wait()
        child.process.waitUntilExit()
        let lines = output.withLock { $0 }
        let done = try #require(lines.last(where: { $0.hasPrefix("DONE ") }), "the other process did not finish: \(child.stderrText)")
        let counts = parseCounts(done)
        #expect((counts["stores"] ?? 0) > 0 && counts["wrong"] == 0 && counts["errors"] == 0 && counts["integrityFailures"] == 0, "\(done)")
        #expect(cache.statistics.integrityFailures == 0 && cache.statistics.evictions == 0)
        #expect(misses.isEmpty, "\(misses.count) misses in \(rounds) rounds: \(misses.prefix(5))")
        print("another process's writes: \(rounds) rounds, \(misses.count) misses, \(counts["operations"] ?? 0) operations of the other process, \(clock.now - start)")
    }

    /// A budget of about 30 entries for the 80 URLs: stores evict all the time (and a rekey runs). The
    /// entry a task just stored is the most recently used one, so it is evicted only after enough other
    /// entries were stored or read since to fill the low-water mark; a `nil` is excused only then.
    @Test func aLookupDuringEvictionsFindsWhatItsTaskJustStored() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let configuration = testConfiguration(sizeLimit: 24 << 10, lowWaterMark: 0.8)
        // The most one entry costs: a payload of at most 439 bytes, 15 of metadata, 37 of sealing and 128
        // of bookkeeping. Eviction keeps the newest entries up to the low-water mark, so the entry just
        // stored goes only once at least this many others were stored or read after it.
        let entryCost = 640
        let survives = configuration.lowWaterBytes / entryCost - 2
        var misses: [String] = []
        var excused = 0
        var evictions = 0
        for round in 0..<Self.rounds {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let cache = try ResponseCache(directory: dir.cachePath, configuration: configuration)
            try cache.open(encryption: .key("k"))
            defer { cache.close() }
            let result = try await Self.readsOwnWrites(round: round, cache: cache, payloadBytes: 400,
                                                       evictable: { $0 >= survives }) { try cache.rekey(to: .key("k2")) }
            misses += result.misses
            excused += result.evictable
            let stats = cache.statistics
            evictions += stats.evictions
            #expect(stats.currentBytes <= configuration.sizeLimit && stats.integrityFailures == 0, "round \(round): \(stats)")
        }
        #expect(evictions > 0)
        #expect(misses.isEmpty, "\(misses.count) misses in \(Self.rounds) rounds: \(misses.prefix(5))")
        print("eviction: \(Self.rounds) rounds, \(misses.count) misses, \(excused) excused, \(evictions) evictions, \(clock.now - start)")
    }
}
