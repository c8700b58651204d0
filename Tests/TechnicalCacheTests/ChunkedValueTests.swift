import Foundation
import HTTPTypes
import LMDB
import ODataCore
import Synchronization
import Testing
@testable import TechnicalCache
#if canImport(Glibc)
import Glibc
#endif

/// Values larger than one page stored in one-page chunks (issue 31, `OpenCache+Chunks.swift`): they round-trip
/// whole, no value takes more than one page per LMDB record, and no chunk outlives its entry.
@Suite struct ChunkedValueTests {
    private func entry(_ count: Int, index: Int = 1) -> CacheEntry {
        CacheEntry(status: 200, headers: [.contentType: "application/octet-stream", .eTag: "\"\(index)\""], payload: patternPayload(index: index, count: count))
    }

    /// The stored layout's size of `entry` in `cache` (sealed as a store seals it).
    private func storedBytes(_ entry: CacheEntry, _ cache: ResponseCache) throws -> Int {
        try #require(try cache.prepareStore(entry, url: "https://h/size").sealed).byteCount
    }

    @Test(arguments: [true, false])
    func valuesRoundTripAcrossTheChunkBoundary(encrypted: Bool) async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(sizeLimit: 64 << 20))
        let encryption: CacheEncryption = encrypted ? .key("k") : .disabled
        try cache.open(encryption: encryption)
        let open = try #require(cache.state.withLock { $0 })
        let chunkBytes = open.chunkBytes
        let pageSize = try #require(try cache.chunkAudit().entryStatistics).pageSize
        #expect(chunkBytes == pageSize - 16)
        // The payload whose stored layout is exactly one page's worth: stored whole; one byte more: in chunks.
        let fixed = try storedBytes(entry(1), cache) - 1
        let boundary = chunkBytes - fixed
        #expect(try storedBytes(entry(boundary), cache) == chunkBytes)
        let sizes = [1, boundary, boundary + 1, 64 << 10, (64 << 10) + 1, 1 << 20]
        for (index, size) in sizes.enumerated() {
            try await cache.store(entry(size, index: index), for: "https://h/\(index)")
        }
        cache.close()

        try cache.open(encryption: encryption)
        defer { cache.close() }
        var expectedChunks = 0
        for (index, size) in sizes.enumerated() {
            let stored = try storedBytes(entry(size, index: index), cache)
            let found = try #require(try cache.entry(for: "https://h/\(index)"), "size \(size)")
            #expect(found.withoutTimes == entry(size, index: index).withoutTimes, "size \(size)")
            // The budget counts the sealed layout plus the fixed bookkeeping, chunked or not.
            #expect(found.size == stored + OpenCache.perEntryOverhead, "size \(size)")
            if stored > chunkBytes { expectedChunks += (stored + chunkBytes - 1) / chunkBytes }
        }
        let audit = try cache.chunkAudit()
        #expect(audit.heads == 4)
        #expect(audit.chunks == expectedChunks)
        #expect(audit.countedChunks == expectedChunks)
        #expect(audit.unaccounted == 0)
        // No record needs more than one page: no run of contiguous free pages is ever asked for.
        let entryPages = try #require(audit.entryStatistics)
        let chunkPages = try #require(audit.chunkStatistics)
        #expect(entryPages.overflowPages <= 2, "the two values stored whole take at most one page each")
        #expect(chunkPages.overflowPages <= chunkPages.entries)
        #expect(cache.statistics.currentBytes == sizes.enumerated().reduce(0) { total, item in
            total + ((try? storedBytes(entry(item.element, index: item.offset), cache)) ?? 0) + OpenCache.perEntryOverhead
        })
    }

    @Test func chunksHoldOnlyCiphertext() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        let big = entry(256 << 10, index: 7)
        try await cache.store(big, for: "https://h/big")
        cache.close()
        let file = try Data(contentsOf: URL(fileURLWithPath: dir.cachePath + "/data.mdb"))
        for offset in stride(from: 0, to: big.payload.count - 32, by: 4096 + 17) {
            #expect(file.range(of: big.payload[offset..<(offset + 32)]) == nil, "plaintext at payload offset \(offset)")
        }
        #expect(file.range(of: Data("application/octet-stream".utf8)) == nil)
    }

    /// Eviction, removal and replacement of a chunked entry remove every chunk of it in the same transaction.
    @Test func evictionRemovalAndReplacementFreeEveryChunk() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(sizeLimit: 1 << 20, lowWaterMark: 0.5))
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        for index in 0..<60 {
            try await cache.store(entry(20_000 + (index * 7919) % 50_000, index: index), for: "https://h/\(index)")
            let audit = try cache.chunkAudit()
            #expect(audit.unaccounted == 0 && audit.chunks == audit.countedChunks, "after store \(index)")
        }
        let statistics = cache.statistics
        #expect(statistics.evictions > 20)
        var audit = try cache.chunkAudit()
        #expect(audit.heads == statistics.entryCount)
        #expect(audit.chunks > 0)
        // The survivors read back whole; the evicted are gone.
        var kept: [Int] = []
        for index in 0..<60 {
            if let found = try cache.entry(for: "https://h/\(index)") {
                #expect(found.payload == entry(20_000 + (index * 7919) % 50_000, index: index).payload)
                kept.append(index)
            }
        }
        #expect(kept.count == statistics.entryCount)
        #expect(cache.statistics.integrityFailures == 0)

        // A chunked entry replaced by a small one, and one removed: their chunks go with them.
        try await cache.store(makeEntry(payload: "small"), for: "https://h/\(kept[0])")
        try await cache.removeEntry(for: "https://h/\(kept[1])")
        audit = try cache.chunkAudit()
        #expect(audit.heads == kept.count - 2)
        #expect(audit.unaccounted == 0 && audit.chunks == audit.countedChunks)
        for index in kept.dropFirst(2) { try await cache.removeEntry(for: "https://h/\(index)") }
        audit = try cache.chunkAudit()
        #expect(audit.heads == 0 && audit.chunks == 0)
        #expect(cache.statistics.currentBytes == (try #require(try cache.entry(for: "https://h/\(kept[0])"))).size)
    }

    /// A chunk missing or damaged: the entry is a miss, counted as an integrity failure, removed with every
    /// chunk it still had; the cache goes on.
    @Test(arguments: ["missing", "flipped"])
    func aDamagedChunkMakesTheEntryAMissAndIsRemoved(damage: String) async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let big = entry(100_000)
        try await cache.store(big, for: "https://h/victim")
        try await cache.store(entry(30_000, index: 2), for: "https://h/bystander")
        let open = try #require(cache.state.withLock { $0 })
        let key = open.crypto.withLock { $0 }.entryKey(for: "https://h/victim", partition: nil)
        let chunkKey = key + [0, 0, 0, 3]
        try await open.environment.write { txn in
            if damage == "missing" {
                #expect(try txn.removeValue(forKey: chunkKey, in: open.chunks))
            } else {
                var bytes = try #require(try txn.value(forKey: chunkKey, in: open.chunks))
                bytes[bytes.count / 2] ^= 0x01
                try txn.setValue(bytes, forKey: chunkKey, in: open.chunks)
            }
        }
        open.hot.removeAll()
        #expect(try cache.entry(for: "https://h/victim") == nil)
        #expect(cache.statistics.integrityFailures == 1)
        let audit = try cache.chunkAudit()
        #expect(audit.heads == 1)
        #expect(audit.unaccounted == 0 && audit.chunks == audit.countedChunks)
        #expect(try cache.entry(for: "https://h/bystander")?.payload == entry(30_000, index: 2).payload)
        try await cache.store(big, for: "https://h/victim")
        #expect(try cache.entry(for: "https://h/victim")?.payload == big.payload)
    }

    /// A cache of format 1 (every value whole under its key, however large) is read as it is and marked
    /// format 2; an unknown format is refused.
    @Test func aFormatOneCacheIsReadAndMarkedTwo() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        let old = entry(50_000, index: 5)
        // Written as format 1 wrote it: the whole sealed layout under the key.
        let open = try #require(cache.state.withLock { $0 })
        let key = open.crypto.withLock { $0 }.entryKey(for: "https://h/old", partition: nil)
        let sealed = try open.crypto.withLock { $0 }.seal(old, key: key)
        try await open.environment.write { txn in
            try txn.setValue(count: sealed.byteCount, forKey: key, in: open.entries) { sealed.write(into: $0) }
            try txn.setValue([1], forKey: OpenCache.formatKey, in: open.meta)
        }
        cache.close()

        try cache.open(encryption: .key("k"))
        #expect(try cache.entry(for: "https://h/old")?.payload == old.payload)
        let reopened = try #require(cache.state.withLock { $0 })
        #expect(try reopened.environment.read { txn in try txn.value(forKey: OpenCache.formatKey, in: reopened.meta) } == ResponseCache.formatVersion)
        // Replaced in the new layout.
        try await cache.store(old, for: "https://h/old")
        #expect(try cache.chunkAudit().heads == 1)
        #expect(try cache.entry(for: "https://h/old")?.payload == old.payload)
        try await reopened.environment.write { txn in try txn.setValue([9], forKey: OpenCache.formatKey, in: reopened.meta) }
        cache.close()
        #expect(throws: CacheError.corruptRecord) { try cache.open(encryption: .key("k")) }
    }

    /// In a child process (`CACHE_TEST_CHILD=chunkWriter`) this stores chunked entries under a small budget
    /// (so eviction runs) until killed; in a normal run it runs a short loop.
    @Test func childChunkWriter() async throws {
        let directory = childRole == .chunkWriter ? childEnvironment["CACHE_TEST_DIR"] : nil
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: directory ?? dir.cachePath, configuration: testConfiguration(sizeLimit: 2 << 20, durability: .full))
        try cache.open(encryption: .key("crash-key"))
        defer { cache.close() }
        for counter in 0..<(directory == nil ? 20 : 1_000_000) {
            try await cache.store(entry(5_000 + (counter * 7919) % 90_000, index: counter), for: "https://h/items/\(counter)")
            if directory != nil { report("COMMITTED \(counter)") }
        }
    }

    /// A process killed while it writes chunked entries leaves no chunk without its entry and no entry
    /// without its chunks: a head and its chunks commit together or not at all.
    @Test func aKillDuringChunkedWritesLeavesNoOrphanChunk() async throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let target = 60 + Int.random(in: 0..<60)
        let child = try Child(test: "ChunkedValueTests/childChunkWriter", environment: ["CACHE_TEST_CHILD": "chunkWriter", "CACHE_TEST_DIR": dir.cachePath])
        var lines = child.readLines { lines in lines.lazy.filter { $0.hasPrefix("COMMITTED ") }.count >= target }
        let killed = child.process.isRunning
        if killed { kill(child.pid, SIGKILL) }
        lines += child.readLines { _ in false }
        child.process.waitUntilExit()
        try #require(killed, "the child ended by itself: \(child.stderrText.suffix(2000))")
        let committed = lines.filter { $0.hasPrefix("COMMITTED ") }.count
        try #require(committed >= target)

        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(sizeLimit: 2 << 20))
        try cache.open(encryption: .key("crash-key"))
        defer { cache.close() }
        let audit = try cache.chunkAudit()
        #expect(audit.heads > 0)
        #expect(audit.unaccounted == 0)
        #expect(audit.chunks == audit.countedChunks)
        var found = 0
        for counter in 0...committed {
            if let stored = try cache.entry(for: "https://h/items/\(counter)") {
                #expect(stored.payload == entry(5_000 + (counter * 7919) % 90_000, index: counter).payload)
                found += 1
            }
        }
        #expect(found == cache.statistics.entryCount)
        #expect(cache.statistics.integrityFailures == 0)
    }
}
