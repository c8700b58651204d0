// CurlBenchmarks: CurlTransport vs AsyncHTTPClient vs FoundationNetworking's URLSession, against one nginx on
// loopback, in one run. Rows: p50/p99 of sequential GETs of 1 KiB and 64 KiB, and requests per second with 64
// requests in flight. Every client gets the same bytes (gzip off), 8 connections per host, keep-alive.
import AsyncHTTPClient
import BenchmarkKit
import CurlHTTP
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

// MARK: nginx

struct Nginx {
    let port: Int
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

    static func start(files: [String: Data]) throws -> Nginx {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("curl-bench-\(UUID().uuidString)")
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

    func stop() {
        process.terminate()
        usleep(200_000)
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

func jsonFile(bytes: Int) -> Data {
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

// MARK: clients

struct BenchError: Error, CustomStringConvertible { let description: String }

protocol Client: Sendable {
    var name: String { get }
    func get(_ url: String) async throws -> Int  // body bytes
}

/// New connections CurlTransport opened during the run (from `TransferMetrics`).
let curlNewConnections = Atomic<Int>(0)

struct CurlClient: Client {
    let transport: CurlTransport
    var name: String { "CurlTransport" }
    func get(_ url: String) async throws -> Int {
        let response = try await transport.send(TransportRequest(url: url))
        curlNewConnections.add(response.metrics.newConnections, ordering: .relaxed)
        guard response.status == 200 else { throw BenchError(description: "status \(response.status)") }
        return response.body.count
    }
}

struct AHCClient: Client {
    let client: HTTPClient
    var name: String { "AsyncHTTPClient 1.37.0" }
    func get(_ url: String) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        guard response.status.code == 200 else { throw BenchError(description: "status \(response.status)") }
        return try await response.body.collect(upTo: 16 << 20).readableBytes
    }
}

struct URLSessionClient: Client {
    let session: URLSession
    var name: String { "URLSession (FoundationNetworking)" }
    func get(_ url: String) async throws -> Int {
        let request = URLRequest(url: URL(string: url)!)
        let (data, status): (Data, Int) = try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                if let error { continuation.resume(throwing: error); return }
                continuation.resume(returning: (data ?? Data(), (response as? HTTPURLResponse)?.statusCode ?? 0))
            }.resume()
        }
        guard status == 200 else { throw BenchError(description: "status \(status)") }
        return data.count
    }
}

/// Requests per second with `concurrency` requests in flight until `total` are done.
func throughput(_ client: any Client, url: String, expected: Int, concurrency: Int, total: Int) async throws -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await withThrowingTaskGroup(of: Int.self) { group in
        var started = 0
        for _ in 0..<concurrency {
            group.addTask { try await client.get(url) }
            started += 1
        }
        while let bytes = try await group.next() {
            guard bytes == expected else { throw BenchError(description: "\(client.name): \(bytes) bytes") }
            if started < total {
                group.addTask { try await client.get(url) }
                started += 1
            }
        }
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    return Double(total) / seconds
}

// MARK: run

let small = jsonFile(bytes: 1024)
let medium = jsonFile(bytes: 64 * 1024)
let nginx = try Nginx.start(files: ["small.json": small, "medium.json": medium])
let smallURL = "http://127.0.0.1:\(nginx.port)/small.json"
let mediumURL = "http://127.0.0.1:\(nginx.port)/medium.json"

var curlConfiguration = CurlConfiguration()
curlConfiguration.acceptEncoding = nil
curlConfiguration.maxConnectionsPerHost = 8
let transport = try CurlTransport(configuration: curlConfiguration)

var ahcConfiguration = HTTPClient.Configuration()
ahcConfiguration.connectionPool = .init(idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: 8)
ahcConfiguration.decompression = .disabled
let ahc = HTTPClient(eventLoopGroupProvider: .singleton, configuration: ahcConfiguration)

let sessionConfiguration = URLSessionConfiguration.ephemeral
sessionConfiguration.httpMaximumConnectionsPerHost = 8
sessionConfiguration.urlCache = nil
let session = URLSession(configuration: sessionConfiguration)

let arguments = CommandLine.arguments
// A fourth argument `curl`, `ahc` or `urlsession` measures that client alone (for profiling).
let allClients: [any Client] = [CurlClient(transport: transport), AHCClient(client: ahc), URLSessionClient(session: session)]
let clients: [any Client] = switch arguments.count > 3 ? arguments[3] : "" {
case "curl": [allClients[0]]
case "ahc": [allClients[1]]
case "urlsession": [allClients[2]]
default: allClients
}
let sequentialIterations = arguments.count > 1 ? Int(arguments[1]) ?? 2000 : 2000
let concurrentTotal = arguments.count > 2 ? Int(arguments[2]) ?? 6000 : 6000

print("Machine: \(machineDescription())")
print("nginx 1.22 on 127.0.0.1:\(nginx.port), gzip off, keep-alive; every client: 8 connections per host, HTTP/1.1")

var rows: [[String]] = []
var small50: [String: Double] = [:], small99: [String: Double] = [:]
var medium50: [String: Double] = [:], medium99: [String: Double] = [:]
var rps: [String: Double] = [:]
do {
    for client in clients {
        let s = try await measureAsync("\(client.name) 1 KiB", warmup: 200, iterations: sequentialIterations) {
            guard try await client.get(smallURL) == small.count else { throw BenchError(description: "short body") }
        }
        let m = try await measureAsync("\(client.name) 64 KiB", warmup: 100, iterations: sequentialIterations / 2) {
            guard try await client.get(mediumURL) == medium.count else { throw BenchError(description: "short body") }
        }
        _ = try await throughput(client, url: smallURL, expected: small.count, concurrency: 64, total: 640)  // warm-up
        let r = try await throughput(client, url: smallURL, expected: small.count, concurrency: 64, total: concurrentTotal)
        small50[client.name] = s.median
        small99[client.name] = s.percentile(99)
        medium50[client.name] = m.median
        medium99[client.name] = m.percentile(99)
        rps[client.name] = r
        print("  measured \(client.name)")
        if client is CurlClient { print("  CurlTransport opened \(curlNewConnections.load(ordering: .relaxed)) connections") }
    }
} catch {
    print("benchmark failed: \(error)")
}

func ratio(_ ours: Double, _ theirs: Double?, higherIsBetter: Bool) -> String {
    guard let theirs, theirs > 0, ours > 0 else { return "–" }
    return String(format: "%.2f×", higherIsBetter ? ours / theirs : theirs / ours)
}

let names = clients.map(\.name)
let curlName = clients[0].name
for (title, table, better) in [
    ("Sequential GET 1 KiB, p50", small50, false), ("Sequential GET 1 KiB, p99", small99, false),
    ("Sequential GET 64 KiB, p50", medium50, false), ("Sequential GET 64 KiB, p99", medium99, false),
] {
    var row = [title]
    for name in names { row.append(table[name].map(formatDuration) ?? "–") }
    row.append(ratio(table[curlName] ?? 0, names.dropFirst().compactMap { table[$0] }.min(), higherIsBetter: better))
    rows.append(row)
}
var rpsRow = ["64 concurrent GET 1 KiB, requests/s"]
for name in names { rpsRow.append(rps[name].map { String(format: "%.0f", $0) } ?? "–") }
rpsRow.append(ratio(rps[curlName] ?? 0, names.dropFirst().compactMap { rps[$0] }.max(), higherIsBetter: true))
rows.append(rpsRow)
printTable(
    title: "CurlTransport vs AsyncHTTPClient vs URLSession (nginx, loopback; \(sequentialIterations) sequential samples, \(concurrentTotal) concurrent requests)",
    header: ["Row"] + names + ["CurlTransport vs best other (>1 = faster)"], rows: rows)

transport.shutdown()
try await ahc.shutdown().get()
session.invalidateAndCancel()
nginx.stop()
