import Foundation
import HTTPTypes
import LMDB
import Testing
import TechnicalCache

@Suite struct ResponseCacheTests {
    @Test func storeAndLookUpKeepsEverythingButCredentials() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("secret"))
        defer { cache.close() }
        let entry = makeEntry(payload: "{\"value\":[1,2,3]}", etag: "W/\"42\"", lastModified: "Tue, 15 Nov 1994 12:45:26 GMT", extraHeaders: [
            .setCookie: "session=abc",
            HTTPField.Name("X-Order")!: "1",
            HTTPField.Name("X-Order")!: "2",
        ])
        #expect(try await cache.store(entry, for: "https://h/svc/Products?$top=2&$skip=1"))
        let found = try #require(try cache.entry(for: "https://h/svc/Products?$top=2&$skip=1"))
        #expect(found.status == 200)
        #expect(found.payload == entry.payload)
        #expect(found.etag == "W/\"42\"")
        #expect(found.lastModified == "Tue, 15 Nov 1994 12:45:26 GMT")
        #expect(found.headers.map(\.name.rawName) == ["Content-Type", "ETag", "Last-Modified", "X-Order", "X-Order"])
        #expect(found.headers.filter { $0.name.rawName == "X-Order" }.map(\.value) == ["1", "2"])
        #expect(abs(found.storedAt.timeIntervalSince(entry.storedAt)) < 0.002)
        #expect(found.lastUsedAt >= found.storedAt)
        #expect(found.size > entry.payload.count)
        // The key is the literal URL: another order of query options is another entry.
        #expect(try cache.entry(for: "https://h/svc/Products?$skip=1&$top=2") == nil)
        let stats = cache.statistics
        #expect(stats.requests == 2 && stats.hits == 1 && stats.misses == 1 && stats.writes == 1)
        #expect(stats.entryCount == 1 && stats.currentBytes == found.size)
    }

    @Test func anEmptyPayloadIsAnEntryNotNil() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        try await cache.store(CacheEntry(status: 204, headers: [:], payload: Data()), for: "https://h/empty")
        let empty = try #require(try cache.entry(for: "https://h/empty"))
        #expect(empty.payload.isEmpty)
        #expect(empty.status == 204)
        #expect(try cache.entry(for: "https://h/never") == nil)
    }

    @Test func theServerPayloadReplacesThePreviousEntry() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        try await cache.store(makeEntry(payload: "old old old"), for: "u")
        let bytesAfterFirst = cache.statistics.currentBytes
        try await cache.store(makeEntry(payload: "new"), for: "u")
        #expect(try cache.entry(for: "u")?.payload == Data("new".utf8))
        #expect(cache.statistics.entryCount == 1)
        #expect(cache.statistics.currentBytes == bytesAfterFirst - 8)
    }

    @Test func reopenAfterCloseKeepsEntries() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(durability: .full))
        try cache.open(encryption: .key("k"))
        for index in 0..<20 { try await cache.store(makeEntry(payload: "payload \(index)"), for: "https://h/\(index)") }
        cache.close()
        #expect(!cache.isOpen)
        #expect(throws: CacheError.notOpen) { try cache.entry(for: "https://h/1") }
        await #expect(throws: CacheError.notOpen) { try await cache.store(makeEntry(payload: "x"), for: "https://h/1") }
        await #expect(throws: CacheError.notOpen) { try await cache.removeEntry(for: "https://h/1") }
        #expect(throws: CacheError.notOpen) { try cache.rekey(to: .key("other")) }
        try cache.open(encryption: .key("k"))
        try cache.open(encryption: .key("k"))  // opening an open cache is harmless
        defer { cache.close() }
        for index in 0..<20 {
            #expect(try cache.entry(for: "https://h/\(index)")?.payload == Data("payload \(index)".utf8))
        }
        // A new object over the same directory sees them too (after the first one closed).
        cache.close()
        let other = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try other.open(encryption: .key("k"))
        defer { other.close() }
        #expect(other.statistics.entryCount == 20)
    }

    @Test func wrongKeyIsRefusedAndNothingIsErased() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("right"))
        try await cache.store(makeEntry(payload: "precious"), for: "u")
        cache.close()
        #expect(throws: CacheError.wrongKey) { try cache.open(encryption: .key("wrong")) }
        #expect(!cache.isOpen)
        #expect(throws: CacheError.encryptionMismatch) { try cache.open(encryption: .disabled) }
        #expect(throws: CacheError.invalidKey) { try cache.open(encryption: .key("")) }
        try cache.open(encryption: .key("right"))
        defer { cache.close() }
        #expect(try cache.entry(for: "u")?.payload == Data("precious".utf8))
    }

    @Test func defaultKeyStoreKeepsARandomKeyInAnOwnerOnlyFile() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open()
        try await cache.store(makeEntry(payload: "kept"), for: "u")
        cache.close()
        let key = try #require(try cache.defaultKeyStore.loadKey())
        #expect(try permissions(dir.cachePath + "/cache.key") == 0o600)
        // The stored random key is the cache's key.
        try cache.open(encryption: .key(key))
        #expect(try cache.entry(for: "u")?.payload == Data("kept".utf8))
        cache.close()
        try cache.open()
        #expect(try cache.entry(for: "u") != nil)
        cache.close()
        // A lost key is reported, and nothing is erased.
        try FileManager.default.removeItem(atPath: dir.cachePath + "/cache.key")
        #expect(throws: CacheError.keyUnavailable) { try cache.open() }
        try cache.open(encryption: .key(key))
        defer { cache.close() }
        #expect(try cache.entry(for: "u") != nil)
    }

    @Test func encryptionOffOnlyWhenAskedAndNeverMixed() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .disabled)
        try await cache.store(makeEntry(payload: "plain"), for: "u")
        #expect(throws: CacheError.encryptionMismatch) { try cache.rekey(to: .key("k")) }
        cache.close()
        #expect(throws: CacheError.encryptionMismatch) { try cache.open(encryption: .key("k")) }
        try cache.open(encryption: .disabled)
        defer { cache.close() }
        #expect(try cache.entry(for: "u")?.payload == Data("plain".utf8))
    }

    @Test func aSecondOpenOfTheDirectoryInThisProcessIsRefused() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let first = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        let second = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        // The same directory under another spelling is the same directory.
        let third = try ResponseCache(directory: dir.path + "/./cache/", configuration: testConfiguration())
        try first.open(encryption: .key("k"))
        #expect(throws: CacheError.alreadyOpen) { try second.open(encryption: .key("k")) }
        #expect(throws: CacheError.alreadyOpen) { try third.open(encryption: .key("k")) }
        #expect(throws: CacheError.alreadyOpen) { try second.reset() }
        first.close()
        try second.open(encryption: .key("k"))
        second.close()
    }

    @Test func resetOnlyWhileClosed() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        try await cache.store(makeEntry(payload: "gone soon"), for: "u")
        #expect(throws: CacheError.cacheIsOpen) { try cache.reset() }
        #expect(try cache.entry(for: "u") != nil)
        cache.close()
        try cache.reset()
        // After a reset any key creates a new cache.
        try cache.open(encryption: .key("another"))
        defer { cache.close() }
        #expect(try cache.entry(for: "u") == nil)
        #expect(cache.statistics.currentBytes == 0)
        #expect(cache.statistics.entryCount == 0)
    }

    @Test func filesAreOwnerOnly() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open()
        try await cache.store(makeEntry(payload: "x"), for: "u")
        cache.close()
        #expect(try permissions(dir.cachePath) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.cachePath).sorted()
        #expect(files == ["cache.key", "cache.lock", "data.mdb", "lock.mdb"])
        for file in files {
            #expect(try permissions(dir.cachePath + "/" + file) == 0o600, "\(file)")
        }
    }

    @Test func noStoreResponsesAreNotStoredAndDropTheOldEntry() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        try await cache.store(makeEntry(payload: "old"), for: "u")
        let stored = try await cache.store(makeEntry(payload: "secret", extraHeaders: [.cacheControl: "no-store"]), for: "u")
        #expect(!stored)
        #expect(try cache.entry(for: "u") == nil)
        #expect(cache.statistics.writes == 1)
        #expect(cache.statistics.currentBytes == 0)
    }

    @Test func oversizeEntriesAreNotStoredAndCounted() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(sizeLimit: 64 << 10, maxEntryFraction: 0.25))
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        try await cache.store(makeEntry(payload: "small"), for: "small")
        try await cache.store(makeEntry(payload: "old"), for: "big")
        #expect(try await cache.store(CacheEntry(status: 200, headers: [:], payload: Data(count: 15_000)), for: "fits"))
        #expect(!(try await cache.store(CacheEntry(status: 200, headers: [:], payload: Data(count: 17_000)), for: "big")))
        #expect(!(try await cache.store(CacheEntry(status: 200, headers: [:], payload: Data(count: 100_000)), for: "huge")))
        let stats = cache.statistics
        #expect(stats.oversizeRejects == 2)
        #expect(stats.evictions == 0)
        #expect(try cache.entry(for: "big") == nil)  // the superseded entry is gone
        #expect(try cache.entry(for: "small") != nil)
        #expect(try cache.entry(for: "fits") != nil)
    }

    @Test func invalidInputGetsTypedErrors() async throws {
        #expect(throws: CacheError.invalidConfiguration) { try ResponseCache(directory: "", configuration: testConfiguration()) }
        for configuration in [
            testConfiguration(sizeLimit: 0),
            testConfiguration(lowWaterMark: 0),
            testConfiguration(lowWaterMark: 1.5),
            testConfiguration(maxEntryFraction: 0),
            testConfiguration(durability: .periodic(interval: .seconds(-1))),
            CacheConfiguration(keyDerivation: .pbkdf2(rounds: 0)),
        ] {
            #expect(throws: CacheError.invalidConfiguration) { try ResponseCache(directory: "/tmp/x", configuration: configuration) }
        }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        await #expect(throws: CacheError.invalidEntry) { try await cache.store(CacheEntry(status: 42, headers: [:], payload: Data()), for: "u") }
        // A file where the directory should be.
        try Data().write(to: URL(fileURLWithPath: dir.path + "/file"))
        let blocked = try ResponseCache(directory: dir.path + "/file", configuration: testConfiguration())
        #expect(throws: CacheError.fileSystem) { try blocked.open(encryption: .key("k")) }
    }

    @Test func refreshAfter304MergesHeadersAndKeepsThePayload() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let original = makeEntry(payload: "body", etag: "\"v1\"", extraHeaders: [.contentLength: "4"])
        try await cache.store(original, for: "u")
        let refreshed = try #require(try await cache.refresh(for: "u", with304Headers: [
            .eTag: "W/\"v1\"",
            .date: "Mon, 01 Jan 2024 00:00:00 GMT",
            .contentLength: "0",
            .setCookie: "x=1",
        ], at: original.storedAt.addingTimeInterval(1)))
        #expect(refreshed.payload == Data("body".utf8))
        #expect(refreshed.etag == "W/\"v1\"")
        #expect(refreshed.storedAt > original.storedAt)
        let stored = try #require(try cache.entry(for: "u"))
        #expect(stored.etag == "W/\"v1\"")
        #expect(stored.headerValue(named: "content-length") == "4")
        #expect(stored.headerValue(named: "Date") == "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(stored.headerValue(named: "Set-Cookie") == nil)
        #expect(stored.payload == Data("body".utf8))
        #expect(cache.statistics.refreshes == 1)
        #expect(try await cache.refresh(for: "never", with304Headers: [:]) == nil)
    }

    /// A 304 refreshes only the copy it confirmed: not one that replaced it meanwhile, and not when it
    /// names another entity tag. Nothing changes then, and the write counts as superseded.
    @Test func aRefreshLeavesAnotherRepresentationAlone() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let first = makeEntry(payload: "old body", etag: "W/\"1\"")
        try await cache.store(first, for: "u")
        let second = makeEntry(payload: "new body", etag: "W/\"2\"")
        try await cache.store(second, for: "u")
        // The request revalidated `first`; `second` replaced it while the 304 was on its way.
        #expect(try await cache.refresh(for: "u", with304Headers: [.eTag: "W/\"1\""], revalidating: first) == nil)
        // A 304 naming another tag than the stored one.
        #expect(try await cache.refresh(for: "u", with304Headers: [.eTag: "W/\"3\""]) == nil)
        let stored = try #require(try cache.entry(for: "u"))
        #expect(stored.payload == Data("new body".utf8) && stored.etag == "W/\"2\"")
        #expect(cache.statistics.supersededWrites == 2 && cache.statistics.refreshes == 0)
        // The copy it confirmed is refreshed, and never dated earlier than it was.
        let refreshed = try #require(try await cache.refresh(for: "u", with304Headers: [.eTag: "W/\"2\""],
                                                             revalidating: second, at: Date(timeIntervalSinceNow: -3600)))
        #expect(refreshed.payload == Data("new body".utf8) && refreshed.storedAt.timeIntervalSince(second.storedAt) > -0.001, "stored to the millisecond")
        #expect(cache.statistics.refreshes == 1)
    }

    /// With `keepingNewer`, the answer to an earlier request never replaces the answer to a later one.
    @Test func keepingNewerDropsTheAnswerToAnEarlierRequest() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let now = Date()
        let later = CacheEntry(status: 200, headers: [.eTag: "W/\"2\""], payload: Data("later".utf8), storedAt: now)
        let earlier = CacheEntry(status: 200, headers: [.eTag: "W/\"1\""], payload: Data("earlier".utf8), storedAt: now - 0.5)
        #expect(try await cache.store(later, for: "u", keepingNewer: true))
        #expect(try await cache.store(earlier, for: "u", keepingNewer: true) == false)
        #expect(try await cache.store(earlier, for: "u", keepingNewer: true) == false)
        #expect(try cache.entry(for: "u")?.payload == Data("later".utf8))
        #expect(cache.statistics.supersededWrites == 2)
        let latest = CacheEntry(status: 200, headers: [:], payload: Data("latest".utf8), storedAt: now + 0.5)
        #expect(try await cache.store(latest, for: "u", keepingNewer: true))
        #expect(try cache.entry(for: "u")?.payload == Data("latest".utf8))
        // Without it, the last write wins whatever its date.
        #expect(try await cache.store(earlier, for: "u"))
        #expect(try cache.entry(for: "u")?.payload == Data("earlier".utf8))
    }

    @Test func removeEntryRemovesOnce() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        try await cache.store(makeEntry(payload: "x"), for: "u")
        #expect(try await cache.removeEntry(for: "u"))
        #expect(!(try await cache.removeEntry(for: "u")))
        #expect(try cache.entry(for: "u") == nil)
        #expect(cache.statistics.removals == 1)
        #expect(cache.statistics.currentBytes == 0)
    }

    @Test func partitionsNeverSeeEachOthersEntries() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let url = "https://h/svc/Me"
        let alice = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(partition: "alice"))
        try alice.open(encryption: .key("k"))
        try await alice.store(makeEntry(payload: "alice's data"), for: url)
        alice.close()
        let bob = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(partition: "bob"))
        try bob.open(encryption: .key("k"))
        #expect(try bob.entry(for: url) == nil)
        try await bob.store(makeEntry(payload: "bob's data"), for: url)
        #expect(try bob.entry(for: url)?.payload == Data("bob's data".utf8))
        bob.close()
        let nobody = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try nobody.open(encryption: .key("k"))
        #expect(try nobody.entry(for: url) == nil)
        #expect(nobody.statistics.entryCount == 2)
        nobody.close()
        try alice.open(encryption: .key("k"))
        defer { alice.close() }
        #expect(try alice.entry(for: url)?.payload == Data("alice's data".utf8))
    }

    @Test func rekeyKeepsEveryEntry() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("old"))
        for index in 0..<50 { try await cache.store(CacheEntry(status: 200, headers: [:], payload: patternPayload(index: index, count: index * 97)), for: "u\(index)") }
        let bytesBefore = cache.statistics.currentBytes
        try cache.rekey(to: .key("new"))
        for index in 0..<50 { #expect(try cache.entry(for: "u\(index)")?.payload == patternPayload(index: index, count: index * 97)) }
        #expect(cache.statistics.currentBytes == bytesBefore)
        #expect(cache.statistics.integrityFailures == 0)
        cache.close()
        #expect(throws: CacheError.wrongKey) { try cache.open(encryption: .key("old")) }
        try cache.open(encryption: .key("new"))
        for index in 0..<50 { #expect(try cache.entry(for: "u\(index)")?.payload == patternPayload(index: index, count: index * 97)) }
        // Rekey to a key store: the store's (new, random) key opens the cache afterwards.
        try cache.rekey(to: .keyStore(cache.defaultKeyStore))
        #expect(throws: CacheError.encryptionMismatch) { try cache.rekey(to: .disabled) }
        cache.close()
        try cache.open()
        defer { cache.close() }
        #expect(try cache.entry(for: "u49")?.payload == patternPayload(index: 49, count: 49 * 97))
    }

    @Test func lookupsAndWritesFromManyTasksStayConsistent() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<40 {
                        let url = "https://h/\(task)/\(round % 10)"
                        let payload = patternPayload(index: task * 1000 + round, count: 200 + round)
                        try await cache.store(CacheEntry(status: 200, headers: [:], payload: payload), for: url)
                        let found = try cache.entry(for: url)
                        // Only this task writes this URL, so it reads back what it wrote.
                        #expect(found?.payload == payload)
                    }
                }
            }
            group.addTask { try cache.rekey(to: .key("k2")) }
            try await group.waitForAll()
        }
        let stats = cache.statistics
        #expect(stats.entryCount == 80)
        #expect(stats.integrityFailures == 0)
        #expect(stats.hits == 320)
    }
}

@Suite struct BudgetBoundaryTests {
    /// An entry exactly as large as the largest allowed entry is stored; one byte more is not.
    /// Sizes: meta is 15 bytes without headers; a combined box adds 5 + 4 + 28, a split one 5 + 28 + 28;
    /// the bookkeeping adds 128.
    @Test(arguments: [(100_000, 0.5, 50_000 - 180), (1 << 20, 0.1, 104_857 - 204)])
    func theLargestAllowedEntryFitsExactly(limit: Int, fraction: Double, payloadCount: Int) async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(sizeLimit: limit, maxEntryFraction: fraction))
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let maximum = Int(Double(limit) * fraction)
        #expect(try await cache.store(CacheEntry(status: 200, headers: [:], payload: Data(count: payloadCount)), for: "fits"))
        #expect(try cache.entry(for: "fits")?.size == maximum)
        #expect(!(try await cache.store(CacheEntry(status: 200, headers: [:], payload: Data(count: payloadCount + 1)), for: "too big")))
        #expect(cache.statistics.oversizeRejects == 1)
        #expect(cache.statistics.currentBytes == maximum)
    }
}

@Suite struct CloseWhileBusyTests {
    /// Closing and reopening while other tasks read and write never crashes or corrupts: operations
    /// either succeed or end with `CacheError.notOpen`, and what was stored stays readable.
    @Test func closeAndReopenUnderLoad() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        try await withThrowingTaskGroup(of: Int.self) { group in
            // Each task returns how many of its operations found the cache closed.
            for task in 0..<4 {
                group.addTask {
                    var refused = 0
                    for round in 0..<150 {
                        let url = "https://h/\(task)/\(round % 7)"
                        do {
                            try await cache.store(CacheEntry(status: 200, headers: [:], payload: patternPayload(index: round, count: 100 + round)), for: url)
                            if let found = try cache.entry(for: url) {
                                // Whatever version is read is whole: its bytes match its own length.
                                let version = found.payload.count - 100
                                #expect(found.payload == patternPayload(index: version, count: 100 + version))
                            }
                        } catch CacheError.notOpen {
                            refused += 1
                        }
                    }
                    return refused
                }
            }
            group.addTask {
                for _ in 0..<20 {
                    cache.close()
                    try cache.open(encryption: .key("k"))
                    try await Task.sleep(for: .milliseconds(2))
                }
                return 0
            }
            // Refusals (`notOpen`) are expected while the cache is closed; no other error may escape.
            for try await _ in group {}
        }
        if !cache.isOpen { try cache.open(encryption: .key("k")) }
        defer { cache.close() }
        let stats = cache.statistics
        #expect(stats.integrityFailures == 0)
        #expect(stats.entryCount <= 28)
        for task in 0..<4 {
            for slot in 0..<7 {
                if let entry = try cache.entry(for: "https://h/\(task)/\(slot)") {
                    let version = entry.payload.count - 100
                    #expect(version % 7 == slot)
                    #expect(entry.payload == patternPayload(index: version, count: 100 + version))
                }
            }
        }
        #expect(cache.statistics.integrityFailures == 0)
    }
}
