import Foundation
import HTTPTypes
import MetricsTestKit
import ODataCore
import ODataSession
import ODataTelemetry
@testable import OnlineStore
import Testing
@testable import TechnicalCache

/// The online store's stack, top down (docs/notes/cache.md, "The stack"):
/// store (callbacks) → `CachingTransport` → coalescing → `ServiceSession` → telemetry → the transport.
@Suite struct TransportStackTests {
    /// The bottom of the stack: records what reaches the wire; answers a CSRF fetch with a token, a read with an
    /// ETag (304 when asked with it), and a write with 201.
    final class Wire: HTTPTransport {
        let sent = LockedValue<[TransportRequest]>([])

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            sent.withLock { $0.append(request) }
            let csrf = HTTPField.Name("X-CSRF-Token")!
            var fields: HTTPFields = [.contentType: "application/json"]
            let status: Int
            var body = Data()
            if request.headerFields[csrf] == "Fetch" {
                fields[csrf] = "token-1"
                status = 200
            } else if request.method == "POST" {
                status = 201
                body = Data(#"{"ID":2}"#.utf8)
            } else if request.headerFields[.ifNoneMatch] == #"W/"1""# {
                fields[.eTag] = #"W/"1""#
                status = 304
            } else {
                fields[.eTag] = #"W/"1""#
                status = 200
                body = Data(#"{"value":[{"ID":1}]}"#.utf8)
            }
            return TransportResponse(status: status, headerFields: fields, body: body, metrics: TransferMetrics(
                headerBytes: 10, bodyBytes: body.count, totalTime: .milliseconds(1), connectionReused: true, newConnections: 0, httpVersion: .http1_1))
        }
    }

    @Test func theCacheIsAboveTheSessionWhichIsAboveTelemetryAndTheTransport() async throws {
        let folder = try TemporaryFolder()
        let metrics = TestMetrics()
        let wire = Wire()
        var options = OnlineStoreOptions()
        options.storeDirectory = folder.url
        options.cacheEncryptionKey = "stack cache key"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        options.session = SessionOptions(authentication: BasicAuthentication(user: "u", password: "p"), sapClient: "100")
        options.telemetry = Telemetry(metricsFactory: metrics)
        let root = "http://odata.invalid/svc/"
        let store = try OnlineODataStore(serviceRoot: root, options: options, transport: wire)
        try await store.open()
        defer { store.close() }
        func httpRequests(_ method: String, _ statusClass: String) -> Int {
            Int(metrics.counterTotal(label: MetricName.httpRequests, dimensions: [("method", method), ("status_class", statusClass)]))
        }

        // A first read: the session (below the cache) adds the credentials and `sap-client`; telemetry (below the
        // session) sees that request as it goes on the wire.
        _ = try await store.response(for: ODataRequest(resourcePath: "Products"))
        let first = try #require(wire.sent.withLock { $0.last })
        #expect(first.url == root + "Products?sap-client=100")
        #expect(first.headerFields[.authorization]?.hasPrefix("Basic ") == true && first.headerFields[.ifNoneMatch] == nil)
        #expect(httpRequests("GET", "2xx") == 1)
        // The cache keyed the answer by the URL the application asked for, before the session added `sap-client`.
        let cache = try #require(store.cache)
        await store.waitForCacheWrites()  // the entry commits after the answer
        #expect(try cache.containsEntry(for: root + "Products"))
        #expect(try !cache.containsEntry(for: first.url))

        // A second read: the cache (above the session) adds `If-None-Match`, the session still adds the
        // credentials, telemetry sees the 304.
        let revalidated = try #require(try await store.response(for: ODataRequest(resourcePath: "Products")))
        #expect(revalidated.isRevalidated)
        let second = try #require(wire.sent.withLock { $0.last })
        #expect(second.headerFields[.ifNoneMatch] == #"W/"1""# && second.headerFields[.authorization] != nil)
        #expect(httpRequests("GET", "3xx") == 1)

        // Passive mode: the cache answers above everything else; nothing reaches the session, telemetry or the wire.
        try store.setMode(.passive)
        let passive = try #require(try await store.response(for: ODataRequest(resourcePath: "Products")))
        #expect(passive.isFromCache && wire.sent.withLock { $0.count } == 2)
        #expect(httpRequests("GET", "2xx") == 1 && httpRequests("GET", "3xx") == 1)
        try store.setMode(.active)

        // A write: the session fetches a CSRF token first; telemetry, below it, sees both requests.
        _ = try await store.response(for: ODataRequest(method: .post, resourcePath: "Products", body: Data(#"{"ID":2}"#.utf8)))
        let methods = wire.sent.withLock { $0.dropFirst(2).map { "\($0.method) \($0.headerFields[HTTPField.Name("X-CSRF-Token")!] ?? "")" } }
        #expect(methods == ["GET Fetch", "POST token-1"])
        #expect(httpRequests("GET", "2xx") == 2 && httpRequests("POST", "2xx") == 1)
        #expect(store.statistics.networkRequests == 3, "the store counts its own requests, above the session")
    }
}
