// odata-demo: the online store shown end to end against the fixture producer on 127.0.0.1.
import CurlHTTP
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
            timings.append(micros(ContinuousClock.now - start))
        }
        return (median(timings), (store.statistics.bytesReceived - before) / runs)
    }.value
}

/// Median time until the cached copy reaches the caller and until the server's answer does, through `execute(_:)`.
func measureFirstData(_ store: OnlineODataStore, _ request: ODataRequest, runs: Int) async -> (cached: Double, server: Double) {
    await Task.detached {
        var cached: [Double] = []
        var server: [Double] = []
        for _ in 0..<runs {
            let start = ContinuousClock.now
            for await event in store.execute(request).events {
                switch event {
                case .cacheResponse: cached.append(micros(ContinuousClock.now - start))
                case .finished: server.append(micros(ContinuousClock.now - start))
                default: break
                }
            }
        }
        return (median(cached), median(server))
    }.value
}

/// Median latency of the same GET sent by the transport alone: the producer's time plus loopback, without the store.
func measureTransport(_ url: String, runs: Int) async throws -> Double {
    let transport = try CurlTransport()
    defer { transport.shutdown() }
    var timings: [Double] = []
    for _ in 0..<runs {
        let start = ContinuousClock.now
        _ = try await transport.send(TransportRequest(url: url))
        timings.append(micros(ContinuousClock.now - start))
    }
    return median(timings)
}

func micros(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}

func row(_ name: String, _ micros: Double, _ note: String) {
    let time = micros >= 10_000 ? String(format: "%8.1f ms", micros / 1000) : String(format: "%8.1f µs", micros)
    print("  | \(name.padding(toLength: 48, withPad: " ", startingAt: 0)) | \(time) | \(note)")
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

    heading("Where the time of one read goes (medians of 200 runs, this machine, now)")
    let uncachedRequest = ODataRequest(resourcePath: "Orders", queryOptions: orders.queryOptions, useCache: false)
    let producerOnly = try await measureTransport(server.serviceRoot + (try orders.relativeURL()), runs: 200)
    let uncached = await measure(store, uncachedRequest, runs: 200)
    let active = await measure(store, orders, runs: 200)
    let activeFirst = await measureFirstData(store, orders, runs: 200)
    try store.setMode(.passive)
    let passive = await measure(store, orders, runs: 200)
    try store.setMode(.active)
    #if DEBUG
    let build = "a DEBUG build: the fixture producer (in this process) evaluates the query slowly; `swift run -c release odata-demo` is faster"
    #else
    let build = "a release build"
    #endif
    print("  (\(build))")
    row("the GET without the store (producer + loopback)", producerOnly, "what any client pays: the producer filters and sorts 830 orders")
    row("store, uncached", uncached.micros, String(format: "the store's own share ≈ %.0f µs (within the noise of the producer's); %d bytes", max(0, uncached.micros - producerOnly), uncached.bytes))
    row("store, active: cached copy to the caller", activeFirst.cached, "the listener has data before any network")
    row("store, active: server's 304 confirms it", active.micros, String(format: "the producer still runs the query for its ETag; %d bytes instead of %d", active.bytes, uncached.bytes))
    row("store, passive: cache only", passive.micros, "no network at all")
    print("  On a fast local back end the round trip is mostly the producer's work, so a revalidated read is not faster than an")
    print("  uncached one — it saves bytes and gives the cached copy first. Against a distant back end the difference is the point:")

    heading("The same reads against a back end 50 ms away (a latency fault on the producer)")
    let distant = try server.faults.add(FaultRule(.latency(.milliseconds(50)), method: "GET", path: "Orders"))
    let distantUncached = await measure(store, uncachedRequest, runs: 20)
    let distantFirst = await measureFirstData(store, orders, runs: 20)
    try store.setMode(.passive)
    let distantPassive = await measure(store, orders, runs: 20)
    try store.setMode(.active)
    _ = server.faults.remove(distant)
    row("store, uncached", distantUncached.micros, "the caller waits for the back end")
    row("store, active: cached copy to the caller", distantFirst.cached, String(format: "%.0f× sooner than the server's answer", distantFirst.server / max(distantFirst.cached, 1)))
    row("store, active: server's 304 confirms it", distantFirst.server, "still one round trip, ~200 bytes")
    row("store, passive: cache only", distantPassive.micros, "the back end is not asked")

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
