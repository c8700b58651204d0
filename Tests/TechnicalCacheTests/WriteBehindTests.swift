import Dispatch
import Foundation
import HTTPTypes
import LMDB
import ODataCore
import Testing
@testable import TechnicalCache

/// An online read's answer reaches its caller before its cache entry commits (#45 part 2): the entry goes to the
/// cache's writer, which commits in groups; until then a lookup answers it from memory.
@Suite struct WriteBehindTests {
    /// Holds the cache's write lock from another thread, as another writer (or another process) would, until released.
    final class HeldCommit: Sendable {
        private let inside = DispatchSemaphore(value: 0)
        private let release = DispatchSemaphore(value: 0)
        private let done = DispatchSemaphore(value: 0)

        init(_ cache: ResponseCache) throws {
            let environment = try cache.openCache().environment
            Thread { [inside, release, done] in
                _ = try? environment.write { _ in  // an empty transaction: nothing to report if it fails
                    inside.signal()
                    release.wait()
                }
                done.signal()
            }.start()
            inside.wait()
        }

        func end() {
            release.signal()
            done.wait()
        }
    }

    /// Runs `body` with a bound: a read that waited for the held commit would never return.
    static func bounded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                return nil
            }
            guard let first = try await group.next(), let value = first else {
                group.cancelAll()
                throw CancellationError()
            }
            group.cancelAll()
            return value
        }
    }

    @Test func aReadIsAnsweredBeforeItsEntryCommitsAndTheNextReadHitsIt() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let server = CachingTransportTests.Server()
        let outcomes = CachingTransportTests.Outcomes()
        let transport = CachingTransport(cache: cache, upstream: server, listener: outcomes)
        let url = "https://h/svc/Products"

        let held = try HeldCommit(cache)
        let first = try await Self.bounded { try await transport.send(TransportRequest(url: url)) }
        #expect(first.status == 200 && first.body == Data(#"{"value":[]}"#.utf8))
        // Delivered, not committed: the entry waits in memory.
        #expect(cache.pendingWrites.entries == 1)
        #expect(try !cache.containsEntry(for: url))
        #expect(cache.statistics.writes == 0)
        // The next read of the URL is a cache hit: revalidated with the pending entry's ETag, the 304 answered with it.
        let second = try await Self.bounded { try await transport.send(TransportRequest(url: url)) }
        #expect(server.sent.withLock { $0.last?.headerFields[.ifNoneMatch] } == #"W/"1""#)
        #expect(second.status == 200 && second.body == first.body)
        #expect(outcomes.heard.withLock { $0 } == ["miss", "hit", "304", "refreshed"])
        #expect(try !cache.containsEntry(for: url), "still held")

        held.end()
        await cache.flushPendingWrites()
        #expect(cache.pendingWrites.entries == 0)
        #expect(try cache.containsEntry(for: url))
        #expect(cache.statistics.writes == 1, "one write: the refresh went into the pending entry")
        #expect(outcomes.heard.withLock { $0 }.last == "stored")
        #expect(try cache.entry(for: url)?.payload == first.body)
    }

    @Test func entriesHandedOverTogetherCommitInGroups() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let before = cache.openCacheTransactionID()
        let held = try HeldCommit(cache)
        for index in 0..<300 {
            try await cache.storeBehind(CacheEntry(status: 200, headers: [:], payload: Data("\(index)".utf8)), for: "https://h/\(index)")
        }
        #expect(cache.pendingWrites.entries == 300)
        #expect(try cache.entry(for: "https://h/299")?.payload == Data("299".utf8), "a lookup answers a pending entry")
        held.end()
        await cache.flushPendingWrites()
        #expect(cache.statistics.writes == 300)
        // The held transaction, then at most two groups (256 + 44; the writer may have taken the first before the rest
        // arrived, so three at most), never one per entry.
        #expect(cache.openCacheTransactionID() - before <= 4, "\(cache.openCacheTransactionID() - before) transactions")
        for index in [0, 150, 299] { #expect(try cache.containsEntry(for: "https://h/\(index)")) }
    }

    @Test func aDirectWriteOrRemovalWinsOverAPendingEntry() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let told = LockedValue<[Bool]>([])
        let held = try HeldCommit(cache)
        try await cache.storeBehind(CacheEntry(status: 200, headers: [:], payload: Data("behind".utf8)), for: "https://h/a") { result in
            told.withLock { $0.append((try? result.get()) ?? false) }
        }
        try await cache.storeBehind(CacheEntry(status: 200, headers: [:], payload: Data("behind".utf8)), for: "https://h/b")
        // The direct writes start while the commit is held: each cancels its URL's pending entry at once, and the
        // group the writer took (blocked behind the held commit) skips both when it runs.
        let store = Task { try await cache.store(CacheEntry(status: 200, headers: [:], payload: Data("direct".utf8)), for: "https://h/a") }
        let remove = Task { try await cache.removeEntry(for: "https://h/b") }
        while cache.pendingWrites.entries > 0 { await Task.yield() }
        held.end()
        _ = try await (store.value, remove.value)
        await cache.flushPendingWrites()
        #expect(try cache.entry(for: "https://h/a")?.payload == Data("direct".utf8))
        #expect(try cache.entry(for: "https://h/b") == nil)
        #expect(told.withLock { $0 } == [false], "the replaced entry is told it was not stored")
    }

    @Test func aStatusThatIsNoHTTPStatusIsRefusedAtTheHandOver() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        await #expect(throws: CacheError.invalidEntry) {
            try await cache.storeBehind(CacheEntry(status: 42, headers: [:], payload: Data()), for: "https://h/x")
        }
        #expect(cache.pendingWrites.entries == 0)
        cache.close()
        await #expect(throws: CacheError.notOpen) {
            try await cache.storeBehind(CacheEntry(status: 200, headers: [:], payload: Data()), for: "https://h/x")
        }
    }

    @Test func anEntryTheMapCannotHoldIsLostAloneNotWithItsGroup() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var configuration = testConfiguration()
        configuration.mapSizeLimit = 256 << 10  // a 1 MiB entry cannot be written (MDB_MAP_FULL)
        let cache = try ResponseCache(directory: dir.cachePath, configuration: configuration)
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let results = LockedValue<[String: Result<Bool, CacheError>]>([:])
        let held = try HeldCommit(cache)
        for index in 0..<21 {
            let url = "https://h/\(index)"
            let payload = index == 10 ? patternPayload(index: index, count: 1 << 20) : Data("\(index)".utf8)
            try await cache.storeBehind(CacheEntry(status: 200, headers: [:], payload: payload), for: url) { result in
                results.withLock { $0[url] = result }
            }
        }
        held.end()
        await cache.flushPendingWrites()
        let told = results.withLock { $0 }
        #expect(told.count == 21, "every hand-over is told its outcome")
        guard case .failure(let error)? = told["https://h/10"] else {
            Issue.record("the entry too large for the map failed: \(String(describing: told["https://h/10"]))")
            return
        }
        #expect(error == .storage)
        #expect(cache.statistics.writes == 20 && cache.statistics.storageFailures == 1)
        for index in (0..<21) where index != 10 {
            #expect(try cache.entry(for: "https://h/\(index)")?.payload == Data("\(index)".utf8), "entry \(index) committed")
        }
        #expect(try !cache.containsEntry(for: "https://h/10"))
    }

    @Test func aWriterBehindByMoreThanItMayHoldShedsAnswersAndTheReadNeverWaits() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(sizeLimit: 96 << 20))
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let payload = patternPayload(index: 1, count: 1 << 20)  // one buffer, shared by every entry
        let told = LockedValue<[Int: Bool]>([:])
        let held = try HeldCommit(cache)
        // With the commit held nothing leaves the memory: a hand-over that waited for room would wait for ever.
        try await Self.bounded {
            for index in 0..<40 {
                try await cache.storeBehind(CacheEntry(status: 200, headers: [:], payload: payload), for: "https://h/\(index)") { result in
                    if case .success(let stored) = result { told.withLock { $0[index] = stored } }
                }
            }
        }
        let taken = cache.pendingWrites.entries
        #expect(taken > 0 && taken < 40 && cache.pendingWrites.bytes <= 32 << 20, "\(cache.pendingWrites)")
        #expect(cache.statistics.shedWrites == 40 - taken)
        #expect(told.withLock { $0 } == Dictionary(uniqueKeysWithValues: (taken..<40).map { ($0, false) }), "the shed ones are told at once")
        #expect(try cache.entry(for: "https://h/\(taken - 1)") != nil && cache.entry(for: "https://h/\(taken)") == nil)
        // A newer answer for a URL with an entry pending replaces it even now: shed, the older one would be written.
        let newer = patternPayload(index: 2, count: 1 << 20)
        try await Self.bounded { try await cache.storeBehind(CacheEntry(status: 200, headers: [:], payload: newer), for: "https://h/0") }
        #expect(cache.statistics.shedWrites == 40 - taken && cache.statistics.supersededWrites == 1)
        #expect(try cache.entry(for: "https://h/0")?.payload == newer)
        held.end()
        await cache.flushPendingWrites()
        #expect(cache.statistics.writes == taken)
        #expect(told.withLock { $0 }.values.filter { $0 }.count == taken - 1, "the first entry was replaced before its commit")
        #expect(try cache.entry(for: "https://h/0")?.payload == newer)
    }

    /// A lookup that crosses the touch threshold hands the recency write to a thread of its own: with the commit
    /// held (another writer, a slow disk), every lookup still returns; the uses are written once the lock is free.
    @Test func aLookupNeverWaitsForTheRecencyWrite() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(sizeLimit: 32 << 20))
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let count = OpenCache.touchFlushThreshold + 64
        for index in 0..<count {
            try await cache.storeBehind(CacheEntry(status: 200, headers: [:], payload: Data("entry \(index)".utf8)), for: "https://h/\(index)")
        }
        await cache.flushPendingWrites()
        #expect(cache.statistics.writes == count)
        let held = try HeldCommit(cache)
        let looked = DispatchSemaphore(value: 0)
        let found = LockedValue(0)
        let failures = LockedValue<[String]>([])
        Thread {
            for index in 0..<count {
                do {
                    if try cache.entry(for: "https://h/\(index)") != nil { found.withLock { $0 += 1 } }
                } catch {
                    failures.withLock { $0.append("\(index): \(error)") }
                }
            }
            looked.signal()
        }.start()
        let returned = looked.wait(timeout: .now() + 30) == .success
        let pendingUses = try cache.openCache().touches.withLock { $0.count }
        held.end()
        #expect(pendingUses >= OpenCache.touchFlushThreshold, "the lookups crossed the threshold: \(pendingUses) uses held")
        #expect(returned, "a lookup waited for the held commit (the recency write ran on the lookup's thread)")
        if !returned { looked.wait() }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        #expect(found.withLock { $0 } == count)
        // The uses are written by the background write (or by the next write transaction, which writes them first).
        try await cache.store(CacheEntry(status: 200, headers: [:], payload: Data("last".utf8)), for: "https://h/last")
        #expect(try cache.openCache().touches.withLock { $0.isEmpty })
    }

    @Test func closingWritesThePendingEntries() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        let held = try HeldCommit(cache)
        try await cache.storeBehind(CacheEntry(status: 200, headers: [:], payload: Data("kept".utf8)), for: "https://h/k")
        held.end()
        cache.close()
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        #expect(try cache.entry(for: "https://h/k")?.payload == Data("kept".utf8))
    }
}

extension ResponseCache {
    /// The environment's last transaction ID (for counting the transactions a test's writes took).
    func openCacheTransactionID() -> UInt64 {
        (try? openCache().environment.lastTransactionID) ?? 0
    }
}
