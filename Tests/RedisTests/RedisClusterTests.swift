import Foundation
import HTTPTypes
import ODataFixtures
@testable import Redis
import TechnicalCache
import Testing

/// The Redis client and the cache's tier against a real Redis Cluster: 3 masters and 3 replicas of Debian's
/// redis-server, started and stopped by the tests by PID (``RedisCluster``).
@Suite(.serialized)
struct RedisClusterTests {
    /// A client of `cluster` with a short back-off, so a failover is followed quickly.
    func client(_ cluster: RedisCluster, password: String? = nil) throws -> RedisClient {
        var configuration = RedisConfiguration(port: cluster.nodes[0].port, retryInterval: .milliseconds(100),
                                               password: password ?? cluster.user?.password, username: cluster.user?.name)
        configuration.cluster = RedisClusterConfiguration(seeds: cluster.nodes.dropFirst().map { RedisNodeAddress(host: "127.0.0.1", port: $0.port) })
        return try RedisClient(configuration: configuration)
    }

    /// A single-server client of one node (it answers MOVED for slots it does not serve).
    func nodeClient(_ port: Int) throws -> RedisClient {
        try RedisClient(configuration: RedisConfiguration(port: port))
    }

    @Test func keySlotsFollowTheSpecificationAndHashTags() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        #expect(RedisClient.keySlot(Array("foo".utf8)) == 12182)
        #expect(RedisClient.keySlot(Array("bar".utf8)) == 5061)
        #expect(RedisClient.keySlot(Array("123456789".utf8)) == 0x31C3 & 0x3FFF)
        #expect(RedisClient.keySlot(Array("{user1000}.following".utf8)) == RedisClient.keySlot(Array("{user1000}.followers".utf8)))
        #expect(RedisClient.keySlot(Array("{user1000}.following".utf8)) == RedisClient.keySlot(Array("user1000".utf8)))
        // An empty tag hashes the whole key; only the first tag counts.
        #expect(RedisClient.keySlot(Array("foo{}{bar}".utf8)) != RedisClient.keySlot(Array("bar".utf8)))
        #expect(RedisClient.keySlot(Array("foo{{bar}}zap".utf8)) == RedisClient.keySlot(Array("{bar".utf8)))
        #expect(RedisClient.keySlot(Array("foo{bar}{zap}".utf8)) == RedisClient.keySlot(Array("bar".utf8)))
    }

    @Test func redirectsAndSlotMapsAreReadFromTheServersWords() {
        let node = RedisNodeAddress(host: "10.0.0.1", port: 7000)
        #expect(ClusterRedirect(RedisError(.serverError, "MOVED 3999 127.0.0.1:6381")) == .moved(slot: 3999, RedisNodeAddress(host: "127.0.0.1", port: 6381)))
        #expect(ClusterRedirect(RedisError(.serverError, "ASK 3999 ::1:6381")) == .ask(slot: 3999, RedisNodeAddress(host: "::1", port: 6381)))
        #expect(ClusterRedirect(RedisError(.serverError, "MOVED 3999 :6381")) == .moved(slot: 3999, RedisNodeAddress(host: "", port: 6381)))
        #expect(ClusterRedirect(RedisError(.serverError, "CLUSTERDOWN The cluster is down")) == .clusterDown)
        #expect(ClusterRedirect(RedisError(.serverError, "MOVED 16384 127.0.0.1:6381")) == nil)
        #expect(ClusterRedirect(RedisError(.serverError, "ERR unknown command")) == nil)
        #expect(ClusterRedirect(RedisError(.timeout, "MOVED 1 127.0.0.1:1")) == nil)

        func address(_ host: String, _ port: Int64) -> RedisReply {
            .array([.bulkString(Array(host.utf8)), .integer(port), .bulkString(Array("id".utf8)), .array([])])
        }
        let reply = RedisReply.array([
            .array([.integer(0), .integer(8191), address("127.0.0.1", 7001), address("127.0.0.1", 7004)]),
            .array([.integer(8192), .integer(16383), address("", 7002)]),
        ])
        let map = ClusterSlotMap.parse(reply, answeredBy: node)
        #expect(map != nil)
        #expect(map?.master(of: 0) == RedisNodeAddress(host: "127.0.0.1", port: 7001))
        #expect(map?.master(of: 8191) == RedisNodeAddress(host: "127.0.0.1", port: 7001))
        #expect(map?.master(of: 16383) == RedisNodeAddress(host: "10.0.0.1", port: 7002))
        #expect(map?.nodes.count == 3 && map?.masters.count == 2)
        #expect(ClusterSlotMap.parse(.array([.array([.integer(0), .integer(16384), address("a", 1)])]), answeredBy: node) == nil)
        // A map with a gap leaves those slots without a master.
        let partial = ClusterSlotMap.parse(.array([.array([.integer(0), .integer(99), address("a", 1)])]), answeredBy: node)
        #expect(partial?.master(of: 100) == nil)
    }

    @Test func redirectsAreBounded() throws {
        let node = try RedirectingNode()
        defer { node.stop() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: node.port, cluster: RedisClusterConfiguration(maximumRedirects: 3)))
        do {
            _ = try redis.get("looping")
            Issue.record("a redirect loop ended in an answer")
        } catch {
            #expect(error == .serverError && error.description.contains("more than 3 redirects"), "\(error)")
        }
        #expect(redis.clusterStatistics.movedRedirects == 4 && redis.clusterStatistics.redirectLimitsReached == 1)
    }

    @Test func commandsGoToTheMasterOfTheirSlot() throws {
        let cluster = try RedisCluster.start()
        defer { cluster.stop() }
        let redis = try client(cluster)
        let keys = (0..<200).map { "key-\($0)" }
        for key in keys { try redis.set(key, value: Array("value of \(key)".utf8)) }
        for key in keys { #expect(try redis.get(key) == Array("value of \(key)".utf8)) }
        #expect(redis.clusterStatistics.movedRedirects == 0 && redis.clusterStatistics.mapRefreshes == 1)
        // Each key is on the master the server computes for it, and our slot is the server's.
        let infos = try cluster.nodeInfos().filter(\.isMaster)
        for key in keys.prefix(40) {
            let slot = RedisClient.keySlot(Array(key.utf8))
            #expect(try cluster.command(on: infos[0].port, "CLUSTER", "KEYSLOT", key).trimmingCharacters(in: .whitespacesAndNewlines) == String(slot))
            let owner = try #require(infos.first { $0.slots.contains { $0.contains(slot) } })
            #expect(try nodeClient(owner.port).get(key) == Array("value of \(key)".utf8))
        }
        // Every master holds some of them.
        for master in infos {
            guard case .integer(let count) = try nodeClient(master.port).command("DBSIZE") else { Issue.record("DBSIZE"); continue }
            #expect(count > 20)
        }
        #expect(try redis.delete([Array("key-1".utf8)]) == 1)
        try redis.ping()
    }

    @Test func movedAfterASlotChangedMastersUpdatesTheMap() throws {
        let cluster = try RedisCluster.start()
        defer { cluster.stop() }
        let redis = try client(cluster)
        let key = "{moving}one"
        try redis.set(key, value: Array("before the move".utf8))
        let slot = RedisClient.keySlot(Array(key.utf8))
        let source = try cluster.master(servingSlot: slot)
        let infos = try cluster.nodeInfos()
        let sourceID = try #require(infos.first { $0.port == source.port }?.id)
        let target = try #require(infos.first { $0.isMaster && $0.port != source.port })
        // The resharding steps of the specification: importing, migrating, MIGRATE, then the slot's new owner.
        try cluster.command(on: target.port, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID)
        try cluster.command(on: source.port, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", target.id)
        try cluster.command(on: source.port, "MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS", key)
        for master in infos where master.isMaster {
            try cluster.command(on: master.port, "CLUSTER", "SETSLOT", String(slot), "NODE", target.id)
        }
        #expect(try redis.get(key) == Array("before the move".utf8))
        #expect(redis.clusterStatistics.movedRedirects == 1)
        // The map was updated: the next command goes straight to the new master.
        try redis.set(key, value: Array("after the move".utf8))
        #expect(redis.clusterStatistics.movedRedirects == 1)
        #expect(try nodeClient(target.port).get(key) == Array("after the move".utf8))
    }

    @Test func askDuringAMigrationIsFollowedOnceWithoutChangingTheMap() throws {
        let cluster = try RedisCluster.start()
        defer { cluster.stop() }
        let redis = try client(cluster)
        let stays = "{migrating}stays"
        let moved = "{migrating}moved"
        try redis.set(stays, value: Array("still on the source".utf8))
        try redis.set(moved, value: Array("moved early".utf8))
        let slot = RedisClient.keySlot(Array(stays.utf8))
        let source = try cluster.master(servingSlot: slot)
        let infos = try cluster.nodeInfos()
        let sourceID = try #require(infos.first { $0.port == source.port }?.id)
        let target = try #require(infos.first { $0.isMaster && $0.port != source.port })
        try cluster.command(on: target.port, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID)
        try cluster.command(on: source.port, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", target.id)
        try cluster.command(on: source.port, "MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS", moved)
        // A key still on the source is answered there; a migrated one by an ASK to the target.
        #expect(try redis.get(stays) == Array("still on the source".utf8))
        #expect(redis.clusterStatistics.askRedirects == 0)
        #expect(try redis.get(moved) == Array("moved early".utf8))
        #expect(redis.clusterStatistics.askRedirects == 1)
        // A new key of a migrating slot is created on the target (ASK, then ASKING + SET there).
        try redis.set("{migrating}new", value: Array("new".utf8))
        #expect(redis.clusterStatistics.askRedirects == 2)
        // ASK does not change the map: the source still owns the slot.
        #expect(try redis.get(stays) == Array("still on the source".utf8))
        #expect(redis.clusterStatistics.askRedirects == 2 && redis.clusterStatistics.movedRedirects == 0)
        // Without ASKING the target refuses the key: the client did send it.
        #expect(throws: RedisError.serverError) { try nodeClient(target.port).get("{migrating}new") }
    }

    @Test func clusterDownIsATypedFailureAndRefreshesTheMap() throws {
        let cluster = try RedisCluster.start()
        defer { cluster.stop() }
        let redis = try client(cluster)
        try redis.set("foo", value: Array("x".utf8))
        // A master and its replica die: their slots have no node, and with full coverage required the
        // whole cluster answers CLUSTERDOWN.
        let infos = try cluster.nodeInfos()
        let fooMaster = try cluster.master(servingSlot: RedisClient.keySlot(Array("foo".utf8)))
        let victim = try #require(infos.first { $0.isMaster && $0.port != fooMaster.port })
        let replica = try #require(infos.first { $0.masterID == victim.id })
        for port in [victim.port, replica.port] { cluster.nodes.first { $0.port == port }?.kill() }
        #expect(eventually(20) { (try? cluster.command(on: fooMaster.port, "CLUSTER", "INFO"))?.contains("cluster_state:fail") == true })
        let refreshes = redis.clusterStatistics.mapRefreshes
        do {
            _ = try redis.get("foo")
            Issue.record("a command succeeded on a cluster that is down")
        } catch {
            #expect(error == .serverError)
            #expect(error.description.contains("CLUSTERDOWN"), "\(error)")
        }
        #expect(redis.clusterStatistics.clusterDownReplies == 1)
        #expect(redis.clusterStatistics.mapRefreshes == refreshes + 1)
    }

    @Test func aWrongACLPasswordIsATypedErrorWithoutTheSecret() throws {
        let password = "cluster-secret-\(UUID().uuidString)"
        let cluster = try RedisCluster.start(user: (name: "tier", password: password))
        defer { cluster.stop() }
        let right = try client(cluster)
        try right.set("k", value: Array("v".utf8))
        #expect(try right.get("k") == Array("v".utf8))

        let wrongPassword = "wrong-\(password)"
        let wrong = try client(cluster, password: wrongPassword)
        do {
            _ = try wrong.get("k")
            Issue.record("a wrong password was accepted")
        } catch {
            #expect(error == .serverError && error.description.contains("WRONGPASS"), "\(error)")
            #expect(!error.description.contains(password) && !error.description.contains(wrongPassword), "\(error)")
        }
        // The default user is off: a client without credentials is refused too.
        let anonymous = try RedisClient(configuration: RedisConfiguration(port: cluster.nodes[0].port))
        #expect(throws: RedisError.serverError) { try anonymous.get("k") }
    }

    /// `EVAL` goes to the slot of its first key (the fourth argument), not of its script: no `MOVED` for 60 keys
    /// on all three masters; the tier's bounded 304 republish (a script) works on a cluster.
    @Test func evalGoesToTheSlotOfItsFirstKeyAndTheTierRepublishesThroughIt() async throws {
        let bytes = { (text: String) in Array(text.utf8) }
        #expect(RedisClusterRouter.key(of: [bytes("EVAL"), bytes("return 1"), bytes("1"), bytes("k")]) == bytes("k"))
        #expect(RedisClusterRouter.key(of: [bytes("evalsha"), bytes("abc"), bytes("1"), bytes("k"), bytes("v")]) == bytes("k"))
        #expect(RedisClusterRouter.key(of: [bytes("EVAL"), bytes("return 1"), bytes("0")]) == nil)
        #expect(RedisClusterRouter.key(of: [bytes("GET"), bytes("k")]) == bytes("k"))
        #expect(RedisClusterRouter.key(of: [bytes("PING")]) == nil)

        let cluster = try RedisCluster.start()
        defer { cluster.stop() }
        let redis = try client(cluster)
        for index in 0..<60 {
            let reply = try redis.command([bytes("EVAL"), bytes("return redis.call('SET', KEYS[1], ARGV[1])"), bytes("1"), bytes("k\(index)"), bytes("v")])
            #expect(reply == .status("OK"))
        }
        #expect(redis.clusterStatistics.movedRedirects == 0)

        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var configuration = CacheConfiguration(sizeLimit: 8 << 20, keyDerivation: cheapDerivation, durability: .periodic(interval: .seconds(3600)))
        configuration.secondTier = RedisTierConfiguration(cluster: cluster.nodes.map { RedisNodeAddress(host: "127.0.0.1", port: $0.port) }, namespace: "tests")
        let cache = try ResponseCache(directory: directory.cache("a"), configuration: configuration)
        try cache.open(encryption: .key(fleetSecret))
        defer { cache.close() }
        let urls = (0..<20).map { "https://example.com/odata/Orders(\($0))" }
        for url in urls { try await cache.store(makeEntry("order", headers: [.eTag: #""1""#]), for: url) }
        // A 304 right away: held back (the copies are young), then one that lengthens the freshness: written.
        for url in urls { _ = try await cache.refresh(for: url, with304Headers: [.eTag: #""1""#]) }
        cache.waitForSecondTier()
        #expect(cache.secondTierStatistics?.heldBackRefreshes == 20)
        for url in urls { _ = try await cache.refresh(for: url, with304Headers: [.eTag: #""1""#, .cacheControl: "max-age=600"]) }
        cache.waitForSecondTier()
        #expect(cache.secondTierStatistics?.writes == 40 && cache.secondTierStatistics?.failures == 0)
    }

    @Test func aKilledMasterCostsTheTierNoErrorAndItsSlotsResumeAfterTheFailover() async throws {
        let cluster = try RedisCluster.start()
        defer { cluster.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        func tier() -> CacheConfiguration {
            var configuration = CacheConfiguration(sizeLimit: 8 << 20, keyDerivation: cheapDerivation, durability: .periodic(interval: .seconds(3600)))
            var tier = RedisTierConfiguration(cluster: cluster.nodes.map { RedisNodeAddress(host: "127.0.0.1", port: $0.port) }, namespace: "tests")
            tier.redis.retryInterval = .milliseconds(100)
            configuration.secondTier = tier
            return configuration
        }
        func open(_ name: String) throws -> ResponseCache {
            let cache = try ResponseCache(directory: directory.cache(name), configuration: tier())
            try cache.open(encryption: .key(fleetSecret))
            return cache
        }
        let urls = (0..<30).map { "https://example.com/odata/Orders(\($0))" }
        let a = try open("a")
        defer { a.close() }
        for url in urls { try await a.store(makeEntry("order \(url)"), for: url) }
        a.waitForSecondTier()
        #expect(a.secondTierStatistics?.writes == 30 && a.secondTierStatistics?.failures == 0)
        // Every replica holds its master's keys before the master dies.
        let infos = try cluster.nodeInfos()
        func size(_ port: Int) throws -> Int64 {
            guard case .integer(let count) = try nodeClient(port).command("DBSIZE") else { return -1 }
            return count
        }
        for master in infos where master.isMaster {
            let replica = try #require(infos.first { $0.masterID == master.id })
            #expect(try eventually(20) { try size(replica.port) == size(master.port) })
        }
        let victim = try #require(infos.first { $0.isMaster && $0.slots.contains { $0.contains(0) } })
        try #require(cluster.nodes.first { $0.port == victim.port }).kill()

        // During the failover: every read answers (a hit or a miss), none throws; the dead shard's are local-only.
        let b = try open("b")
        defer { b.close() }
        var found = 0
        for url in urls where try b.entry(for: url) != nil { found += 1 }
        #expect(found < 30)
        #expect(found > 0, "the other masters' slots keep answering while one master is down")
        for url in urls { try await b.store(makeEntry("b's \(url)"), for: url) }  // writes for the dead shard are dropped, not thrown
        b.waitForSecondTier()
        let during = try #require(b.secondTierStatistics)
        #expect(during.writes > 0, "\(during)")
        #expect(during.failures + during.skippedLookups + during.droppedWrites > 0, "\(during)")
        #expect(during.outages >= 1)

        try cluster.waitUntilHealthy(excluding: [victim.port])
        // After the promotion a new instance reads every entry from the tier again (the replica had them all).
        #expect(try eventually(20) {
            let c = try open("c-\(UUID().uuidString)")
            defer { c.close() }
            var hits = 0
            for url in urls where try c.entry(for: url) != nil { hits += 1 }
            return hits == 30
        })
        #expect(a.secondTierStatistics?.isAvailable == true || b.secondTierStatistics?.isAvailable == true)

        // Nothing readable on any node, masters and replicas: every key is the namespace and a keyed hash, and no
        // key or value holds a URL or a payload.
        var scanned = 0
        for node in cluster.runningNodes {
            let redis = try RedisClient(configuration: RedisConfiguration(port: node.port, maximumConnections: 1))
            _ = try redis.command("READONLY")  // a replica answers GET for its master's slots on this connection
            for key in try allKeys(redis) {
                let text = String(decoding: key, as: UTF8.self)
                #expect(text.hasPrefix("tests:v1:") && text.utf8.count == "tests:v1:".utf8.count + 64, "\(text)")
                let value = try #require(try redis.get(key))
                for needle in ["example.com", "Orders(", "order ", "b's "] {
                    #expect(!contains(key, Array(needle.utf8)) && !contains(value, Array(needle.utf8)), "\(needle)")
                }
                scanned += 1
            }
        }
        #expect(scanned > 30, "every entry on its master, and the live shards' on their replicas too")
    }
}
