import Foundation
import HTTPTypes
import LMDB
import ODataCore
import Synchronization
import Testing
@testable import TechnicalCache

/// Eviction in bounded steps (issue 31): a run longer than `OpenCache.evictionBatch` entries is spread over
/// the writes that follow; it ends where it always did (the low-water mark), in the same order.
@Suite struct BoundedEvictionTests {
    /// Many small entries: the write that crosses the limit owes far more than a batch of victims. It and
    /// each following write evict at most a batch beyond what they need, until the low-water mark.
    @Test func aLongRunIsSpreadOverTheFollowingWritesInLRUOrder() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let limit = 256 << 10
        let configuration = testConfiguration(sizeLimit: limit, lowWaterMark: 0.8)
        let cache = try ResponseCache(directory: dir.cachePath, configuration: configuration)
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let open = try #require(cache.state.withLock { $0 })
        func url(_ index: Int) -> String { "https://h/svc/Set(\(index))" }
        func store(_ index: Int) async throws -> Int {
            let before = cache.statistics.evictions
            try await cache.store(CacheEntry(status: 200, headers: [:], payload: patternPayload(index: index, count: 100)), for: url(index))
            return cache.statistics.evictions - before
        }

        var stored = 0
        while cache.statistics.evictions == 0 {
            _ = try await store(stored)
            stored += 1
            try #require(stored < 5_000, "no eviction")
        }
        // The run owes (limit − low-water mark) ÷ ~260 bytes ≈ 200 victims: more than a batch. One entry of
        // the same size needs at most one victim to fit, so no write evicts more than a batch and one.
        #expect(cache.statistics.evictions <= OpenCache.evictionBatch + 1)
        func owed() -> Bool { open.evictionOwed.load(ordering: .relaxed) }
        #expect(owed())
        var writes = 1
        while owed() {
            let evicted = try await store(stored)
            stored += 1
            writes += 1
            #expect(evicted >= 1 && evicted <= OpenCache.evictionBatch + 1, "write \(stored - 1) evicted \(evicted)")
            try #require(writes < 100, "the low-water mark was not reached")
        }
        let statistics = cache.statistics
        #expect(writes > 1, "the run fitted in one write")
        #expect(statistics.currentBytes <= configuration.lowWaterBytes)
        #expect(statistics.evictions > OpenCache.evictionBatch)
        // Exactly the oldest went.
        for index in 0..<stored {
            #expect(try cache.containsEntry(for: url(index)) == (index >= statistics.evictions), "entry \(index)")
        }
        #expect(statistics.entryCount == stored - statistics.evictions)
        // Below the low-water mark, writes evict nothing until the limit is crossed again.
        #expect(try await store(stored) == 0)
    }

    /// One transaction's eviction stops after `maxCount` victims, unless the write does not fit under the
    /// limit yet: that much it always evicts.
    @Test func aTransactionEvictsAtMostABatchBeyondWhatItsWriteNeeds() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let configuration = testConfiguration(sizeLimit: 1 << 20, lowWaterMark: 0.8)
        let cache = try ResponseCache(directory: dir.cachePath, configuration: configuration)
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let open = try #require(cache.state.withLock { $0 })
        for index in 0..<500 {
            try await cache.store(CacheEntry(status: 200, headers: [:], payload: patternPayload(index: index, count: 100)), for: "https://h/\(index)")
        }
        #expect(cache.statistics.evictions == 0)
        // Towards a target far below: at most the batch.
        let bounded = try await open.environment.write { txn in
            var total = try open.readBytes(txn)
            let evicted = try open.evict(toFit: 0, target: 0, limit: .max, maxCount: OpenCache.evictionBatch, total: &total, txn)
            try open.writeBytes(total, txn)
            return evicted.count
        }
        #expect(bounded == OpenCache.evictionBatch)
        // A write that needs room under the limit gets all of it, past the batch.
        let forced = try await open.environment.write { txn in
            var total = try open.readBytes(txn)
            let needed = 1 << 20 - total + 100 * 300
            let evicted = try open.evict(toFit: needed, target: 0, limit: 1 << 20, maxCount: 0, total: &total, txn)
            try open.writeBytes(total, txn)
            #expect(total + needed <= 1 << 20)
            return evicted.count
        }
        #expect(forced > OpenCache.evictionBatch)
    }
}
