import Foundation
import ODataCore
#if canImport(Glibc)
import Glibc
#endif

/// A running `redis-server` (Debian `redis-server`) on 127.0.0.1 for tests and benchmarks of the cache's
/// Redis tier: no persistence (`--save '' --appendonly no`), bounded memory with LRU eviction, stopped by
/// its PID.
///
/// `make deps` installs it; the `REDIS_SERVER` environment variable names another executable.
///
/// ```swift
/// let redis = try RedisServer.start()          // a free port of 127.0.0.1
/// defer { redis.stop() }
/// redis.kill()                                  // SIGKILL: an outage
/// let again = try RedisServer.start(port: redis.port)
/// ```
public final class RedisServer: Sendable {
    /// The TCP port on ``address``.
    public let port: Int
    /// The address it listens on: 127.0.0.1, or a host's of ``NetworkHosts``.
    public let address: String
    private let host: NetworkHosts.Host?
    /// The server's process identifier.
    public let pid: Int32
    private let process: LockedValue<Process?>
    private let directory: URL
    private let maxMemory: Int
    private let arguments: [String]
    /// Whether ``stop()`` removes the directory (not once a ``restart()`` handed it on).
    private let ownsDirectory = LockedValue(true)

    private init(port: Int, host: NetworkHosts.Host?, process: Process, directory: URL, maxMemory: Int, arguments: [String]) {
        self.port = port
        self.host = host
        self.address = host?.address ?? "127.0.0.1"
        self.pid = process.processIdentifier
        self.process = LockedValue(process)
        self.directory = directory
        self.maxMemory = maxMemory
        self.arguments = arguments
    }

    deinit { stop() }

    /// The executable tests start: `$REDIS_SERVER`, else `/usr/bin/redis-server`.
    public static var executable: String {
        if let path = ProcessInfo.processInfo.environment["REDIS_SERVER"], !path.isEmpty { return path }
        return "/usr/bin/redis-server"
    }

    /// Starts a redis-server and waits until it accepts connections.
    ///
    /// - Parameters:
    ///   - port: The port to listen on; the default `nil` picks a free one (and retries when another
    ///     process takes it first).
    ///   - maxMemory: Its `maxmemory` in bytes (with `allkeys-lru` eviction). The default is 256 MiB.
    ///   - arguments: More command-line options, such as `["--requirepass", "secret"]`.
    ///   - host: A host of ``NetworkHosts`` to run it on (in its namespace, listening on its address only,
    ///     protected mode off: the bridge is private to this machine); the default `nil` is 127.0.0.1 here.
    /// - Returns: The running server.
    /// - Throws: ``FixtureError`` `.serverFailure` when the executable is missing (run `make deps`) or the
    ///   server does not listen within 10 seconds.
    public static func start(port: Int? = nil, maxMemory: Int = 256 << 20, arguments: [String] = [], on host: NetworkHosts.Host? = nil) throws(FixtureError) -> RedisServer {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw FixtureError(.serverFailure, "redis-server is not installed at \(executable): run `make deps`")
        }
        var lastError = FixtureError(.serverFailure, "redis-server did not start")
        for _ in 0..<(port == nil ? 5 : 1) {
            do { return try startOnce(port: port ?? freePort(), host: host, maxMemory: maxMemory, arguments: arguments) } catch { lastError = error }
        }
        throw lastError
    }

    /// Starts the server again after a ``kill()``, on the same port with the same options and the same
    /// directory — a cluster node finds its `nodes.conf` there and rejoins the cluster as it was (a master
    /// that a replica replaced meanwhile becomes that replica's replica). This object no longer removes the
    /// directory; the returned one does.
    ///
    /// - Returns: The running server.
    /// - Throws: ``FixtureError`` `.serverFailure` when the server is still running or does not listen
    ///   within 10 seconds.
    public func restart() throws(FixtureError) -> RedisServer {
        guard !isRunning else { throw FixtureError(.serverFailure, "redis-server on port \(port) is still running") }
        ownsDirectory.withLock { $0 = false }
        return try Self.startOnce(port: port, host: host, maxMemory: maxMemory, arguments: arguments, directory: directory)
    }

    private static func startOnce(port: Int, host: NetworkHosts.Host?, maxMemory: Int, arguments: [String], directory existing: URL? = nil) throws(FixtureError) -> RedisServer {
        let directory = existing ?? FileManager.default.temporaryDirectory.appendingPathComponent("redis-\(UUID().uuidString)")
        do { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) } catch {
            throw FixtureError(.serverFailure, "cannot create \(directory.path): \(error)")
        }
        let process = Process()
        let options = ["--port", String(port), "--bind", host?.address ?? "127.0.0.1", "--save", "", "--appendonly", "no",
                       "--dir", directory.path, "--daemonize", "no", "--loglevel", "warning", "--logfile", "",
                       "--maxmemory", String(maxMemory), "--maxmemory-policy", "allkeys-lru"]
            + (host == nil ? [] : ["--protected-mode", "no"]) + arguments
        if let host {
            // `ip netns exec` execs redis-server in the namespace: the process ID stays the server's.
            process.executableURL = URL(fileURLWithPath: NetworkHosts.ipExecutable)
            process.arguments = ["netns", "exec", host.namespace, executable] + options
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = options
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            throw FixtureError(.serverFailure, "redis-server did not start: \(error)")
        }
        let server = RedisServer(port: port, host: host, process: process, directory: directory, maxMemory: maxMemory, arguments: arguments)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if !process.isRunning { break }
            if accepts(port: port, address: server.address) { return server }
            usleep(10_000)
        }
        server.stop()
        throw FixtureError(.serverFailure, "redis-server did not listen on \(server.address):\(port)")
    }

    /// Whether the server's process is running.
    public var isRunning: Bool { process.withLock { $0?.isRunning ?? false } }

    /// Kills the server with SIGKILL (an outage: no shutdown, nothing saved) and waits until it is gone; its
    /// directory stays for a ``restart()`` until ``stop()``.
    public func kill() {
        guard let process = process.withLock({ value -> Process? in defer { value = nil }; return value }) else { return }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Stops the server by its PID and removes its directory; harmless when already stopped. It keeps
    /// nothing (no persistence), so SIGKILL loses nothing — and SIGTERM may be blocked in a child of a thread
    /// that blocks signals, as the test runner's are.
    public func stop() {
        kill()
        if ownsDirectory.withLock({ owns in defer { owns = false }; return owns }) {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// A port of 127.0.0.1 that was free a moment ago: bound to port 0, read back, closed.
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { return 0 }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: actual.sin_port))
    }

    /// Whether something accepts TCP connections on `address`:`port` (Nginx waits with it too).
    static func accepts(port: Int, address text: String = "127.0.0.1") -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        guard inet_pton(AF_INET, text, &address.sin_addr) == 1 else { return false }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}
