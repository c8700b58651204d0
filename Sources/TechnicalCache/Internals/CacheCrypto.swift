import Crypto
import Foundation
import HTTPTypes
import LMDB
import Synchronization
import ODataCore

/// The keys in use: the data sealer (nil when encryption is disabled), the index (HMAC) key and a
/// generation number that changes on every rekey.
///
/// A rekey re-seals every value in its write transaction and swaps the keys just before that transaction
/// commits, so a read transaction that began before the commit reads values sealed with the previous data
/// key while this value already holds the new one: `keys(forSnapshot:)` picks the key of the snapshot.
///
/// `@unchecked Sendable` for `SymmetricKey` only: it is an immutable value (see `SealingKey`).
struct CacheCrypto: @unchecked Sendable {
    var sealer: Sealer?
    let indexKey: SymmetricKey
    var generation: UInt64
    /// The ID of the transaction that re-sealed every value with `sealer` (the last rekey); 0 when none
    /// did since the cache was opened.
    private(set) var sealedSince: UInt64 = 0
    /// The data key that sealed the values of the snapshots older than `sealedSince`.
    private var previousSealer: Sealer?
    /// HMAC-SHA256 (RFC 2104) with the key's inner and outer pads already absorbed, so that a lookup
    /// hashes only its message: `H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ message))`.
    private let innerHash: SHA256
    private let outerHash: SHA256

    init(sealer: Sealer?, indexKey: SymmetricKey, generation: UInt64) {
        self.sealer = sealer
        self.indexKey = indexKey
        self.generation = generation
        // A 32-byte key is shorter than SHA-256's 64-byte block, so it is zero-padded, not hashed.
        var block = indexKey.withUnsafeBytes { [UInt8]($0) }
        block += [UInt8](repeating: 0, count: SHA256.blockByteCount - block.count)
        var inner = SHA256()
        var outer = SHA256()
        inner.update(data: block.map { $0 ^ 0x36 })
        outer.update(data: block.map { $0 ^ 0x5C })
        innerHash = inner
        outerHash = outer
    }

    /// These keys after a rekey whose transaction `transaction` re-sealed every value with `sealer`: the
    /// current data key stays the one of the snapshots older than `transaction`; the index key is kept.
    func rekeyed(to sealer: Sealer, in transaction: UInt64) -> CacheCrypto {
        var next = CacheCrypto(sealer: sealer, indexKey: indexKey, generation: generation + 1)
        next.sealedSince = transaction
        next.previousSealer = self.sealer
        return next
    }

    /// The keys that sealed the values a transaction with ID `snapshot` reads (`LMDBTransaction.id`: for a
    /// read transaction, the last transaction committed when it began). Read after the transaction began,
    /// these are the keys of its snapshot unless two rekeys committed in between.
    func keys(forSnapshot snapshot: UInt64) -> CacheCrypto {
        guard snapshot < sealedSince else { return self }
        var older = self
        older.sealer = previousSealer
        return older
    }

    /// The LMDB key of a URL: HMAC-SHA256 over the partition (length-prefixed) and the literal URL.
    func entryKey(for url: String, partition: String?) -> [UInt8] {
        var inner = innerHash
        var partitionText = partition ?? ""
        partitionText.withUTF8 { utf8 in
            withUnsafeBytes(of: UInt32(utf8.count).bigEndian) { inner.update(bufferPointer: $0) }
            inner.update(bufferPointer: UnsafeRawBufferPointer(utf8))
        }
        var copy = url
        copy.withUTF8 { inner.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        var outer = outerHash
        inner.finalize().withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize().withUnsafeBytes { [UInt8]($0) }
    }

    /// Seals an entry as two boxes: the payload (the LMDB key as authenticated data) and the metadata
    /// (the LMDB key and the payload's tag as authenticated data, which binds the two together).
    ///
    /// Payloads up to `SealedEntry.combinedLimit` bytes are sealed with their metadata in one box
    /// instead (one AES-GCM operation per lookup); larger ones are sealed on their own, so that a big
    /// body is never copied into a second, combined buffer.
    func seal(_ entry: CacheEntry, key: [UInt8]) throws(CacheError) -> SealedEntry {
        if entry.payload.count <= SealedEntry.combinedLimit {
            // Payload, metadata and the metadata's length written into one buffer, sealed from it (`Data`'s appends
            // and its copy of the metadata cost more than the rest of the plaintext's making).
            var plaintext = ByteWriter(capacity: entry.payload.count + EntryCodec.metaCapacity(entry) + 4)
            plaintext.append(entry.payload)
            let metaStart = plaintext.count
            EntryCodec.writeMeta(entry, into: &plaintext)
            plaintext.append(UInt32(plaintext.count - metaStart))
            let box = try sealer.map { sealer throws(CacheError) in try sealer.seal(plaintext.array, authenticating: key) } ?? plaintext.data
            return SealedEntry(format: SealedEntry.combinedFormat, meta: Data(), payload: box)
        }
        let meta = EntryCodec.encodeMeta(entry)
        guard let sealer else { return SealedEntry(format: SealedEntry.splitFormat, meta: meta, payload: entry.payload) }
        let payload = try sealer.seal(entry.payload, authenticating: key)
        let sealedMeta = try sealer.seal(meta, authenticating: key + payload.suffix(16))
        return SealedEntry(format: SealedEntry.splitFormat, meta: sealedMeta, payload: payload)
    }

    /// The metadata of a stored value made by `seal(_:key:)`, without opening a separately sealed
    /// payload; `nil` when it fails authentication or decoding.
    func openMeta(_ stored: UnsafeRawBufferPointer, key: [UInt8]) -> (status: Int, storedAt: Date, headers: HTTPFields)? {
        guard let parts = SealedEntry.split(stored) else { return nil }
        guard parts.format == SealedEntry.splitFormat else {
            return open(stored, key: key).map { ($0.status, $0.storedAt, $0.headers) }
        }
        guard let sealer else { return EntryCodec.decodeMeta(parts.meta) }
        // A box that fails authentication means "damaged": nil, which the callers count and remove.
        guard parts.payload.count >= Sealer.overhead,
              let meta = try? sealer.open(parts.meta, authenticating: key + parts.payload.suffix(16))
        else { return nil }
        return meta.withUnsafeBytes { EntryCodec.decodeMeta($0) }
    }

    /// Opens a stored value made by `seal(_:key:)`; `nil` when it fails authentication or decoding.
    func open(_ stored: UnsafeRawBufferPointer, key: [UInt8]) -> CacheEntry? {
        guard let parts = SealedEntry.split(stored) else { return nil }
        let payload: Data
        let entryMeta: (status: Int, storedAt: Date, headers: HTTPFields)?
        if parts.format == SealedEntry.combinedFormat {
            let plaintext: Data
            if let sealer {
                // A box that fails authentication means "damaged": nil, which the callers count and remove.
                guard let opened = try? sealer.open(parts.payload, authenticating: key) else { return nil }
                plaintext = opened
            } else {
                plaintext = Data(parts.payload)
            }
            // `payload ‖ meta ‖ UInt32(meta count)`; `prefix` of a zero-based Data shares its storage.
            let count = plaintext.count
            guard count >= 4 else { return nil }
            let metaCount = plaintext.withUnsafeBytes { Int(UInt32(bigEndian: $0.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))) }
            guard metaCount <= count - 4 else { return nil }
            entryMeta = plaintext.withUnsafeBytes { EntryCodec.decodeMeta(UnsafeRawBufferPointer(rebasing: $0[(count - 4 - metaCount)..<(count - 4)])) }
            payload = plaintext.prefix(count - 4 - metaCount)
        } else if let sealer {
            // Boxes that fail authentication mean "damaged": nil, which the callers count and remove.
            guard parts.payload.count >= Sealer.overhead,
                  let meta = try? sealer.open(parts.meta, authenticating: key + parts.payload.suffix(16)),
                  let opened = try? sealer.open(parts.payload, authenticating: key)
            else { return nil }
            entryMeta = meta.withUnsafeBytes { EntryCodec.decodeMeta($0) }
            payload = opened
        } else {
            entryMeta = EntryCodec.decodeMeta(parts.meta)
            payload = Data(parts.payload)
        }
        guard let entryMeta else { return nil }
        var entry = CacheEntry(status: entryMeta.status, trustedHeaders: entryMeta.headers, payload: payload, storedAt: entryMeta.storedAt)
        // The stored size is the value plus the fixed bookkeeping (see `OpenCache.put`).
        entry.size = stored.count + OpenCache.perEntryOverhead
        if sealer != nil { entry.sealedTag = CacheEntry.SealedTag(of: stored) }
        return entry
    }
}
