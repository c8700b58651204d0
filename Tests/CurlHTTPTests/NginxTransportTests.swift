import Foundation
import HTTPTypes
import Testing
@testable import CurlHTTP
import ODataCore

/// CurlTransport against a real nginx on 127.0.0.1 serving static JSON files.
@Suite(.nginx)
struct NginxTransportTests {
    @Test func getSmallJSONOverHTTP11() async throws {
        let server = try nginx()
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let response = try await transport.send(TransportRequest(url: server.url("small.json")))
        #expect(response.status == 200)
        #expect(response.body == NginxServer.files["small.json"])
        #expect(response.headerFields[.contentType] == "application/json")
        #expect(response.headerFields[.server]?.hasPrefix("nginx") == true)
        #expect(response.metrics.httpVersion == .http1_1)
        #expect(response.metrics.newConnections == 1)
        #expect(!response.metrics.connectionReused)
        #expect(response.metrics.headerBytes > 100)
        #expect(response.metrics.bodyBytes > 0)
        #expect(response.metrics.totalTime > .zero)
    }

    /// A request that must not be sent twice reuses a connection only when it carries a body (libcurl cannot send
    /// that body again by itself); without a body it goes out on a new connection.
    @Test func aRequestThatMustNotBeSentTwiceReusesAConnectionOnlyWithABody() async throws {
        let server = try nginx()
        var configuration = CurlConfiguration()
        configuration.eventLoopCount = 1
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let first = try await transport.send(TransportRequest(url: server.url("small.json")))
        let reused = try await transport.send(TransportRequest(url: server.url("small.json")))
        var withoutBody = TransportRequest(url: server.url("small.json"))
        withoutBody.allowsAutomaticResend = false
        let fresh = try await transport.send(withoutBody)
        var withBody = TransportRequest(method: "POST", url: server.url("small.json"), body: Data("{}".utf8))
        withBody.allowsAutomaticResend = false
        let posted = try await transport.send(withBody)
        #expect(first.metrics.newConnections == 1)
        #expect(reused.metrics.connectionReused && reused.metrics.newConnections == 0)
        #expect(!fresh.metrics.connectionReused && fresh.metrics.newConnections == 1)
        #expect(fresh.status == 200)
        #expect(posted.metrics.connectionReused && posted.metrics.newConnections == 0)
        #expect(posted.status == 405)  // nginx serves static files to GET only
    }

    @Test func largeBodyWithoutCompressionArrivesWhole() async throws {
        let server = try nginx()
        var configuration = CurlConfiguration()
        configuration.acceptEncoding = nil
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let expected = try #require(NginxServer.files["large.json"])
        #expect(expected.count > 1024 * 1024)
        let response = try await transport.send(TransportRequest(url: server.url("large.json")))
        #expect(response.status == 200)
        #expect(response.headerFields[.contentEncoding] == nil)
        #expect(response.body == expected)
        #expect(response.metrics.bodyBytes == expected.count)
        #expect(response.headerFields[.contentLength] == String(expected.count))
    }

    /// A `responseBodyFile` gets a 2xx body as it arrives, beyond `maxResponseBodySize` (which bounds memory, and the
    /// body is not in memory); an error's body stays in the response.
    @Test func aResponseBodyFileGetsTheBodyBeyondTheMemoryLimit() async throws {
        let server = try nginx()
        var configuration = CurlConfiguration()
        configuration.maxResponseBodySize = 64 * 1024
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("curl-body-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var request = TransportRequest(url: server.url("large.json"))
        request.responseBodyFile = path
        let response = try await transport.send(request)
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        #expect(FileManager.default.contents(atPath: path) == NginxServer.files["large.json"])
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
        request.url = server.url("missing.json")
        let missing = try await transport.send(request)
        #expect(missing.status == 404)
        #expect(!missing.body.isEmpty)
    }

    /// What a sink records: its calls in order, the bytes written.
    final class RecordingSink: ResponseBodySink {
        let calls = LockedValue<[String]>([])
        let bytes = LockedValue(Data())
        let failsAfter: Int?
        init(failsAfter: Int? = nil) { self.failsAfter = failsAfter }
        func begin() throws {
            calls.withLock { $0.append("begin") }
            bytes.withLock { $0 = Data() }
        }
        func write(_ piece: UnsafeRawBufferPointer) throws {
            calls.withLock { if $0.last != "write" { $0.append("write") } }
            let total = bytes.withLock { $0.append(contentsOf: piece); return $0.count }
            if let failsAfter, total > failsAfter { throw ODataError(.invalidState, "the sink is full after \(failsAfter) bytes") }
        }
        func finish() throws { calls.withLock { $0.append("finish") } }
    }

    /// A `responseBodySink` gets a 2xx body as it arrives — begun, written, finished — beyond `maxResponseBodySize`;
    /// an error's body stays in the response and the sink hears nothing; a sink that throws ends the transfer with a
    /// typed error carrying its message.
    @Test func aResponseBodySinkIsBegunWrittenAndFinishedForA2xxOnly() async throws {
        let server = try nginx()
        var configuration = CurlConfiguration()
        configuration.maxResponseBodySize = 64 * 1024
        configuration.acceptEncoding = nil
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let sink = RecordingSink()
        var request = TransportRequest(url: server.url("large.json"))
        request.responseBodySink = sink
        request.responseBodyFile = "/nonexistent/the-sink-wins"
        let response = try await transport.send(request)
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        #expect(sink.calls.withLock { $0 } == ["begin", "write", "finish"])
        #expect(sink.bytes.withLock { $0 } == NginxServer.files["large.json"])

        let untouched = RecordingSink()
        request.url = server.url("missing.json")
        request.responseBodySink = untouched
        let missing = try await transport.send(request)
        #expect(missing.status == 404)
        #expect(!missing.body.isEmpty)
        #expect(untouched.calls.withLock { $0 }.isEmpty)

        request.url = server.url("large.json")
        request.responseBodySink = RecordingSink(failsAfter: 1000)
        let error = await #expect(throws: CurlError.invalidRequest) { try await transport.send(request) }
        #expect(error?.message.contains("the sink is full after 1000 bytes") == true)
    }

    @Test func gzipIsNegotiatedAndDecoded() async throws {
        let server = try nginx()
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let expected = try #require(NginxServer.files["large.json"])
        let response = try await transport.send(TransportRequest(url: server.url("large.json")))
        #expect(response.status == 200)
        #expect(response.headerFields[.contentEncoding] == "gzip")
        #expect(response.body == expected)
        // On the wire the body was much smaller than the decoded document.
        #expect(response.metrics.bodyBytes > 0)
        #expect(response.metrics.bodyBytes < expected.count / 3)
    }

    @Test func ifNoneMatchGives304WithEmptyBody() async throws {
        let server = try nginx()
        var configuration = CurlConfiguration()
        configuration.acceptEncoding = nil  // nginx weakens the ETag of gzipped responses
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let first = try await transport.send(TransportRequest(url: server.url("medium.json")))
        let etag = try #require(first.headerFields[.eTag])
        var fields = HTTPFields()
        fields[.ifNoneMatch] = etag
        let second = try await transport.send(TransportRequest(url: server.url("medium.json"), headerFields: fields))
        #expect(second.status == 304)
        #expect(second.body.isEmpty)
        #expect(second.metrics.bodyBytes == 0)
        #expect(second.headerFields[.eTag] == etag)
        #expect(second.metrics.connectionReused)

        fields[.ifNoneMatch] = "\"not-the-etag\""
        let third = try await transport.send(TransportRequest(url: server.url("medium.json"), headerFields: fields))
        #expect(third.status == 200)
        #expect(third.body == NginxServer.files["medium.json"])
    }

    @Test func missingFileIsAResponseNotAnError() async throws {
        let server = try nginx()
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let response = try await transport.send(TransportRequest(url: server.url("missing.json")))
        #expect(response.status == 404)
        #expect(!response.body.isEmpty)
    }

    @Test func headReturnsHeadersWithoutBody() async throws {
        let server = try nginx()
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let response = try await transport.send(TransportRequest(method: "HEAD", url: server.url("small.json")))
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        #expect(response.headerFields[.eTag] != nil)
    }

    @Test func sequentialRequestsReuseOneConnection() async throws {
        let server = try nginx()
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        var newConnections = 0
        for _ in 0..<20 {
            let response = try await transport.send(TransportRequest(url: server.url("small.json?t=sequential")))
            #expect(response.status == 200)
            newConnections += response.metrics.newConnections
        }
        #expect(newConnections == 1)
        let connections = Set(await server.accessLog(containing: "t=sequential", atLeast: 20).map(\.connection))
        #expect(connections.count == 1)
        // One easy handle served all twenty transfers.
        #expect(transport.counts.handlesCreated == 1)
    }

    @Test(arguments: [1, 2, 3])
    func thousandConcurrentRequestsShareFewConnections(eventLoops: Int) async throws {
        let server = try nginx()
        var configuration = CurlConfiguration()
        configuration.maxConnectionsPerHost = 8
        configuration.eventLoopCount = eventLoops
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let small = try #require(NginxServer.files["small.json"])
        let medium = try #require(NginxServer.files["medium.json"])

        let results = try await withThrowingTaskGroup(of: (Int, TransportResponse).self) { group in
            for index in 0..<1000 {
                group.addTask {
                    let name = index.isMultiple(of: 2) ? "small.json" : "medium.json"
                    let response = try await transport.send(
                        TransportRequest(url: server.url("\(name)?t=concurrent\(eventLoops)&i=\(index)")))
                    return (index, response)
                }
            }
            var all: [(Int, TransportResponse)] = []
            for try await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 1000)
        var newConnections = 0
        for (index, response) in results {
            #expect(response.status == 200)
            #expect(response.body == (index.isMultiple(of: 2) ? small : medium), "request \(index)")
            newConnections += response.metrics.newConnections
        }
        #expect(newConnections >= 1)
        #expect(newConnections <= 8, "connections opened: \(newConnections)")
        let logged = await server.accessLog(containing: "t=concurrent\(eventLoops)&", atLeast: 1000)
        #expect(logged.count == 1000)
        #expect(Set(logged.map(\.connection)).count == newConnections)
        let counts = transport.counts
        #expect(counts.active == 0)
        #expect(counts.queued == 0)
        #expect(counts.completed == 1000)
        #expect(counts.pooled <= configuration.maxPooledHandles)
    }

    @Test func bodyOverTheLimitIsTooLarge() async throws {
        let server = try nginx()
        for encoding in [nil, ""] as [String?] {
            var configuration = CurlConfiguration()
            configuration.maxResponseBodySize = 64 * 1024
            configuration.acceptEncoding = encoding
            let transport = try CurlTransport(configuration: configuration)
            defer { transport.shutdown() }
            await #expect(throws: CurlError.self) {
                _ = try await transport.send(TransportRequest(url: server.url("large.json")))
            }
            do {
                _ = try await transport.send(TransportRequest(url: server.url("large.json")))
                Issue.record("expected tooLarge")
            } catch CurlError.tooLarge {
                // expected, with or without gzip
            }
            // The same transport still works for a body within the limit.
            let ok = try await transport.send(TransportRequest(url: server.url("small.json")))
            #expect(ok.status == 200)
            #expect(transport.counts.active == 0)
        }
    }

    @Test func tlsIsVerifiedByDefault() async throws {
        let server = try nginx()
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let error = try await #require(throws: CurlError.self) {
            _ = try await transport.send(TransportRequest(url: server.tlsURL("small.json")))
        }
        #expect(error == .tls, "\(error)")
        #expect(error.curlCode == 60)  // CURLE_PEER_FAILED_VERIFICATION
        #expect(transport.counts.active == 0)
    }

    @Test func trustedCertificateGivesMultiplexedHTTP2() async throws {
        let server = try nginx()
        var configuration = CurlConfiguration()
        configuration.caFile = server.certificatePath
        configuration.eventLoopCount = 1
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let first = try await transport.send(TransportRequest(url: server.tlsURL("small.json")))
        #expect(first.status == 200)
        #expect(first.metrics.httpVersion == .http2)
        #expect(first.body == NginxServer.files["small.json"])
        #expect(first.headerFields[.contentType] == "application/json")
        // Fifty concurrent requests share the one HTTP/2 connection as streams.
        let newConnections = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<50 {
                group.addTask {
                    let response = try await transport.send(TransportRequest(url: server.tlsURL("medium.json?h2=\(index)")))
                    #expect(response.status == 200)
                    #expect(response.body == NginxServer.files["medium.json"])
                    #expect(response.metrics.httpVersion == .http2)
                    return response.metrics.newConnections
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(newConnections == 0, "the first connection should have been reused")
    }

    @Test func tlsOptionsHTTP1AndNoVerification() async throws {
        let server = try nginx()
        var configuration = CurlConfiguration()
        configuration.verifyPeer = false
        configuration.http2OverTLS = false
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let response = try await transport.send(TransportRequest(url: server.tlsURL("small.json")))
        #expect(response.status == 200)
        #expect(response.metrics.httpVersion == .http1_1)

        var missingCA = CurlConfiguration()
        missingCA.caFile = server.directory.appendingPathComponent("no-such-ca.pem").path
        let strict = try CurlTransport(configuration: missingCA)
        defer { strict.shutdown() }
        let error = try await #require(throws: CurlError.self) {
            _ = try await strict.send(TransportRequest(url: server.tlsURL("small.json")))
        }
        #expect(error == .tls, "\(error)")
    }
}
