import Foundation
import HTTPTypes
import Testing

@testable import TechnicalCache

/// A 304's refresh is held in memory and written later, in one transaction with others; it must behave
/// exactly as if it had been written at once (docs/notes/cache.md, "Deferred refreshes").
@Suite struct DeferredRefreshTests {
    @Test func aRefreshIsSeenAtOnceWrittenInTheBackgroundAndKeptOverAReopen() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        let original = makeEntry(payload: "body", etag: "W/\"1\"")
        try await cache.store(original, for: "u")
        let later = Date(timeIntervalSinceNow: 5)
        let refreshed = try #require(try await cache.refresh(for: "u", with304Headers: [.date: "D2"], revalidating: original, at: later))
        #expect(cache.pendingRefreshCount == 1)
        // A lookup sees the refresh before it is written.
        let seen = try #require(try cache.entry(for: "u"))
        #expect(seen.headerValue(named: "Date") == "D2" && seen.payload == Data("body".utf8))
        #expect(abs(seen.storedAt.timeIntervalSince(refreshed.storedAt)) < 0.002)
        // The background write comes within its delay.
        for _ in 0..<200 where cache.pendingRefreshCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(cache.pendingRefreshCount == 0)
        #expect(cache.statistics.refreshes == 1 && cache.statistics.supersededWrites == 0)
        cache.close()
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        #expect(try cache.entry(for: "u")?.headerValue(named: "Date") == "D2")
    }

    /// A lookup that runs while a transaction writes the pending refreshes sees them: they stay held until
    /// the commit makes the written entry visible (between the two, the disk still shows the old one).
    @Test func aRefreshBeingWrittenIsSeenUntilItsCommit() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        var missed = 0
        for round in 0..<150 {
            let original = makeEntry(payload: "body", etag: "\"\(round)\"")
            try await cache.store(original, for: "u")
            _ = try await cache.refresh(for: "u", with304Headers: [.date: "D\(round)"], revalidating: original)
            // Writes of other entries write the pending refresh first, while this task keeps reading it.
            async let writes: Void = {
                for index in 0..<4 { try await cache.store(makeEntry(payload: "other"), for: "o\(index)") }
            }()
            for _ in 0..<40 where try cache.entry(for: "u")?.headerValue(named: "Date") != "D\(round)" { missed += 1 }
            try await writes
            #expect(try cache.entry(for: "u")?.headerValue(named: "Date") == "D\(round)")
        }
        #expect(missed == 0)
    }

    @Test func closeWritesWhatIsPending() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        let original = makeEntry(payload: "body", etag: "W/\"1\"")
        try await cache.store(original, for: "u")
        try await cache.refresh(for: "u", with304Headers: [.date: "D3"], revalidating: original)
        cache.close()  // before the background write is due
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        #expect(try cache.entry(for: "u")?.headerValue(named: "Date") == "D3")
    }

    /// The ordering rule of `keepingNewer` sees a refresh that is not written yet: the answer to a request
    /// sent before the 304's request does not replace the entry the 304 confirmed.
    @Test func anEarlierAnswerDoesNotReplaceAnEntryAPendingRefreshConfirmedLater() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let now = Date()
        let original = CacheEntry(status: 200, headers: [.eTag: "W/\"1\""], payload: Data("v1".utf8), storedAt: now - 10)
        try await cache.store(original, for: "u", keepingNewer: true)
        _ = try await cache.refresh(for: "u", with304Headers: [:], revalidating: original, at: now)
        #expect(cache.pendingRefreshCount == 1)
        let earlier = CacheEntry(status: 200, headers: [.eTag: "W/\"0\""], payload: Data("v0".utf8), storedAt: now - 5)
        #expect(try await cache.store(earlier, for: "u", keepingNewer: true) == false)
        #expect(try cache.entry(for: "u")?.payload == Data("v1".utf8))
        #expect(cache.pendingRefreshCount == 0, "the store's transaction wrote the refresh first")
    }

    /// A refresh held for a representation that another answer replaced before the write is not written.
    @Test func aPendingRefreshOfAReplacedRepresentationIsDropped() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let first = makeEntry(payload: "first", etag: "W/\"1\"")
        try await cache.store(first, for: "u")
        _ = try await cache.refresh(for: "u", with304Headers: [.date: "D1"], revalidating: first)
        // The lookup no longer returns the refresh once the representation changed (removed, then a new one).
        try await cache.removeEntry(for: "u")
        #expect(try cache.entry(for: "u") == nil)
        try await cache.store(makeEntry(payload: "second", etag: "W/\"2\""), for: "u")
        let stored = try #require(try cache.entry(for: "u"))
        #expect(stored.payload == Data("second".utf8) && stored.headerValue(named: "Date") == nil)
        #expect(cache.pendingRefreshCount == 0)
        #expect(cache.statistics.supersededWrites == 1)
    }

    /// Many refreshes of hot entries share one write: a burst of 304s costs one transaction.
    @Test func aBurstOfRefreshesIsWrittenTogether() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        // No background write during the burst, however slow the machine: the next write takes them all.
        cache.refreshFlushHold = .seconds(600)
        var entries: [CacheEntry] = []
        for index in 0..<20 {
            let entry = makeEntry(payload: "body \(index)", etag: "W/\"\(index)\"")
            try await cache.store(entry, for: "u\(index)")
            entries.append(entry)
        }
        for round in 0..<5 {
            for (index, entry) in entries.enumerated() {
                _ = try await cache.refresh(for: "u\(index)", with304Headers: [.date: "R\(round)"], revalidating: entry)
            }
        }
        #expect(cache.pendingRefreshCount == 20, "one pending refresh per entry, the latest")
        #expect(try cache.entry(for: "u7")?.headerValue(named: "Date") == "R4")
        try await cache.store(makeEntry(payload: "another"), for: "v")
        #expect(cache.pendingRefreshCount == 0, "written by the next write transaction, together")
        #expect(cache.statistics.refreshes == 100)
        #expect(try cache.entry(for: "u7")?.headerValue(named: "Date") == "R4")
    }

    /// The shortcut (nothing committed since the lookup) holds only for the entry of the same URL: an entry
    /// read for another URL is checked against what `url` holds, as before.
    @Test func anEntryOfAnotherURLIsCheckedAgainstTheStoredOne() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        try await cache.store(makeEntry(payload: "a", etag: "W/\"a\""), for: "a")
        try await cache.store(makeEntry(payload: "b", etag: "W/\"b\""), for: "b")
        let readA = try #require(try cache.entry(for: "a"))
        #expect(try await cache.refresh(for: "b", with304Headers: [:], revalidating: readA) == nil)
        #expect(try cache.entry(for: "b")?.payload == Data("b".utf8))
        #expect(cache.pendingRefreshCount == 0)
    }
}
