// The soak's Redis tier, shared by the `active` store and the second process: one redis-server (the
// default profile), killed at 40 % of the run and started again on its port at 70 %; or, with `--cluster`,
// a Redis Cluster of 3 masters and 3 replicas whose master of a random slot is SIGKILLed at 40 % (a replica
// takes over) and started again at 70 % (it rejoins as a replica). No answer may be wrong meanwhile, and the
// cluster must be healthy again at the end.
import Foundation
import ODataCore
import ODataFixtures
import Redis
import TechnicalCache

/// The soak's Redis: one server or a cluster, with the outage it injects.
final class SoakTier: Sendable {
    private enum Backend {
        case single(port: Int)
        case cluster(RedisCluster)
    }

    private let backend: Backend
    private let server = LockedValue<RedisServer?>(nil)
    /// The cluster node killed by ``injectOutage(figures:seed:)``, until ``recover(figures:)`` starts it again.
    private let killed = LockedValue<RedisServer?>(nil)

    private init(backend: Backend, server: RedisServer?) {
        self.backend = backend
        self.server.withLock { $0 = server }
    }

    /// Starts one redis-server, or a 3 + 3 cluster (`cluster`).
    static func start(cluster: Bool) throws(FixtureError) -> SoakTier {
        if cluster {
            return SoakTier(backend: .cluster(try RedisCluster.start(masters: 3, replicasPerMaster: 1)), server: nil)
        }
        let server = try RedisServer.start(maxMemory: 64 << 20)
        return SoakTier(backend: .single(port: server.port), server: server)
    }

    /// How the second process finds the tier: `<port>` or `cluster:<port>,<port>,…` (every node a seed).
    var argument: String {
        switch backend {
        case .single(let port): String(port)
        case .cluster(let cluster): "cluster:" + cluster.nodes.map { String($0.port) }.joined(separator: ",")
        }
    }

    /// The tier configuration for ``argument`` (the soak's namespace, the default bound and timeouts).
    static func configuration(_ argument: String) -> RedisTierConfiguration? {
        if argument.hasPrefix("cluster:") {
            let ports = argument.dropFirst("cluster:".count).split(separator: ",").compactMap { Int($0) }
            guard !ports.isEmpty else { return nil }
            return RedisTierConfiguration(cluster: ports.map { RedisNodeAddress(host: "127.0.0.1", port: $0) }, namespace: "soak")
        }
        return Int(argument).map { RedisTierConfiguration(port: $0, namespace: "soak") }
    }

    /// The outage: the single server, or the master of a random slot, SIGKILLed.
    func injectOutage(figures: Figures, seed: UInt64) {
        switch backend {
        case .single:
            server.withLock { $0?.kill() }
            figures.add("redis outages (injected)")
        case .cluster(let cluster):
            var random = SeededRandom(seed: seed)
            do {
                let victim = try cluster.master(servingSlot: Int.random(in: 0..<16384, using: &random))
                victim.kill()
                killed.withLock { $0 = victim }
                figures.add("redis outages (injected)")
                figures.add("redis cluster: masters SIGKILLed")
            } catch {
                print("odata-soak: no master to kill: \(error)")
                figures.add("redis cluster: not healthy at the end")
            }
        }
    }

    /// The end of the outage: the server started again on its port, or the killed master restarted (it
    /// rejoins as a replica once a replica took over).
    func recover(figures: Figures) {
        switch backend {
        case .single(let port):
            do {
                let restarted = try RedisServer.start(port: port, maxMemory: 64 << 20)
                server.withLock { $0 = restarted }
            } catch {
                print("odata-soak: redis-server did not start again on port \(port): \(error)")
            }
        case .cluster(let cluster):
            guard let victim = killed.withLock({ node in defer { node = nil }; return node }) else { return }
            do {
                try cluster.restart(victim)
                figures.add("redis cluster: masters restarted")
            } catch {
                print("odata-soak: the killed master did not start again: \(error)")
                figures.add("redis cluster: not healthy at the end")
            }
        }
    }

    /// After the run: a cluster must be healthy again, every node running (counted as a must-be-zero figure).
    func checkHealth(figures: Figures) {
        guard case .cluster(let cluster) = backend else { return }
        do {
            try cluster.waitUntilHealthy(timeout: .seconds(20))
            if cluster.runningNodes.count != cluster.nodes.count { figures.add("redis cluster: not healthy at the end") }
        } catch {
            print("odata-soak: \(error)")
            figures.add("redis cluster: not healthy at the end")
        }
    }

    /// Stops every server by its PID.
    func stop() {
        switch backend {
        case .single: server.withLock { $0?.stop() }
        case .cluster(let cluster): cluster.stop()
        }
    }
}
