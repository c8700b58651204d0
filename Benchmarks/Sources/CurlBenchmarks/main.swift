// CurlBenchmarks: CurlTransport vs AsyncHTTPClient vs FoundationNetworking's URLSession, against one nginx on
// loopback, in one run. Rows: p50/p99 of sequential GETs of 1 KiB and 64 KiB, and requests per second with 64
// requests in flight. Every client gets the same bytes (gzip off), 8 connections per host, keep-alive.
import AsyncHTTPClient
import BenchmarkKit
import CurlHTTP
import ODataCore
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

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
// Overrides for experiments only; the reported runs use the defaults above.
if let value = ProcessInfo.processInfo.environment["CURL_MAX_CONNECTIONS"].flatMap(Int.init) {
    curlConfiguration.maxConnectionsPerHost = value
}
if let value = ProcessInfo.processInfo.environment["CURL_EVENT_LOOPS"].flatMap(Int.init) {
    curlConfiguration.eventLoopCount = value
}
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

// The machine is shared, so the clients are measured in interleaved rounds (the order rotating each round)
// and the samples of all rounds pooled: a burst of load elsewhere hits every client alike.
let rounds = 5
var rows: [[String]] = []
var smallSamples: [String: [Double]] = [:], mediumSamples: [String: [Double]] = [:]
var rpsRounds: [String: [Double]] = [:], cpuPerRequest: [String: [Double]] = [:]
var sequentialCPU: [String: [Double]] = [:]
do {
    for client in clients {  // warm-up: connections open, code paged in
        for _ in 0..<200 { _ = try await client.get(smallURL) }
        for _ in 0..<50 { _ = try await client.get(mediumURL) }
        _ = try await throughput(client, url: smallURL, expected: small.count, concurrency: 64, total: 640)
    }
    for round in 0..<rounds {
        for offset in 0..<clients.count {
            let client = clients[(round + offset) % clients.count]
            let sequentialCPUBefore = processCPUNanoseconds()
            let s = try await measureAsync("s", warmup: 0, iterations: sequentialIterations / rounds) {
                guard try await client.get(smallURL) == small.count else { throw BenchError(description: "short body") }
            }
            sequentialCPU[client.name, default: []].append(
                (processCPUNanoseconds() - sequentialCPUBefore) / Double(sequentialIterations / rounds))
            let m = try await measureAsync("m", warmup: 5, iterations: sequentialIterations / 2 / rounds) {
                guard try await client.get(mediumURL) == medium.count else { throw BenchError(description: "short body") }
            }
            let total = concurrentTotal / rounds
            let cpuBefore = processCPUNanoseconds()
            let r = try await throughput(client, url: smallURL, expected: small.count, concurrency: 64, total: total)
            let cpu = (processCPUNanoseconds() - cpuBefore) / Double(total)
            smallSamples[client.name, default: []] += s.nanoseconds
            mediumSamples[client.name, default: []] += m.nanoseconds
            rpsRounds[client.name, default: []].append(r)
            cpuPerRequest[client.name, default: []].append(cpu)
        }
        print("  round \(round + 1) of \(rounds) done; requests/s: " + clients.map { "\($0.name) \(Int(rpsRounds[$0.name]?.last ?? 0))" }.joined(separator: ", "))
    }
    print("  CurlTransport opened \(curlNewConnections.load(ordering: .relaxed)) connections in all")
} catch {
    print("benchmark failed: \(error)")
}
let smallStats = smallSamples.mapValues { Samples(name: "", nanoseconds: $0) }
let mediumStats = mediumSamples.mapValues { Samples(name: "", nanoseconds: $0) }
let small50 = smallStats.mapValues { $0.median }, small99 = smallStats.mapValues { $0.percentile(99) }
let medium50 = mediumStats.mapValues { $0.median }, medium99 = mediumStats.mapValues { $0.percentile(99) }
let rps = rpsRounds.mapValues { Samples(name: "", nanoseconds: $0).median }
let cpu = cpuPerRequest.mapValues { Samples(name: "", nanoseconds: $0).median }
let cpuSequential = sequentialCPU.mapValues { Samples(name: "", nanoseconds: $0).median }

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
var sequentialCPURow = ["Sequential GET 1 KiB, client CPU per request"]
for name in names { sequentialCPURow.append(cpuSequential[name].map(formatDuration) ?? "–") }
sequentialCPURow.append(ratio(cpuSequential[curlName] ?? 0, names.dropFirst().compactMap { cpuSequential[$0] }.min(), higherIsBetter: false))
rows.append(sequentialCPURow)
var cpuRow = ["64 concurrent GET 1 KiB, client CPU per request"]
for name in names { cpuRow.append(cpu[name].map(formatDuration) ?? "–") }
cpuRow.append(ratio(cpu[curlName] ?? 0, names.dropFirst().compactMap { cpu[$0] }.min(), higherIsBetter: false))
var rpsRow = ["64 concurrent GET 1 KiB, requests/s"]
for name in names { rpsRow.append(rps[name].map { String(format: "%.0f", $0) } ?? "–") }
rpsRow.append(ratio(rps[curlName] ?? 0, names.dropFirst().compactMap { rps[$0] }.max(), higherIsBetter: true))
rows.append(rpsRow)
rows.append(cpuRow)
printTable(
    title: "CurlTransport vs AsyncHTTPClient vs URLSession (nginx, loopback; \(rounds) interleaved rounds, \(sequentialIterations) sequential 1 KiB samples, \(concurrentTotal) concurrent requests per client; medians of rounds for requests/s and CPU)",
    header: ["Row"] + names + ["CurlTransport vs best other (>1 = faster)"], rows: rows)

transport.shutdown()
try await ahc.shutdown().get()
session.invalidateAndCancel()
nginx.stop()
