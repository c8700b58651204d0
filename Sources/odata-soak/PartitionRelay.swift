// The partitions of the offline soak: a TCP relay between the offline stores and the producer that, during a
// partition, closes its listening port (new connections are refused) and resets every relayed connection (a
// request in flight gets no answer) — the producer keeps running with all its data, and comes back on the same port.
import Foundation
import ODataCore
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on 127.0.0.1 to the producer that can be cut off and restored.
final class PartitionRelay: @unchecked Sendable {
    /// The relay's port: the stores' service root names it instead of the producer's.
    let port: Int
    private let target: Int
    private let lock = NSLock()
    private var listener: Int32 = -1
    private var connections: Set<Int32> = []
    private var generation = 0

    /// Starts relaying 127.0.0.1:`port` (0: any free one) to 127.0.0.1:`target`.
    init(target: Int) throws {
        self.target = target
        let socket = try Self.listen(port: 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = socket
        startAccepting(socket, generation: 0)
    }

    /// `serviceRoot` (the producer's) with the relay's port.
    func serviceRoot(for serviceRoot: String) -> String {
        serviceRoot.replacingOccurrences(of: ":\(target)/", with: ":\(port)/")
    }

    /// Cuts the producer off: the port closes (connections are refused) and every relayed connection is reset.
    func partition() {
        lock.lock()
        let (socket, open) = (listener, connections)  // shut down, not closed: their pumps close them
        listener = -1
        generation += 1
        for connection in open { Self.abort(connection) }
        lock.unlock()
        if socket >= 0 {
            shutdown(socket, Int32(SHUT_RDWR))
            close(socket)
        }
    }

    /// Opens the port again.
    func heal() throws {
        lock.lock()
        defer { lock.unlock() }
        guard listener < 0 else { return }
        let socket = try Self.listen(port: port)
        listener = socket
        startAccepting(socket, generation: generation)
    }

    private func startAccepting(_ socket: Int32, generation: Int) {
        let thread = Thread { [self] in
            while true {
                let client = accept(socket, nil, nil)
                guard client >= 0 else { return }  // closed by a partition
                guard let upstream = try? Self.connect(port: target) else {
                    Self.reset(client)
                    continue
                }
                lock.lock()
                let current = self.generation == generation
                if current {
                    connections.insert(client)
                    connections.insert(upstream)
                }
                lock.unlock()
                guard current else {
                    Self.reset(client)
                    Self.reset(upstream)
                    return
                }
                let pair = Pair(client, upstream)
                pump(from: client, to: upstream, pair: pair)
                pump(from: upstream, to: client, pair: pair)
            }
        }
        thread.start()
    }

    /// A relayed connection's two sockets; the second pump to end closes both.
    private final class Pair: @unchecked Sendable {
        let sockets: (Int32, Int32)
        private let lock = NSLock()
        private var ended = 0
        init(_ first: Int32, _ second: Int32) { sockets = (first, second) }
        /// Whether this was the second pump to end.
        func end() -> Bool {
            lock.lock()
            defer { lock.unlock() }
            ended += 1
            return ended == 2
        }
    }

    /// Copies bytes one way until either side closes or a partition shuts the sockets down; the other way is shut
    /// down then, and the last of the two closes both (so no socket number is closed while the other pump uses it).
    private func pump(from source: Int32, to sink: Int32, pair: Pair) {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                var sent = 0
                while sent < count {
                    let written = buffer.withUnsafeBytes { send(sink, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                    if written <= 0 { break }
                    sent += written
                }
                if sent < count { break }
            }
            shutdown(sink, Int32(SHUT_RDWR))
            shutdown(source, Int32(SHUT_RDWR))
            guard pair.end() else { return }
            lock.lock()
            connections.remove(pair.sockets.0)
            connections.remove(pair.sockets.1)
            close(pair.sockets.0)
            close(pair.sockets.1)
            lock.unlock()
        }
        thread.start()
    }

    /// Ends a connection the relay owns no pump for, with a reset: the peer gets no answer.
    private static func reset(_ socket: Int32) {
        abort(socket)
        close(socket)
    }

    /// Makes a later close a reset (`SO_LINGER` 0) and shuts the socket down: its pumps wake and end.
    private static func abort(_ socket: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        shutdown(socket, Int32(SHUT_RDWR))
    }

    private static func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private static func listen(port: Int) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        var yes: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = address(port: port)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, Glibc.listen(socket, 64) == 0 else {
            let code = errno
            close(socket)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EADDRINUSE)
        }
        return socket
    }

    private static func connect(port: Int) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        var address = address(port: port)
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else {
            close(socket)
            throw POSIXError(.ECONNREFUSED)
        }
        return socket
    }
}

/// The relay in a process of its own (`odata-soak --partition-relay <port>`), so that its threads and buffers are
/// not counted in this process's memory, which must be the library's alone. `SIGUSR1` partitions, `SIGUSR2` heals;
/// the child prints `port N` once it listens, and `healed` after each heal (exit 3 when the port cannot be
/// reopened).
final class PartitionRelayProcess: Sendable {
    let port: Int
    private let process: Process
    private let healed: LockedValue<Int>

    /// Starts the relay to 127.0.0.1:`target` and waits until it listens.
    init(executable: String, target: Int) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--partition-relay", String(target)]
        let pipe = Pipe()
        process.standardOutput = pipe
        let (lines, continuation) = AsyncStream<String>.makeStream()
        let healed = LockedValue(0)
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty { continuation.finish(); return }
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
                if line == "healed" { healed.withLock { $0 += 1 } } else { continuation.yield(String(line)) }
            }
        }
        try process.run()
        let first = DispatchSemaphore(value: 0)
        let port = LockedValue(0)
        Task {
            for await line in lines where line.hasPrefix("port ") {
                port.withLock { $0 = Int(line.dropFirst(5)) ?? 0 }
                break
            }
            first.signal()
        }
        guard first.wait(timeout: .now() + 10) == .success, port.withLock({ $0 }) > 0 else {
            process.terminate()
            throw POSIXError(.ETIMEDOUT)
        }
        self.port = port.withLock { $0 }
        self.process = process
        self.healed = healed
    }

    /// `serviceRoot` (the producer's on `target`) with the relay's port.
    func serviceRoot(for serviceRoot: String, target: Int) -> String {
        serviceRoot.replacingOccurrences(of: ":\(target)/", with: ":\(port)/")
    }

    func partition() { kill(process.processIdentifier, SIGUSR1) }

    /// Heals and waits (up to 5 s) until the child says it listens again.
    /// - Returns: whether it did.
    func heal() async -> Bool {
        let before = healed.withLock { $0 }
        kill(process.processIdentifier, SIGUSR2)
        for _ in 0..<500 where process.isRunning {
            if healed.withLock({ $0 }) > before { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// Stops the child, by its PID.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// `odata-soak --partition-relay <port>`: the relay's process.
func runPartitionRelay(_ arguments: [String]) -> Never {
    guard arguments.count >= 3, let target = Int(arguments[2]) else {
        FileHandle.standardError.write(Data("odata-soak: --partition-relay <port>\n".utf8))
        exit(64)
    }
    let relay: PartitionRelay
    do { relay = try PartitionRelay(target: target) } catch {
        FileHandle.standardError.write(Data("odata-soak: the partition relay did not start: \(error)\n".utf8))
        exit(2)
    }
    func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    signal(SIGUSR1, SIG_IGN)
    signal(SIGUSR2, SIG_IGN)
    let queue = DispatchQueue(label: "partition-relay")
    let cut = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: queue)
    cut.setEventHandler { relay.partition() }
    let heal = DispatchSource.makeSignalSource(signal: SIGUSR2, queue: queue)
    heal.setEventHandler {
        do { try relay.heal() } catch {
            FileHandle.standardError.write(Data("odata-soak: the partition relay did not reopen its port: \(error)\n".utf8))
            exit(3)
        }
        say("healed")
    }
    cut.resume()
    heal.resume()
    say("port \(relay.port)")
    // Ends with the parent: it closes the pipe or kills this process by its PID.
    while getppid() != 1 { sleep(1) }
    exit(0)
}
