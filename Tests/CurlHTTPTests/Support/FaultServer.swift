import Foundation
import Synchronization
@testable import CurlHTTP
#if canImport(Glibc)
import Glibc
import ODataCore
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 written with POSIX sockets, for what nginx cannot do: echoing any
/// method, repeated and folded headers, a 100 Continue preamble, stalling, closing mid-body, oversized and
/// malformed responses. One thread accepts; each connection gets its own thread and is closed after one
/// response.
///
/// Routes: `/echo` (the raw request back as the body), `/repeated`, `/continue`, `/redirect`, `/stall`
/// (headers and 10 of 1000 body bytes, then silence), `/stall-head` (nothing at all), `/close-mid-body`,
/// `/chunked-big` (64 MiB chunked: more than loopback socket buffers hold), `/bad-header`, `/garbage`, `/slow` (1 KiB every 20 ms),
/// `/keep-then-drop` (the first request of a connection answered and the connection kept; the second read whole,
/// counted, and the connection closed without an answer: a back end that executed a request and died).
final class FaultServer: Sendable {
    struct Stats: Sendable {
        var accepted = 0
        /// Connections on which the server noticed the client had gone (read EOF or a failed send).
        var clientClosed = 0
        /// Connections still being served.
        var open = 0
        /// Requests whose first body byte has been sent, by route.
        var started: [String: Int] = [:]
        /// Requests read whole, by route and method (`"POST /keep-then-drop"`): `/keep-then-drop` only.
        var received: [String: Int] = [:]
    }

    let port: Int
    private let listenFD: Int32
    private let stats = LockedValue(Stats())
    private let stopped = Atomic<Bool>(false)

    init() throws {
        let (fd, port) = try Sockets.listen()
        self.listenFD = fd
        self.port = port
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    var snapshot: Stats { stats.withLock { $0 } }

    /// Stops accepting; connections being served end on their own (they are bounded in time).
    func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
    }

    /// Waits (up to `timeout`) until `condition` holds for the stats.
    func wait(timeout: Duration = .seconds(5), until condition: (Stats) -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if condition(snapshot) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(snapshot)
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .sequentiallyConsistent) {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            stats.withLock { $0.accepted += 1; $0.open += 1 }
            let thread = Thread { [self] in
                self.serve(client)
                close(client)
                self.stats.withLock { $0.open -= 1 }
            }
            thread.start()
        }
    }

    /// Reads one request: the head up to the blank line, then `Content-Length` bytes of body.
    private func readRequest(_ fd: Int32) -> (head: String, raw: [UInt8])? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var headEnd: Int?
        var contentLength = 0
        while true {
            if let end = headEnd, buffer.count >= end + contentLength { break }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[0..<n])
            if headEnd == nil, let range = findHeadEnd(buffer) {
                headEnd = range
                let head = String(decoding: buffer[0..<range], as: UTF8.self)
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    contentLength = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            if buffer.count > 16 * 1024 * 1024 { return nil }
        }
        let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        return (head, buffer)
    }

    private func findHeadEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    /// Waits until the client closes the connection (or `limit` passes) and counts the close.
    private func waitForClientClose(_ fd: Int32, limit: Duration = .seconds(20)) {
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        var byte: UInt8 = 0
        while clock.now < deadline {
            let n = recv(fd, &byte, 1, 0)
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                stats.withLock { $0.clientClosed += 1 }
                return
            }
        }
    }

    private func markStarted(_ route: String) {
        stats.withLock { $0.started[route, default: 0] += 1 }
    }

    private func respond(_ fd: Int32, status: String = "200 OK", headers: [String] = [], body: [UInt8]) {
        var head = "HTTP/1.1 \(status)\r\n"
        for header in headers { head += header + "\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        if !Sockets.sendAll(fd, Array(head.utf8) + body) {
            stats.withLock { $0.clientClosed += 1 }
        }
    }

    private func serve(_ fd: Int32) {
        guard let (head, raw) = readRequest(fd) else { return }
        let requestLine = head.prefix { $0 != "\r" }
        let parts = requestLine.split(separator: " ")
        guard parts.count >= 2 else { return }
        var target = String(parts[1])
        // A proxy receives the absolute form ("GET http://host/path"); route on the path.
        if target.hasPrefix("http://"), let slash = target.dropFirst(7).firstIndex(of: "/") {
            target = String(target[slash...])
        }
        let path = String(target.split(separator: "?").first ?? "")
        switch path {
        case "/echo":
            respond(fd, headers: ["Content-Type: application/octet-stream"], body: raw)
        case "/repeated":
            let response = "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-Trace: one\r\nSet-Cookie: b=2\r\n"
                + "x-trace: two\r\nX-Folded: first\r\n  second\r\nX-Empty:\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            Sockets.sendAll(fd, response)
        case "/continue":
            let response = "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
                + "HTTP/1.1 201 Created\r\nX-Final: yes\r\nContent-Length: 4\r\nConnection: close\r\n\r\ndone"
            Sockets.sendAll(fd, response)
        case "/redirect":
            respond(fd, status: "302 Found", headers: ["Location: /echo", "X-Hop: 1"], body: Array("moved".utf8))
        case "/stall":
            Sockets.sendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n0123456789")
            markStarted(path)
            waitForClientClose(fd)
        case "/stall-head":
            markStarted(path)
            waitForClientClose(fd)
        case "/close-mid-body":
            Sockets.sendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n")
            Sockets.sendAll(fd, [UInt8](repeating: 0x41, count: 1000))
            markStarted(path)
        case "/chunked-big":
            Sockets.sendAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            markStarted(path)
            let chunk = Array("10000\r\n".utf8) + [UInt8](repeating: 0x42, count: 0x10000) + Array("\r\n".utf8)
            // 64 MiB: socket buffers cannot take it all, so a client that gives up early is noticed
            // by a failing send even when the client is slow to close (4 MiB fitted under TSan).
            for _ in 0..<1024 {
                if !Sockets.sendAll(fd, chunk) {
                    stats.withLock { $0.clientClosed += 1 }
                    return
                }
            }
            Sockets.sendAll(fd, "0\r\n\r\n")
        case "/bad-header":
            Sockets.sendAll(fd, "HTTP/1.1 200 OK\r\nBad Header: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        case "/garbage":
            Sockets.sendAll(fd, "THIS IS NOT HTTP\r\n\r\n")
        case "/keep-then-drop":
            var request = (head: head, raw: raw)
            for answered in [true, false] {
                let method = request.head.prefix { $0 != " " }
                stats.withLock { $0.received["\(method) \(path)", default: 0] += 1 }
                guard answered else { return }  // executed, and the connection closes without an answer
                Sockets.sendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                guard let next = readRequest(fd) else { return }
                request = next
            }
        case "/slow":
            Sockets.sendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n")
            markStarted(path)
            let piece = [UInt8](repeating: 0x43, count: 1024)
            for _ in 0..<500 {
                if !Sockets.sendAll(fd, piece) {
                    stats.withLock { $0.clientClosed += 1 }
                    return
                }
                usleep(20_000)
            }
        default:
            respond(fd, status: "404 Not Found", body: Array("no route \(path)".utf8))
        }
    }
}
