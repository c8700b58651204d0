import CoreMetrics
import Foundation
import Logging
import ODataCore
import ODataTelemetry
import TechnicalCache

/// The online store's cache decisions as its statistics, log lines (`trace`) and metrics: lookups by result,
/// 304s, reads served fresh, coalesced reads, and the cache's own evictions, integrity failures, storage failures
/// and size, reported as they change. It is the listener of the store's `CachingTransport`.
final class CacheReporter: CacheEventListener {
    private let telemetry: Telemetry
    /// The store's counters.
    private let counters: LockedValue<OnlineStoreStatistics>
    private let cache: ResponseCache?
    private let hits: Counter
    private let misses: Counter
    private let notModifiedCounter: Counter
    private let coalescedCounter: Counter
    private let evictions: Counter
    private let integrityFailures: Counter
    private let storageFailures: Counter
    private let bytes: Gauge
    /// The cache's counts last reported, so that only their growth is added.
    private let reported = LockedValue<(evictions: Int, integrityFailures: Int, storageFailures: Int, bytes: Int)>((0, 0, 0, -1))

    init(telemetry: Telemetry, counters: LockedValue<OnlineStoreStatistics>, cache: ResponseCache?) {
        self.telemetry = telemetry
        self.counters = counters
        self.cache = cache
        hits = telemetry.counter(MetricName.cacheLookups, [("result", "hit")])
        misses = telemetry.counter(MetricName.cacheLookups, [("result", "miss")])
        notModifiedCounter = telemetry.counter(MetricName.cacheNotModified)
        coalescedCounter = telemetry.counter(MetricName.coalescedReads)
        evictions = telemetry.counter(MetricName.cacheEvictions)
        integrityFailures = telemetry.counter(MetricName.cacheIntegrityFailures)
        storageFailures = telemetry.counter(MetricName.cacheStorageFailures)
        bytes = telemetry.gauge(MetricName.cacheBytes)
    }

    func cacheHit(url: String) {
        counters.withLock { $0.cacheHits += 1 }
        hits.increment()
        decision("hit", url: url)
    }

    func cacheMiss(url: String) {
        counters.withLock { $0.cacheMisses += 1 }
        misses.increment()
        decision("miss", url: url)
        // A miss may be a damaged entry the lookup removed.
        if let cache { counts(of: cache) }
    }

    func cacheServedFresh(url: String) {
        counters.withLock { $0.servedFresh += 1 }
        decision("served fresh", url: url)
    }

    func cacheConditionalHit(url: String) {
        counters.withLock { $0.notModified += 1 }
        notModifiedCounter.increment()
        decision("revalidated (304)", url: url)
    }

    func cacheChanged(url: String, change: CacheChange) {
        decision(change.rawValue, url: url)
        if change != .refreshed && change != .refreshSuperseded, let cache { counts(of: cache) }
    }

    func cacheStorageFailed(url: String, operation: CacheStorageOperation, error: CacheError) {
        // The cache logged the first failure of this kind (as a warning); here the decision, at `trace`.
        decision("storage failed (\(operation.rawValue))", url: url)
        if let cache { counts(of: cache) }
    }

    func coalesced() {
        coalescedCounter.increment()
    }

    func decision(_ text: @autoclosure () -> String, url: @autoclosure () -> String) {
        telemetry.logger.trace("cache", metadata: ["decision": .string(text()), "url": .string(Self.withoutQuery(url()))])
    }

    /// Adds what the cache counted since the last report.
    func counts(of cache: ResponseCache) {
        let counts = cache.counts
        let (newEvictions, newFailures, newStorageFailures, sizeChanged) = reported.withLock { last -> (Int, Int, Int, Bool) in
            let delta = (max(0, counts.evictions - last.evictions), max(0, counts.integrityFailures - last.integrityFailures),
                         max(0, counts.storageFailures - last.storageFailures), counts.currentBytes != last.bytes)
            last = (max(last.evictions, counts.evictions), max(last.integrityFailures, counts.integrityFailures),
                    max(last.storageFailures, counts.storageFailures), counts.currentBytes)
            return delta
        }
        if newEvictions > 0 {
            evictions.increment(by: Int64(newEvictions))
            telemetry.logger.debug("cache evicted entries", metadata: ["count": .stringConvertible(newEvictions), "bytes": .stringConvertible(counts.currentBytes)])
        }
        if newFailures > 0 {
            integrityFailures.increment(by: Int64(newFailures))
            telemetry.logger.warning("cache entries failed their integrity check and were removed", metadata: ["count": .stringConvertible(newFailures)])
        }
        if newStorageFailures > 0 { storageFailures.increment(by: Int64(newStorageFailures)) }
        if sizeChanged { bytes.record(counts.currentBytes) }
    }

    private static func withoutQuery(_ url: String) -> String {
        String(url.prefix { $0 != "?" })
    }
}
