import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A fake cluster node on 127.0.0.1 for the redirect bound: it answers `CLUSTER SLOTS` with a map in which it
/// serves every slot, and every other command with `MOVED 0` to itself — a loop no real cluster keeps up long
/// enough to test. One thread per connection; ``stop()`` closes the listening socket.
final class RedirectingNode: Sendable {
    let port: Int
    private let listener: Int32

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard listener >= 0, bound == 0, listen(listener, 8) == 0 else {
            if listener >= 0 { close(listener) }
            throw POSIXError(.EADDRINUSE)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: actual.sin_port))
        self.listener = listener
        self.port = port
        Thread.detachNewThread {
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                Thread.detachNewThread { Self.serve(connection, port: port) }
            }
        }
    }

    /// Answers each command read (hiredis sends one and waits for its reply) until the client closes.
    private static func serve(_ connection: Int32, port: Int) {
        defer { close(connection) }
        let host = "127.0.0.1"
        let slots = "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$\(host.utf8.count)\r\n\(host)\r\n:\(port)\r\n"
        let moved = "-MOVED 0 \(host):\(port)\r\n"
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { return }
            let request = String(decoding: buffer[0..<count], as: UTF8.self).uppercased()
            let reply = Array((request.contains("SLOTS") ? slots : moved).utf8)
            guard write(connection, reply, reply.count) == reply.count else { return }
        }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
