import HTTPTypes
import LMDB
import ODataCore

/// The entries read most recently, held decoded in memory so that reading one again costs neither the
/// URL's HMAC nor AES-GCM: a bounded map from the literal URL to the entry a lookup opened, with the LMDB
/// key it hashed to and the sealed value's tag.
///
/// A held entry is only ever an answer the disk still has. It is returned without touching LMDB while
/// every commit since it was checked is one of this process's own that left it alone: its own commits are
/// reported with the keys they changed (`ownCommit`, from `LMDBEnvironment.observeCommits`), and a held
/// entry whose key one changed (stored, removed, evicted) is dropped at once. The environment's last
/// transaction ID (any process's commit) tells whether the run of own commits is unbroken: one of another
/// process in between, and the entry is checked again by reading the stored value's tag — the same 16
/// bytes are the same sealed value, since AES-GCM's tag authenticates it under a key only this cache holds.
/// A different tag, no value, another key generation (rekey) or an unencrypted cache (no tag to compare)
/// sends the lookup to the disk. Plaintext lives only in this process's memory (as it does in every answer
/// handed to a caller), within `budget` bytes, and goes with the opening of the cache (close, reset).
final class HotEntries: Sendable {
    /// What a held entry is, fixed while it is held. A reference, so that the map's bookkeeping (a lookup's
    /// use, a check, the trim's sort) copies one pointer, not the entry's fields: at 100k entries copying
    /// `Held` as a value was a quarter of a lookup's samples (`docs/notes/cache-scale-lookups.md`).
    final class Held: Sendable {
        /// The entry as the lookup decoded it (before deferred refreshes, which are applied on top).
        let entry: CacheEntry
        /// The LMDB key, as words in this object: a lookup's use of the entry reads no other memory for it.
        let key: TouchKey
        let generation: UInt64
        let tag: CacheEntry.SealedTag
        let bytes: Int

        init(entry: CacheEntry, key: TouchKey, generation: UInt64, tag: CacheEntry.SealedTag, bytes: Int) {
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
        /// The last transaction ID at which the stored value was seen to carry `held.tag` (the ID noted
        /// before the read: the read's snapshot is that one or later).
        var checkedAt: UInt64
        /// Whether every own commit after `checkedAt` is applied here with this slot present (it was not
        /// when the slot was checked at an ID below the last own commit applied): only then can own commits
        /// vouch for it.
        var followed: Bool
        var lastUse: UInt64
    }

    private struct State {
        var held: [String: Slot] = [:]
        /// The URL of each held entry's LMDB key: an own commit names keys.
        var urls: [TouchKey: String] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        /// The last own commit applied (`ownCommit`), and the ID from which every commit up to it is this
        /// process's own and applied here (`UInt64.max`: none yet).
        var trusted: UInt64 = 0
        var trustedSince: UInt64 = .max
        /// Lookups that found an entry held but not known current (a read of the stored tag follows).
        var checks = 0

        /// Whether a slot checked as it says is current when the last commit is `transaction`.
        func isCurrent(_ slot: Slot, at transaction: UInt64) -> Bool {
            slot.checkedAt == transaction
                || (slot.followed && transaction == trusted && slot.checkedAt >= trustedSince)
        }

        mutating func remove(_ url: String) {
            guard let old = held.removeValue(forKey: url) else { return }
            bytes -= old.held.bytes
            urls[old.held.key] = nil
        }
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
                state.remove(url)
                return nil
            }
            state.clock &+= 1
            state.held.values[index].lastUse = state.clock
            let current = state.isCurrent(slot, at: transaction)
            if !current { state.checks += 1 }
            return (slot.held, current)
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

    /// The entry held for `url` under `key` when it is known, without reading the disk, to be the one stored when the last
    /// commit is `transaction` (as a lookup of a held entry knows it): the stored value then carries its tag. Not a use.
    func current(for url: String, key: [UInt8], at transaction: UInt64) -> Held? {
        guard budget > 0 else { return nil }
        return state.withLock { state in
            guard let slot = state.held[url], slot.held.key == TouchKey(key), state.isCurrent(slot, at: transaction) else { return nil }
            return slot.held
        }
    }

    /// Records that the stored value for `url` still carried the held tag at `transaction`.
    func confirm(_ url: String, tag: CacheEntry.SealedTag, at transaction: UInt64) {
        state.withLock { state in
            guard let index = state.held.index(forKey: url), state.held.values[index].held.tag == tag else { return }
            state.held.values[index].checkedAt = transaction
            state.held.values[index].followed = transaction >= state.trusted
        }
    }

    /// Applies a commit of this process: the entries whose keys it changed are dropped (all of them when it
    /// changed keys it does not list), and the run of own commits that vouches for the others goes on — or
    /// starts again at the commit before it, when that one was not the last own commit applied (another
    /// process committed in between: an entry checked before that is read again).
    func ownCommit(_ commit: LMDBCommit) {
        state.withLock { state in
            if commit.unlisted {
                state.held.removeAll()
                state.urls.removeAll()
                state.bytes = 0
            } else {
                for key in commit.keys {
                    if let url = state.urls[TouchKey(key)] { state.remove(url) }
                }
            }
            if state.trusted != commit.transaction &- 1 || state.trustedSince == .max {
                state.trustedSince = commit.transaction &- 1
            }
            state.trusted = commit.transaction
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
        let held = Held(entry: bare, key: TouchKey(key), generation: generation, tag: tag, bytes: bytes)
        state.withLock { state in
            state.clock &+= 1
            let slot = Slot(held: held, checkedAt: transaction, followed: transaction >= state.trusted, lastUse: state.clock)
            if let old = state.held.updateValue(slot, forKey: url) {
                state.bytes -= old.held.bytes
            }
            state.urls[held.key] = url
            state.bytes += bytes
            guard state.bytes > budget else { return }
            // Down to three quarters of the budget, least recently used first: one sort per many inserts.
            var byUse = state.held.map { ($0.key, $0.value.lastUse) }
            byUse.sort { $0.1 < $1.1 }
            for (url, _) in byUse where state.bytes > budget * 3 / 4 {
                state.remove(url)
            }
        }
    }

    /// Drops what is held for `url`.
    func forget(_ url: String) {
        state.withLock { state in state.remove(url) }
    }

    /// Drops everything (rekey, reset); the run of own commits goes on.
    func removeAll() {
        state.withLock { state in
            state.held.removeAll()
            state.urls.removeAll()
            state.bytes = 0
        }
    }

    /// The number of entries and bytes held (for tests).
    var usage: (count: Int, bytes: Int) { state.withLock { ($0.held.count, $0.bytes) } }

    /// The lookups that found an entry held but not known current, so read its stored tag (for tests).
    var checks: Int { state.withLock { $0.checks } }
}
