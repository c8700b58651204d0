import CoreMetrics
import Foundation
import Logging
import ODataCore
import ODataTelemetry
import TechnicalCache

/// The online store's cache decisions as log lines (`trace`) and metrics: lookups by result, 304s, coalesced
/// reads, and the cache's own evictions, integrity failures and size, reported as they change.
final class CacheReporter: Sendable {
    private let telemetry: Telemetry
    private let hits: Counter
    private let misses: Counter
    private let notModifiedCounter: Counter
    private let coalescedCounter: Counter
    private let evictions: Counter
    private let integrityFailures: Counter
    private let bytes: Gauge
    /// The cache's counts last reported, so that only their growth is added.
    private let reported = LockedValue<(evictions: Int, integrityFailures: Int, bytes: Int)>((0, 0, -1))

    init(telemetry: Telemetry) {
        self.telemetry = telemetry
        hits = telemetry.counter(MetricName.cacheLookups, [("result", "hit")])
        misses = telemetry.counter(MetricName.cacheLookups, [("result", "miss")])
        notModifiedCounter = telemetry.counter(MetricName.cacheNotModified)
        coalescedCounter = telemetry.counter(MetricName.coalescedReads)
        evictions = telemetry.counter(MetricName.cacheEvictions)
        integrityFailures = telemetry.counter(MetricName.cacheIntegrityFailures)
        bytes = telemetry.gauge(MetricName.cacheBytes)
    }

    func lookup(hit: Bool, url: String, cache: ResponseCache?) {
        (hit ? hits : misses).increment()
        decision(hit ? "hit" : "miss", url: url)
        // A miss may be a damaged entry the lookup removed.
        if !hit, let cache { counts(of: cache) }
    }

    func notModified(url: String) {
        notModifiedCounter.increment()
        decision("revalidated (304)", url: url)
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
        let (newEvictions, newFailures, sizeChanged) = reported.withLock { last -> (Int, Int, Bool) in
            let delta = (max(0, counts.evictions - last.evictions), max(0, counts.integrityFailures - last.integrityFailures), counts.currentBytes != last.bytes)
            last = (max(last.evictions, counts.evictions), max(last.integrityFailures, counts.integrityFailures), counts.currentBytes)
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
        if sizeChanged { bytes.record(counts.currentBytes) }
    }

    private static func withoutQuery(_ url: String) -> String {
        String(url.prefix { $0 != "?" })
    }
}
