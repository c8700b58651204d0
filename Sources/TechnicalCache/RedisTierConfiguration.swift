import Foundation
import HTTPTypes
import Logging
import Redis

/// A shared second tier for a fleet's technical caches: a Redis server or a Redis Cluster that every instance
/// reads on a local miss and writes after each stored server answer (see ``CacheConfiguration/secondTier``).
///
/// Redis holds what the local cache holds on disk and nothing readable: each value is an entry sealed with
/// AES-256-GCM, under a keyed hash (HMAC-SHA256) of the partition and the URL, prefixed by ``namespace``.
/// The tier's keys are derived from the cache's passphrase (`CacheEncryption.key`, or the key a key store
/// keeps) with the cache's ``CacheConfiguration/keyDerivation`` and a salt made from ``namespace`` — so
/// instances configured with the same passphrase, derivation and namespace read each other's entries, and
/// nobody without the passphrase can. A cache opened without encryption cannot have a second tier.
///
/// Redis is best-effort, like the cache itself: a Redis that is down, slow or full means local-only
/// operation — no error reaches a caller; it is counted (``SecondTierStatistics``) and logged once per
/// outage, and Redis is used again when it answers.
///
/// ```swift
/// var configuration = CacheConfiguration()
/// configuration.secondTier = RedisTierConfiguration(host: "redis.internal", port: 6379, namespace: "orders-service")
/// let cache = try ResponseCache(directory: path, configuration: configuration)
/// try cache.open(encryption: .key(fleetSecret))   // the same secret on every instance
/// ```
public struct RedisTierConfiguration: Sendable, Hashable {
    /// The server, timeouts, back-off after failures, connections and password. The default is
    /// `RedisConfiguration()`: 127.0.0.1:6379, a 200 ms connect and a 100 ms command timeout, 1 s back-off,
    /// four connections.
    public var redis: RedisConfiguration
    /// The prefix of every key (`<namespace>:v1:<hash>`) and part of the tier keys' salt, so that several
    /// fleets (or several services) can share one Redis without seeing each other's entries. 1…128
    /// printable ASCII characters without spaces. The default is `"odatastores"`.
    public var namespace: String
    /// How long Redis keeps an entry (eviction beyond that is left to Redis's `maxmemory` policy). The default
    /// is ``SecondTierTimeToLive/standard``.
    public var timeToLive: SecondTierTimeToLive
    /// Writes to Redis run off the caller's path on one queue; beyond this many waiting, new writes are
    /// dropped (counted as ``SecondTierStatistics/droppedWrites``). The default is 1024.
    public var maximumPendingWrites: Int
    /// How old the tier's copy of an entry must be before a 304 writes it again. A 304 changes only an entry's
    /// stored time and headers; with many instances revalidating one popular URL, republishing every 304
    /// would cost one `SET` of the whole value per instance and cycle. So a 304 rewrites the tier's copy only
    /// when that copy was written at least this long ago — or, when the entry has a freshness lifetime
    /// (`s-maxage`, `max-age`, `Expires`), half of that lifetime ago if that is shorter — judged by the copy's
    /// remaining time to live in Redis against a new write's, and checked and written in one atomic script,
    /// so the fleet writes a hot URL at most once per bound, whoever revalidates it. A copy that is missing
    /// or would live longer after the 304 than now by more than the bound (a 304 that lengthened the
    /// freshness) is written at once. Server answers (200) and removals are never held back.
    ///
    /// The cost of the bound: an instance that reads the copy from Redis may see a stored time up to this much
    /// older than the fleet's latest 304, so under a store's `maxAge` it revalidates up to this much sooner —
    /// one conditional request; it is never served stale as fresh (the stored time is only ever too old).
    /// The default is 30 seconds: small against the default stale allowance of an hour (the copy stays
    /// alive), small against any `maxAge` worth configuring for OData reads, and it turns 100 instances
    /// revalidating one URL every second from 100 `SET`s a second into one every 30 s. `.zero` republishes
    /// every 304.
    public var republishInterval: Duration
    /// Where outages and recoveries are logged (a warning when Redis stops answering, a notice when it is
    /// back; no key, URL or secret). It takes no part in equality. The default is `nil`: a logger labelled
    /// `ODataStores.RedisTier` (the online store passes its telemetry's logger).
    public var logger: Logger?

    /// Creates a configuration; every parameter has the default documented on its property.
    ///
    /// - Parameters:
    ///   - host: The Redis server's host. The default is `127.0.0.1`.
    ///   - port: Its port. The default is 6379.
    ///   - namespace: The key prefix.
    ///   - timeToLive: How long Redis keeps an entry.
    public init(host: String = "127.0.0.1", port: Int = 6379, namespace: String = "odatastores",
                timeToLive: SecondTierTimeToLive = .standard) {
        self.redis = RedisConfiguration(host: host, port: port)
        self.namespace = namespace
        self.timeToLive = timeToLive
        self.maximumPendingWrites = 1024
        self.republishInterval = .seconds(30)
        self.logger = nil
    }

    /// Creates a configuration for a Redis Cluster: the tier reads the slot map from the first of `seeds` that
    /// answers and sends each key to its slot's master (see ``RedisConfiguration/cluster``). A master that dies
    /// makes its slots local-only until a replica takes over; the other slots keep working.
    ///
    /// ```swift
    /// var tier = RedisTierConfiguration(cluster: [.init(host: "10.0.0.11", port: 6379), .init(host: "10.0.0.12", port: 6379)],
    ///                                   namespace: "orders-service")
    /// tier.redis.username = "tier"            // an ACL user; its password is never logged
    /// tier.redis.password = fleetRedisPassword
    /// ```
    ///
    /// - Parameters:
    ///   - seeds: Nodes of the cluster (at least one); more are found in its slot map.
    ///   - namespace: The key prefix.
    ///   - timeToLive: How long Redis keeps an entry.
    public init(cluster seeds: [RedisNodeAddress], namespace: String = "odatastores", timeToLive: SecondTierTimeToLive = .standard) {
        let first = seeds.first ?? RedisNodeAddress(host: "127.0.0.1", port: 6379)
        self.init(host: first.host, port: first.port, namespace: namespace, timeToLive: timeToLive)
        redis.cluster = RedisClusterConfiguration(seeds: Array(seeds.dropFirst()))
    }

    /// Configurations are equal in everything but their logger.
    public static func == (lhs: RedisTierConfiguration, rhs: RedisTierConfiguration) -> Bool {
        lhs.redis == rhs.redis && lhs.namespace == rhs.namespace && lhs.timeToLive == rhs.timeToLive
            && lhs.maximumPendingWrites == rhs.maximumPendingWrites && lhs.republishInterval == rhs.republishInterval
    }

    /// Hashes everything but the logger.
    ///
    /// - Parameter hasher: The hasher.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(redis)
        hasher.combine(namespace)
        hasher.combine(timeToLive)
        hasher.combine(maximumPendingWrites)
        hasher.combine(republishInterval)
    }

    func validate() throws(CacheError) {
        do { try redis.validate() } catch {
            throw CacheError.invalidConfiguration.with(detail: "second tier: \(error)", underlying: error)
        }
        guard (1...128).contains(namespace.utf8.count), namespace.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw CacheError.invalidConfiguration.with(detail: "the second tier's namespace must be 1…128 printable ASCII characters without spaces")
        }
        guard maximumPendingWrites >= 1 else {
            throw CacheError.invalidConfiguration.with(detail: "maximumPendingWrites must be at least 1, got \(maximumPendingWrites)")
        }
        guard republishInterval >= .zero else {
            throw CacheError.invalidConfiguration.with(detail: "the second tier's republishInterval must not be negative")
        }
        try timeToLive.validate()
    }

    /// How old the tier's copy of `entry` must be before a 304 rewrites it: ``republishInterval``, or half the
    /// entry's freshness lifetime when that is shorter.
    func republishBound(for entry: CacheEntry) -> Duration {
        let lifetime = SecondTierTimeToLive.freshnessLifetime(of: entry.headers)
        return lifetime > .zero ? min(republishInterval, lifetime / 2) : republishInterval
    }
}

/// How long the Redis tier keeps an entry.
public enum SecondTierTimeToLive: Sendable, Hashable {
    /// Every entry lives this long.
    case fixed(Duration)
    /// The entry's freshness lifetime for a shared cache (RFC 9111 §4.2.1: `s-maxage`, else `max-age`, else
    /// `Expires` minus `Date`; 0 without any), plus `staleAllowance` (stale entries still serve passive
    /// reads and conditional requests), at most `maximum`.
    case freshness(staleAllowance: Duration, maximum: Duration)

    /// The default: the freshness lifetime plus one hour, at most one day.
    public static let standard = SecondTierTimeToLive.freshness(staleAllowance: .seconds(3600), maximum: .seconds(86_400))

    /// The time to live of `entry` under this policy (at least one second).
    ///
    /// - Parameter entry: The entry to be written.
    /// - Returns: How long Redis keeps it.
    public func duration(for entry: CacheEntry) -> Duration {
        switch self {
        case .fixed(let duration):
            return max(duration, .seconds(1))
        case .freshness(let staleAllowance, let maximum):
            let lifetime = Self.freshnessLifetime(of: entry.headers)
            return max(min(lifetime + staleAllowance, maximum), .seconds(1))
        }
    }

    /// RFC 9111 §4.2.1, as a shared cache computes it: `s-maxage`, then `max-age`, then `Expires` − `Date`.
    static func freshnessLifetime(of headers: HTTPFields) -> Duration {
        var maxAge: Int?
        var sharedMaxAge: Int?
        for header in headers where header.name == .cacheControl {
            for part in header.value.split(separator: ",") {
                let pieces = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pieces.count == 2, let seconds = Int(pieces[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))), seconds >= 0 else { continue }
                switch pieces[0].lowercased() {
                case "s-maxage": sharedMaxAge = sharedMaxAge ?? seconds
                case "max-age": maxAge = maxAge ?? seconds
                default: break
                }
            }
        }
        if let seconds = sharedMaxAge ?? maxAge { return .seconds(seconds) }
        let expires = headers.first { $0.name == .expires }.flatMap { httpDate($0.value) }
        let date = headers.first { $0.name == .date }.flatMap { httpDate($0.value) }
        if let expires, let date, expires > date { return .seconds(Int(expires.timeIntervalSince(date))) }
        return .zero
    }

    /// An IMF-fixdate (RFC 9110 §5.6.7), for example `Sun, 06 Nov 1994 08:49:37 GMT`.
    private static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }

    func validate() throws(CacheError) {
        switch self {
        case .fixed(let duration):
            guard duration > .zero else { throw CacheError.invalidConfiguration.with(detail: "the second tier's time to live must be positive") }
        case .freshness(let staleAllowance, let maximum):
            guard staleAllowance >= .zero, maximum > .zero else {
                throw CacheError.invalidConfiguration.with(detail: "the second tier's stale allowance must not be negative and its maximum must be positive")
            }
        }
    }
}

/// Counters of a cache's Redis tier since the cache was created (see ``ResponseCache/secondTierStatistics``).
public struct SecondTierStatistics: Sendable, Hashable {
    /// Local misses that asked Redis (and got an answer or a failure).
    public var lookups = 0
    /// Lookups that found a usable entry in Redis.
    public var hits = 0
    /// Lookups that found nothing in Redis.
    public var misses = 0
    /// Values found in Redis that failed authentication or decoding (another key, damaged): treated as misses.
    public var unusableValues = 0
    /// Entries written to Redis (server answers and 304 refreshes).
    public var writes = 0
    /// 304 refreshes not written to Redis because the tier's copy was younger than the bound
    /// (``RedisTierConfiguration/republishInterval``).
    public var heldBackRefreshes = 0
    /// Entries removed from Redis (404/410, `no-store`, ``ResponseCache/removeEntry(for:)-(String)->Bool``).
    public var removals = 0
    /// Writes not made: Redis was unavailable, or ``RedisTierConfiguration/maximumPendingWrites`` were waiting.
    public var droppedWrites = 0
    /// Lookups that did not ask Redis because it was unavailable (backing off after a failure).
    public var skippedLookups = 0
    /// Redis calls that failed (connection refused or lost, timeout, error reply).
    public var failures = 0
    /// Times Redis stopped answering (each is logged once).
    public var outages = 0
    /// Whether Redis answered the last call that reached it.
    public var isAvailable = true
}
