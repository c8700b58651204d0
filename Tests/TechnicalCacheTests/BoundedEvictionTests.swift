import Foundation
import HTTPTypes
import LMDB
import ODataCore
import Synchronization
import Testing
@testable import TechnicalCache

/// Eviction in bounded steps (issue 31): a run longer than `OpenCache.evictionBatch` entries is not done
/// on the caller's path; it ends where it always did (the low-water mark), in the same order.
@Suite struct BoundedEvictionTests {
    /// Many small entries: one write over the limit owes far more than a batch of victims. The write evicts
    /// a bounded number; the background goes on to the low-water mark, least recently used first.
    @Test func aLongRunGoesOnInTheBackgroundInLRUOrder() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let limit = 256 << 10
        let configuration = testConfiguration(sizeLimit: limit, lowWaterMark: 0.8)
        let cache = try ResponseCache(directory: dir.cachePath, configuration: configuration)
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let open = try #require(cache.state.withLock { $0 })
        func url(_ index: Int) -> String { "https://h/svc/Set(\(index))" }

        var stored = 0
        while cache.statistics.evictions == 0 {
            try await cache.store(CacheEntry(status: 200, headers: [:], payload: patternPayload(index: stored, count: 100)), for: url(stored))
            stored += 1
            try #require(stored < 5_000, "no eviction")
        }
        // The run this write started owes (limit − low-water mark) ÷ ~260 bytes ≈ 200 victims: more than a batch.
        let deadline = ContinuousClock.now + .seconds(30)
        while (open.evictionScheduled.load(ordering: .acquiring) || cache.counts.currentBytes > configuration.lowWaterBytes),
              ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let statistics = cache.statistics
        #expect(statistics.currentBytes <= configuration.lowWaterBytes)
        #expect(statistics.evictions > OpenCache.evictionBatch, "the run fitted in one batch: \(statistics.evictions)")
        #expect(statistics.storageFailures == 0)
        // Exactly the oldest went.
        for index in 0..<stored {
            #expect(try cache.containsEntry(for: url(index)) == (index >= statistics.evictions), "entry \(index)")
        }
        #expect(statistics.entryCount == stored - statistics.evictions)
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
