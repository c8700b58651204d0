// FleetBenchmarks (2) and (3): N instances with no tier, one Redis and a 3 + 3 Redis Cluster; a failover.
import BenchmarkKit
import Foundation
import ODataCore
import ODataFixtures
import OnlineStore
import Redis
import TechnicalCache

/// The fleet's key derivation: the tier keys are derived at every open (32 instances × 3 tiers), and the
/// derivation takes no part in a read.
let fleetDerivation = KeyDerivation.pbkdf2(rounds: 1_000)

/// What N instances reading one working set cost.
struct FleetRun {
    var requests = 0
    var reads = 0
    var seconds = 0.0
    var tierHits: [Double] = []
    var all: [Double] = []
}

/// N instances read the same working set (each its own random order, `rounds` times) concurrently; a read
/// that the store's tier counted as a hit (its hit counter moved during that read: one task per store)
/// is a tier hit.
nonisolated func fleet(root: String, tier: Tier, directory: URL, instances: Int, workingSet: Int, rounds: Int, run: String) async throws -> FleetRun {
    let namespace = "fleet-\(run)"
    var stores: [OnlineODataStore] = []
    for index in 0..<instances {
        stores.append(try await openStore(root, options(directory, name: "fleet-\(run)-\(index)", tier: tier, namespace: namespace,
                                                        maxAge: .seconds(600), derivation: fleetDerivation)))
    }
    let started = DispatchTime.now().uptimeNanoseconds
    let timings = try await withThrowingTaskGroup(of: (all: [Double], hits: [Double]).self) { group in
        for (index, store) in stores.enumerated() {
            group.addTask {
                var generator = SystemRandomNumberGenerator()
                var all: [Double] = []
                var hits: [Double] = []
                for _ in 0..<rounds {
                    for item in (0..<workingSet).shuffled(using: &generator) {
                        let hitsBefore = store.statistics.secondTier?.hits ?? 0
                        let start = DispatchTime.now().uptimeNanoseconds
                        let response = try await store.response(for: .get("w\(item % 64).json", .skip(item)))
                        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
                        guard response?.statusCode == 200 else { throw ODataError(.invalidState, "instance \(index): no answer") }
                        all.append(elapsed)
                        if (store.statistics.secondTier?.hits ?? 0) > hitsBefore { hits.append(elapsed) }
                    }
                }
                return (all, hits)
            }
        }
        var result = FleetRun()
        for try await part in group {
            result.all += part.all
            result.tierHits += part.hits
        }
        return result
    }
    var result = timings
    result.seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    result.reads = result.all.count
    result.requests = stores.reduce(0) { $0 + $1.statistics.networkRequests }
    for store in stores { store.close() }
    return result
}

/// The table: N = 1, 8, 32 instances × no tier, one Redis, a 3 + 3 cluster.
nonisolated func fleetTable(root: String, tiers: [Tier], directory: URL) async throws {
    let workingSet = 256
    let rounds = 3
    var rows: [[String]] = []
    for instances in [1, 8, 32] {
        var withoutTier = 0
        for (index, tier) in tiers.enumerated() {
            let run = try await fleet(root: root, tier: tier, directory: directory, instances: instances, workingSet: workingSet, rounds: rounds,
                                      run: "\(instances)-\(index)")
            if case .none = tier { withoutTier = run.requests }
            let hits = Samples(name: "hits", nanoseconds: run.tierHits)
            let all = Samples(name: "all", nanoseconds: run.all)
            rows.append(["\(instances)", tier.label, "\(run.requests)",
                         withoutTier > 0 ? String(format: "%.3f", Double(run.requests) / Double(withoutTier)) : "–",
                         "\(run.tierHits.count)", run.tierHits.isEmpty ? "–" : formatDuration(hits.median),
                         run.tierHits.isEmpty ? "–" : formatDuration(hits.percentile(99)),
                         formatDuration(all.median), formatDuration(all.percentile(99)), String(format: "%.0f", Double(run.reads) / run.seconds)])
        }
    }
    printTable(title: "N instances (one process, separate caches) read the same \(workingSet) URLs of 4 KiB, \(rounds) rounds each in its own random order, concurrently, maxAge 600 s",
               header: ["N", "tier", "back-end requests", "vs no tier", "tier hits", "tier hit p50", "tier hit p99", "read p50", "read p99", "reads/s"],
               rows: rows)
}

/// A master of the cluster SIGKILLed while probes read the working set from the tier: how long until its
/// replica is promoted (its `ROLE` says master, polled every 5 ms), and until a probe — a fresh cache that
/// looks every URL up (local misses: each a tier lookup) — finds every one of them again, so also those of
/// the failed shard. The resolution is one probe (tens of milliseconds).
nonisolated func failover(root: String, cluster: RedisCluster, directory: URL) async throws {
    let workingSet = 256
    let tier = Tier.cluster(cluster)
    let namespace = "failover"
    // One instance fills the tier with the working set; the replicas copy it.
    let filler = try await openStore(root, options(directory, name: "failover-filler", tier: tier, namespace: namespace, derivation: fleetDerivation))
    for item in 0..<workingSet { _ = try await filler.response(for: .get("w\(item % 64).json", .skip(item))) }
    filler.waitForSecondTier()
    filler.close()
    let victim = try cluster.master(servingSlot: 0)
    let infos = try cluster.nodeInfos()
    let victimID = try require(infos.first { $0.port == victim.port }?.id)
    let replicaPort = try require(infos.first { $0.masterID == victimID }?.port)
    let replica = try RedisClient(configuration: RedisConfiguration(port: replicaPort))
    try cluster.waitUntilReplicasCaughtUp()
    var probes = 0
    /// One probe: a new instance (an empty local cache, passive: no back end), every URL read once; how many
    /// the tier answered.
    func probe() async throws -> Int {
        probes += 1
        let store = try await openStore(root, options(directory, name: "probe-\(probes)", tier: tier, namespace: namespace, derivation: fleetDerivation))
        defer { store.close() }
        try store.setMode(.passive)
        var found = 0
        for item in 0..<workingSet where try await store.response(for: .get("w\(item % 64).json", .skip(item))) != nil { found += 1 }
        return found
    }
    let before = try await probe()
    guard before == workingSet else { throw ODataError(.invalidState, "the probe found \(before) of \(workingSet) before the failover") }

    let killedAt = DispatchTime.now().uptimeNanoseconds
    victim.kill()
    var promotedAt: UInt64 = 0
    var resumedAt: UInt64 = 0
    var worst = workingSet
    var roundsDuring = 0
    while resumedAt == 0 && DispatchTime.now().uptimeNanoseconds - killedAt < 30_000_000_000 {
        if promotedAt == 0, case .bulkString(let info) = try replica.command("ROLE").arrayFirst, String(decoding: info, as: UTF8.self) == "master" {
            promotedAt = DispatchTime.now().uptimeNanoseconds
        }
        let probeStarted = DispatchTime.now().uptimeNanoseconds
        let found = try await probe()
        roundsDuring += 1
        worst = min(worst, found)
        if found == workingSet && promotedAt != 0 && probeStarted > promotedAt { resumedAt = DispatchTime.now().uptimeNanoseconds }
        if promotedAt == 0 { usleep(5_000) }
    }
    replica.close()
    guard promotedAt != 0, resumedAt != 0 else { throw ODataError(.invalidState, "no promotion or no resumption within 30 s") }
    printTable(title: "Failover: the master of slot 0 SIGKILLed (cluster-node-timeout 1 s), probes of all \(workingSet) URLs through the tier from a fresh cache",
               header: ["promotion after the kill", "every hit back after the promotion", "probes during the failover", "fewest URLs a probe found"],
               rows: [[formatDuration(Double(promotedAt - killedAt)), formatDuration(Double(resumedAt - promotedAt)), "\(roundsDuring)", "\(worst) of \(workingSet)"]])
    try cluster.restart(victim)
    try cluster.waitUntilHealthy()
}

extension RedisReply {
    /// The first element of an array reply (`ROLE` answers `["master", …]`).
    var arrayFirst: RedisReply? {
        guard case .array(let elements) = self else { return nil }
        return elements.first
    }
}
