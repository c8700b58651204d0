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
    /// use, a check, an eviction) copies one pointer, not the entry's fields: at 100k entries copying
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
        /// The last transaction ID at which the stored value was seen to carry `held.tag` (the ID noted
        /// before the read: the read's snapshot is that one or later).
        var checkedAt: UInt64
        /// Whether every own commit after `checkedAt` is applied here with this slot present (it was not
        /// when the slot was checked at an ID below the last own commit applied): only then can own commits
        /// vouch for it.
        var followed: Bool
    }

    /// A held entry in the recency list: a doubly linked list through `State.nodes` by index, most recently
    /// used at `newest`, so that a use moves it and an eviction takes `oldest` in constant time (no sort).
    private struct Node {
        let url: String
        var slot: Slot
        var older: Int
        var newer: Int
    }

    private struct State {
        /// The node of each held URL.
        var index: [String: Int] = [:]
        /// The nodes by index; `nil` where `free` lists the index for reuse.
        var nodes: [Node?] = []
        var free: [Int] = []
        var newest = -1
        var oldest = -1
        /// The URL of each held entry's LMDB key: an own commit names keys.
        var urls: [TouchKey: String] = [:]
        var bytes = 0
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

        var count: Int { index.count }

        mutating func remove(_ url: String) {
            guard let node = index.removeValue(forKey: url), let old = nodes[node] else { return }
            unlink(node)
            nodes[node] = nil
            free.append(node)
            bytes -= old.slot.held.bytes
            urls[TouchKey(old.slot.held.key)] = nil
        }

        /// Holds `slot` for `url` as the most recently used.
        mutating func insert(_ slot: Slot, url: String) {
            if let node = index[url], let old = nodes[node] {
                bytes -= old.slot.held.bytes
                nodes[node]?.slot = slot
                use(node)
            } else {
                let node = free.popLast() ?? nodes.count
                let fresh = Node(url: url, slot: slot, older: -1, newer: -1)
                if node == nodes.count { nodes.append(fresh) } else { nodes[node] = fresh }
                index[url] = node
                linkNewest(node)
            }
            bytes += slot.held.bytes
            urls[TouchKey(slot.held.key)] = url
        }

        mutating func use(_ node: Int) {
            guard newest != node else { return }
            unlink(node)
            linkNewest(node)
        }

        private mutating func unlink(_ node: Int) {
            guard let links = nodes[node] else { return }
            if links.older >= 0 { nodes[links.older]?.newer = links.newer } else { oldest = links.newer }
            if links.newer >= 0 { nodes[links.newer]?.older = links.older } else { newest = links.older }
        }

        private mutating func linkNewest(_ node: Int) {
            nodes[node]?.older = newest
            nodes[node]?.newer = -1
            if newest >= 0 { nodes[newest]?.newer = node } else { oldest = node }
            newest = node
        }

        mutating func removeAll() {
            index.removeAll()
            nodes.removeAll()
            free.removeAll()
            urls.removeAll()
            newest = -1
            oldest = -1
            bytes = 0
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
            guard let node = state.index[url], let slot = state.nodes[node]?.slot else { return nil }
            guard slot.held.generation == generation else {
                state.remove(url)
                return nil
            }
            state.use(node)
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
            guard let node = state.index[url], let slot = state.nodes[node]?.slot, slot.held.tag == tag else { return nil }
            return slot.held.entry
        }
    }

    /// Records that the stored value for `url` still carried the held tag at `transaction`.
    func confirm(_ url: String, tag: CacheEntry.SealedTag, at transaction: UInt64) {
        state.withLock { state in
            guard let node = state.index[url], state.nodes[node]?.slot.held.tag == tag else { return }
            state.nodes[node]?.slot.checkedAt = transaction
            state.nodes[node]?.slot.followed = transaction >= state.trusted
        }
    }

    /// Applies a commit of this process: the entries whose keys it changed are dropped (all of them when it
    /// changed keys it does not list), and the run of own commits that vouches for the others goes on — or
    /// starts again at the commit before it, when that one was not the last own commit applied (another
    /// process committed in between: an entry checked before that is read again).
    func ownCommit(_ commit: LMDBCommit) {
        state.withLock { state in
            if commit.unlisted {
                state.removeAll()
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
    /// used entries while over budget (each in constant time). An entry larger than a quarter of the budget is
    /// not held.
    func hold(_ entry: CacheEntry, url: String, key: [UInt8], generation: UInt64, tag: CacheEntry.SealedTag, at transaction: UInt64) {
        let bytes = Self.cost(of: entry, url: url)
        guard budget > 0, bytes <= budget / 4 else { return forget(url) }
        var bare = entry
        bare.readAt = nil
        bare.sealedTag = tag
        let held = Held(entry: bare, key: key, generation: generation, tag: tag, bytes: bytes)
        state.withLock { state in
            state.insert(Slot(held: held, checkedAt: transaction, followed: transaction >= state.trusted), url: url)
            while state.bytes > budget, state.oldest >= 0, let oldest = state.nodes[state.oldest] {
                state.remove(oldest.url)
            }
        }
    }

    /// Drops what is held for `url`.
    func forget(_ url: String) {
        state.withLock { state in state.remove(url) }
    }

    /// Drops everything (rekey, reset); the run of own commits goes on.
    func removeAll() {
        state.withLock { state in state.removeAll() }
    }

    /// The number of entries and bytes held (for tests).
    var usage: (count: Int, bytes: Int) { state.withLock { ($0.count, $0.bytes) } }

    /// The lookups that found an entry held but not known current, so read its stored tag (for tests).
    var checks: Int { state.withLock { $0.checks } }
}
