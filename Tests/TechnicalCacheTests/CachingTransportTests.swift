import Foundation
import HTTPTypes
import ODataCore
import Testing
@testable import TechnicalCache

/// `CachingTransport` as a plain `HTTPTransport` decorator: a GET is stored, revalidated (the 304 answered with the
/// stored body), served fresh within `maxAge`, and removed on a 404; other methods pass through untouched.
@Suite struct CachingTransportTests {
    /// A server of one resource: 200 with an ETag, 304 to `If-None-Match` with it, 404 once `gone`.
    final class Server: HTTPTransport {
        let sent = LockedValue<[TransportRequest]>([])
        let gone = LockedValue(false)

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            sent.withLock { $0.append(request) }
            let status: Int
            var fields: HTTPFields = [.eTag: #"W/"1""#]
            var body = Data()
            if gone.withLock({ $0 }) {
                status = 404
                fields = [:]
            } else if request.method != "GET" {
                status = 204
            } else if request.headerFields[.ifNoneMatch] == #"W/"1""# {
                status = 304
            } else {
                status = 200
                fields[.contentType] = "application/json"
                body = Data(#"{"value":[]}"#.utf8)
            }
            return TransportResponse(status: status, headerFields: fields, body: body, metrics: TransferMetrics(
                headerBytes: 0, bodyBytes: body.count, totalTime: .zero, connectionReused: true, newConnections: 0, httpVersion: .http1_1))
        }
    }

    /// Hears the outcomes, in order.
    final class Outcomes: CacheEventListener {
        let heard = LockedValue<[String]>([])
        func cacheHit(url: String) { heard.withLock { $0.append("hit") } }
        func cacheMiss(url: String) { heard.withLock { $0.append("miss") } }
        func cacheServedFresh(url: String) { heard.withLock { $0.append("fresh") } }
        func cacheConditionalHit(url: String) { heard.withLock { $0.append("304") } }
        func cacheChanged(url: String, change: CacheChange) { heard.withLock { $0.append(change.rawValue) } }
    }

    @Test func aGETIsStoredRevalidatedServedFreshAndRemovedOnA404() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let server = Server()
        let outcomes = Outcomes()
        let transport = CachingTransport(cache: cache, upstream: server, listener: outcomes)
        let url = "https://h/svc/Products"

        let first = try await transport.send(TransportRequest(url: url))
        #expect(first.status == 200 && first.body == Data(#"{"value":[]}"#.utf8))
        await cache.flushPendingWrites()  // the entry commits behind the answer (see WriteBehindTests)
        // Revalidated with the stored ETag; the 304 is answered with the stored entry.
        let second = try await transport.send(TransportRequest(url: url))
        #expect(server.sent.withLock { $0.last?.headerFields[.ifNoneMatch] } == #"W/"1""#)
        #expect(second.status == 200 && second.body == first.body && second.headerFields[.contentType] == "application/json")
        // A write passes through and leaves the cache alone.
        #expect(try await transport.send(TransportRequest(method: "DELETE", url: url)).status == 204)
        #expect(try cache.containsEntry(for: url))
        // Within maxAge the stored entry answers without the server.
        let fresh = CachingTransport(cache: cache, upstream: server, maxAge: .seconds(60), listener: outcomes)
        let count = server.sent.withLock { $0.count }
        #expect(try await fresh.send(TransportRequest(url: url)).body == first.body)
        #expect(server.sent.withLock { $0.count } == count)
        // A 404 removes the entry.
        server.gone.withLock { $0 = true }
        #expect(try await transport.send(TransportRequest(url: url)).status == 404)
        #expect(try !cache.containsEntry(for: url))
        #expect(outcomes.heard.withLock { $0 } == ["miss", "stored", "hit", "304", "refreshed", "hit", "fresh", "hit", "removed"])
    }

    @Test func onlyIfCachedWithNothingStoredIs504AndPassiveModeNeverAsksTheServer() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let server = Server()
        let transport = CachingTransport(cache: cache, upstream: server)
        let reply = try await transport.send(TransportRequest(url: "https://h/x", headerFields: [.cacheControl: "only-if-cached"]))
        #expect(reply.status == 504)
        guard case .passive(nil) = transport.passiveAnswer(TransportRequest(url: "https://h/x")) else { Issue.record("passive: nothing stored is nil"); return }
        guard case .unsatisfiable = transport.passiveAnswer(TransportRequest(method: "PATCH", url: "https://h/x")) else { Issue.record("passive PATCH"); return }
        guard case .unsatisfiable = transport.passiveAnswer(TransportRequest(url: "https://h/x"), useCache: false) else { Issue.record("passive useCache=false"); return }
        #expect(server.sent.withLock { $0.isEmpty })
    }

    /// A server of one stream of `size` bytes (ETag `W/"size"`), answered into the request's `responseBodyFile` as
    /// `CurlTransport` does, 304 to `If-None-Match` with the current ETag.
    final class StreamServer: HTTPTransport {
        let size = LockedValue(8)

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            let size = size.withLock { $0 }
            let etag = "W/\"\(size)\""
            let status = request.headerFields[.ifNoneMatch] == etag ? 304 : 200
            if status == 200, let file = request.responseBodyFile {
                #expect(FileManager.default.createFile(atPath: file, contents: Data(repeating: UInt8(size), count: size)))
            }
            return TransportResponse(status: status, headerFields: [.eTag: etag], body: Data(), metrics: TransferMetrics(
                headerBytes: 0, bodyBytes: 0, totalTime: .zero, connectionReused: true, newConnections: 0, httpVersion: .http1_1))
        }
    }

    @Test func aStreamIsStoredUpToItsCapAndItsCopyRemovedWhenItGrowsAbove() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let server = StreamServer()
        let outcomes = Outcomes()
        let transport = CachingTransport(cache: cache, upstream: server, listener: outcomes, maxStreamSize: 10)
        let url = "https://h/svc/Photos(1)/$value"
        func read(_ name: String) async throws -> (TransportResponse, Data?) {
            var request = TransportRequest(url: url)
            request.responseBodyFile = dir.path + "/" + name
            let response = try await transport.send(request)
            return (response, FileManager.default.contents(atPath: dir.path + "/" + name))
        }

        let (first, firstBytes) = try await read("first")
        #expect(first.status == 200 && first.body.isEmpty && firstBytes == Data(repeating: 8, count: 8))
        await cache.flushPendingWrites()
        #expect(try cache.entry(for: url)?.payload == Data(repeating: 8, count: 8))
        // Revalidated; the 304's answer is the stored copy, written into the file.
        let (second, secondBytes) = try await read("second")
        #expect(second.status == 200 && second.body.isEmpty && secondBytes == Data(repeating: 8, count: 8))
        #expect(outcomes.heard.withLock { $0 } == ["miss", "stored", "hit", "304", "refreshed"])

        // Above the cap: read from the server into the file, never stored, the old copy removed.
        server.size.withLock { $0 = 11 }
        let (third, thirdBytes) = try await read("third")
        #expect(third.status == 200 && thirdBytes == Data(repeating: 11, count: 11))
        #expect(try cache.entry(for: url) == nil)
        _ = try await read("fourth")
        #expect(outcomes.heard.withLock { $0 } == ["miss", "stored", "hit", "304", "refreshed", "hit", "removed", "miss", "not stored"])
    }
}
