import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A redis-server on 127.0.0.1 for the benchmarks: no persistence, `maxmemory` with LRU eviction; stopped by
/// its PID.
public struct RedisProcess {
    /// The port it listens on.
    public let port: Int
    let directory: URL
    let process: Process

    /// Starts `/usr/bin/redis-server` on a free port.
    public static func start(maxMemory: Int = 1 << 30) throws -> RedisProcess {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = Nginx.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", directory.path, "--loglevel", "warning", "--logfile", "",
                             "--maxmemory", String(maxMemory), "--maxmemory-policy", "allkeys-lru"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<500 where !Nginx.accepts(port) { usleep(10_000) }
        return RedisProcess(port: port, directory: directory, process: process)
    }

    /// Stops it (SIGKILL: it keeps nothing) and removes its directory.
    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
