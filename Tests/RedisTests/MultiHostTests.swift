import Foundation
import ODataFixtures
import Redis
import TechnicalCache
import Testing

/// The tier across hosts: a 3 + 3 Redis Cluster spread over three network namespaces (``NetworkHosts``: veth
/// pairs on a bridge, each namespace its own address), the instances on the bridge. Skipped where the machine
/// does not allow namespaces (it needs root and iproute2).
@Suite(.serialized)
struct MultiHostTests {
    static let unsupported = NetworkHosts.unsupportedReason

    @Test(.enabled(if: MultiHostTests.unsupported == nil, "network namespaces (ip netns add) are not allowed on this machine: the test needs root and iproute2"))
    func aClusterOnThreeHostsServesTheTierAndSurvivesAMasterKilled() async throws {
        let hosts = try NetworkHosts.create(count: 3)
        defer { hosts.remove() }
        let cluster = try RedisCluster.start(hosts: hosts.hosts)
        defer { cluster.stop() }
        #expect(Set(cluster.nodes.map(\.address)) == Set(hosts.hosts.map(\.address)), "every host holds nodes")
        #expect(!cluster.nodes.contains { $0.address == "127.0.0.1" })

        let directory = TemporaryDirectory()
        defer { directory.remove() }
        func open(_ name: String) throws -> ResponseCache {
            var configuration = CacheConfiguration(sizeLimit: 8 << 20, keyDerivation: cheapDerivation, durability: .periodic(interval: .seconds(3600)))
            var tier = RedisTierConfiguration(cluster: cluster.nodes.map { RedisNodeAddress(host: $0.address, port: $0.port) }, namespace: "tests")
            tier.redis.retryInterval = .milliseconds(100)
            configuration.secondTier = tier
            let cache = try ResponseCache(directory: directory.cache(name), configuration: configuration)
            try cache.open(encryption: .key(fleetSecret))
            return cache
        }
        let urls = (0..<30).map { "https://example.com/odata/Orders(\($0))" }
        let a = try open("a")
        defer { a.close() }
        for url in urls { try await a.store(makeEntry("order \(url)"), for: url) }
        a.waitForSecondTier()
        #expect(a.secondTierStatistics?.writes == 30 && a.secondTierStatistics?.failures == 0)
        let b = try open("b")
        defer { b.close() }
        for url in urls { #expect(try b.entry(for: url)?.payload == Data("order \(url)".utf8)) }
        #expect(b.secondTierStatistics?.hits == 30)

        // The replicas hold their masters' keys; then the master of slot 0 dies on its host.
        try cluster.waitUntilReplicasCaughtUp()
        let victim = try cluster.master(servingSlot: 0)
        victim.kill()
        // Meanwhile an instance reads and stores everything without an error (the dead shard's keys local-only).
        let c = try open("c")
        defer { c.close() }
        for url in urls {
            if try c.entry(for: url) == nil { try await c.store(makeEntry("order \(url)"), for: url) }
        }
        try cluster.waitUntilHealthy(excluding: [victim.port])
        // After the promotion a new instance finds all 30 in the tier again.
        let d = try open("d")
        defer { d.close() }
        #expect(try eventually(10) {
            let fresh = try open("d-\(UUID().uuidString.prefix(8))")
            defer { fresh.close() }
            return try urls.allSatisfy { try fresh.entry(for: $0) != nil }
        })
        #expect(try d.entry(for: urls[0]) != nil)
    }

    /// Instances in processes of their own on the hosts (`odata-fleet-instance` under `ip netns exec`, through
    /// ``FleetInstanceProcess``), the back end (nginx) on the bridge, the 3 + 3 cluster spread over the three hosts:
    /// what host A's instance stores through the tier, host B's instance reads from the tier without the back end;
    /// a master SIGKILLed while host C reads in rounds of a new instance each (every read a tier lookup) costs no
    /// read an error, and after the promotion a round finds every URL in the tier again.
    @Test(.enabled(if: MultiHostTests.unsupported == nil, "network namespaces (ip netns add) are not allowed on this machine: the test needs root and iproute2"),
          .timeLimit(.minutes(2)))
    func instancesOnTwoHostsShareTheTierAndNoReadFailsWhenAMasterDies() throws {
        let hosts = try NetworkHosts.create(count: 3)
        defer { hosts.remove() }
        let cluster = try RedisCluster.start(hosts: hosts.hosts)
        defer { cluster.stop() }
        let count = 30
        var files: [String: Data] = [:]
        for item in 0..<count { files["o\(item).json"] = Data(#"{"value":[{"ID":\#(item)}]}"#.utf8) }
        let backEnd = try Nginx.serving(files: files, address: hosts.bridgeAddress)
        defer { backEnd.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let nodes = cluster.nodes.map { "\($0.address):\($0.port)" }.joined(separator: ",")
        func start(_ name: String, on host: NetworkHosts.Host, _ more: [String] = []) throws -> FleetInstanceProcess {
            try FleetInstanceProcess.start(
                ["--service-root", "http://\(hosts.bridgeAddress):\(backEnd.ports[0])/", "--directory", directory.path + "/" + name, "--name", name,
                 "--cluster", nodes, "--namespace", "tests", "--resource", "o{i}.json", "--count", String(count), "--max-age", "600",
                 "--derivation-rounds", "1000", "--retry-ms", "100"] + more,
                passphrase: fleetSecret, on: host, of: hosts)
        }

        // Host A reads every URL from the back end and stores it through the tier.
        let a = try start("a", on: hosts.hosts[0])
        defer { a.stop() }
        let stored = try a.finalReport(timeout: .seconds(60))
        #expect(stored.errors == 0, "\(stored.errorSamples)")
        #expect(stored.found == count && stored.networkRequests == count && stored.tierWrites == count)
        // Host B finds every one in the tier and asks the back end for none.
        let b = try start("b", on: hosts.hosts[1])
        defer { b.stop() }
        let shared = try b.finalReport(timeout: .seconds(60))
        #expect(shared.errors == 0, "\(shared.errorSamples)")
        #expect(shared.found == count && shared.tierHits == count && shared.networkRequests == 0)

        // Host C reads in rounds of a new instance each; the master of slot 0 dies during them.
        try cluster.waitUntilReplicasCaughtUp()
        let c = try start("c", on: hosts.hosts[2], ["--fresh"])
        defer { c.stop() }
        try c.waitUntilReady(timeout: .seconds(30))
        let before = try #require(try c.nextReport(timeout: .seconds(30)))
        #expect(before.kind == .round && before.tierHits == count)
        let victim = try cluster.master(servingSlot: 0)
        let killedAt = FleetInstanceReport.now()
        victim.kill()
        try cluster.waitUntilHealthy(excluding: [victim.port])
        let promotedAt = FleetInstanceReport.now()
        var during = 0
        var resumed = false
        let deadline = ContinuousClock.now + .seconds(30)
        while !resumed, ContinuousClock.now < deadline, let round = try c.nextReport(timeout: .seconds(30)) {
            if round.ended > killedAt && round.started < promotedAt { during += 1 }
            if round.started > promotedAt && round.tierHits == count { resumed = true }
        }
        c.finish()
        let total = try c.finalReport(timeout: .seconds(30))
        #expect(resumed, "a round after the promotion found every URL in the tier")
        #expect(during > 0, "rounds ran while the shard was failing over")
        #expect(total.errors == 0, "no read failed: \(total.errorSamples)")
        #expect(total.found == total.reads)
    }
}
