import Foundation
import LMDB

/// A sealed entry as stored: `UInt8 format, UInt32 meta count, meta box, payload box`. In the
/// combined format the meta box is empty and the payload box holds `payload ‖ meta ‖ UInt32(meta count)`.
///
/// A layout larger than one page is not stored under the entry's key as it is but in pieces (see
/// `OpenCache.writeValue`); reading puts the pieces together again, so opening sees this layout either way.
struct SealedEntry: Sendable {
    static let splitFormat: UInt8 = 1
    static let combinedFormat: UInt8 = 2
    /// The largest payload sealed together with its metadata.
    static let combinedLimit = 64 << 10
    let format: UInt8
    let meta: Data
    let payload: Data

    var byteCount: Int { 5 + meta.count + payload.count }

    /// Writes bytes `offset ..< offset + buffer.count` of the stored layout into `buffer`, straight into the
    /// LMDB map (the whole layout when `offset` is 0 and `buffer` holds `byteCount` bytes).
    func write(from offset: Int = 0, into buffer: UnsafeMutableRawBufferPointer) {
        guard offset >= 0, offset + buffer.count <= byteCount, let base = buffer.baseAddress else { return }
        var format = self.format
        var metaCount = UInt32(meta.count).bigEndian
        var position = 0
        var written = 0
        func copy(_ segment: UnsafeRawBufferPointer) {
            let start = max(offset - position, 0)
            let end = min(segment.count, offset + buffer.count - position)
            if start < end, let origin = segment.baseAddress {
                (base + written).copyMemory(from: origin + start, byteCount: end - start)
                written += end - start
            }
            position += segment.count
        }
        withUnsafeBytes(of: &format) { copy($0) }
        withUnsafeBytes(of: &metaCount) { copy($0) }
        meta.withUnsafeBytes { copy($0) }
        payload.withUnsafeBytes { copy($0) }
    }

    static func split(_ stored: UnsafeRawBufferPointer) -> (format: UInt8, meta: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer)? {
        guard stored.count >= 5, stored[0] == splitFormat || stored[0] == combinedFormat else { return nil }
        let metaCount = Int(UInt32(bigEndian: stored.loadUnaligned(fromByteOffset: 1, as: UInt32.self)))
        guard metaCount <= stored.count - 5 else { return nil }
        return (stored[0], UnsafeRawBufferPointer(rebasing: stored[5..<(5 + metaCount)]),
                UnsafeRawBufferPointer(rebasing: stored[(5 + metaCount)...]))
    }
}

/// What the `entries` database holds for a value larger than one page (format 3, cache format 2):
/// `UInt8 3, UInt32 chunk count, UInt64 value bytes, the value's last 16 bytes` — its AES-GCM tag, so that
/// `CacheEntry.SealedTag(of:)` reads the same tag from this record as from the whole value.
struct ChunkedHead: Equatable {
    static let format: UInt8 = 3
    static let byteCount = 29
    var chunkCount: Int
    var valueBytes: Int

    init(chunkCount: Int, valueBytes: Int) {
        self.chunkCount = chunkCount
        self.valueBytes = valueBytes
    }

    init?(_ stored: UnsafeRawBufferPointer) {
        guard stored.count == Self.byteCount, stored[0] == Self.format else { return nil }
        chunkCount = Int(UInt32(bigEndian: stored.loadUnaligned(fromByteOffset: 1, as: UInt32.self)))
        valueBytes = Int(truncatingIfNeeded: UInt64(bigEndian: stored.loadUnaligned(fromByteOffset: 5, as: UInt64.self)))
    }
}

/// Values larger than one page, stored in one-page chunks (issue 31, "At a million" in `docs/notes/cache.md`).
///
/// LMDB stores a value larger than a leaf node in overflow pages, which must be contiguous: finding a run of
/// n ≥ 2 free pages makes liblmdb (0.9.24, `mdb_page_alloc`) scan and merge its whole free list, so with
/// continuous eviction every large write cost O(free pages) — 79 % of the CPU of a 1M-entry fill. Here no
/// write asks for more than one page: a value up to `chunkBytes` is stored whole under its key as before;
/// a larger one is cut into `chunkBytes` pieces in the `chunks` database under `key ‖ UInt32 index` (each a
/// leaf node or a single overflow page, which comes off the free list in O(1)), with a `ChunkedHead` under
/// its key in `entries`. The value is sealed whole, then cut: AES-GCM's tag covers every chunk and their
/// order, and the files hold ciphertext only. A head and its chunks are written and removed in one
/// transaction, so no chunk outlives its head (a crash aborts both).
extension OpenCache {
    /// What one page holds: the page size minus LMDB's page header (16 bytes on a 64-bit build).
    static func chunkBytes(pageSize: Int) -> Int { max(pageSize - 16, 512) }

    /// Stores the sealed layout under `key`, whole or in chunks; replaces what the key held.
    func writeValue(_ sealed: SealedEntry, forKey key: [UInt8], _ txn: LMDBTransaction) throws {
        try txn.removeEntries(withKeyPrefix: key, in: chunks)
        let total = sealed.byteCount
        guard total > chunkBytes else {
            try txn.setValue(count: total, forKey: key, in: entries) { sealed.write(into: $0) }
            return
        }
        let count = (total + chunkBytes - 1) / chunkBytes
        var chunkKey = key + [0, 0, 0, 0]
        for index in 0..<count {
            withUnsafeBytes(of: UInt32(index).bigEndian) { chunkKey.replaceSubrange(key.count..., with: $0) }
            let offset = index * chunkBytes
            try txn.setValue(count: min(chunkBytes, total - offset), forKey: chunkKey, in: chunks) { sealed.write(from: offset, into: $0) }
        }
        try txn.setValue(count: ChunkedHead.byteCount, forKey: key, in: entries) { buffer in
            guard let base = buffer.baseAddress else { return }
            base.storeBytes(of: ChunkedHead.format, as: UInt8.self)
            base.storeBytes(of: UInt32(count).bigEndian, toByteOffset: 1, as: UInt32.self)
            base.storeBytes(of: UInt64(total).bigEndian, toByteOffset: 5, as: UInt64.self)
            sealed.write(from: total - 16, into: UnsafeMutableRawBufferPointer(rebasing: buffer[13...]))
        }
    }

    /// Lends the stored layout of `key` to `body`: straight from the map when stored whole, else put
    /// together from its chunks. `nil` when nothing is stored; an empty buffer (which fails to open, so the
    /// callers treat the entry as damaged) when a chunk is missing, extra or of the wrong size.
    func withStoredValue<R>(forKey key: [UInt8], _ txn: LMDBTransaction, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        var head: ChunkedHead?
        // `body` sees a value stored whole (or `nil`) inside the lookup, without a copy.
        let whole = try txn.withValue(forKey: key, in: entries) { buffer -> R? in
            if let buffer, let found = ChunkedHead(buffer) {
                head = found
                return nil
            }
            return .some(try body(buffer))
        }
        guard let head else { return try whole ?? body(nil) }
        let value = UnsafeMutableRawBufferPointer.allocate(byteCount: max(head.valueBytes, 1), alignment: 16)
        defer { value.deallocate() }
        guard let base = value.baseAddress else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        var index = 0
        var filled = 0
        var intact = true
        try txn.forEachEntry(withKeyPrefix: key, in: chunks) { chunkKey, chunk in
            guard chunkKey.count == key.count + 4,
                  Int(UInt32(bigEndian: chunkKey.loadUnaligned(fromByteOffset: key.count, as: UInt32.self))) == index,
                  chunk.count <= head.valueBytes - filled, let origin = chunk.baseAddress
            else {
                intact = false
                return false
            }
            (base + filled).copyMemory(from: origin, byteCount: chunk.count)
            filled += chunk.count
            index += 1
            return true
        }
        guard intact, index == head.chunkCount, filled == head.valueBytes else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(rebasing: value[..<filled]))
    }

    /// The AES-GCM tag of the value stored under `key` (its last 16 bytes), read without its chunks.
    func storedTag(forKey key: [UInt8], _ txn: LMDBTransaction) throws -> CacheEntry.SealedTag? {
        try txn.withValue(forKey: key, in: entries) { buffer in buffer.flatMap { CacheEntry.SealedTag(of: $0) } }
    }

    /// Removes the value stored under `key` and every chunk of it.
    func removeValue(forKey key: [UInt8], _ txn: LMDBTransaction) throws {
        try txn.removeValue(forKey: key, in: entries)
        try txn.removeEntries(withKeyPrefix: key, in: chunks)
    }
}

/// The chunks checked against their heads (for tests): every chunk must belong to a chunked head that
/// counts it.
struct ChunkAudit: Sendable {
    /// Chunked heads in `entries`.
    var heads = 0
    /// The chunks their heads count.
    var countedChunks = 0
    /// Records in `chunks`.
    var chunks = 0
    /// Chunks with no head, or beyond their head's count (orphans).
    var unaccounted = 0
    var entryStatistics: LMDBDatabaseStatistics?
    var chunkStatistics: LMDBDatabaseStatistics?
}

extension OpenCache {
    func auditChunks(_ txn: LMDBTransaction) throws -> ChunkAudit {
        var audit = ChunkAudit()
        var heads: [[UInt8]: Int] = [:]
        try txn.withCursor(in: entries) { cursor in
            while let entry = try cursor.next() {
                guard let head = entry.value.withUnsafeBytes({ ChunkedHead($0) }) else { continue }
                heads[entry.key] = head.chunkCount
                audit.countedChunks += head.chunkCount
            }
        }
        audit.heads = heads.count
        try txn.withCursor(in: chunks) { cursor in
            while let chunk = try cursor.next() {
                audit.chunks += 1
                let index = chunk.key.suffix(4).reduce(0) { $0 << 8 | Int($1) }
                let count = chunk.key.count == 36 ? heads[Array(chunk.key.prefix(32))] : nil
                if count.map({ index >= $0 }) ?? true { audit.unaccounted += 1 }
            }
        }
        audit.entryStatistics = try txn.statistics(of: entries)
        audit.chunkStatistics = try txn.statistics(of: chunks)
        return audit
    }
}
