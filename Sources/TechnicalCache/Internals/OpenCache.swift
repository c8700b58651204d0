import Crypto
import Foundation
import HTTPTypes
import LMDB
import Synchronization
import ODataCore

/// A 32-byte entry key as four words: hashed faster than an array of bytes.
struct TouchKey: Hashable, Sendable {
    let words: (UInt64, UInt64, UInt64, UInt64)

    init(_ bytes: [UInt8]) {
        words = bytes.withUnsafeBytes { raw in
            raw.count == 32
                ? (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                   raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
                : (0, 0, 0, 0)
        }
    }

    var bytes: [UInt8] {
        withUnsafeBytes(of: words) { Array($0) }
    }

    static func == (lhs: TouchKey, rhs: TouchKey) -> Bool { lhs.words == rhs.words }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
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
///
/// Several processes may have the same cache open (see `StorageLock`), each with an `OpenCache` of its
/// own, so what is kept here is either this process's alone or a copy of the files that is checked
/// against them:
/// - the byte total and the LRU ticks are read inside every write transaction (`readBytes`,
///   `syncTicks`), so eviction and the order it follows are the files' truth, whoever wrote last;
/// - the byte total shown by `currentBytes()` is a copy tagged with the transaction it was read in or
///   written by, read again only when the environment's last transaction ID says another one committed;
/// - lookups (touches) and 304 refreshes not yet written are this process's own; they are written under
///   the same conditions as before, inside a write transaction, so another process's newer entry wins.
final class OpenCache: Sendable {
    /// Bytes an entry costs beyond its sealed value: its 32-byte key, the info record (32 + 24) and the
    /// LRU record (8 + 32).
    static let perEntryOverhead = 128

    let environment: LMDBEnvironment
    let entries: LMDBDatabase
    let info: LMDBDatabase
    let lru: LMDBDatabase
    let meta: LMDBDatabase
    /// The pieces of the values larger than one page, under `key ‖ UInt32 index` (see `OpenCache+Chunks.swift`).
    let chunks: LMDBDatabase
    /// The most bytes of a stored value written under one LMDB key: what one page holds (page size minus
    /// its header), so that no write needs a run of contiguous free pages.
    let chunkBytes: Int
    let lock: StorageLock
    /// The keys in use; a rekey swaps them inside its write transaction, before the commit.
    let crypto: LockedValue<CacheCrypto>
    /// Lookups not yet written to the LRU index: key → (tick, time in ms).
    let touches = LockedValue<[TouchKey: (tick: UInt64, milliseconds: Int64)]>([:])
    /// 304 refreshes not yet written (see `flushRefreshes`): key → the refreshed entry.
    let refreshes = LockedValue<[TouchKey: PendingRefresh]>([:])
    /// Whether a background flush of `refreshes` is scheduled.
    let refreshFlushScheduled = Atomic<Bool>(false)
    /// Whether a write that crossed the limit left the total above the low-water mark: then each write
    /// evicts at most `evictionBatch` more entries towards it (see `put`), until it is reached.
    let evictionOwed = Atomic<Bool>(false)
    /// Whether a background write of the pending touches is scheduled (see `recordUse`).
    let touchFlushScheduled = Atomic<Bool>(false)
    /// Whether a write of the touches beyond ``touchFlushThreshold`` is under way or about to be.
    let touchFlushNowScheduled = Atomic<Bool>(false)
    /// The next LRU tick: above every tick on disk at the start of this process's last write transaction
    /// (`syncTicks`); lookups take ticks from it only to order their touches.
    let nextTick: Atomic<UInt64>
    /// The byte total as of a transaction: (its ID, the total then).
    private let bytesSeen: LockedValue<(transaction: UInt64, bytes: Int)>
    let lastSync = LockedValue<ContinuousClock.Instant>(.now)
    /// Entries read recently, held decoded (see `HotEntries`).
    let hot: HotEntries
    /// Entries handed to the writer, not yet committed (see `PendingWrites`).
    let pending = PendingWrites(byteLimit: OpenCache.pendingByteLimit)
    /// The bytes of entries handed to the writer that may wait for their commit before a hand-over waits too.
    static let pendingByteLimit = 32 << 20
    /// A random identity of this opening, so that an entry read from an earlier one is never taken for current.
    let identity = UInt64.random(in: .min ... .max)

    /// Counts and logs a storage failure of a write this object runs on its own (see `ResponseCache.storageFailed`).
    let onStorageFailure: @Sendable (CacheStorageOperation, any Error) -> Void

    init(environment: LMDBEnvironment, databases: [LMDBDatabase], pageSize: Int, lock: StorageLock, crypto: CacheCrypto, nextTick: UInt64, currentBytes: Int,
         memoryBudget: Int,
         onStorageFailure: @escaping @Sendable (CacheStorageOperation, any Error) -> Void) {
        self.environment = environment
        self.onStorageFailure = onStorageFailure
        hot = HotEntries(budget: memoryBudget)
        entries = databases[0]
        info = databases[1]
        lru = databases[2]
        meta = databases[3]
        chunks = databases[4]
        chunkBytes = Self.chunkBytes(pageSize: pageSize)
        self.lock = lock
        self.crypto = LockedValue(crypto)
        self.nextTick = Atomic(nextTick)
        self.bytesSeen = LockedValue((0, currentBytes))
        // Every value change is a put or a removal of its key in `entries` (a chunked value's head included).
        environment.observeCommits(in: entries) { [hot] commit in hot.ownCommit(commit) }
    }

    static let bytesKey = Array("bytes".utf8)
    static let envelopeKey = Array("envelope".utf8)
    static let plaintextKey = Array("plaintext".utf8)
    static let formatKey = Array("format".utf8)

    /// The keys that sealed the values `txn` reads, taken inside it: a rekey that committed before `txn`
    /// began swapped the keys before its commit, and one that had not committed left the previous key for
    /// older snapshots (see `CacheCrypto.keys(forSnapshot:)`).
    func keys(for txn: LMDBTransaction) -> CacheCrypto {
        crypto.withLock { $0 }.keys(forSnapshot: txn.id)
    }

    func takeTick() -> UInt64 {
        nextTick.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Moves `nextTick` above the highest tick in the LRU index (inside a write transaction, before
    /// any tick is written): another process sharing the files may have used the ticks this one would
    /// take next, and two entries under one tick would leave one of them out of the LRU order.
    func syncTicks(_ txn: LMDBTransaction) throws {
        guard let last = try txn.withCursor(in: lru, { cursor in try cursor.last() }),
              let tick = UInt64(bigEndianBytes: last.key)
        else { return }
        var current = nextTick.load(ordering: .relaxed)
        while current <= tick {
            let (exchanged, original) = nextTick.compareExchange(expected: current, desired: tick + 1, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    func readBytes(_ txn: LMDBTransaction) throws -> Int {
        guard let bytes = try txn.value(forKey: Self.bytesKey, in: meta) else { return 0 }
        return Int(UInt64(bigEndianBytes: bytes) ?? 0)
    }

    func writeBytes(_ value: Int, _ txn: LMDBTransaction) throws {
        try txn.setValue(UInt64(max(value, 0)).bigEndianBytes, forKey: Self.bytesKey, in: meta)
        let noted = (transaction: txn.id, bytes: max(value, 0))
        txn.afterCommit { [bytesSeen] in bytesSeen.withLock { $0 = noted } }
    }

    /// The bytes stored now: the total this process last wrote or read, while no transaction has
    /// committed since (no other process wrote); else read again, in one read transaction.
    func currentBytes() -> Int {
        let seen = bytesSeen.withLock { $0 }
        if seen.transaction == environment.lastTransactionID { return seen.bytes }
        // A read that fails answers the total last seen: a figure for statistics and reports, never for a write
        // (which reads the total in its own transaction).
        guard let fresh = try? environment.read({ txn in (transaction: txn.id, bytes: try readBytes(txn)) }) else { return seen.bytes }
        bytesSeen.withLock { $0 = fresh }
        return fresh.bytes
    }

    /// Applies pending lookups to the LRU index (inside a write transaction).
    ///
    /// The touches get new ticks now, in the order of their lookups, above every tick on disk: a use is
    /// recorded as of this write, so the LRU order across processes is the order in which each process
    /// wrote its uses (within one process it is exact, since every write of this process comes first).
    func flushTouches(_ txn: LMDBTransaction) throws {
        try syncTicks(txn)
        let pending = touches.withLock { touches in
            let taken = touches
            touches.removeAll(keepingCapacity: true)
            return taken
        }
        for (touchKey, touch) in pending.sorted(by: { $0.value.tick < $1.value.tick }) {
            let key = touchKey.bytes
            guard let raw = try txn.value(forKey: key, in: info), var record = EntryInfo(raw) else { continue }
            try txn.removeValue(forKey: record.tick.bigEndianBytes, in: lru)
            record.tick = takeTick()
            record.lastUsedMilliseconds = touch.milliseconds
            try txn.setValue(key, forKey: record.tick.bigEndianBytes, in: lru)
            try txn.setValue(record.bytes, forKey: key, in: info)
        }
    }

    /// How long a lookup's use may wait in memory, while another process writes to the cache, before a
    /// background write records it (this process's own writes record it earlier).
    static let touchFlushDelay: DispatchTimeInterval = .seconds(1)
    /// Pending touches beyond which they are written at once — on a thread of their own, never on the lookup's:
    /// a lookup does not wait for a commit and its sync (which, beside another writer's disk traffic, took an
    /// online read 20–90 ms in `ProcessBenchmarks`).
    static let touchFlushThreshold = 4096

    /// Notes a lookup's use of `key` (a hit), to be written to the LRU index by the next write.
    ///
    /// A process alone with the cache writes it with its next write: a hit costs no write, and every
    /// eviction (which only this process runs) sees it first. When another process has written since this
    /// one's last commit, that process evicts too and cannot see this one's memory, so the uses are
    /// written in the background within ``touchFlushDelay``.
    func recordUse(of key: TouchKey, at milliseconds: Int64) {
        let tick = takeTick()
        let pending = touches.withLock { touches in
            touches[key] = (tick, milliseconds)
            return touches.count
        }
        if pending >= Self.touchFlushThreshold {
            guard touchFlushNowScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
            DispatchQueue.global(qos: .utility).async { [weak self] in
                guard let self else { return }
                self.touchFlushNowScheduled.store(false, ordering: .releasing)
                self.flushTouchesNow()
            }
            return
        }
        guard !touchFlushScheduled.load(ordering: .relaxed),
              environment.lastTransactionID != environment.lastOwnTransactionID,
              touchFlushScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.touchFlushDelay) { [weak self] in
            guard let self else { return }
            self.touchFlushScheduled.store(false, ordering: .releasing)
            guard !self.touches.withLock({ $0.isEmpty }) else { return }
            self.flushTouchesNow()
        }
    }

    /// Writes the pending uses in a transaction of their own; a failure loses only the recency (counted).
    private func flushTouchesNow() {
        do { try environment.write { txn in try flushTouches(txn) } } catch { onStorageFailure(.recencyFlush, error) }
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1000) }

    /// Removes one entry; returns its size (0 when absent).
    @discardableResult
    func removeEntry(_ key: [UInt8], _ txn: LMDBTransaction) throws -> Int {
        var size = 0
        if let raw = try txn.value(forKey: key, in: info), let record = EntryInfo(raw) {
            try txn.removeValue(forKey: record.tick.bigEndianBytes, in: lru)
            size = record.size
        }
        try txn.removeValue(forKey: key, in: info)
        try removeValue(forKey: key, txn)
        return size
    }

    /// Stores a sealed value with its bookkeeping; evicts first when the budget requires it.
    func put(sealed: SealedEntry, key: [UInt8], now: Date, configuration: CacheConfiguration, _ txn: LMDBTransaction) throws -> (count: Int, bytes: Int, size: Int) {
        try flushTouches(txn)
        var total = try readBytes(txn)
        total -= try removeEntry(key, txn)
        let size = sealed.byteCount + Self.perEntryOverhead
        var evicted = (count: 0, bytes: 0)
        let owed = evictionOwed.load(ordering: .relaxed)
        if total + size > configuration.sizeLimit || owed {
            // Down to the low-water mark; an entry larger than that only needs room under the limit. At most
            // `evictionBatch` entries beyond those needed to fit under the limit; the writes that follow go on.
            let target = size <= configuration.lowWaterBytes ? configuration.lowWaterBytes : configuration.sizeLimit
            evicted = try evict(toFit: size, target: target, limit: configuration.sizeLimit, maxCount: Self.evictionBatch, total: &total, txn)
            let stillOwed = total + size > target
            if stillOwed != owed {
                txn.afterCommit { [weak self] in self?.evictionOwed.store(stillOwed, ordering: .relaxed) }
            }
        }
        let record = EntryInfo(tick: takeTick(), size: size, lastUsedMilliseconds: Int64(now.timeIntervalSince1970 * 1000))
        try writeValue(sealed, forKey: key, txn)
        try txn.setValue(record.bytes, forKey: key, in: info)
        try txn.setValue(key, forKey: record.tick.bigEndianBytes, in: lru)
        total += size
        try writeBytes(total, txn)
        return (evicted.count, evicted.bytes, size)
    }
}
