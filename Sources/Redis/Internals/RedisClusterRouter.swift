import ODataCore
import Synchronization

/// Sends each command to the master of its key's slot in a Redis Cluster, with one ``RedisNodePool`` per node.
///
/// The slot map comes from `CLUSTER SLOTS`, read from the known nodes (masters first, then replicas, then the
/// seeds) at the first command, after a connection failure, after `CLUSTERDOWN`, and when a slot has no
/// master — at most once per ``minimumRefreshInterval``, by one caller at a time. `MOVED` updates the map for its
/// slot and retries there; `ASK` sends `ASKING` and the command once to the named node, on one connection.
/// Redirects are bounded by ``RedisClusterConfiguration/maximumRedirects``.
///
/// Availability is reported per cluster: the handler hears `false` when a first master of the map stops
/// answering and `true` when no master of the map is down any more (a dead master that a replica replaced
/// leaves the map).
final class RedisClusterRouter: Sendable {
    /// At most one slot-map refresh per this interval (a failover or a reshard asks for many).
    static let minimumRefreshNanoseconds: UInt64 = 100_000_000

    private let configuration: RedisConfiguration
    private let cluster: RedisClusterConfiguration
    private let seeds: [RedisNodeAddress]
    private let map = LockedValue(ClusterSlotMap())
    private let pools = LockedValue<[RedisNodeAddress: RedisNodePool]>([:])
    /// Nodes whose pool reported them down, and whether the cluster was last reported down.
    private let availability = LockedValue<(down: Set<RedisNodeAddress>, reported: Bool)>(([], false))
    private let counters = LockedValue(RedisClusterStatistics())
    /// The uptime (ns) of the last refresh; 0 before the first.
    private let lastRefresh = Atomic<UInt64>(0)
    private let refreshing = Atomic<Bool>(false)
    /// Why the last refresh found no map (every node failed), shown when a command finds no master.
    private let refreshFailure = LockedValue<RedisError?>(nil)
    private let onAvailabilityChange: RedisClient.AvailabilityHandler?

    init(configuration: RedisConfiguration, cluster: RedisClusterConfiguration, onAvailabilityChange: RedisClient.AvailabilityHandler?) {
        self.configuration = configuration
        self.cluster = cluster
        self.seeds = [RedisNodeAddress(host: configuration.host, port: configuration.port)] + cluster.seeds
        self.onAvailabilityChange = onAvailabilityChange
    }

    var statistics: RedisClusterStatistics { counters.withLock { $0 } }

    /// The key whose slot a command goes to: the first key of `EVAL`/`EVALSHA script numkeys key…` (the
    /// fourth argument; none when `numkeys` is 0), the second argument of any other command.
    static func key(of arguments: [[UInt8]]) -> [UInt8]? {
        guard arguments.count >= 2 else { return nil }
        let name = arguments[0].map { $0 | 0x20 }  // ASCII lowercase: command names are letters
        if name == evalName || name == evalshaName {
            return arguments.count >= 4 && arguments[2] != [UInt8(ascii: "0")] ? arguments[3] : nil
        }
        return arguments[1]
    }

    private static let evalName = Array("eval".utf8)
    private static let evalshaName = Array("evalsha".utf8)

    /// Whether some master of the map (or, before the first map, a seed) would be tried now.
    var isAvailable: Bool {
        let masters = map.withLock { $0.masters }
        let candidates = masters.isEmpty ? seeds : masters
        return candidates.contains { pool(for: $0).isAvailable }
    }

    /// Whether no master of the map is known to be down.
    var isUp: Bool { !availability.withLock { $0.reported } }

    /// Runs one command on the master of its key's slot (``key(of:)``), following redirects.
    func execute(_ arguments: [[UInt8]]) throws(RedisError) -> RedisReply {
        if lastRefresh.load(ordering: .acquiring) == 0 { refresh(force: true) }
        let slot = Self.key(of: arguments).map(ClusterSlotMap.slot(of:))
        var asking: RedisNodeAddress?
        var redirects = 0
        var retriedAfterFailure = false
        while true {
            guard let address = asking ?? target(for: slot) else {
                // A refused AUTH, say, is worth more to the caller than "no map".
                throw refreshFailure.withLock { $0 } ?? RedisError(.unavailable, "no node of the cluster serves the slot")
            }
            let result = pool(for: address).execute(asking == nil ? [arguments] : [Self.askingCommand, arguments])
            asking = nil
            let error: RedisError
            switch result {
            case .success(let reply): return reply
            case .failure(let failure): error = failure
            }
            if error.isConnectionFailure {
                // The node is down or backing off: read the map again; a replica may have taken over.
                guard !retriedAfterFailure, refresh(force: false), let slot, let now = map.withLock({ $0.master(of: slot) }), now != address
                else { throw error }
                retriedAfterFailure = true
                continue
            }
            guard let redirect = ClusterRedirect(error) else { throw error }
            switch redirect {
            case .clusterDown:
                counters.withLock { $0.clusterDownReplies += 1 }
                refresh(force: false)
                throw error
            case .moved(let movedSlot, let target):
                let target = target.host.isEmpty ? RedisNodeAddress(host: address.host, port: target.port) : target
                counters.withLock { $0.movedRedirects += 1 }
                map.withLock { $0.assign(movedSlot, to: target) }
            case .ask(_, let target):
                counters.withLock { $0.askRedirects += 1 }
                asking = target.host.isEmpty ? RedisNodeAddress(host: address.host, port: target.port) : target
            }
            redirects += 1
            if redirects > cluster.maximumRedirects {
                counters.withLock { $0.redirectLimitsReached += 1 }
                throw RedisError(.serverError, "more than \(cluster.maximumRedirects) redirects")
            }
        }
    }

    /// Closes every node's connections.
    func close() {
        for pool in pools.withLock({ Array($0.values) }) { pool.close() }
    }

    // MARK: Internals

    private static let askingCommand = [Array("ASKING".utf8)]
    private static let slotsCommand = [Array("CLUSTER".utf8), Array("SLOTS".utf8)]

    /// The master of `slot` (a refresh first when the map has none), or any master for a command without a key.
    private func target(for slot: Int?) -> RedisNodeAddress? {
        guard let slot else { return map.withLock { $0.masters.first } ?? seeds[0] }
        if let master = map.withLock({ $0.master(of: slot) }) { return master }
        refresh(force: false)
        return map.withLock { $0.master(of: slot) }
    }

    /// Reads the slot map from the first node that answers `CLUSTER SLOTS`. Without `force`, only when the
    /// last refresh is older than the minimum interval and no other caller refreshes.
    ///
    /// - Returns: Whether a new map was read.
    @discardableResult
    private func refresh(force: Bool) -> Bool {
        let now = RedisNodePool.now()
        let last = lastRefresh.load(ordering: .acquiring)
        if !force, last != 0, now &- last < Self.minimumRefreshNanoseconds { return false }
        guard refreshing.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return false }
        defer { refreshing.store(false, ordering: .releasing) }
        lastRefresh.store(max(now, 1), ordering: .releasing)
        let known = map.withLock { $0.masters + $0.nodes }
        var candidates: [RedisNodeAddress] = []
        for address in known + seeds where !candidates.contains(address) { candidates.append(address) }
        var failure = RedisError(.unexpectedReply, "no node answered CLUSTER SLOTS with a slot map")
        for address in candidates {
            let reply: RedisReply
            switch pool(for: address).execute([Self.slotsCommand]) {
            case .success(let answer): reply = answer
            case .failure(let error):
                failure = error
                continue
            }
            guard let fresh = ClusterSlotMap.parse(reply, answeredBy: address), !fresh.masters.isEmpty else { continue }
            refreshFailure.withLock { $0 = nil }
            map.withLock { $0 = fresh }
            counters.withLock { $0.mapRefreshes += 1 }
            reevaluate(nil)
            return true
        }
        refreshFailure.withLock { $0 = failure }
        return false
    }

    /// Reports a change of the cluster's availability: down while some master of the map (before the first
    /// map: some seed) is down, up again when none is — a dead master that a replica replaced leaves the map.
    private func reevaluate(_ failure: RedisError?) {
        let masters = Set(map.withLock { $0.masters })
        let change = availability.withLock { state -> Bool? in
            let degraded = masters.isEmpty ? !state.down.isEmpty : !state.down.isDisjoint(with: masters)
            guard degraded != state.reported else { return nil }
            state.reported = degraded
            return !degraded
        }
        if let available = change { onAvailabilityChange?(available, available ? nil : failure) }
    }

    /// The pool of `address`, made at its first use.
    private func pool(for address: RedisNodeAddress) -> RedisNodePool {
        pools.withLock { pools in
            if let pool = pools[address] { return pool }
            var node = configuration
            node.host = address.host
            node.port = address.port
            node.cluster = nil
            let pool = RedisNodePool(configuration: node) { [weak self] available, failure in
                self?.nodeChanged(address, available: available, failure: failure)
            }
            pools[address] = pool
            return pool
        }
    }

    private func nodeChanged(_ address: RedisNodeAddress, available: Bool, failure: RedisError?) {
        availability.withLock { state in
            if available { state.down.remove(address) } else { state.down.insert(address) }
        }
        reevaluate(failure)
    }
}
