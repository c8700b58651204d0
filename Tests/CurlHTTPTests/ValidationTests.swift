import Foundation
import HTTPTypes
import Testing
@testable import CurlHTTP
import ODataCore

/// Bad input gets a typed error naming what was wrong, before any I/O.
@Suite struct ValidationTests {
    @Test(arguments: [
        ("GE T", "http://127.0.0.1:9/", "method"),
        ("", "http://127.0.0.1:9/", "method"),
        ("GET", "ftp://127.0.0.1/file", "http://"),
        ("GET", "file:///etc/passwd", "http://"),
        ("GET", "127.0.0.1/people", "http://"),
        ("GET", "http://127.0.0.1/a b", "space"),
        ("GET", "http://127.0.0.1/\r\nX-Injected: 1", "control"),
        ("GET", "http://", "http://"),
    ])
    func badRequestsAreRejected(method: String, url: String, mentions: String) async throws {
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        do {
            _ = try await transport.send(TransportRequest(method: method, url: url))
            Issue.record("expected invalidRequest")
        } catch let error as CurlError {
            #expect(error == .invalidRequest)
            #expect(error.curlCode == 0)
            #expect(error.message.contains(mentions), "\(error.message)")
        }
        #expect(transport.counts.handlesCreated == 0)
    }

    @Test func malformedURLFromCurlIsInvalidRequest() async throws {
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        do {
            _ = try await transport.send(TransportRequest(url: "http://[::1/"))
            Issue.record("expected invalidRequest")
        } catch let error as CurlError {
            #expect(error == .invalidRequest)
            #expect(error.curlCode == 3)  // CURLE_URL_MALFORMAT
        }
    }

    @Test func badConfigurationsAreRejected() {
        var configurations: [(CurlConfiguration, String)] = []
        var c = CurlConfiguration()
        c.maxConnectionsPerHost = 0
        configurations.append((c, "maxConnectionsPerHost"))
        c = CurlConfiguration()
        c.connectTimeout = .zero
        configurations.append((c, "connectTimeout"))
        c = CurlConfiguration()
        c.totalTimeout = .seconds(-1)
        configurations.append((c, "totalTimeout"))
        c = CurlConfiguration()
        c.lowSpeedLimit = (bytesPerSecond: 0, duration: .seconds(5))
        configurations.append((c, "lowSpeedLimit"))
        c = CurlConfiguration()
        c.maxResponseBodySize = -1
        configurations.append((c, "maxResponseBodySize"))
        c = CurlConfiguration()
        c.redirects = .always(max: -2)
        configurations.append((c, "redirect"))
        c = CurlConfiguration()
        c.eventLoopCount = 0
        configurations.append((c, "eventLoopCount"))
        c = CurlConfiguration()
        c.userAgent = "agent\r\nX-Evil: 1"
        configurations.append((c, "userAgent"))
        for (configuration, name) in configurations {
            do {
                _ = try CurlTransport(configuration: configuration)
                Issue.record("expected \(name) to be rejected")
            } catch let error as CurlError {
                #expect(error == .invalidConfiguration)
                #expect(error.message.contains(name), "\(error.message)")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test func defaultsAreDocumentedValues() {
        let c = CurlConfiguration()
        #expect(c.connectTimeout == .seconds(10))
        #expect(c.totalTimeout == .seconds(60))
        #expect(c.lowSpeedLimit?.bytesPerSecond == 1)
        #expect(c.lowSpeedLimit?.duration == .seconds(30))
        #expect(c.maxResponseBodySize == 64 * 1024 * 1024)
        #expect(c.maxConnectionsPerHost == 8)
        #expect(c.redirects == .safeMethods(max: 5))
        #expect(c.proxy == .environment)
        #expect(c.verifyPeer)
        #expect(c.acceptEncoding == "")
        #expect(c.http2OverTLS)
        #expect(c.eventLoopCount == min(4, ProcessInfo.processInfo.activeProcessorCount))
    }

    @Test func connectionLimitsAreSharedOutAmongEventLoops() {
        var c = CurlConfiguration()
        c.eventLoopCount = 3
        c.maxConnectionsPerHost = 8
        c.maxTotalConnections = 10
        c.maxCachedConnections = 64
        c.maxPooledHandles = 64
        #expect(c.effectiveEventLoopCount == 3)
        let shards = (0..<3).map { c.shard($0, of: 3) }
        #expect(shards.map(\.maxConnectionsPerHost) == [3, 3, 2])
        #expect(shards.map(\.maxTotalConnections).reduce(0, +) == 10)
        #expect(shards.map(\.maxCachedConnections).reduce(0, +) == 64)
        #expect(shards.map(\.maxPooledHandles).reduce(0, +) == 64)
        // Never more loops than connections per host.
        c.maxConnectionsPerHost = 2
        #expect(c.effectiveEventLoopCount == 2)
        c.eventLoopCount = 1
        #expect(c.shard(0, of: 1) == c)
    }

    @Test func errorDescriptions() {
        let error = CurlError(kind: .timedOut, curlCode: 28, message: "Operation timed out after 400 milliseconds")
        #expect(error.shortDescription == "CurlError.timedOut (CURLcode 28)")
        #expect(error.description == "CurlError.timedOut (CURLcode 28): Operation timed out after 400 milliseconds")
        #expect(CurlError(kind: .shutdown, message: "").description == "CurlError.shutdown")
        #expect(CurlError.timedOut ~= error)
        #expect(!(CurlError.tls ~= error))
        #expect(!(CurlError.timedOut ~= CancellationError()))
    }

    @Test func valueTypesAreSendable() {
        func requireSendable<T: Sendable>(_: T.Type) {}
        requireSendable(TransportRequest.self)
        requireSendable(TransportResponse.self)
        requireSendable(TransferMetrics.self)
        requireSendable(CurlConfiguration.self)
        requireSendable(CurlError.self)
        requireSendable(CurlTransport.self)
        let transport: (any HTTPTransport)? = try? CurlTransport()
        #expect(transport != nil)
    }
}

@Suite struct URLOriginTests {
    @Test func theOriginIsSchemeHostAndPortLowerCased() {
        #expect(URLOrigin.of("http://127.0.0.1:8080/service/Orders?$top=1") == "http://127.0.0.1:8080")
        #expect(URLOrigin.of("HTTPS://Gateway.Example.COM/sap/opu/odata/") == "https://gateway.example.com")
        #expect(URLOrigin.of("https://host#fragment") == "https://host")
        #expect(URLOrigin.of("https://host?query") == "https://host")
        #expect(URLOrigin.of("https://host") == "https://host")
        #expect(URLOrigin.of("https://BÜCHER.example/x") == "https://bücher.example")
        #expect(URLOrigin.of("not a URL") == "not a url")
        #expect(URLOrigin.of("") == "")
    }
}
