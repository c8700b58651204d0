import Crypto
import Foundation
import LMDB
import Synchronization

/// The keys in use: the data sealer (nil when encryption is disabled), the index (HMAC) key and a
/// generation number that changes on every rekey.
///
/// `@unchecked Sendable` for `SymmetricKey` only: it is an immutable value (see `SealingKey`).
struct CacheCrypto: @unchecked Sendable {
    var sealer: Sealer?
    let indexKey: SymmetricKey
    var generation: UInt64

    func entryKey(for url: String, partition: String?) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: indexKey)
        var prefix = ByteWriter(capacity: 8)
        prefix.appendString(partition ?? "")
        hmac.update(data: prefix.data)
        var copy = url
        copy.withUTF8 { hmac.update(data: UnsafeRawBufferPointer($0)) }
        return Array(hmac.finalize())
    }

    func seal(_ plaintext: Data, key: [UInt8]) throws(CacheError) -> Data {
        guard let sealer else { return plaintext }
        return try sealer.seal(plaintext, authenticating: key)
    }

    func open(_ stored: UnsafeRawBufferPointer, key: [UInt8]) throws(CacheError) -> Data {
        guard let sealer else { return Data(stored) }
        return try sealer.open(stored, authenticating: key)
    }
}

/// The bookkeeping record of an entry (not encrypted: an LRU tick, a size and a time).
struct EntryInfo {
    static let byteCount = 24
    var tick: UInt64
    var size: Int
    var lastUsedMilliseconds: Int64

    var bytes: [UInt8] {
        tick.bigEndianBytes + UInt64(size).bigEndianBytes + UInt64(bitPattern: lastUsedMilliseconds).bigEndianBytes
    }

    init(tick: UInt64, size: Int, lastUsedMilliseconds: Int64) {
        self.tick = tick
        self.size = size
        self.lastUsedMilliseconds = lastUsedMilliseconds
    }

    init?(_ bytes: [UInt8]) {
        guard bytes.count == Self.byteCount,
              let tick = UInt64(bigEndianBytes: bytes[0..<8]),
              let size = UInt64(bigEndianBytes: bytes[8..<16]),
              let used = UInt64(bigEndianBytes: bytes[16..<24])
        else { return nil }
        self.init(tick: tick, size: Int(size), lastUsedMilliseconds: Int64(bitPattern: used))
    }
}

/// Everything that exists only while a cache is open.
final class OpenCache: Sendable {
    /// Bytes an entry costs beyond its sealed value: its 32-byte key, the info record (32 + 24) and the
    /// LRU record (8 + 32).
    static let perEntryOverhead = 128

    let environment: LMDBEnvironment
    let entries: LMDBDatabase
    let info: LMDBDatabase
    let lru: LMDBDatabase
    let meta: LMDBDatabase
    let lock: DirectoryLock
    let crypto: Mutex<CacheCrypto>
    /// Lookups not yet written to the LRU index: key → (tick, time in ms).
    let touches = Mutex<[[UInt8]: (tick: UInt64, milliseconds: Int64)]>([:])
    let nextTick: Atomic<UInt64>
    let currentBytes: Atomic<Int>
    let lastSync = Mutex<ContinuousClock.Instant>(.now)

    init(environment: LMDBEnvironment, databases: [LMDBDatabase], lock: DirectoryLock, crypto: CacheCrypto, nextTick: UInt64, currentBytes: Int) {
        self.environment = environment
        entries = databases[0]
        info = databases[1]
        lru = databases[2]
        meta = databases[3]
        self.lock = lock
        self.crypto = Mutex(crypto)
        self.nextTick = Atomic(nextTick)
        self.currentBytes = Atomic(currentBytes)
    }

    static let bytesKey = Array("bytes".utf8)
    static let envelopeKey = Array("envelope".utf8)
    static let plaintextKey = Array("plaintext".utf8)
    static let formatKey = Array("format".utf8)

    func takeTick() -> UInt64 {
        nextTick.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    func readBytes(_ txn: LMDBTransaction) throws -> Int {
        guard let bytes = try txn.value(forKey: Self.bytesKey, in: meta) else { return 0 }
        return Int(UInt64(bigEndianBytes: bytes) ?? 0)
    }

    func writeBytes(_ value: Int, _ txn: LMDBTransaction) throws {
        try txn.setValue(UInt64(max(value, 0)).bigEndianBytes, forKey: Self.bytesKey, in: meta)
    }

    /// Applies pending lookups to the LRU index (inside a write transaction).
    func flushTouches(_ txn: LMDBTransaction) throws {
        let pending = touches.withLock { touches in
            let taken = touches
            touches.removeAll(keepingCapacity: true)
            return taken
        }
        for (key, touch) in pending {
            guard let raw = try txn.value(forKey: key, in: info), var record = EntryInfo(raw), touch.tick > record.tick else { continue }
            try txn.removeValue(forKey: record.tick.bigEndianBytes, in: lru)
            record.tick = touch.tick
            record.lastUsedMilliseconds = touch.milliseconds
            try txn.setValue(record.tick.bigEndianBytes, forKey: key, in: lru)
            try txn.setValue(record.bytes, forKey: key, in: info)
        }
    }

    /// Removes one entry; returns its size (0 when absent).
    @discardableResult
    func removeEntry(_ key: [UInt8], _ txn: LMDBTransaction) throws -> Int {
        var size = 0
        if let raw = try txn.value(forKey: key, in: info), let record = EntryInfo(raw) {
            try txn.removeValue(forKey: record.tick.bigEndianBytes, in: lru)
            size = record.size
        }
        try txn.removeValue(forKey: key, in: info)
        try txn.removeValue(forKey: key, in: entries)
        return size
    }

    /// Evicts least-recently-used entries until `needed` more bytes fit under `target`.
    func evict(toFit needed: Int, target: Int, total: inout Int, _ txn: LMDBTransaction) throws -> (count: Int, bytes: Int) {
        var count = 0
        var bytes = 0
        while total + needed > target {
            let oldest = try txn.withCursor(in: lru) { cursor in try cursor.first() }
            guard let oldest else { break }
            let size = try removeEntry(oldest.value, txn)
            // A dangling LRU record (no info) is removed too.
            try txn.removeValue(forKey: oldest.key, in: lru)
            total -= size
            bytes += size
            count += 1
        }
        return (count, bytes)
    }

    /// Stores a sealed value with its bookkeeping; evicts first when the budget requires it.
    func put(sealed: Data, key: [UInt8], now: Date, configuration: CacheConfiguration, _ txn: LMDBTransaction) throws -> (count: Int, bytes: Int, size: Int) {
        try flushTouches(txn)
        var total = try readBytes(txn)
        total -= try removeEntry(key, txn)
        let size = sealed.count + Self.perEntryOverhead
        var evicted = (count: 0, bytes: 0)
        if total + size > configuration.sizeLimit {
            // Down to the low-water mark; an entry larger than that only needs room under the limit.
            let target = size <= configuration.lowWaterBytes ? configuration.lowWaterBytes : configuration.sizeLimit
            evicted = try evict(toFit: size, target: target, total: &total, txn)
        }
        let record = EntryInfo(tick: takeTick(), size: size, lastUsedMilliseconds: Int64(now.timeIntervalSince1970 * 1000))
        try txn.setValue(count: sealed.count, forKey: key, in: entries) { buffer in
            _ = sealed.copyBytes(to: buffer)
        }
        try txn.setValue(record.bytes, forKey: key, in: info)
        try txn.setValue(key, forKey: record.tick.bigEndianBytes, in: lru)
        total += size
        try writeBytes(total, txn)
        currentBytes.store(total, ordering: .relaxed)
        return (evicted.count, evicted.bytes, size)
    }
}
