// odata-demo: the online store shown end to end against the fixture producer on 127.0.0.1.
import Foundation
import ODataCore
import ODataFixtures
import OnlineStore
import Synchronization
import TechnicalCache

/// Prints each callback as it happens, with the execution's status at that moment.
final class PrintingListener: ODataRequestListener {
    let label: String
    init(_ label: String) { self.label = label }

    func line(_ text: String) { print("    \(text)") }
    func describe(_ response: ODataResponse?) -> String {
        guard let response else { return "nil (never cached)" }
        var flags: [String] = []
        if response.isFromCache { flags.append("from cache") }
        if response.isRevalidated { flags.append("revalidated by 304") }
        return "HTTP \(response.statusCode), \(response.payload.count) bytes" + (flags.isEmpty ? "" : " [\(flags.joined(separator: ", "))]")
    }
    func requestStarted(_ execution: RequestExecution) {
        line("requestStarted         status=\(execution.status)")
    }
    func requestCacheResponse(_ execution: RequestExecution, response: ODataResponse?) {
        line("requestCacheResponse   status=\(execution.status)  \(describe(response))")
    }
    func requestServerResponse(_ execution: RequestExecution, response: ODataResponse) {
        line("requestServerResponse  status=\(execution.status)  \(describe(response))")
    }
    func requestFailed(_ execution: RequestExecution, error: any Error, response: ODataResponse?) {
        line("requestFailed          status=\(execution.status)  \(error)")
    }
    func requestFinished(_ execution: RequestExecution, response: ODataResponse?) {
        line("requestFinished        status=\(execution.status)")
    }
}

func heading(_ text: String) {
    print("\n== \(text)")
}

func read(_ store: OnlineODataStore, _ request: ODataRequest, _ label: String) async -> ODataResponse? {
    print("  \(label): GET \((try? request.relativeURL()) ?? request.resourcePath)")
    let before = store.statistics.bytesReceived
    let execution = store.execute(request, listener: PrintingListener(label))
    let response = try? await execution.result()
    print("    bytes on the wire: \(store.statistics.bytesReceived - before)")
    return response
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

/// Median latency and bytes per read, measured off the main actor (as service code runs) through
/// `response(for:)`, which runs the read in the calling task.
func measure(_ store: OnlineODataStore, _ request: ODataRequest, runs: Int) async -> (micros: Double, bytes: Int) {
    await Task.detached {
        var timings: [Double] = []
        let before = store.statistics.bytesReceived
        for _ in 0..<runs {
            let start = ContinuousClock.now
            _ = try? await store.response(for: request)
            let elapsed = ContinuousClock.now - start
            timings.append(Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12)
        }
        return (median(timings), (store.statistics.bytesReceived - before) / runs)
    }.value
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("odata-demo-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: directory) }

do {
    heading("Starting the fixture producer (Northwind, OData V4) on 127.0.0.1")
    let server = try await FixtureServer.start()
    print("  service root: \(server.serviceRoot)")

    var options = OnlineStoreOptions()
    options.storeDirectory = directory
    options.cacheEncryptionKey = "demo passphrase"
    let store = try OnlineODataStore(serviceRoot: server.serviceRoot, options: options)
    try await store.open()
    print("  store open; encrypted technical cache (AES-256-GCM, key by \(options.cacheKeyDerivation)) in \(directory.path)")

    let orders = ODataRequest.get("Orders", .filter("ShipCountry eq 'Germany'"), .orderBy(["OrderDate desc"]), .top(50))
    heading("Active mode, first read: nothing cached yet, so the cache response is nil")
    _ = await read(store, orders, "first read")
    heading("Active mode, second read: the cached copy first, then the server confirms it with 304 Not Modified")
    _ = await read(store, orders, "second read")

    heading("Uncached vs active vs passive, measured now (median of 200 runs)")
    let uncachedRequest = ODataRequest(resourcePath: "Orders", queryOptions: orders.queryOptions, useCache: false)
    let uncached = await measure(store, uncachedRequest, runs: 200)
    let active = await measure(store, orders, runs: 200)
    try store.setMode(.passive)
    let passive = await measure(store, orders, runs: 200)
    try store.setMode(.active)
    print("  | read                       | median latency | bytes on the wire |")
    print("  |----------------------------|----------------|-------------------|")
    for (name, result) in [("uncached (useCache=false)", uncached), ("active (cache + 304)", active), ("passive (cache only)", passive)] {
        print("  | \(name.padding(toLength: 26, withPad: " ", startingAt: 0)) | \(String(format: "%11.1f µs", result.micros)) | \(String(format: "%17d", result.bytes)) |")
    }

    heading("The producer goes down")
    await server.stop()
    print("  producer stopped")
    heading("Active mode with the producer down: the cached copy still arrives before the failure")
    _ = await read(store, orders, "active read")
    try store.setMode(.passive)
    heading("Passive mode: the same read answered by the cache alone, no network")
    _ = await read(store, orders, "passive read")
    heading("Passive mode, something never cached: nil, and not a failure")
    _ = await read(store, .get("Customers('ALFKI')"), "passive read")

    let statistics = store.statistics
    heading("Statistics")
    print("  requests \(statistics.requests), network requests \(statistics.networkRequests), 304s \(statistics.notModified), bytes received \(statistics.bytesReceived)")
    if let cache = statistics.cache {
        print("  cache: hits \(cache.hits), misses \(cache.misses), writes \(cache.writes), refreshes \(cache.refreshes), entries \(cache.entryCount), \(cache.currentBytes) bytes")
    }
    store.close()
    print("\nDone.")
} catch {
    print("odata-demo failed: \(error)")
    exit(1)
}
