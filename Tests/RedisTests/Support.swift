import Foundation
import HTTPTypes
import ODataFixtures
import OnlineStore
import Redis
import TechnicalCache

/// A fresh directory under the system temporary directory; `remove()` deletes it.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "redis-tier-tests-" + UUID().uuidString
    }

    /// The cache directory of instance `name`.
    func cache(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The fleet's shared secret in these tests.
let fleetSecret = "fleet secret for the tier tests"

/// A cheap key derivation: tests open caches many times.
let cheapDerivation = KeyDerivation.pbkdf2(rounds: 1_000)

/// A tier on `server` with a short back-off, so outages end quickly in tests.
func tierConfiguration(_ server: RedisServer, namespace: String = "tests") -> RedisTierConfiguration {
    var tier = RedisTierConfiguration(port: server.port, namespace: namespace)
    tier.redis.retryInterval = .milliseconds(200)
    return tier
}

/// A cache configuration with the tier on `server`.
func cacheConfiguration(_ server: RedisServer, partition: String? = nil, namespace: String = "tests",
                        _ change: (inout RedisTierConfiguration) -> Void = { _ in }) -> CacheConfiguration {
    var configuration = CacheConfiguration(sizeLimit: 8 << 20, partition: partition, keyDerivation: cheapDerivation,
                                           durability: .periodic(interval: .seconds(3600)))
    var tier = tierConfiguration(server, namespace: namespace)
    change(&tier)
    configuration.secondTier = tier
    return configuration
}

/// Opens a cache in `directory` with the tier on `server` (`change` adjusts the tier's configuration).
func openCache(_ directory: String, _ server: RedisServer, secret: String = fleetSecret, partition: String? = nil, namespace: String = "tests",
               _ change: (inout RedisTierConfiguration) -> Void = { _ in }) throws -> ResponseCache {
    let cache = try ResponseCache(directory: directory, configuration: cacheConfiguration(server, partition: partition, namespace: namespace, change))
    try cache.open(encryption: .key(secret))
    return cache
}

func makeEntry(_ payload: String, headers: HTTPFields = [:], storedAt: Date = Date()) -> CacheEntry {
    CacheEntry(status: 200, headers: [.contentType: "application/json"] + headers,
               payload: Data(payload.utf8), storedAt: storedAt)
}

/// Every key in the server's database (`SCAN` until the cursor is 0).
func allKeys(_ redis: RedisClient) throws -> [[UInt8]] {
    var keys: [[UInt8]] = []
    var cursor = "0"
    repeat {
        guard case .array(let reply) = try redis.command("SCAN", cursor, "COUNT", "1000"), reply.count == 2,
              let next = reply[0].bytes, case .array(let batch) = reply[1]
        else { throw RedisError.unexpectedReply }
        cursor = String(decoding: next, as: UTF8.self)
        keys += batch.compactMap(\.bytes)
    } while cursor != "0"
    return keys
}

/// Whether `needle` occurs in `haystack`.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    let first = needle[0]
    var index = 0
    while index <= haystack.count - needle.count {
        if haystack[index] == first && Array(haystack[index..<(index + needle.count)]) == needle { return true }
        index += 1
    }
    return false
}

/// Polls `condition` for up to `seconds`.
func eventually(_ seconds: Double = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return try condition()
}

/// ``eventually(_:_:)`` for a condition that awaits (a cache write).
func eventually(_ seconds: Double = 5, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// Runs `body` with a redis-server, the fixture producer and a fresh directory for the instances' caches; stops
/// both servers and removes the directory however `body` ends.
func withFleet(_ body: (FixtureServer, RedisServer, TemporaryDirectory) async throws -> Void) async throws {
    let redis = try RedisServer.start()
    defer { redis.stop() }
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let producer = try await FixtureServer.start()
    do { try await body(producer, redis, directory) } catch {
        await producer.stop()
        throw error
    }
    await producer.stop()
}

/// Opens an online store on `serviceRoot` whose cache in `directory` shares the fleet's tier on `redis`.
func openOnlineStore(_ serviceRoot: String, _ redis: RedisServer, directory: String,
                     _ change: (inout OnlineStoreOptions) -> Void = { _ in }) async throws -> OnlineODataStore {
    var options = OnlineStoreOptions()
    options.storeDirectory = URL(fileURLWithPath: directory)
    options.cacheEncryptionKey = fleetSecret
    options.cacheKeyDerivation = cheapDerivation
    options.secondTier = tierConfiguration(redis)
    change(&options)
    let store = try OnlineODataStore(serviceRoot: serviceRoot, options: options)
    try await store.open()
    return store
}
