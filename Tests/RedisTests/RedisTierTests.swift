import Foundation
import HTTPTypes
import InMemoryLogging
import Logging
import ODataCore
import ODataFixtures
import OnlineStore
import Redis
import TechnicalCache
import Testing

/// The technical cache's Redis tier with real redis-servers, real LMDB caches and real encryption: several
/// instances (caches in separate directories) share what each stored.
@Suite(.serialized)
struct RedisTierTests {
    // MARK: ResponseCache

    @Test func instanceBReadsWhatInstanceAStoredFromRedis() async throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let a = try openCache(directory.cache("a"), server)
        let b = try openCache(directory.cache("b"), server)
        defer { a.close(); b.close() }
        let url = "https://example.com/odata/Customers('ALFKI')?$select=Name"
        let entry = makeEntry(#"{"Name":"Alfreds"}"#, headers: [.eTag: #"W/"7""#])
        #expect(try await a.store(entry, for: url))
        a.waitForSecondTier()
        #expect(a.secondTierStatistics?.writes == 1)

        let read = try #require(try b.entry(for: url))
        #expect(read.payload == entry.payload && read.headers == entry.headers && read.status == 200)
        #expect(Int64(read.storedAt.timeIntervalSince1970 * 1000) == Int64(entry.storedAt.timeIntervalSince1970 * 1000))
        #expect(b.secondTierStatistics?.hits == 1)
        // The Redis hit was copied into B's own cache: the next read is local.
        b.waitForSecondTier()
        #expect(b.statistics.entryCount == 1)
        #expect(try b.entry(for: url)?.payload == entry.payload)
        #expect(b.secondTierStatistics?.lookups == 1)
        // Nothing stored anywhere for another URL.
        #expect(try b.entry(for: url + "&x") == nil)
        #expect(b.secondTierStatistics?.misses == 1)
    }

    @Test func partitionsAndNamespacesDoNotShare() async throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let a = try openCache(directory.cache("a"), server, partition: "alice")
        let b = try openCache(directory.cache("b"), server, partition: "bob")
        let c = try openCache(directory.cache("c"), server, partition: "alice", namespace: "other-fleet")
        defer { a.close(); b.close(); c.close() }
        try await a.store(makeEntry("alice's"), for: "https://example.com/Me")
        a.waitForSecondTier()
        #expect(try b.entry(for: "https://example.com/Me") == nil)
        #expect(try c.entry(for: "https://example.com/Me") == nil)
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port))
        let keys = try allKeys(redis).map { String(decoding: $0, as: UTF8.self) }
        #expect(keys.count == 1 && keys[0].hasPrefix("tests:v1:") && keys[0].count == "tests:v1:".count + 64)
    }

    /// A 304's refresh reaches Redis: another instance reads the refreshed headers and time; the TTL follows
    /// the refreshed freshness lifetime plus the stale allowance.
    @Test func refreshesAndRemovalsReachRedis() async throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let a = try openCache(directory.cache("a"), server)
        defer { a.close() }
        let url = "https://example.com/Products(1)"
        let sent = Date(timeIntervalSinceNow: -60)
        try await a.store(makeEntry("p1", headers: [.eTag: #""v1""#], storedAt: sent), for: url)
        let later = Date()
        let refreshed = try #require(try await a.refresh(for: url, with304Headers: [.eTag: #""v1""#, .cacheControl: "max-age=600"], at: later))
        #expect(refreshed.headerValue(named: "Cache-Control") == "max-age=600")
        a.waitForSecondTier()
        #expect(a.secondTierStatistics?.writes == 2)

        let b = try openCache(directory.cache("b"), server)
        defer { b.close() }
        let read = try #require(try b.entry(for: url))
        #expect(read.headerValue(named: "Cache-Control") == "max-age=600")
        #expect(Int64(read.storedAt.timeIntervalSince1970 * 1000) == Int64(later.timeIntervalSince1970 * 1000))
        #expect(read.payload == Data("p1".utf8))

        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port))
        let key = try #require(try allKeys(redis).first)
        guard case .integer(let ttl) = try redis.command([Array("PTTL".utf8), key]) else { Issue.record("PTTL"); return }
        #expect(ttl > 4_100_000 && ttl <= 4_200_000)  // 600 s fresh + 3600 s stale allowance

        // 404/410 remove the entry: from Redis too.
        #expect(try await a.removeEntry(for: url))
        a.waitForSecondTier()
        #expect(try allKeys(redis).isEmpty)
        #expect(a.secondTierStatistics?.removals == 1)
        // A no-store answer supersedes what Redis held.
        try await a.store(makeEntry("p1 again"), for: url)
        a.waitForSecondTier()
        #expect(try allKeys(redis).count == 1)
        #expect(try await a.store(makeEntry("secret", headers: [.cacheControl: "no-store"]), for: url) == false)
        a.waitForSecondTier()
        #expect(try allKeys(redis).isEmpty)
    }

    @Test func timeToLivePolicyFollowsFreshness() {
        let standard = SecondTierTimeToLive.standard
        #expect(standard.duration(for: makeEntry("x")) == .seconds(3600))
        #expect(standard.duration(for: makeEntry("x", headers: [.cacheControl: "public, max-age=60"])) == .seconds(3660))
        #expect(standard.duration(for: makeEntry("x", headers: [.cacheControl: "max-age=60, s-maxage=120"])) == .seconds(3720))
        #expect(standard.duration(for: makeEntry("x", headers: [.cacheControl: "max-age=999999"])) == .seconds(86_400))
        let dated = makeEntry("x", headers: [.date: "Sun, 06 Nov 1994 08:49:37 GMT",
                                             .expires: "Sun, 06 Nov 1994 09:49:37 GMT"])
        #expect(standard.duration(for: dated) == .seconds(7200))
        #expect(SecondTierTimeToLive.fixed(.seconds(5)).duration(for: dated) == .seconds(5))
        #expect(SecondTierTimeToLive.freshness(staleAllowance: .zero, maximum: .seconds(10)).duration(for: makeEntry("x")) == .seconds(1))
    }

    @Test func configurationMistakesAreTypedErrors() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var configuration = cacheConfiguration(server)
        configuration.secondTier?.namespace = "has space"
        #expect(throws: CacheError.invalidConfiguration) { try ResponseCache(directory: directory.cache("a"), configuration: configuration) }
        configuration.secondTier?.namespace = "ok"
        configuration.secondTier?.redis.port = 70000
        #expect(throws: CacheError.invalidConfiguration) { try ResponseCache(directory: directory.cache("a"), configuration: configuration) }
        // Nothing readable may reach Redis: a plaintext cache cannot have a tier, and stays closed.
        let plain = try ResponseCache(directory: directory.cache("b"), configuration: cacheConfiguration(server))
        #expect(throws: CacheError.invalidConfiguration) { try plain.open(encryption: .disabled) }
        #expect(!plain.isOpen)
    }

    /// A wrong key in B: B never finds A's values (its key hashes differ); a value planted under B's own key
    /// (sealed under A's keys) fails authentication and is a miss; a damaged value is a miss too. No crash,
    /// no wrong answer, and the values are left for their owners.
    @Test func aWrongKeyOrADamagedValueIsAMiss() async throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port))
        let url = "https://example.com/Orders(10248)"
        let a = try openCache(directory.cache("a"), server)
        defer { a.close() }
        try await a.store(makeEntry("A's answer"), for: url)
        a.waitForSecondTier()
        let aKey = try #require(try allKeys(redis).first)
        let aValue = try #require(try redis.get(aKey))

        let b = try openCache(directory.cache("b"), server, secret: "another secret")
        #expect(try b.entry(for: url) == nil)
        #expect(b.secondTierStatistics?.misses == 1)
        try await b.store(makeEntry("B's answer"), for: url)
        b.waitForSecondTier()
        b.close()
        let bKey = try #require(try allKeys(redis).first { $0 != aKey })
        try redis.set(bKey, value: aValue)  // A's sealed value under B's key

        let c = try openCache(directory.cache("c"), server, secret: "another secret")
        defer { c.close() }
        #expect(try c.entry(for: url) == nil)
        #expect(c.secondTierStatistics?.unusableValues == 1)
        #expect(try redis.get(bKey) == aValue, "left alone")

        // A's own value, one byte flipped: a fresh instance with the right key finds it damaged.
        var damaged = aValue
        damaged[damaged.count / 2] ^= 0x01
        try redis.set(aKey, value: damaged)
        let d = try openCache(directory.cache("d"), server)
        defer { d.close() }
        #expect(try d.entry(for: url) == nil)
        try redis.set(aKey, value: Array(aValue.prefix(7)))  // truncated
        #expect(try d.entry(for: url) == nil)
        #expect(d.secondTierStatistics?.unusableValues == 2)
        try redis.set(aKey, value: aValue)
        #expect(try d.entry(for: url)?.payload == Data("A's answer".utf8))
    }

    /// Redis killed (SIGKILL) mid-run: stores and lookups go on locally without an error, the outage is
    /// counted and logged once; a new redis-server on the same port is used again.
    @Test func aRedisOutageIsLocalOnlyAndEndsWhenRedisIsBack() async throws {
        let server = try RedisServer.start()
        let port = server.port
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let log = InMemoryLogHandler()
        var configuration = cacheConfiguration(server)
        configuration.secondTier?.logger = Logger(label: "test") { _ in log }
        let a = try ResponseCache(directory: directory.cache("a"), configuration: configuration)
        try a.open(encryption: .key(fleetSecret))
        let b = try ResponseCache(directory: directory.cache("b"), configuration: configuration)
        try b.open(encryption: .key(fleetSecret))
        defer { a.close(); b.close() }
        try await a.store(makeEntry("before"), for: "https://example.com/before")
        a.waitForSecondTier()
        #expect(try b.entry(for: "https://example.com/before")?.payload == Data("before".utf8))

        server.kill()
        let start = ContinuousClock.now
        for index in 0..<200 {
            #expect(try await a.store(makeEntry("during \(index)"), for: "https://example.com/during/\(index)"))
            #expect(try a.entry(for: "https://example.com/during/\(index)")?.payload == Data("during \(index)".utf8))
            #expect(try b.entry(for: "https://example.com/during/\(index)") == nil)
            #expect(try b.entry(for: "https://example.com/before")?.payload == Data("before".utf8))  // B's local copy
        }
        a.waitForSecondTier()
        // One attempt per back-off interval (200 ms) at most, whatever the machine's speed.
        let intervals = Int((ContinuousClock.now - start) / .milliseconds(200)) + 2
        let during = try #require(b.secondTierStatistics)
        #expect(during.isAvailable == false && during.outages == 1)
        #expect(during.failures >= 1 && during.failures <= intervals, "the back-off spares the dead server most calls")
        #expect(during.skippedLookups >= 200 - intervals)
        let warnings = log.entries.filter { $0.level == .warning }
        #expect(warnings.count == 2, "one for each instance")
        #expect(warnings.first?.message.description.contains("local-only") == true)

        let again = try RedisServer.start(port: port)
        defer { again.stop() }
        // The first write after the back-off interval probes Redis (it may be dropped while the probe runs): written
        // again until the probe has found Redis back.
        #expect(try await eventually {
            _ = try await a.store(makeEntry("after"), for: "https://example.com/after")
            a.waitForSecondTier()
            let found = try b.entry(for: "https://example.com/after")
            return a.secondTierStatistics?.isAvailable == true && found != nil
        })
        #expect(try b.entry(for: "https://example.com/after")?.payload == Data("after".utf8))
        #expect(b.secondTierStatistics?.isAvailable == true)
        #expect(log.entries.filter { $0.level == .warning }.count == 2, "one outage each for A and B")
        #expect(log.entries.filter { $0.level == .notice }.count == 2, "one recovery each")
        #expect(!log.entries.contains { "\($0.message) \($0.metadata)".contains("example.com") || "\($0.metadata)".contains(fleetSecret) })
    }

    // MARK: Through the online store

    /// Instance B's first read of what instance A read is a hit from Redis: no back-end request in passive
    /// mode nor within `maxAge`; in active mode B revalidates (a 304, headers only).
    @Test func onlineStoreBReadsAsCachedFromRedisWithoutTheBackEnd() async throws {
        try await withFleet { producer, redis, directory in
            let a = try await openOnlineStore(producer.serviceRoot, redis, directory: directory.cache("a"))
            let first = try #require(try await a.response(for: .get("Customers('ALFKI')")))
            #expect(first.statusCode == 200 && !first.isFromCache)
            #expect(producer.counters.totalRequests == 1)
            waitForTier(a)

            let b = try await openOnlineStore(producer.serviceRoot, redis, directory: directory.cache("b"))
            try b.setMode(.passive)
            let passive = try #require(try await b.response(for: .get("Customers('ALFKI')")))
            #expect(passive.isFromCache && passive.payload == first.payload)
            #expect(producer.counters.totalRequests == 1, "no back-end request")
            #expect(b.statistics.secondTier?.hits == 1)

            let c = try await openOnlineStore(producer.serviceRoot, redis, directory: directory.cache("c")) { $0.maxAge = .seconds(60) }
            let fresh = try #require(try await c.response(for: .get("Customers('ALFKI')")))
            #expect(fresh.payload == first.payload)
            #expect(producer.counters.totalRequests == 1, "no back-end request within maxAge")
            #expect(c.statistics.servedFresh == 1)

            let d = try await openOnlineStore(producer.serviceRoot, redis, directory: directory.cache("d"))
            let revalidated = try #require(try await d.response(for: .get("Customers('ALFKI')")))
            #expect(revalidated.payload == first.payload)
            #expect(producer.counters.totalRequests == 2)
            #expect(d.statistics.notModified == 1, "the Redis entry's ETag made it a 304")
            for store in [a, b, c, d] { store.close() }
        }
    }

    /// The same with a producer nobody here wrote (mock-sap's GWSAMPLE_BASIC, OData V2): B's passive read of what A
    /// read is a hit from Redis, and mock-sap's request log holds A's one GET of the entity only.
    @Test func onlineStoreBReadsWhatAReadFromAnSAPProducerFromRedis() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let root = sap.serviceRoot(MockSAP.gwsampleBasic)
        let a = try await openOnlineStore(root, redis, directory: directory.cache("a"))
        defer { a.close() }
        let first = try #require(try await a.response(for: .get("ProductSet('HT-1000')")))
        #expect(first.statusCode == 200 && !first.isFromCache)
        waitForTier(a)
        #expect(a.statistics.secondTier?.writes == 1)

        let b = try await openOnlineStore(root, redis, directory: directory.cache("b"))
        defer { b.close() }
        try b.setMode(.passive)
        let passive = try #require(try await b.response(for: .get("ProductSet('HT-1000')")))
        #expect(passive.isFromCache && passive.payload == first.payload)
        #expect(b.statistics.secondTier?.hits == 1)
        #expect(try sap.logged(method: "GET", path: "ProductSet").count == 1, "only A's read reached mock-sap")
    }

    /// Nothing readable in Redis: every key and every value (`GET` and `DUMP`) is scanned for the URLs, the
    /// bodies' strings and the header values of what the online store cached.
    @Test func nothingReadableReachesRedis() async throws {
        try await withFleet { producer, redis, directory in
            let store = try await openOnlineStore(producer.serviceRoot, redis, directory: directory.cache("a")) { $0.cachePartition = "user-7" }
            var needles: Set<String> = []
            let requests = [ODataRequest(resourcePath: "Customers('ALFKI')"),
                            ODataRequest(resourcePath: "Customers", queryOptions: [.filter("Country eq 'Germany'")]),
                            ODataRequest(resourcePath: "Products(1)"), ODataRequest(resourcePath: "Orders", queryOptions: [.top(3)])]
            for request in requests {
                let path = try request.relativeURL()
                let response = try #require(try await store.response(for: request))
                #expect(response.statusCode == 200)
                needles.insert(path)
                needles.insert(producer.serviceRoot)
                needles.insert(String(path.prefix { $0 != "(" && $0 != "?" }))
                // Every string value of the body, and every header value, at least 8 bytes long (a shorter one, such
                // as a Content-Length of 4 digits, turns up by chance in a 64-digit hex key).
                let text = String(decoding: response.payload, as: UTF8.self)
                for match in text.split(separator: "\"") where match.count >= 8 && !match.contains(":") { needles.insert(String(match)) }
                for field in response.headerFields where field.value.count >= 8 { needles.insert(field.value) }
            }
            needles.insert("user-7")
            waitForTier(store)
            #expect(store.statistics.secondTier?.writes == 4)
            let client = try RedisClient(configuration: RedisConfiguration(port: redis.port))
            let keys = try allKeys(client)
            #expect(keys.count == 4)
            #expect(needles.count > 20)
            for key in keys {
                let value = try #require(try client.get(key))
                guard case .bulkString(let dump) = try client.command([Array("DUMP".utf8), key]) else { Issue.record("DUMP"); continue }
                for needle in needles {
                    let bytes = Array(needle.utf8)
                    #expect(!contains(key, bytes), "key holds \(needle)")
                    #expect(!contains(value, bytes), "value holds \(needle)")
                    #expect(!contains(dump, bytes), "dump holds \(needle)")
                }
            }
            store.close()
        }
    }

    /// Redis killed while several tasks read through two online stores: no read fails; reads that Redis would
    /// have answered go to the back end; hits from Redis resume when a new server listens on the port.
    @Test func onlineReadsSurviveARedisKilledMidRun() async throws {
        try await withFleet { producer, redis, directory in
            let port = redis.port
            let a = try await openOnlineStore(producer.serviceRoot, redis, directory: directory.cache("a"))
            let b = try await openOnlineStore(producer.serviceRoot, redis, directory: directory.cache("b"))
            let ids = ["ALFKI", "ANATR", "ANTON", "AROUT", "BERGS", "BLAUS", "BLONP", "BOLID"]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, store) in [a, b, a, b].enumerated() {
                    group.addTask {
                        for round in 0..<30 {
                            let id = ids[(round + index) % ids.count]
                            let response = try await store.response(for: .get("Customers('\(id)')"))
                            #expect(response?.statusCode == 200)
                        }
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(30))
                    redis.kill()
                }
                try await group.waitForAll()
            }
            #expect(a.statistics.secondTier?.isAvailable == false || b.statistics.secondTier?.isAvailable == false)

            let again = try RedisServer.start(port: port)
            defer { again.stop() }
            try await Task.sleep(for: .milliseconds(250))
            // A reads a customer nobody read; once Redis answers again, B's passive read is a hit from Redis.
            var hit = false
            for attempt in 0..<50 where !hit {
                let request = ODataRequest(resourcePath: "Customers", queryOptions: [.top(attempt + 1)])
                _ = try await a.response(for: request)
                waitForTier(a)
                try b.setMode(.passive)
                hit = try await b.response(for: request) != nil
                try b.setMode(.active)
            }
            #expect(hit)
            #expect(b.statistics.secondTier?.isAvailable == true)
            a.close()
            b.close()
        }
    }

    private func waitForTier(_ store: OnlineODataStore) {
        store.waitForSecondTier()
    }
}
