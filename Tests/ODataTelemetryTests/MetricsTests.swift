import CoreMetrics
import Foundation
import HTTPTypes
import TechnicalCache
import MetricsTestKit
import ODataCore
import ODataFixtures
import ODataTelemetry
import OfflineStore
import OnlineStore
import Testing

/// The metrics after a scripted sequence: 2 misses, 2 hits, one 304, one eviction (online); one failed upload (offline).
@Suite struct MetricsTests {
    @Test func aScriptedSequenceGivesExactCounts() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let folder = try TemporaryFolder()
        let metrics = TestMetrics()
        let telemetry = Telemetry(metricsFactory: metrics)

        var options = OnlineStoreOptions()
        options.storeDirectory = folder.url
        options.cacheEncryptionKey = "metrics cache key"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        options.cacheSizeLimit = 16 * 1024  // two pages of 30 orders do not fit together
        options.telemetry = telemetry
        let store = try OnlineODataStore(serviceRoot: server.serviceRoot, options: options)
        try await store.open()
        let first = ODataRequest(resourcePath: "Orders", queryOptions: [.top(30)])
        let second = ODataRequest(resourcePath: "Orders", queryOptions: [.skip(30), .top(30)])
        _ = try await store.response(for: first)  // miss, stored
        _ = try await store.response(for: first)  // hit, 304
        try store.setMode(.passive)
        _ = try await store.response(for: first)  // hit, no network
        try store.setMode(.active)
        _ = try await store.response(for: second)  // miss, stored: the first is evicted
        store.close()

        #expect(metrics.counterTotal(label: MetricName.cacheLookups, dimensions: [("result", "hit")]) == 2)
        #expect(metrics.counterTotal(label: MetricName.cacheLookups, dimensions: [("result", "miss")]) == 2)
        #expect(metrics.counterTotal(label: MetricName.cacheNotModified) == 1)
        #expect(metrics.counterTotal(label: MetricName.cacheEvictions) == 1)
        #expect(metrics.counterTotal(label: MetricName.cacheIntegrityFailures) == 0)
        #expect(metrics.counterTotal(label: MetricName.httpRequests, dimensions: [("method", "GET"), ("status_class", "2xx")]) == 2)
        #expect(metrics.counterTotal(label: MetricName.httpRequests, dimensions: [("method", "GET"), ("status_class", "3xx")]) == 1)
        let cacheBytes = try metrics.expectGauge(MetricName.cacheBytes)
        #expect((cacheBytes.lastValue ?? 0) > 8 * 1024 && (cacheBytes.lastValue ?? .infinity) <= 16 * 1024)
        let durations = try metrics.expectTimer(MetricName.httpDuration, [("method", "GET")])
        #expect(durations.values.count == 3 && durations.values.allSatisfy { $0 > 0 })

        // Offline: a download, two local changes, an upload where one request fails.
        var parameters = OfflineODataParameters(storeName: "metrics", storePath: folder.path + "/offline", storeEncryptionKey: "metrics store key",
                                                keyDerivation: .pbkdf2(rounds: 1_000))
        parameters.telemetry = telemetry
        parameters.uploadRetries = 0
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await provider.open()
        _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Shippers(1)", body: Data(#"{"Phone":"1"}"#.utf8)))
        _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Shippers(2)", body: Data(#"{"Phone":"2"}"#.utf8)))
        _ = try server.faults.add(FaultRule(.fail(status: 400, code: "Refused", message: "not today"), method: "PATCH", path: "Shippers(2)"))
        let result = try await provider.upload()
        #expect(result.failed.count == 1)
        // An outage: the connection dropped before any answer; the DELETE stays queued, the upload counts as unreachable.
        _ = try await provider.execute(ODataRequest(method: .delete, resourcePath: "Shippers(3)"))
        let outage = try server.faults.add(FaultRule(.dropConnection, method: "DELETE", path: "Shippers(3)"))
        await #expect(throws: OfflineODataError.backEndUnreachable) { try await provider.upload() }
        _ = server.faults.remove(outage)
        await provider.close()

        #expect(metrics.counterTotal(label: MetricName.downloads, dimensions: [("result", "ok")]) == 1)
        #expect(metrics.counterTotal(label: MetricName.uploads, dimensions: [("result", "ok")]) == 1)
        #expect(metrics.counterTotal(label: MetricName.uploadedRequests, dimensions: [("result", "ok")]) == 1)
        #expect(metrics.counterTotal(label: MetricName.uploadedRequests, dimensions: [("result", "failed")]) == 1)
        #expect(metrics.counterTotal(label: MetricName.uploads, dimensions: [("result", "unreachable")]) == 1)
        #expect(metrics.counterTotal(label: MetricName.uploads, dimensions: [("result", "failed")]) == 0)
        #expect(try metrics.expectGauge(MetricName.queueLength).lastValue == 1)
        #expect(try metrics.expectGauge(MetricName.errorArchiveSize).lastValue == 1)
        #expect(try metrics.expectTimer(MetricName.uploadDuration).values.count == 2)
        #expect(metrics.counterTotal(label: MetricName.httpRequests, dimensions: [("method", "PATCH"), ("status_class", "4xx")]) == 1)
        // No dimension carries a URL or a key.
        let dimensionValues = metrics.counters(label: MetricName.httpRequests).flatMap(\.dimensions).map(\.1)
        #expect(dimensionValues.allSatisfy { !$0.contains("/") && !$0.contains("(") })
    }
}
