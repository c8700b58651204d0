import HTTPTypes
import ODataCore

/// The entries read most recently, held decoded in memory so that reading one again costs neither the
/// URL's HMAC nor AES-GCM: a bounded map from the literal URL to the entry a lookup opened, with the LMDB
/// key it hashed to and the sealed value's tag.
///
/// A held entry is only ever an answer the disk still has. It is returned without touching LMDB while
/// the environment's last transaction ID (any process's commit) is the one it was checked at; after a
/// commit it is checked again by reading the stored value's tag — the same 16 bytes are the same sealed
/// value, since AES-GCM's tag authenticates it under a key only this cache holds. A different tag, no
/// value, another key generation (rekey) or an unencrypted cache (no tag to compare) sends the lookup to
/// the disk. Plaintext lives only in this process's memory (as it does in every answer handed to a
/// caller), within `budget` bytes, and goes with the opening of the cache (close, reset).
final class HotEntries: Sendable {
    /// What a held entry is, fixed while it is held. A reference, so that the map's bookkeeping (a lookup's
    /// use, a check, the trim's sort) copies one pointer, not the entry's fields: at 100k entries copying
    /// `Held` as a value was a quarter of a lookup's samples (`docs/notes/cache-scale-lookups.md`).
    final class Held: Sendable {
        /// The entry as the lookup decoded it (before deferred refreshes, which are applied on top).
        let entry: CacheEntry
        let key: [UInt8]
        let generation: UInt64
        let tag: CacheEntry.SealedTag
        let bytes: Int

        init(entry: CacheEntry, key: [UInt8], generation: UInt64, tag: CacheEntry.SealedTag, bytes: Int) {
            self.entry = entry
            self.key = key
            self.generation = generation
            self.tag = tag
            self.bytes = bytes
        }
    }

    /// A held entry with what changes while it is held.
    private struct Slot {
        let held: Held
        /// The last transaction ID at which the stored value was seen to carry `held.tag`.
        var checkedAt: UInt64
        var lastUse: UInt64
    }

    private struct State {
        var held: [String: Slot] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    /// The most bytes held; 0 holds nothing.
    let budget: Int
    private let state = LockedValue(State())

    init(budget: Int) {
        self.budget = max(budget, 0)
    }

    /// The bytes an entry costs here: its payload, headers and a fixed overhead.
    static func cost(of entry: CacheEntry, url: String) -> Int {
        entry.payload.count + url.utf8.count + entry.headers.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 32 } + 256
    }

    /// The held entry for `url` under key generation `generation`, with whether it was checked at
    /// `transaction` (then it needs no reading of the disk); `nil` when none is held.
    func held(for url: String, generation: UInt64, transaction: UInt64) -> (held: Held, current: Bool)? {
        guard budget > 0 else { return nil }
        return state.withLock { state in
            // One hash of the URL: the use is recorded in place, through the index found.
            guard let index = state.held.index(forKey: url) else { return nil }
            let slot = state.held.values[index]
            guard slot.held.generation == generation else {
                state.bytes -= slot.held.bytes
                state.held.remove(at: index)
                return nil
            }
            state.clock &+= 1
            state.held.values[index].lastUse = state.clock
            return (slot.held, slot.checkedAt == transaction)
        }
    }

    /// The entry held for `url` whose sealed value carries `tag`, without counting as a use: a value this process
    /// wrote or read, so its metadata is known without opening it (`nil` when none with that tag is held).
    func entry(for url: String, tag: CacheEntry.SealedTag) -> CacheEntry? {
        guard budget > 0 else { return nil }
        return state.withLock { state in
            guard let slot = state.held[url], slot.held.tag == tag else { return nil }
            return slot.held.entry
        }
    }

    /// Records that the stored value for `url` still carried the held tag at `transaction`.
    func confirm(_ url: String, tag: CacheEntry.SealedTag, at transaction: UInt64) {
        state.withLock { state in
            guard let index = state.held.index(forKey: url), state.held.values[index].held.tag == tag else { return }
            state.held.values[index].checkedAt = transaction
        }
    }

    /// Holds `entry`, just opened from the disk with `tag` as of `transaction`, evicting the least recently
    /// used entries when over budget. An entry larger than a quarter of the budget is not held.
    func hold(_ entry: CacheEntry, url: String, key: [UInt8], generation: UInt64, tag: CacheEntry.SealedTag, at transaction: UInt64) {
        let bytes = Self.cost(of: entry, url: url)
        guard budget > 0, bytes <= budget / 4 else { return forget(url) }
        var bare = entry
        bare.readAt = nil
        bare.sealedTag = tag
        let held = Held(entry: bare, key: key, generation: generation, tag: tag, bytes: bytes)
        state.withLock { state in
            state.clock &+= 1
            if let old = state.held.updateValue(Slot(held: held, checkedAt: transaction, lastUse: state.clock), forKey: url) {
                state.bytes -= old.held.bytes
            }
            state.bytes += bytes
            guard state.bytes > budget else { return }
            // Down to three quarters of the budget, least recently used first: one sort per many inserts.
            var byUse = state.held.map { ($0.key, $0.value.lastUse, $0.value.held.bytes) }
            byUse.sort { $0.1 < $1.1 }
            for (url, _, bytes) in byUse where state.bytes > budget * 3 / 4 {
                state.held[url] = nil
                state.bytes -= bytes
            }
        }
    }

    /// Drops what is held for `url`.
    func forget(_ url: String) {
        state.withLock { state in
            if let old = state.held.removeValue(forKey: url) { state.bytes -= old.held.bytes }
        }
    }

    /// Drops everything (rekey, reset).
    func removeAll() {
        state.withLock { $0 = State() }
    }

    /// The number of entries and bytes held (for tests).
    var usage: (count: Int, bytes: Int) { state.withLock { ($0.held.count, $0.bytes) } }
}
