import Crypto
import Dispatch
import Foundation
import Logging
import ODataCore
import Redis
import Synchronization

/// The working part of a cache's Redis tier (``RedisTierConfiguration``): read-through on a local miss,
/// write-through off the caller's path, counted failures and a log line per outage.
///
/// Values are sealed exactly as the local cache seals them (`CacheCrypto.seal`: AES-256-GCM, the keyed hash
/// as authenticated data), under keys of the tier's own (see `deriveCrypto`): the local cache's keys are
/// random per cache, so two instances could never open each other's values with them.
final class RedisTier: Sendable {
    let configuration: RedisTierConfiguration
    private let partition: String?
    private let client: RedisClient
    private let crypto = LockedValue<CacheCrypto?>(nil)
    private let counters: LockedValue<SecondTierStatistics>
    /// Writes and removals, in the order they were asked for.
    private let writes = DispatchQueue(label: "ODataStores.RedisTier.writes")
    /// Local copies of entries read from Redis.
    private let fills = DispatchQueue(label: "ODataStores.RedisTier.fills")
    private let pendingWrites = Atomic<Int>(0)
    private let prefix: [UInt8]

    init(configuration: RedisTierConfiguration, partition: String?) throws(CacheError) {
        try configuration.validate()
        self.configuration = configuration
        self.partition = partition
        self.prefix = Array("\(configuration.namespace):v1:".utf8)
        let counters = LockedValue(SecondTierStatistics())
        self.counters = counters
        let logger = configuration.logger ?? Logger(label: "ODataStores.RedisTier")
        let server = configuration.redis.cluster == nil
            ? "\(configuration.redis.host):\(configuration.redis.port)"
            : "cluster via \(configuration.redis.host):\(configuration.redis.port)"
        do {
            client = try RedisClient(configuration: configuration.redis) { available, failure in
                counters.withLock {
                    $0.isAvailable = available
                    if !available { $0.outages += 1 }
                }
                if available {
                    logger.notice("Redis tier answers again; the cache uses it", metadata: ["redis": .string(server)])
                } else {
                    logger.warning("Redis tier unavailable; the cache works local-only until it answers", metadata: [
                        "redis": .string(server), "error": .string(failure?.description ?? "unknown"),
                    ])
                }
            }
        } catch {
            throw CacheError.invalidConfiguration.with(detail: "second tier: \(error)", underlying: error)
        }
    }

    var statistics: SecondTierStatistics { counters.withLock { $0 } }

    // MARK: Keys

    /// Derives the tier's keys from the cache's passphrase: the same passphrase, derivation and namespace give
    /// the same keys on every instance. The salt is not random (it must be the same fleet-wide): it is a hash of
    /// a fixed label and the namespace, so a guess of the passphrase must be checked per namespace.
    static func deriveCrypto(passphrase: String, namespace: String, derivation: KeyDerivation) throws(CacheError) -> CacheCrypto {
        let salt = Array(SHA256.hash(data: Data("ODataStores Redis tier v1\u{0}".utf8) + Data(namespace.utf8)))
        let master: SealingKey
        do { master = try derivation.deriveKey(from: passphrase, salt: salt) } catch { throw CacheError(error) }
        let dataKey = HKDF<SHA256>.expand(pseudoRandomKey: master.symmetricKey, info: Data("ODataStores Redis tier data key".utf8), outputByteCount: 32)
        let indexKey = HKDF<SHA256>.expand(pseudoRandomKey: master.symmetricKey, info: Data("ODataStores Redis tier index key".utf8), outputByteCount: 32)
        return CacheCrypto(sealer: Sealer(key: SealingKey(dataKey)), indexKey: indexKey, generation: 0)
    }

    /// Starts using the tier with keys derived from `passphrase` (when the cache opens).
    func activate(passphrase: String, derivation: KeyDerivation) throws(CacheError) {
        let derived = try Self.deriveCrypto(passphrase: passphrase, namespace: configuration.namespace, derivation: derivation)
        crypto.withLock { $0 = derived }
    }

    /// Stops using the tier (when the cache closes); writes already asked for still run.
    func deactivate() {
        crypto.withLock { $0 = nil }
        writes.async { [client] in client.close() }
    }

    /// The Redis key of an entry key: `<namespace>:v1:<hex>`.
    func redisKey(_ key: [UInt8]) -> [UInt8] {
        var result = prefix
        result.reserveCapacity(prefix.count + key.count * 2)
        for byte in key {
            result.append(Self.hexDigits[Int(byte >> 4)])
            result.append(Self.hexDigits[Int(byte & 0x0F)])
        }
        return result
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    // MARK: Read-through

    /// The entry Redis holds for `url`, or `nil` (nothing there, not usable, or Redis unavailable).
    /// A blocking call bounded by the command timeout; while Redis is backing off it costs nothing.
    func lookup(_ url: String) -> CacheEntry? {
        guard let crypto = crypto.withLock({ $0 }) else { return nil }
        guard client.isAvailable else {
            counters.withLock { $0.skippedLookups += 1 }
            return nil
        }
        let key = crypto.entryKey(for: url, partition: partition)
        let value: [UInt8]?
        do {
            value = try client.get(redisKey(key))
        } catch {
            counters.withLock {
                if error == .unavailable { $0.skippedLookups += 1 } else { $0.lookups += 1; $0.failures += 1 }
            }
            return nil
        }
        guard let value else {
            counters.withLock { $0.lookups += 1; $0.misses += 1 }
            return nil
        }
        guard var entry = value.withUnsafeBytes({ crypto.open($0, key: key) }) else {
            // Another key (a fleet member with another passphrase) or a damaged value: a miss. It is left
            // alone — it may be another instance's good entry.
            counters.withLock { $0.lookups += 1; $0.unusableValues += 1 }
            return nil
        }
        counters.withLock { $0.lookups += 1; $0.hits += 1 }
        // The local cache's bookkeeping of where an entry was read does not apply to a Redis value.
        entry.size = 0
        entry.sealedTag = nil
        entry.lastUsedAt = Date()
        return entry
    }

    /// Runs `body` (a local store of an entry read from Redis) off the caller's path.
    func fill(_ body: @escaping @Sendable () -> Void) {
        fills.async(execute: body)
    }

    // MARK: Write-through

    /// Writes `entry` for `url` to Redis off the caller's path (sealing included). A 304's refresh
    /// (`isRefresh`) is written only when the tier's copy is older than the bound
    /// (``RedisTierConfiguration/republishBound(for:)``): a `PTTL` first (no value sent), then the value with
    /// a script that checks again and writes in one step, so racing instances write once.
    func publish(_ entry: CacheEntry, url: String, isRefresh: Bool = false) {
        guard let crypto = admitWrite() else { return }
        let ttl = configuration.timeToLive.duration(for: entry)
        let bound = isRefresh ? configuration.republishBound(for: entry) : .zero
        writes.async { [self] in
            defer { pendingWrites.subtract(1, ordering: .relaxed) }
            let key = crypto.entryKey(for: url, partition: partition)
            let redisKey = redisKey(key)
            // The copy is younger than the bound when it has more left to live than a new write's TTL minus it.
            let youngLeft = Self.milliseconds(ttl - bound)
            do {
                if bound > .zero, case .integer(let left) = try client.command([Self.pttlName, redisKey]), left > youngLeft {
                    counters.withLock { $0.heldBackRefreshes += 1 }
                    return
                }
            } catch {
                count(error)
                return
            }
            let sealed: SealedEntry
            do { sealed = try crypto.seal(entry, key: key) } catch {
                // The cipher refused the input (not expected): nothing to publish, counted as a failed write.
                counters.withLock { $0.failures += 1 }
                return
            }
            var bytes = [UInt8](repeating: 0, count: sealed.byteCount)
            bytes.withUnsafeMutableBytes { sealed.write(into: $0) }
            do {
                if bound > .zero {
                    let reply = try client.command([Self.evalName, Self.republishScript, Self.oneKey, redisKey, bytes,
                                                    Array(String(Self.milliseconds(ttl)).utf8), Array(String(youngLeft).utf8)])
                    let written = reply == .integer(1)
                    counters.withLock { if written { $0.writes += 1 } else { $0.heldBackRefreshes += 1 } }
                } else {
                    try client.set(redisKey, value: bytes, expiresAfter: ttl)
                    counters.withLock { $0.writes += 1 }
                }
            } catch {
                count(error)
            }
        }
    }

    /// `SET KEYS[1] ARGV[1] PX ARGV[2]` unless the key has more than `ARGV[3]` ms left to live; 1 when written.
    private static let republishScript = Array("""
        if redis.call('PTTL', KEYS[1]) > tonumber(ARGV[3]) then return 0 end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return 1
        """.utf8)
    private static let evalName = Array("EVAL".utf8)
    private static let pttlName = Array("PTTL".utf8)
    private static let oneKey = Array("1".utf8)

    /// Whole milliseconds of `duration` (at least 1).
    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(seconds * 1000 + attoseconds / 1_000_000_000_000_000, 1)
    }

    /// Counts a failed write: dropped while Redis is unavailable, a failure otherwise.
    private func count(_ error: any Error) {
        let unavailable = (error as? RedisError) == .unavailable
        counters.withLock { if unavailable { $0.droppedWrites += 1 } else { $0.failures += 1 } }
    }

    /// Removes the entry for `url` from Redis off the caller's path.
    func remove(url: String) {
        guard let crypto = admitWrite() else { return }
        writes.async { [self] in
            defer { pendingWrites.subtract(1, ordering: .relaxed) }
            do {
                if try client.delete([redisKey(crypto.entryKey(for: url, partition: partition))]) > 0 {
                    counters.withLock { $0.removals += 1 }
                }
            } catch {
                count(error)
            }
        }
    }

    /// The keys for a write, or `nil` when the write is dropped (tier inactive, Redis unavailable, queue full).
    private func admitWrite() -> CacheCrypto? {
        guard let crypto = crypto.withLock({ $0 }) else { return nil }
        guard client.isAvailable,
              pendingWrites.add(1, ordering: .relaxed).newValue <= configuration.maximumPendingWrites || undoAdmission()
        else {
            counters.withLock { $0.droppedWrites += 1 }
            return nil
        }
        return crypto
    }

    private func undoAdmission() -> Bool {
        pendingWrites.subtract(1, ordering: .relaxed)
        return false
    }

    /// Waits until the writes asked for so far ran (for tests and benchmarks).
    func waitForWrites() {
        writes.sync {}
        fills.sync {}
    }
}
