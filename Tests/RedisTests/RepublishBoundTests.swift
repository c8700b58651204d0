import Foundation
import HTTPTypes
import ODataFixtures
import Redis
import TechnicalCache
import Testing

/// The 304 republish bound (``RedisTierConfiguration/republishInterval``) against a real redis-server: many
/// instances revalidating one hot URL write it to Redis at most once per bound, and nothing in Redis claims
/// more freshness than the server confirmed.
@Suite(.serialized)
struct RepublishBoundTests {
    static let url = "https://example.com/odata/Products(1)"
    static let notModified: HTTPFields = [.eTag: #""v1""#]

    /// Eight instances revalidate one URL in rounds for 3 s with a 1 s bound: the `SET`s Redis executed
    /// (`INFO commandstats`, counting the script's) stay ≤ one per elapsed bound; the copy another instance
    /// reads afterwards has a stored time no later than the last 304 and at most a bound (plus a round)
    /// older; a new representation (a 200) is written at once however young the copy, and a late 304 of
    /// the old one does not overwrite it.
    @Test func instancesRevalidatingOneHotURLWriteItOncePerBound() async throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port))
        let bound = Duration.seconds(1)
        let instances = try (0..<8).map { try openCache(directory.cache("i\($0)"), server) { $0.republishInterval = bound } }
        defer { for instance in instances { instance.close() } }

        let started = Date()
        try await instances[0].store(makeEntry("hot", headers: Self.notModified, storedAt: started), for: Self.url)
        instances[0].waitForSecondTier()
        for instance in instances.dropFirst() { #expect(try instance.entry(for: Self.url)?.payload == Data("hot".utf8)) }
        for instance in instances { instance.waitForSecondTier() }
        let setsBefore = try commandCalls("set", redis)

        // Rounds: every instance answers a 304, then each waits until its tier call ran (no pacing sleep).
        var refreshes = 0
        var lastConfirmed = started
        while Date().timeIntervalSince(started) < 3.2 {
            for instance in instances {
                lastConfirmed = Date()
                #expect(try await instance.refresh(for: Self.url, with304Headers: Self.notModified, at: lastConfirmed) != nil)
                refreshes += 1
            }
            for instance in instances { instance.waitForSecondTier() }
        }
        let elapsed = Date().timeIntervalSince(started)
        let sets = try commandCalls("set", redis) - setsBefore
        let statistics = instances.compactMap(\.secondTierStatistics)
        let written = statistics.reduce(0) { $0 + $1.writes } - 1  // the 200's write
        let heldBack = statistics.reduce(0) { $0 + $1.heldBackRefreshes }
        print("republish bound: \(refreshes) refreshes by 8 instances in \(String(format: "%.2f", elapsed)) s, \(sets) SETs, \(heldBack) held back")
        #expect(sets == written)
        #expect(sets >= 1 && sets <= Int(elapsed), "\(sets) SETs in \(elapsed) s with a 1 s bound")
        #expect(written + heldBack == refreshes, "every refresh was written or held back (\(refreshes))")
        #expect(refreshes > 8 * sets * 4, "the bound saved writes: \(refreshes) refreshes, \(sets) SETs")

        // Another instance reads the copy: never fresher than the last 304, at most a bound and a round older.
        let reader = try openCache(directory.cache("reader"), server)
        defer { reader.close() }
        let read = try #require(try reader.entry(for: Self.url))
        #expect(read.storedAt <= lastConfirmed.addingTimeInterval(0.001))
        #expect(lastConfirmed.timeIntervalSince(read.storedAt) < 1.0 + 0.5, "copy \(lastConfirmed.timeIntervalSince(read.storedAt)) s old")

        // A new representation goes to Redis at once, although the copy is younger than the bound; a 304 of
        // the old one that arrives later (an instance that still held it) is held back and overwrites nothing.
        let changed = Date()
        try await instances[1].store(makeEntry("hot, changed", headers: [.eTag: #""v2""#], storedAt: changed), for: Self.url)
        instances[1].waitForSecondTier()
        _ = try await instances[2].refresh(for: Self.url, with304Headers: Self.notModified, at: Date())
        instances[2].waitForSecondTier()
        let fresh = try openCache(directory.cache("fresh"), server)
        defer { fresh.close() }
        let afterChange = try #require(try fresh.entry(for: Self.url))
        #expect(afterChange.payload == Data("hot, changed".utf8) && afterChange.etag == #""v2""#)
    }

    /// With `republishInterval` zero every 304 is written (the behaviour before the bound), and a 304 that
    /// lengthens the freshness is written at once whatever the bound.
    @Test func aZeroBoundWritesEvery304AndALongerLifetimeIsWrittenAtOnce() async throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port))
        let every = try openCache(directory.cache("every"), server) { $0.republishInterval = .zero }
        defer { every.close() }
        try await every.store(makeEntry("x", headers: Self.notModified), for: Self.url)
        every.waitForSecondTier()
        let before = try commandCalls("set", redis)
        for _ in 0..<5 { _ = try await every.refresh(for: Self.url, with304Headers: Self.notModified, at: Date()) }
        every.waitForSecondTier()
        #expect(try commandCalls("set", redis) - before == 5)
        #expect(every.secondTierStatistics?.heldBackRefreshes == 0)

        let bounded = try openCache(directory.cache("bounded"), server)  // the default bound, 30 s
        defer { bounded.close() }
        #expect(try bounded.entry(for: Self.url) != nil)
        bounded.waitForSecondTier()  // the local copy of the Redis hit: a 304 refreshes only what is stored
        _ = try await bounded.refresh(for: Self.url, with304Headers: Self.notModified, at: Date())
        bounded.waitForSecondTier()
        #expect(bounded.secondTierStatistics?.heldBackRefreshes == 1)
        _ = try await bounded.refresh(for: Self.url, with304Headers: Self.notModified.merging(cacheControl: "max-age=600"), at: Date())
        bounded.waitForSecondTier()
        #expect(bounded.secondTierStatistics?.writes == 1, "a longer lifetime is written at once")
        #expect(try commandCalls("set", redis) - before == 6)
    }

    @Test func theDefaultBoundIs30SecondsAndANegativeOneIsRefused() throws {
        #expect(RedisTierConfiguration().republishInterval == .seconds(30))
        var cache = CacheConfiguration()
        cache.secondTier = RedisTierConfiguration()
        cache.secondTier?.republishInterval = .seconds(-1)
        #expect(throws: CacheError.invalidConfiguration) { try ResponseCache(directory: NSTemporaryDirectory() + "bound-\(UUID())", configuration: cache) }
    }
}

extension HTTPFields {
    /// These fields with a `Cache-Control` value added.
    fileprivate func merging(cacheControl: String) -> HTTPFields {
        var fields = self
        fields[.cacheControl] = cacheControl
        return fields
    }
}

/// How many times the server executed `command` (`INFO commandstats`, commands run by scripts included).
func commandCalls(_ command: String, _ redis: RedisClient) throws -> Int {
    guard case .bulkString(let bytes) = try redis.command("INFO", "commandstats") else { throw RedisError.unexpectedReply }
    let prefix = "cmdstat_\(command):calls="
    for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) where line.hasPrefix(prefix) {
        return Int(line.dropFirst(prefix.count).prefix { $0.isNumber }) ?? 0
    }
    return 0
}
