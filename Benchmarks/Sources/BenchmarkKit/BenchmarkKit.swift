import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock samples of one measured operation, with the statistics the tables print.
public struct Samples: Sendable {
    /// The name printed in the table.
    public let name: String
    /// Nanoseconds per operation, one entry per sample, sorted ascending.
    public let nanoseconds: [Double]

    /// Creates samples from unsorted nanosecond timings.
    public init(name: String, nanoseconds: [Double]) {
        self.name = name
        self.nanoseconds = nanoseconds.sorted()
    }

    /// The value at a percentile (0…100).
    public func percentile(_ p: Double) -> Double {
        guard !nanoseconds.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(nanoseconds.count - 1)).rounded())
        return nanoseconds[min(max(rank, 0), nanoseconds.count - 1)]
    }

    /// The median.
    public var median: Double { percentile(50) }

    /// "p50 / p99 / max" as the tables print them.
    public var p50p99Max: String {
        "\(formatDuration(median)) / \(formatDuration(percentile(99))) / \(formatDuration(nanoseconds.last ?? .nan))"
    }
}

/// Measures `body` `iterations` times after `warmup` untimed runs; each sample is one call.
public func measure(_ name: String, warmup: Int = 10, iterations: Int, _ body: () throws -> Void) rethrows -> Samples {
    for _ in 0..<warmup { try body() }
    var timings: [Double] = []
    timings.reserveCapacity(iterations)
    for _ in 0..<iterations {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        timings.append(Double(DispatchTime.now().uptimeNanoseconds - start))
    }
    return Samples(name: name, nanoseconds: timings)
}

/// Measures an async `body` `iterations` times after `warmup` untimed runs.
public func measureAsync(_ name: String, warmup: Int = 10, iterations: Int, _ body: () async throws -> Void) async rethrows -> Samples {
    for _ in 0..<warmup { try await body() }
    var timings: [Double] = []
    timings.reserveCapacity(iterations)
    for _ in 0..<iterations {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        timings.append(Double(DispatchTime.now().uptimeNanoseconds - start))
    }
    return Samples(name: name, nanoseconds: timings)
}

/// Formats nanoseconds as a short human duration (ns, µs, ms, s).
public func formatDuration(_ nanoseconds: Double) -> String {
    switch nanoseconds {
    case ..<1_000: return String(format: "%.0f ns", nanoseconds)
    case ..<1_000_000: return String(format: "%.1f µs", nanoseconds / 1_000)
    case ..<1_000_000_000: return String(format: "%.2f ms", nanoseconds / 1_000_000)
    default: return String(format: "%.2f s", nanoseconds / 1_000_000_000)
    }
}

/// Prints a Markdown table (so it can be pasted into BENCHMARKS.md as it is).
public func printTable(title: String, header: [String], rows: [[String]]) {
    print("\n### \(title)\n")
    print("| " + header.joined(separator: " | ") + " |")
    print("|" + header.map { _ in "---" }.joined(separator: "|") + "|")
    for row in rows { print("| " + row.joined(separator: " | ") + " |") }
}

/// A one-line description of this machine for the report: cores, CPU model, kernel.
public func machineDescription() -> String {
    let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
        .split(separator: "\n").first { $0.hasPrefix("model name") }?
        .split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
    return "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpu), \(ProcessInfo.processInfo.operatingSystemVersionString)"
}

/// The load average over 1, 5 and 15 minutes (`/proc/loadavg`), for a report on this shared machine; "unknown" where
/// the file cannot be read.
public func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "unknown"
}

/// The resident set size of this process in bytes (from `/proc/self/statm`), for memory comparisons.
/// CPU time (user + system) this process has used, in nanoseconds: every thread of the benchmark, not the
/// servers it talks to (nginx, the fixture producer), which are other processes.
public func processCPUNanoseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) * 1e9 + Double(usage.ru_utime.tv_usec) * 1e3
    let system = Double(usage.ru_stime.tv_sec) * 1e9 + Double(usage.ru_stime.tv_usec) * 1e3
    return user + system
}

public func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

// MARK: - nginx

/// An nginx serving static files on 127.0.0.1 for the benchmarks; stopped by its PID.
public struct Nginx {
    /// The port it listens on.
    public let port: Int
    let directory: URL
    let process: Process

    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Int32 in
                _ = bind(fd, p, length)
                return getsockname(fd, p, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Starts nginx serving `files` (name → bytes), keep-alive, ETags on, gzip off.
    public static func start(files: [String: Data]) throws -> Nginx {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("www"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        for (name, data) in files { try data.write(to: directory.appendingPathComponent("www/\(name)")) }
        let port = freePort()
        let d = directory.path
        let config = """
            daemon off; master_process off; worker_processes 1;
            pid \(d)/nginx.pid; error_log \(d)/error.log warn;
            events { worker_connections 4096; }
            http {
                types { application/json json; }
                access_log off;
                client_body_temp_path \(d)/tmp/body; proxy_temp_path \(d)/tmp/proxy;
                fastcgi_temp_path \(d)/tmp/fastcgi; uwsgi_temp_path \(d)/tmp/uwsgi; scgi_temp_path \(d)/tmp/scgi;
                keepalive_requests 1000000; keepalive_timeout 120s;
                gzip off; etag on;
                server { listen 127.0.0.1:\(port); root \(d)/www; location / { } }
            }
            """
        try Data(config.utf8).write(to: directory.appendingPathComponent("nginx.conf"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", d, "-c", "\(d)/nginx.conf", "-e", "\(d)/error.log"]
        try process.run()
        for _ in 0..<500 where !accepts(port) { usleep(10_000) }
        return Nginx(port: port, directory: directory, process: process)
    }

    /// Stops nginx and removes its directory.
    public func stop() {
        process.terminate()
        usleep(200_000)
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A JSON collection payload of about `bytes` bytes.
public func jsonFile(bytes: Int) -> Data {
    var text = "{\"value\":["
    var index = 0
    while text.utf8.count < bytes - 64 {
        if index > 0 { text += "," }
        text += "{\"ID\":\(index),\"Name\":\"Product \(index)\",\"Price\":\(Double(index) * 1.25)}"
        index += 1
    }
    text += "],\"pad\":\""
    text += String(repeating: "x", count: max(0, bytes - text.utf8.count - 2))
    text += "\"}"
    return Data(text.utf8)
}


/// The times (`DispatchTime`'s uptime in nanoseconds) at which the elements of `sequence` reach a task of its own that
/// iterates it: what the latency of a live query is measured with, the consumer not being the task that writes.
/// Cancel the task to end it.
public func arrivals<S: AsyncSequence & Sendable>(of sequence: S) -> (times: AsyncStream<UInt64>, consumer: Task<Void, Never>) where S.Element: Sendable {
    let (times, arrived) = AsyncStream.makeStream(of: UInt64.self)
    let consumer = Task {
        do {
            for try await _ in sequence { arrived.yield(DispatchTime.now().uptimeNanoseconds) }
        } catch {
            print("the observed sequence failed: \(error)")
        }
        arrived.finish()
    }
    return (times, consumer)
}
