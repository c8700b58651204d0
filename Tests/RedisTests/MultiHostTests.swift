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
        let infos = try cluster.nodeInfos()
        /// The node's key count, or -1 while it does not answer (a poll: the next one asks again).
        func size(_ node: RedisServer) throws -> Int64 {
            let client = try RedisClient(configuration: RedisConfiguration(host: node.address, port: node.port, connectTimeout: .seconds(1), commandTimeout: .seconds(1)))
            defer { client.close() }
            do {
                guard case .integer(let count) = try client.command("DBSIZE") else { return -1 }
                return count
            } catch {
                print("DBSIZE on \(node.address):\(node.port): \(error)")
                return -1
            }
        }
        for master in infos where master.isMaster {
            let masterNode = try #require(cluster.nodes.first { $0.port == master.port })
            let replica = try #require(infos.first { $0.masterID == master.id })
            let replicaNode = try #require(cluster.nodes.first { $0.port == replica.port })
            #expect(try eventually(20) { try size(replicaNode) == size(masterNode) })
        }
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
}
