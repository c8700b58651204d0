// FleetBenchmarks (4): the fleet across hosts. Three network namespaces (`NetworkHosts`: veth pairs on a private
// bridge, each its own address); the instances run in `odata-fleet-instance` processes on them (`ip netns exec`),
// instance i on host i mod 3; one Redis on host 2, the 3 + 3 cluster's nodes on the hosts in turn; the back end
// (nginx) on the bridge. Each process reports its counts and every read's latency as JSON; this program adds
// them up. Skipped, with the reason, where namespaces are refused.
import BenchmarkKit
import Foundation
import ODataFixtures
import Redis

/// The tier as the instance program's arguments.
struct HostTier {
    let label: String
    let arguments: [String]
}

/// N instances spread over the hosts (round-robin), each process started and its stores opened before any reads
/// (`--wait-for-go`); the processes' final reports added up.
func hostRun(binary: String, hosts: NetworkHosts, root: String, tier: HostTier, instances: Int, run: String, directory: URL)
    throws -> FleetInstanceReport
{
    var processes: [FleetInstanceProcess] = []
    defer { for process in processes { process.stop() } }
    for (index, host) in hosts.hosts.enumerated() {
        let here = (0..<instances).filter { $0 % hosts.hosts.count == index }.count
        guard here > 0 else { continue }
        processes.append(try FleetInstanceProcess.start(
            ["--service-root", root, "--directory", directory.appendingPathComponent("\(run)-h\(index)").path, "--name", "\(run)-h\(index)",
             "--instances", String(here), "--namespace", "fleet-\(run)", "--count", "256", "--rounds", "3", "--max-age", "600",
             "--derivation-rounds", "1000", "--wait-for-go"] + tier.arguments,
            passphrase: passphrase, on: host, of: hosts, executable: binary))
    }
    for process in processes { try process.waitUntilReady(timeout: .seconds(300)) }
    for process in processes { try process.go() }
    var total = FleetInstanceReport(kind: .final)
    for process in processes { total.add(try process.finalReport(timeout: .seconds(600))) }
    guard total.errors == 0 else { throw FixtureError(.serverFailure, "\(total.errors) reads failed: \(total.errorSamples)") }
    return total
}

/// The table and the failover across hosts.
nonisolated func acrossHosts() throws {
    if let reason = NetworkHosts.unsupportedReason {
        print("\nAcross hosts: skipped — \(reason)")
        return
    }
    guard let binary = repositoryBinary(named: "odata-fleet-instance", environment: "ODATA_FLEET_INSTANCE") else {
        print("\nAcross hosts: skipped — build the instance program first: swift build -c release --product odata-fleet-instance (at the repository root)")
        return
    }
    let hosts = try NetworkHosts.create(count: 3)
    defer { hosts.remove() }
    var files: [String: Data] = [:]
    for item in 0..<256 { files["w\(item).json"] = jsonFile(bytes: 4_096) }
    let nginx = try ODataFixtures.Nginx.serving(files: files, address: hosts.bridgeAddress)
    defer { nginx.stop() }
    let root = "http://\(hosts.bridgeAddress):\(nginx.ports[0])/"
    let redis = try RedisServer.start(on: hosts.hosts[2])
    defer { redis.stop() }
    let cluster = try RedisCluster.start(hosts: hosts.hosts)
    defer { cluster.stop() }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-hosts-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }  // a temporary directory left behind is harmless
    let nodes = cluster.nodes.map { "\($0.address):\($0.port)" }.joined(separator: ",")
    let tiers = [HostTier(label: "no tier", arguments: []),
                 HostTier(label: "one Redis", arguments: ["--redis", "\(redis.address):\(redis.port)"]),
                 HostTier(label: "3 + 3 cluster", arguments: ["--cluster", nodes])]
    print("\nAcross hosts: \(hosts.hosts.map(\.address).joined(separator: ", ")) (namespaces), back end on the bridge \(root), "
          + "one Redis on \(redis.address), cluster nodes on \(Set(cluster.nodes.map(\.address)).sorted().joined(separator: ", ")); "
          + "release instance program \(binary.contains("/release/") ? "(release)" : "(debug)")")

    var rows: [[String]] = []
    for instances in [1, 8, 32] {
        var withoutTier = 0
        for (index, tier) in tiers.enumerated() {
            let run = try hostRun(binary: binary, hosts: hosts, root: root, tier: tier, instances: instances, run: "h\(instances)-\(index)", directory: directory)
            if tier.arguments.isEmpty { withoutTier = run.networkRequests }
            let hits = run.tierHitLatencies ?? []
            let all = Samples(name: "all", nanoseconds: run.latencies ?? [])
            let hitSamples = Samples(name: "hits", nanoseconds: hits)
            let seconds = Double(run.ended - run.started) / 1e9
            rows.append(["\(instances)", tier.label, "\(run.networkRequests)",
                         withoutTier > 0 ? String(format: "%.3f", Double(run.networkRequests) / Double(withoutTier)) : "–",
                         "\(hits.count)", hits.isEmpty ? "–" : formatDuration(hitSamples.median),
                         hits.isEmpty ? "–" : formatDuration(hitSamples.percentile(99)),
                         formatDuration(all.median), formatDuration(all.percentile(99)), String(format: "%.0f", Double(run.reads) / seconds)])
        }
    }
    printTable(title: "Across hosts: N instances (round-robin over 3 hosts, K per process) read the same 256 URLs of 4 KiB, 3 rounds each in its own random order, concurrently, maxAge 600 s",
               header: ["N", "tier", "back-end requests", "vs no tier", "tier hits", "tier hit p50", "tier hit p99", "read p50", "read p99", "reads/s"],
               rows: rows)
    try hostFailover(binary: binary, hosts: hosts, root: root, cluster: cluster, nodes: nodes, directory: directory)
}

/// The failover across hosts: host 0 fills the tier; host 1 probes in rounds of a new instance each (passive: every
/// read a tier lookup); the master of slot 0 is SIGKILLed; its replica's `ROLE` is polled for the promotion; the
/// hits are back when a round that started after the promotion found all 256.
func hostFailover(binary: String, hosts: NetworkHosts, root: String, cluster: RedisCluster, nodes: String, directory: URL) throws {
    let common = ["--service-root", root, "--cluster", nodes, "--namespace", "failover-hosts", "--count", "256", "--derivation-rounds", "1000"]
    let filler = try FleetInstanceProcess.start(common + ["--directory", directory.appendingPathComponent("filler").path, "--name", "filler"],
                                                passphrase: passphrase, on: hosts.hosts[0], of: hosts, executable: binary)
    defer { filler.stop() }
    let filled = try filler.finalReport(timeout: .seconds(120))
    guard filled.errors == 0, filled.tierWrites == 256 else { throw FixtureError(.serverFailure, "the filler wrote \(filled.tierWrites) of 256") }
    try cluster.waitUntilReplicasCaughtUp()
    let victim = try cluster.master(servingSlot: 0)
    let infos = try cluster.nodeInfos()
    let victimID = try require(infos.first { $0.port == victim.port }?.id)
    let replicaNode = try require(cluster.nodes.first { node in infos.contains { $0.masterID == victimID && $0.port == node.port } })
    let replica = try RedisClient(configuration: RedisConfiguration(host: replicaNode.address, port: replicaNode.port))
    defer { replica.close() }
    let probe = try FleetInstanceProcess.start(common + ["--directory", directory.appendingPathComponent("probe").path, "--name", "probe", "--fresh", "--passive"],
                                               passphrase: passphrase, on: hosts.hosts[1], of: hosts, executable: binary)
    defer { probe.stop() }
    try probe.waitUntilReady(timeout: .seconds(60))
    let before = try require(try probe.nextReport(timeout: .seconds(60)))
    guard before.found == 256 else { throw FixtureError(.serverFailure, "the probe found \(before.found) of 256 before the failover") }

    let killedAt = FleetInstanceReport.now()
    victim.kill()
    var promotedAt: UInt64 = 0
    var resumedAt: UInt64 = 0
    var worst = 256
    var rounds = 0
    while resumedAt == 0 && FleetInstanceReport.now() - killedAt < 30_000_000_000 {
        if promotedAt == 0, case .bulkString(let role) = try replica.command("ROLE").arrayFirst, String(decoding: role, as: UTF8.self) == "master" {
            promotedAt = FleetInstanceReport.now()
        }
        guard let round = try probe.nextReport(timeout: .milliseconds(5)) else { continue }
        rounds += 1
        worst = min(worst, round.found)
        if promotedAt != 0 && round.started > promotedAt && round.found == 256 { resumedAt = round.ended }
    }
    probe.finish()
    let total = try probe.finalReport(timeout: .seconds(60))
    guard promotedAt != 0, resumedAt != 0 else { throw FixtureError(.serverFailure, "no promotion or no resumption within 30 s") }
    printTable(title: "Across hosts, failover: the master of slot 0 SIGKILLed (cluster-node-timeout 1 s), rounds of a new instance on another host reading all 256 URLs from the tier",
               header: ["promotion after the kill", "every hit back after the promotion", "rounds during the failover", "fewest URLs a round found", "read errors"],
               rows: [[formatDuration(Double(promotedAt - killedAt)), formatDuration(Double(resumedAt - promotedAt)), "\(rounds)", "\(worst) of 256", "\(total.errors)"]])
    try cluster.restart(victim)
    try cluster.waitUntilHealthy()
}
