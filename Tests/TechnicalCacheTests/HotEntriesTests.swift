import Foundation
import HTTPTypes
import LMDB
import ODataCore
import Testing

@testable import TechnicalCache

/// Entries read recently are held decoded in memory (`HotEntries`); a held entry must only ever be an
/// answer the disk still has, within its memory budget.
@Suite struct HotEntriesTests {
    private func openCache(_ dir: TemporaryDirectory, name: String = "cache", memoryBudget: Int = 16 << 20) throws -> ResponseCache {
        var configuration = testConfiguration()
        configuration.memoryBudget = memoryBudget
        let cache = try ResponseCache(directory: dir.path + "/" + name, configuration: configuration)
        try cache.open(encryption: .key("k"))
        return cache
    }

    @Test func aRepeatedReadIsAnsweredFromMemory() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try openCache(dir)
        defer { cache.close() }
        let entry = makeEntry(payload: "body", etag: "\"1\"")
        try await cache.store(entry, for: "u")
        #expect(cache.hotUsage.count == 0)
        let first = try #require(try cache.entry(for: "u"))
        #expect(cache.hotUsage.count == 1)
        let second = try #require(try cache.entry(for: "u"))
        #expect(first.payload == entry.payload && second.payload == entry.payload && second.headers == entry.headers)
        #expect(cache.statistics.hits == 2)
        #expect(cache.statistics.memoryHits == 1, "the first read opened the disk's value, the second was held")
        // A held entry still carries what a 304's refresh needs to skip reading the disk again.
        #expect(second.sealedTag != nil && second.readAt?.key == first.readAt?.key)
    }

    @Test func aReplacedOrRemovedEntryIsNeverAnsweredFromMemory() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try openCache(dir)
        defer { cache.close() }
        try await cache.store(makeEntry(payload: "v1"), for: "u")
        #expect(try cache.entry(for: "u")?.payload == Data("v1".utf8))
        let memoryHits = cache.statistics.memoryHits
        try await cache.store(makeEntry(payload: "v2"), for: "u")
        #expect(try cache.entry(for: "u")?.payload == Data("v2".utf8))
        #expect(cache.statistics.memoryHits == memoryHits, "a replaced entry is read from the disk")
        #expect(try await cache.removeEntry(for: "u"))
        #expect(try cache.entry(for: "u") == nil)
        #expect(cache.hotUsage.count == 0)
        try await cache.store(makeEntry(payload: "v3"), for: "u")
        #expect(try cache.entry(for: "u")?.payload == Data("v3".utf8))
    }

    /// A held entry stays current across this process's own commits that left it alone (no read of the disk);
    /// one of its own commits that replaced, removed or evicted it drops it.
    @Test func ownCommitsThatLeaveAHeldEntryAloneNeedNoReadOfTheDisk() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(sizeLimit: 64 << 10))
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        try await cache.store(makeEntry(payload: "u1"), for: "u")
        #expect(try cache.entry(for: "u")?.payload == Data("u1".utf8))
        for index in 0..<5 { try await cache.store(makeEntry(payload: "other \(index)"), for: "o\(index)") }
        let checks = cache.heldChecks
        #expect(try cache.entry(for: "u")?.payload == Data("u1".utf8))
        #expect(cache.heldChecks == checks, "answered from memory without reading the stored tag")
        #expect(cache.hotUsage.count == 1)
        try await cache.store(makeEntry(payload: "u2"), for: "u")
        #expect(cache.hotUsage.count == 0, "replaced: dropped at the commit")
        #expect(try cache.entry(for: "u")?.payload == Data("u2".utf8))
        #expect(cache.hotUsage.count == 1)
        // Evicted by this process's writes (least recently used first).
        for index in 0..<40 {
            try await cache.store(CacheEntry(status: 200, headers: [:], payload: patternPayload(index: index, count: 4 << 10)), for: "e\(index)")
        }
        #expect(try cache.containsEntry(for: "u") == false)
        #expect(try cache.entry(for: "u") == nil)
        #expect(cache.statistics.evictions > 0)
    }

    @Test func aHeldEntryCarriesItsPendingRefreshAndItsWrittenOne() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try openCache(dir)
        defer { cache.close() }
        let original = makeEntry(payload: "body", etag: "\"1\"")
        try await cache.store(original, for: "u")
        let held = try #require(try cache.entry(for: "u"))
        _ = try await cache.refresh(for: "u", with304Headers: [.date: "D2"], revalidating: held)
        #expect(try cache.entry(for: "u")?.headerValue(named: "Date") == "D2")
        for _ in 0..<200 where cache.pendingRefreshCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(cache.pendingRefreshCount == 0)
        let written = try #require(try cache.entry(for: "u"))
        #expect(written.headerValue(named: "Date") == "D2" && written.payload == original.payload)
    }

    /// The background write of refreshes re-seals each entry (a new tag): the entries it wrote are held as written,
    /// checked at its commit, so the next lookup of each opens nothing — and one replaced meanwhile is not answered.
    /// A value larger than one page is stored in chunks: its tag is read from its head (`OpenCache.storedTag`).
    @Test(arguments: [0, 40_000])
    func theBackgroundWriteOfARefreshHoldsTheWrittenEntry(padding: Int) async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try openCache(dir)
        defer { cache.close() }
        let body = { (url: String) in "body of \(url)" + String(repeating: "x", count: padding) }
        for url in ["u", "v"] { try await cache.store(makeEntry(payload: body(url), etag: "\"1\""), for: url) }
        for url in ["u", "v"] {
            let held = try #require(try cache.entry(for: url))
            _ = try await cache.refresh(for: url, with304Headers: [.date: "D2"], revalidating: held)
        }
        for _ in 0..<400 where cache.pendingRefreshCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(cache.pendingRefreshCount == 0)
        let open = try #require(cache.state.withLock { $0 })
        let generation = open.crypto.withLock { $0 }.generation
        for url in ["u", "v"] {
            let (held, current) = try #require(open.hot.held(for: url, generation: generation, transaction: open.environment.lastTransactionID))
            #expect(current, "held as of the flush's commit: no read of the disk")
            #expect(held.entry.headerValue(named: "Date") == "D2" && held.entry.payload == Data(body(url).utf8))
            let storedTag = try open.environment.read { txn in try open.storedTag(forKey: held.key.bytes, txn) }
            #expect(storedTag == held.tag)
        }
        #expect(try cache.chunkAudit().heads == (padding > open.chunkBytes ? 2 : 0))
        let hits = cache.statistics.hits
        #expect(try cache.entry(for: "u")?.headerValue(named: "Date") == "D2")
        #expect(cache.statistics.hits == hits + 1)
        try await cache.store(makeEntry(payload: "v2", etag: "\"2\""), for: "u")
        #expect(try cache.entry(for: "u")?.payload == Data("v2".utf8))
    }

    @Test func heldEntriesStayWithinTheirBudget() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let budget = 64 << 10
        let cache = try openCache(dir, memoryBudget: budget)
        defer { cache.close() }
        for index in 0..<50 {
            try await cache.store(CacheEntry(status: 200, headers: [:], payload: patternPayload(index: index, count: 4 << 10)), for: "u\(index)")
        }
        for round in 0..<2 {
            for index in 0..<50 {
                #expect(try cache.entry(for: "u\(index)")?.payload == patternPayload(index: index, count: 4 << 10), "round \(round)")
                #expect(cache.hotUsage.bytes <= budget)
            }
        }
        #expect(cache.hotUsage.count > 0 && cache.hotUsage.count < 50)
        // An entry over a quarter of the budget is read from the disk every time, never held.
        let big = patternPayload(index: 99, count: budget / 4 + 1)
        try await cache.store(CacheEntry(status: 200, headers: [:], payload: big), for: "big")
        let before = cache.hotUsage.count
        #expect(try cache.entry(for: "big")?.payload == big)
        #expect(cache.hotUsage.count <= before)
    }

    @Test func aZeroBudgetHoldsNothingAndANegativeOneIsRefused() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try openCache(dir, memoryBudget: 0)
        defer { cache.close() }
        try await cache.store(makeEntry(payload: "v1"), for: "u")
        #expect(try cache.entry(for: "u")?.payload == Data("v1".utf8))
        #expect(try cache.entry(for: "u")?.payload == Data("v1".utf8))
        #expect(cache.hotUsage.count == 0)
        var configuration = testConfiguration()
        configuration.memoryBudget = -1
        #expect(throws: CacheError.invalidConfiguration) {
            try ResponseCache(directory: dir.path + "/negative", configuration: configuration).open(encryption: .key("k"))
        }
    }

    @Test func rekeyDropsWhatIsHeld() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try openCache(dir)
        defer { cache.close() }
        try await cache.store(makeEntry(payload: "v1"), for: "u")
        _ = try cache.entry(for: "u")
        #expect(cache.hotUsage.count == 1)
        try cache.rekey(to: .key("k2"))
        #expect(cache.hotUsage.count == 0)
        #expect(try cache.entry(for: "u")?.payload == Data("v1".utf8))
    }

    /// The same random operations on a cache that holds entries in memory and on one that holds none:
    /// every lookup answers the same.
    @Test(arguments: [1, 2, 3]) func answersAreTheSameWithAndWithoutHeldEntries(seed: UInt64) async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let held = try openCache(dir, name: "held", memoryBudget: 24 << 10)
        let plain = try openCache(dir, name: "plain", memoryBudget: 0)
        defer { held.close(); plain.close() }
        var random = SeededRandom(seed: seed)
        let start = Date()
        for step in 0..<600 {
            let url = "u\(Int.random(in: 0..<12, using: &random))"
            let at = start + Double(step)
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3:
                let entry = CacheEntry(status: 200, headers: [.eTag: "\"\(step)\""],
                                       payload: patternPayload(index: step, count: Int.random(in: 0..<9_000, using: &random)), storedAt: at)
                try await held.store(entry, for: url)
                try await plain.store(entry, for: url)
            case 3:
                _ = try await held.removeEntry(for: url)
                _ = try await plain.removeEntry(for: url)
            case 4:
                let headers: HTTPFields = [.date: "D\(step)"]
                let a = try held.entry(for: url)
                let b = try plain.entry(for: url)
                _ = try await held.refresh(for: url, with304Headers: headers, revalidating: a, at: at)
                _ = try await plain.refresh(for: url, with304Headers: headers, revalidating: b, at: at)
            default:
                break
            }
            let a = try held.entry(for: url)
            let b = try plain.entry(for: url)
            #expect(a?.payload == b?.payload && a?.headers == b?.headers && a?.status == b?.status && a?.storedAt == b?.storedAt,
                    "step \(step), \(url)")
        }
        #expect(held.hotUsage.bytes <= 24 << 10)
    }
}
