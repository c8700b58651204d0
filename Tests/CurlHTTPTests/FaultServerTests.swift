import Foundation
import HTTPTypes
import Testing
@testable import CurlHTTP
import ODataCore

/// Splits an echoed raw request into request line, header lines and body.
private func parseEcho(_ data: Data) throws -> (requestLine: String, headers: [String], body: Data) {
    let bytes = [UInt8](data)
    let separator: [UInt8] = [13, 10, 13, 10]
    let end = try #require((0...(bytes.count - 4)).first { Array(bytes[$0..<$0 + 4]) == separator })
    let lines = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
    return (lines[0], Array(lines.dropFirst()), Data(bytes[(end + 4)...]))
}

/// Expects `body` to throw a `CurlError` of `kind` and returns it.
@discardableResult
private func expectCurlError(
    _ kind: CurlError, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> CurlError? {
    do {
        try await body()
        Issue.record("expected CurlError.\(kind), got success", sourceLocation: sourceLocation)
    } catch let error as CurlError {
        #expect(error == kind, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected CurlError.\(kind), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// CurlTransport against the in-test POSIX server: methods with bodies, header edge cases and faults.
@Suite struct FaultServerTests {
    /// The same bytes go out whether libcurl gets a copy of the body or reads it once (a request that must not be
    /// sent twice).
    @Test(arguments: ["POST", "PUT", "PATCH", "DELETE", "MERGE"], [true, false])
    func methodWithBodyIsSentAsIs(method: String, allowsAutomaticResend: Bool) async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields.append(HTTPField(name: HTTPField.Name("X-Custom")!, value: "one"))
        fields.append(HTTPField(name: HTTPField.Name("X-Custom")!, value: "two"))
        let body = Data("{\"Name\":\"Chai\",\"bytes\":\"\u{0}\u{1}\"}".utf8)
        var request = TransportRequest(method: method, url: server.url("/echo"), headerFields: fields, body: body)
        request.allowsAutomaticResend = allowsAutomaticResend
        let response = try await transport.send(request)
        #expect(response.status == 200)
        let echo = try parseEcho(response.body)
        #expect(echo.requestLine == "\(method) /echo HTTP/1.1")
        #expect(echo.body == body)
        #expect(echo.headers.contains("Content-Length: \(body.count)"))
        #expect(echo.headers.contains("Content-Type: application/json"))
        #expect(echo.headers.filter { $0.hasPrefix("X-Custom:") } == ["X-Custom: one", "X-Custom: two"])
        #expect(!echo.headers.contains { $0.lowercased().hasPrefix("expect:") })
    }

    @Test func megabyteUploadWithoutContentTypeOrExpect() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let body = Data((0..<(1_200_000)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let response = try await transport.send(TransportRequest(method: "POST", url: server.url("/echo"), body: body))
        let echo = try parseEcho(response.body)
        #expect(echo.requestLine == "POST /echo HTTP/1.1")
        #expect(echo.body == body)
        // libcurl's defaults would add `Expect: 100-continue` and a form Content-Type; both are removed.
        #expect(!echo.headers.contains { $0.lowercased().hasPrefix("expect:") })
        #expect(!echo.headers.contains { $0.lowercased().hasPrefix("content-type:") })
    }

    @Test func emptyBodiesAndEmptyHeaderValues() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        var fields = HTTPFields()
        fields.append(HTTPField(name: HTTPField.Name("X-Blank")!, value: ""))
        let put = try await transport.send(TransportRequest(method: "PUT", url: server.url("/echo"), headerFields: fields))
        let echo = try parseEcho(put.body)
        #expect(echo.requestLine == "PUT /echo HTTP/1.1")
        #expect(echo.headers.contains("Content-Length: 0"))
        #expect(echo.headers.contains { $0.hasPrefix("X-Blank:") })
        let delete = try await transport.send(TransportRequest(method: "DELETE", url: server.url("/echo")))
        let deleteEcho = try parseEcho(delete.body)
        #expect(deleteEcho.requestLine == "DELETE /echo HTTP/1.1")
        #expect(deleteEcho.body.isEmpty)
    }

    @Test func repeatedAndFoldedResponseHeadersKeepTheirOrder() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let response = try await transport.send(TransportRequest(url: server.url("/repeated")))
        #expect(response.status == 200)
        #expect(response.headerFields[values: .setCookie] == ["a=1", "b=2"])
        let trace = HTTPField.Name("X-Trace")!
        #expect(response.headerFields[values: trace] == ["one", "two"])
        #expect(response.headerFields[HTTPField.Name("X-Folded")!] == "first second")
        #expect(response.headerFields[HTTPField.Name("X-Empty")!] == "")
        let names = response.headerFields.map(\.name.rawName)
        #expect(names == ["Set-Cookie", "X-Trace", "Set-Cookie", "x-trace", "X-Folded", "X-Empty", "Content-Length", "Connection"])
    }

    @Test func continuePreambleIsDropped() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let response = try await transport.send(TransportRequest(method: "POST", url: server.url("/continue"), body: Data("x".utf8)))
        #expect(response.status == 201)
        #expect(response.body == Data("done".utf8))
        #expect(response.headerFields[HTTPField.Name("X-Final")!] == "yes")
        #expect(response.headerFields[HTTPField.Name("X-Interim")!] == nil)
    }

    @Test func redirectsFollowedForGetOnly() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let get = try await transport.send(TransportRequest(url: server.url("/redirect")))
        #expect(get.status == 200)
        #expect(get.metrics.redirectCount == 1)
        #expect(get.headerFields[HTTPField.Name("X-Hop")!] == nil)
        #expect(try parseEcho(get.body).requestLine == "GET /echo HTTP/1.1")

        let post = try await transport.send(TransportRequest(method: "POST", url: server.url("/redirect"), body: Data("a".utf8)))
        #expect(post.status == 302)
        #expect(post.headerFields[.location] == "/echo")
        #expect(post.metrics.redirectCount == 0)

        var configuration = CurlConfiguration()
        configuration.redirects = .never
        let strict = try CurlTransport(configuration: configuration)
        defer { strict.shutdown() }
        #expect(try await strict.send(TransportRequest(url: server.url("/redirect"))).status == 302)
    }

    @Test func configuredProxyReceivesTheRequest() async throws {
        let proxy = try FaultServer()
        defer { proxy.stop() }
        var configuration = CurlConfiguration()
        configuration.proxy = .url("http://127.0.0.1:\(proxy.port)", noProxy: nil)
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        // The host name is never resolved here: the proxy gets the absolute URL.
        let response = try await transport.send(TransportRequest(url: "http://origin.invalid/echo?x=1"))
        #expect(response.status == 200)
        let echo = try parseEcho(response.body)
        #expect(echo.requestLine == "GET http://origin.invalid/echo?x=1 HTTP/1.1")
        #expect(echo.headers.contains("Host: origin.invalid"))

        // `noProxy` sends matching hosts directly: 127.0.0.1 bypasses the (unreachable) proxy.
        let target = try FaultServer()
        defer { target.stop() }
        var bypass = CurlConfiguration()
        bypass.proxy = .url("http://127.0.0.1:\(try Sockets.freePort())", noProxy: "127.0.0.1")
        let direct = try CurlTransport(configuration: bypass)
        defer { direct.shutdown() }
        let directResponse = try await direct.send(TransportRequest(url: target.url("/echo")))
        #expect(try parseEcho(directResponse.body).requestLine == "GET /echo HTTP/1.1")
    }

    @Test func connectionRefusedIsConnectFailed() async throws {
        let port = try Sockets.freePort()
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let error = await expectCurlError(.connectFailed) {
            _ = try await transport.send(TransportRequest(url: "http://127.0.0.1:\(port)/"))
        }
        #expect(error?.curlCode == 7)  // CURLE_COULDNT_CONNECT
        #expect(error?.message.isEmpty == false)
        #expect(transport.counts.active == 0)
    }

    @Test func stalledBodyHitsTheTotalTimeout() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        var configuration = CurlConfiguration()
        configuration.totalTimeout = .milliseconds(400)
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        let error = await expectCurlError(.timedOut) {
            _ = try await transport.send(TransportRequest(url: server.url("/stall")))
        }
        let elapsed = clock.now - start
        #expect(error?.curlCode == 28)  // CURLE_OPERATION_TIMEDOUT
        #expect(elapsed >= .milliseconds(350))
        // The server never finishes the body: ending at all is the timeout's doing. The bound is loose
        // because a loaded 2-core machine can delay the resumption by seconds.
        #expect(elapsed < .seconds(30))
        #expect(await server.wait { $0.clientClosed >= 1 })
        #expect(transport.counts.active == 0)
    }

    @Test func silentServerHitsTheLowSpeedLimit() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        var configuration = CurlConfiguration()
        configuration.totalTimeout = nil
        configuration.lowSpeedLimit = (bytesPerSecond: 1, duration: .seconds(1))
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        do {
            _ = try await transport.send(TransportRequest(url: server.url("/stall-head")))
            Issue.record("expected a timeout")
        } catch CurlError.timedOut {
            // the `~=` pattern matches the kind
        }
        #expect(await server.wait { $0.clientClosed >= 1 })
    }

    @Test func closeMidBodyIsConnectionClosed() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let error = await expectCurlError(.connectionClosed) {
            _ = try await transport.send(TransportRequest(url: server.url("/close-mid-body")))
        }
        #expect(error?.curlCode == 18)  // CURLE_PARTIAL_FILE
        #expect(transport.counts.active == 0)
        // The handle is reusable afterwards.
        #expect(try await transport.send(TransportRequest(url: server.url("/echo"))).status == 200)
    }

    @Test func chunkedBodyOverTheLimitIsAbortedEarly() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        var configuration = CurlConfiguration()
        configuration.maxResponseBodySize = 256 * 1024
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let error = await expectCurlError(.tooLarge) {
            _ = try await transport.send(TransportRequest(url: server.url("/chunked-big")))
        }
        #expect(error?.message.contains("maxResponseBodySize") == true)
        // The server saw the client go before it could send all 64 MiB.
        #expect(await server.wait { $0.clientClosed >= 1 })
    }

    @Test func malformedResponsesAreTyped() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let bad = await expectCurlError(.malformedResponse) {
            _ = try await transport.send(TransportRequest(url: server.url("/bad-header")))
        }
        #expect(bad?.message.contains("Bad Header") == true)
        await expectCurlError(.malformedResponse) {
            _ = try await transport.send(TransportRequest(url: server.url("/garbage")))
        }
        #expect(transport.counts.active == 0)
    }

    @Test func cancellationMidTransferIsPromptAndClosesTheConnection() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let task = Task {
            try await transport.send(TransportRequest(url: server.url("/slow")))
        }
        #expect(await server.wait { $0.started["/slow", default: 0] >= 1 })
        try await Task.sleep(for: .milliseconds(100))
        let clock = ContinuousClock()
        let start = clock.now
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        // The whole body would take ten seconds; the cancellation lands at once (bounded loosely because
        // the machine running the tests may be busy).
        #expect(clock.now - start < .seconds(2))
        #expect(await server.wait { $0.clientClosed >= 1 })
        #expect(transport.counts.active == 0)
        // The transport goes on working.
        #expect(try await transport.send(TransportRequest(url: server.url("/echo"))).status == 200)
    }

    @Test func transfersBeyondTheConnectionLimitWaitAndCanBeCancelled() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        var configuration = CurlConfiguration()
        configuration.maxConnectionsPerHost = 1
        configuration.eventLoopCount = 1
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        // The first transfer holds the only connection; the second waits in the loop's queue.
        let first = Task { try await transport.send(TransportRequest(url: server.url("/slow"))) }
        #expect(await server.wait { $0.started["/slow", default: 0] >= 1 })
        let second = Task { try await transport.send(TransportRequest(url: server.url("/echo"))) }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(2)
        while transport.counts.queued < 1, clock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(transport.counts.queued == 1)
        #expect(transport.counts.active == 1)
        #expect(server.snapshot.accepted == 1)  // no second connection was opened
        second.cancel()
        await #expect(throws: CancellationError.self) { _ = try await second.value }
        #expect(transport.counts.queued == 0)
        // A third one waits, then runs on the freed connection once the first is cancelled.
        let third = Task { try await transport.send(TransportRequest(url: server.url("/echo"))) }
        while transport.counts.queued < 1, clock.now < deadline + .seconds(2) { try await Task.sleep(for: .milliseconds(5)) }
        first.cancel()
        await #expect(throws: CancellationError.self) { _ = try await first.value }
        let response = try await third.value
        #expect(response.status == 200)
        #expect(transport.counts.active == 0)
        #expect(transport.counts.queued == 0)
    }

    @Test func alreadyCancelledTaskNeverStarts() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(TransportRequest(url: server.url("/echo")))
        }
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        try await Task.sleep(for: .milliseconds(50))
        #expect(server.snapshot.accepted == 0)
    }

    @Test func manyCancellationsRacingCompletions() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        // Each task is cancelled at a different moment; every one ends exactly once, either way.
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<100 {
                group.addTask {
                    let task = Task { try await transport.send(TransportRequest(url: server.url("/echo?i=\(index)"))) }
                    if index % 3 != 0 { try? await Task.sleep(for: .microseconds(index * 50)) }
                    task.cancel()
                    do {
                        let response = try await task.value
                        return response.status == 200 ? "ok" : "bad status"
                    } catch is CancellationError {
                        return "cancelled"
                    } catch {
                        return "error \(error)"
                    }
                }
            }
            var all: [String] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(outcomes.count == 100)
        #expect(outcomes.allSatisfy { $0 == "ok" || $0 == "cancelled" }, "\(Set(outcomes))")
        #expect(transport.counts.active == 0)
    }

    @Test func shutdownFailsInFlightAndLaterRequests() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        let task = Task { try await transport.send(TransportRequest(url: server.url("/stall-head"))) }
        #expect(await server.wait { $0.started["/stall-head", default: 0] >= 1 })
        transport.shutdown()
        do {
            _ = try await task.value
            Issue.record("expected shutdown")
        } catch CurlError.shutdown {}
        await expectCurlError(.shutdown) {
            _ = try await transport.send(TransportRequest(url: server.url("/echo")))
        }
        transport.shutdown()  // a second call is harmless
        #expect(await server.wait { $0.clientClosed >= 1 })
    }

    /// libcurl sends a request again on a new connection when a reused one closes before any answer — after the
    /// server may have executed it. A request that allows it (the default) is executed twice by such a server; one
    /// that does not is executed once and fails with `.connectionClosed`, and the transport goes on.
    @Test(arguments: [true, false])
    func aReusedConnectionThatClosesAfterTheRequestWentOut(allowsAutomaticResend: Bool) async throws {
        let server = try FaultServer()
        defer { server.stop() }
        var configuration = CurlConfiguration()
        configuration.eventLoopCount = 1
        let transport = try CurlTransport(configuration: configuration)
        defer { transport.shutdown() }
        let route = "POST /keep-then-drop"
        let first = try await transport.send(TransportRequest(method: "POST", url: server.url("/keep-then-drop"), body: Data("one".utf8)))
        #expect(first.status == 200 && first.metrics.newConnections == 1)
        var request = TransportRequest(method: "POST", url: server.url("/keep-then-drop"), body: Data(#"{"Name":"two"}"#.utf8))
        request.allowsAutomaticResend = allowsAutomaticResend
        if allowsAutomaticResend {
            let response = try await transport.send(request)
            #expect(response.status == 200)
            #expect(server.snapshot.received[route] == 3, "executed on the reused connection, then again on a new one")
        } else {
            let error = await expectCurlError(.connectionClosed) { _ = try await transport.send(request) }
            #expect(error?.curlCode == 65)  // CURLE_SEND_FAIL_REWIND
            #expect(error?.message.contains("not sent again") == true, "\(String(describing: error))")
            #expect(server.snapshot.received[route] == 2, "executed once")
            let next = try await transport.send(TransportRequest(method: "POST", url: server.url("/keep-then-drop"), body: Data("three".utf8)))
            #expect(next.status == 200 && next.metrics.newConnections == 1)
            #expect(server.snapshot.received[route] == 3)
        }
    }
}
