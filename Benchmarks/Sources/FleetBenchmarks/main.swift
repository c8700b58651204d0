// FleetBenchmarks: the technical cache's Redis tier. (1) One read at 1 KiB and 64 KiB through OnlineODataStore:
// a local hit, a hit from Redis (the entry only in Redis, another instance stored it) and a back-end GET, beside
// the floor of a bare Redis GET — measured side by side in interleaved rounds against one nginx and one
// redis-server on loopback. (2) N = 1, 8, 32 instances (separate cache directories, one process) reading the
// same working set with `maxAge`, with no tier, one Redis and a 3 + 3 Redis Cluster: back-end requests, tier
// hit latency, throughput. (3) A failover: a cluster master SIGKILLed, the time until its replica is promoted
// and until tier hits for its slots resume (Cluster.swift). (4) The table and the failover across hosts: the
// instances in `odata-fleet-instance` processes on three network namespaces, the Redis nodes spread over them
// (Hosts.swift). FLEET_BENCH_SINGLE=0 skips (1), FLEET_BENCH_LOOPBACK=0 (2) and (3), FLEET_BENCH_HOSTS=0 (4).
import BenchmarkKit
import Foundation
import ODataCore
import ODataFixtures
import OnlineStore
import Redis
import TechnicalCache

/// One measured operation, its samples pooled over the rounds.
final class Row {
    let label: String
    let body: () async throws -> Void
    var timings: [Double] = []

    init(_ label: String, _ body: @escaping () async throws -> Void) {
        self.label = label
        self.body = body
    }

    func run(_ iterations: Int) async throws {
        for _ in 0..<iterations {
            let start = DispatchTime.now().uptimeNanoseconds
            try await body()
            timings.append(Double(DispatchTime.now().uptimeNanoseconds - start))
        }
    }

    var samples: Samples { Samples(name: label, nanoseconds: timings) }
}

let passphrase = "fleet benchmark passphrase"

/// Where the fleet's second tier is.
enum Tier {
    case none
    case single(port: Int)
    case cluster(RedisCluster)

    var label: String {
        switch self {
        case .none: "no tier"
        case .single: "one Redis"
        case .cluster: "3 + 3 cluster"
        }
    }

    func configuration(namespace: String) -> RedisTierConfiguration? {
        switch self {
        case .none: nil
        case .single(let port): RedisTierConfiguration(port: port, namespace: namespace)
        case .cluster(let cluster):
            RedisTierConfiguration(cluster: cluster.nodes.map { RedisNodeAddress(host: "127.0.0.1", port: $0.port) }, namespace: namespace)
        }
    }
}

func options(_ directory: URL, name: String, redis: RedisProcess?, namespace: String, maxAge: Duration? = nil) -> OnlineStoreOptions {
    options(directory, name: name, tier: redis.map { .single(port: $0.port) } ?? .none, namespace: namespace, maxAge: maxAge)
}

func options(_ directory: URL, name: String, tier: Tier, namespace: String, maxAge: Duration? = nil,
             derivation: KeyDerivation = .standard) -> OnlineStoreOptions {
    var options = OnlineStoreOptions()
    options.storeDirectory = directory
    options.storeName = name
    options.cacheEncryptionKey = passphrase
    options.cacheKeyDerivation = derivation
    options.cacheSizeLimit = 512 << 20
    options.maxAge = maxAge
    options.secondTier = tier.configuration(namespace: namespace)
    return options
}

func openStore(_ root: String, _ options: OnlineStoreOptions) async throws -> OnlineODataStore {
    let store = try OnlineODataStore(serviceRoot: root, options: options)
    try await store.open()
    return store
}

nonisolated func singleReads(root: String, redis: RedisProcess, directory: URL, iterations: Int) async throws {
    let client = try RedisClient(configuration: RedisConfiguration(port: redis.port))
    for (file, label, count) in [("r1k.json", "1 KiB", iterations), ("r64k.json", "64 KiB", iterations / 2)] {
        let namespace = "single-\(file)"
        // A reads `count` distinct URLs (nginx ignores the query) and so fills Redis; B has them only there.
        let a = try await openStore(root, options(directory, name: "a-\(file)", redis: redis, namespace: namespace))
        let total = count + 20
        for index in 0..<total { _ = try await a.response(for: .get(file, .skip(index))) }
        a.waitForSecondTier()
        let b = try await openStore(root, options(directory, name: "b-\(file)", redis: redis, namespace: namespace))
        try b.setMode(.passive)
        let local = try await openStore(root, options(directory, name: "l-\(file)", redis: nil, namespace: namespace))
        _ = try await local.response(for: .get(file))
        try local.setMode(.passive)
        let network = try await openStore(root, options(directory, name: "n-\(file)", redis: nil, namespace: namespace))
        var next = 0
        var redisMisses = 0
        let someKey = try require(try allKeys(client, matching: namespace + ":*").first)
        let rows = [
            Row("local hit (passive read)") {
                guard try await local.response(for: .get(file)) != nil else { throw ODataError(.invalidState, "local miss") }
            },
            Row("hit from Redis (passive read, local miss)") {
                if try await b.response(for: .get(file, .skip(next))) == nil { redisMisses += 1 }
                next += 1
            },
            Row("back-end GET (nginx, no cache)") {
                _ = try await network.response(for: ODataRequest(resourcePath: file, useCache: false))
            },
            Row("floor: bare Redis GET of the sealed value") {
                _ = try client.get(someKey)
            },
        ]
        for row in rows { try await row.run(10) }  // warm-up
        for row in rows { row.timings.removeAll() }
        let rounds = 5
        for round in 0..<rounds {
            for offset in 0..<rows.count { try await rows[(offset + round) % rows.count].run(count / rounds) }
        }
        let localMedian = rows[0].samples.median
        printTable(title: "One read at \(label) (\(count) reads a row, interleaved; \(redisMisses) Redis misses)",
                   header: ["read", "p50", "p90", "p99", "p50 / local hit"],
                   rows: rows.map { row in
                       let s = row.samples
                       return [row.label, formatDuration(s.median), formatDuration(s.percentile(90)), formatDuration(s.percentile(99)),
                               String(format: "%.1f×", s.median / localMedian)]
                   })
        for store in [a, b, local, network] { store.close() }
    }
}

/// Keys matching `pattern` (one SCAN pass over the whole keyspace).
func allKeys(_ client: RedisClient, matching pattern: String) throws -> [[UInt8]] {
    guard case .array(let reply) = try client.command("SCAN", "0", "MATCH", pattern, "COUNT", "100000"), reply.count == 2,
          case .array(let keys) = reply[1] else { return [] }
    return keys.compactMap(\.bytes)
}

func require<T>(_ value: T?) throws -> T {
    guard let value else { throw ODataError(.invalidState, "missing value") }
    return value
}

nonisolated func runBenchmarks() async throws {
    let iterations = Int(ProcessInfo.processInfo.environment["FLEET_BENCH_ITERATIONS"] ?? "") ?? 2_000
    var files = ["r1k.json": jsonFile(bytes: 1_024), "r64k.json": jsonFile(bytes: 64 * 1_024)]
    for index in 0..<64 { files["w\(index).json"] = jsonFile(bytes: 4_096) }
    let nginx = try Nginx.start(files: files)
    defer { nginx.stop() }
    let redis = try RedisProcess.start()
    defer { redis.stop() }
    let root = "http://127.0.0.1:\(nginx.port)/"
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    print("# FleetBenchmarks\n\nMachine: \(machineDescription())")

    // FLEET_BENCH_SINGLE=0 skips the single reads (part 1), for runs of the fleet table and the failover alone.
    let environment = ProcessInfo.processInfo.environment
    if environment["FLEET_BENCH_SINGLE"] != "0" {
        try await singleReads(root: root, redis: redis, directory: directory, iterations: iterations)
    }

    if environment["FLEET_BENCH_LOOPBACK"] != "0" {
        let cluster = try RedisCluster.start(masters: 3, replicasPerMaster: 1)
        defer { cluster.stop() }
        try await fleetTable(root: root, tiers: [.none, .single(port: redis.port), .cluster(cluster)], directory: directory)
        try await failover(root: root, cluster: cluster, directory: directory)
    }
    if environment["FLEET_BENCH_HOSTS"] != "0" { try acrossHosts() }
}

try await runBenchmarks()
