import Foundation
import ODataCore
#if canImport(Glibc)
import Glibc
#endif

/// A running Redis Cluster of Debian `redis-server`s on 127.0.0.1 (or spread over the hosts of
/// ``NetworkHosts``) for tests of the cache's Redis tier:
/// masters and replicas on free ports (each a ``RedisServer`` with `cluster-enabled yes` and its own
/// cluster bus port), joined by `redis-cli --cluster create … --cluster-replicas N --cluster-yes`, every node
/// stopped by its PID.
///
/// With `user`, every node has that ACL user (all keys and commands, the password given) and the `default`
/// user is switched off; replicas replicate as that user and `redis-cli` authenticates as it.
///
/// ```swift
/// let cluster = try RedisCluster.start()               // 3 masters + 3 replicas
/// defer { cluster.stop() }
/// let master = try cluster.master(servingSlot: 0)
/// master.kill()                                         // a replica takes over
/// try cluster.waitUntilHealthy(excluding: [master.port])
/// ```
public final class RedisCluster: Sendable {
    /// Every node, masters and replicas, in the order they were created (the first `masters` were masters);
    /// a node started again by ``restart(_:)`` takes its place.
    public var nodes: [RedisServer] { nodeList.withLock { $0 } }
    private let nodeList: LockedValue<[RedisServer]>
    /// The ACL user every node knows, or `nil` when the `default` user is open.
    public let user: (name: String, password: String)?
    /// How long a node may be unreachable before the others count it as failed (`cluster-node-timeout`).
    public let nodeTimeout: Duration

    private init(nodes: [RedisServer], user: (name: String, password: String)?, nodeTimeout: Duration) {
        self.nodeList = LockedValue(nodes)
        self.user = user
        self.nodeTimeout = nodeTimeout
    }

    deinit { stop() }

    /// The executable that creates and inspects the cluster: `$REDIS_CLI`, else `/usr/bin/redis-cli`.
    public static var cliExecutable: String {
        if let path = ProcessInfo.processInfo.environment["REDIS_CLI"], !path.isEmpty { return path }
        return "/usr/bin/redis-cli"
    }

    /// Starts `masters × (1 + replicasPerMaster)` nodes, creates the cluster and waits until every node
    /// reports `cluster_state:ok` with every slot assigned and every node known.
    ///
    /// - Parameters:
    ///   - masters: How many masters share the 16,384 slots. The default is 3.
    ///   - replicasPerMaster: Replicas of each master. The default is 1.
    ///   - user: An ACL user (name, password) that every client must authenticate as; the default `nil`
    ///     leaves the `default` user open.
    ///   - nodeTimeout: `cluster-node-timeout`: a failover starts about this long after a master dies. The
    ///     default is 1 s.
    ///   - hosts: Hosts to spread the nodes over, in turn (node *i* on host *i* mod their count); the default
    ///     `nil` puts every node on 127.0.0.1.
    /// - Returns: The running cluster.
    /// - Throws: ``FixtureError`` `.serverFailure` when redis-server or redis-cli is missing (run
    ///   `make deps`), a node does not start, or the cluster is not healthy within 30 seconds.
    public static func start(masters: Int = 3, replicasPerMaster: Int = 1, user: (name: String, password: String)? = nil,
                             nodeTimeout: Duration = .seconds(1), hosts: [NetworkHosts.Host]? = nil) throws(FixtureError) -> RedisCluster {
        guard FileManager.default.isExecutableFile(atPath: cliExecutable) else {
            throw FixtureError(.serverFailure, "redis-cli is not installed at \(cliExecutable): run `make deps`")
        }
        var arguments = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                         "--cluster-node-timeout", String(milliseconds(nodeTimeout)),
                         "--cluster-require-full-coverage", "yes", "--cluster-allow-replica-migration", "no"]
        if let user {
            arguments += ["--user", user.name, "on", ">\(user.password)", "~*", "&*", "+@all",
                          "--user", "default", "off",
                          "--masteruser", user.name, "--masterauth", user.password]
        }
        var nodes: [RedisServer] = []
        do {
            for index in 0..<(masters * (1 + replicasPerMaster)) {
                nodes.append(try startNode(arguments: arguments, on: hosts.flatMap { $0.isEmpty ? nil : $0[index % $0.count] }))
            }
        } catch {
            for node in nodes { node.stop() }
            throw error
        }
        let cluster = RedisCluster(nodes: nodes, user: user, nodeTimeout: nodeTimeout)
        let addresses = nodes.map { "\($0.address):\($0.port)" }
        _ = try cluster.cli(["--cluster", "create"] + addresses + ["--cluster-replicas", String(replicasPerMaster), "--cluster-yes"])
        try cluster.waitUntilHealthy()
        return cluster
    }

    /// A node with its own cluster bus port (`cluster-port`), retried when another process takes a port first.
    private static func startNode(arguments: [String], on host: NetworkHosts.Host?) throws(FixtureError) -> RedisServer {
        var lastError = FixtureError(.serverFailure, "a cluster node did not start")
        for _ in 0..<5 {
            do {
                return try RedisServer.start(port: RedisServer.freePort(),
                                             arguments: arguments + ["--cluster-port", String(RedisServer.freePort())], on: host)
            } catch { lastError = error }
        }
        throw lastError
    }

    /// Starts a killed node again on its port with its `nodes.conf`: it rejoins the cluster — a master that a
    /// replica replaced meanwhile as that replica's replica. Wait with ``waitUntilHealthy(excluding:timeout:)``.
    ///
    /// - Parameter node: A node of this cluster, killed (``RedisServer/kill()``).
    /// - Returns: The node's new server, now in ``nodes`` in its place.
    /// - Throws: ``FixtureError`` `.serverFailure` when `node` is not one of this cluster's, still runs, or
    ///   does not start.
    @discardableResult
    public func restart(_ node: RedisServer) throws(FixtureError) -> RedisServer {
        guard nodes.contains(where: { $0 === node }) else {
            throw FixtureError(.serverFailure, "port \(node.port) is not a node of this cluster")
        }
        let restarted = try node.restart()
        nodeList.withLock { nodes in
            if let index = nodes.firstIndex(where: { $0 === node }) { nodes[index] = restarted }
        }
        return restarted
    }

    /// The running nodes (those not killed or stopped).
    public var runningNodes: [RedisServer] { nodes.filter(\.isRunning) }

    /// Runs `redis-cli` with the cluster's user, for example `["-p", "7000", "CLUSTER", "INFO"]`.
    ///
    /// - Parameter arguments: Its arguments after the authentication options.
    /// - Returns: What it printed on standard output.
    /// - Throws: ``FixtureError`` `.serverFailure` when it exits with a failure or prints an error reply
    ///   (`ERR`, `MOVED`, …) with the password removed.
    @discardableResult
    public func cli(_ arguments: [String]) throws(FixtureError) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.cliExecutable)
        var environment = ProcessInfo.processInfo.environment
        var authentication: [String] = []
        if let user {
            authentication = ["--user", user.name, "--no-auth-warning"]
            environment["REDISCLI_AUTH"] = user.password  // not on the command line, where `ps` shows it
        }
        process.environment = environment
        process.arguments = authentication + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw FixtureError(.serverFailure, "redis-cli did not start: \(error)")
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var text = String(decoding: data, as: UTF8.self)
        if let user { text = text.replacingOccurrences(of: user.password, with: "<password>") }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let failed = ["ERR", "MOVED", "ASK", "CLUSTERDOWN", "NOAUTH", "WRONGPASS", "Could not connect", "[ERR]"].contains { trimmed.hasPrefix($0) }
        guard process.terminationStatus == 0, !failed else {
            throw FixtureError(.serverFailure, "redis-cli \(arguments.prefix(3).joined(separator: " ")) failed: \(trimmed.prefix(400))")
        }
        return text
    }

    /// Runs one command on the node listening on `port` through `redis-cli`.
    ///
    /// - Parameters:
    ///   - port: The node's port.
    ///   - command: The command and its arguments.
    /// - Returns: What redis-cli printed.
    /// - Throws: As ``cli(_:)``.
    @discardableResult
    public func command(on port: Int, _ command: String...) throws(FixtureError) -> String {
        let address = nodes.first { $0.port == port }?.address ?? "127.0.0.1"
        return try cli(["-h", address, "-p", String(port)] + command)
    }

    /// One line of `CLUSTER NODES`: a node's ID, address, role, master and slots, as one running node sees it.
    public struct NodeInfo: Sendable, Hashable {
        /// The node's ID.
        public var id: String
        /// Its client port (on its address: 127.0.0.1, or its host's).
        public var port: Int
        /// Whether it is a master (not a replica).
        public var isMaster: Bool
        /// Whether the cluster counts it as failed (`fail` or `fail?`).
        public var isFailed: Bool
        /// The ID of its master when it is a replica.
        public var masterID: String?
        /// The slot ranges it serves (masters).
        public var slots: [ClosedRange<Int>]
    }

    /// The cluster's nodes as the running node at `port` (the default: the first running node) sees them.
    ///
    /// - Parameter port: The node to ask, or `nil`.
    /// - Returns: One ``NodeInfo`` per node.
    /// - Throws: As ``cli(_:)``; `.serverFailure` when no node runs.
    public func nodeInfos(askingPort port: Int? = nil) throws(FixtureError) -> [NodeInfo] {
        guard let asked = port ?? runningNodes.first?.port else { throw FixtureError(.serverFailure, "no cluster node runs") }
        return try command(on: asked, "CLUSTER", "NODES").split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 8, let portText = fields[1].split(separator: "@").first?.split(separator: ":").last,
                  let port = Int(portText) else { return nil }
            let flags = fields[2].split(separator: ",")
            let slots: [ClosedRange<Int>] = fields.dropFirst(8).compactMap { range in
                guard !range.hasPrefix("[") else { return nil }  // a slot being migrated or imported
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                guard let low = bounds.first, let high = bounds.last else { return nil }
                return low...high
            }
            return NodeInfo(id: fields[0], port: port, isMaster: flags.contains("master"),
                            isFailed: flags.contains("fail") || flags.contains("fail?"),
                            masterID: fields[3] == "-" ? nil : fields[3], slots: slots)
        }
    }

    /// The running master that serves `slot`, as the cluster sees it now.
    ///
    /// - Parameter slot: A slot, 0…16383.
    /// - Returns: Its master.
    /// - Throws: `.serverFailure` when no running master serves it.
    public func master(servingSlot slot: Int) throws(FixtureError) -> RedisServer {
        let infos = try nodeInfos()
        guard let info = infos.first(where: { $0.isMaster && !$0.isFailed && $0.slots.contains { $0.contains(slot) } }),
              let node = runningNodes.first(where: { $0.port == info.port })
        else { throw FixtureError(.serverFailure, "no running master serves slot \(slot)") }
        return node
    }

    /// Waits until every running node not in `excluding` reports `cluster_state:ok`, and sees every slot
    /// served by a master that is not failed and that runs (after a failover: the replica promoted).
    ///
    /// - Parameters:
    ///   - excluding: Ports of nodes killed on purpose, whose state is not waited for.
    ///   - timeout: The longest wait. The default is 30 s.
    /// - Throws: `.serverFailure` naming what was still wrong when the time is up.
    public func waitUntilHealthy(excluding: Set<Int> = [], timeout: Duration = .seconds(30)) throws(FixtureError) {
        let deadline = ContinuousClock.now + timeout
        var problem = "not asked yet"
        while ContinuousClock.now < deadline {
            problem = healthProblem(excluding: excluding) ?? ""
            if problem.isEmpty { return }
            usleep(20_000)  // a poll of the nodes' state, not a wait for a guessed duration
        }
        throw FixtureError(.serverFailure, "the cluster is not healthy: \(problem)")
    }

    /// Waits until every replica holds as many keys as its master (`DBSIZE`, polled): replication is
    /// asynchronous, and a test that kills a master wants its replica to hold what the master held.
    ///
    /// - Parameter timeout: The longest wait. The default is 20 s.
    /// - Throws: `.serverFailure` naming a pair that still differs when the time is up, or a node that does not answer.
    public func waitUntilReplicasCaughtUp(timeout: Duration = .seconds(20)) throws(FixtureError) {
        let deadline = ContinuousClock.now + timeout
        let infos = try nodeInfos()
        let pairs = infos.filter { !$0.isMaster }.compactMap { replica in
            infos.first { $0.id == replica.masterID }.map { (master: $0.port, replica: replica.port) }
        }
        func keys(_ port: Int) throws(FixtureError) -> Int {
            Int(try command(on: port, "DBSIZE").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        for pair in pairs {
            var held = (try keys(pair.master), try keys(pair.replica))
            while held.0 != held.1 {
                guard ContinuousClock.now < deadline else {
                    throw FixtureError(.serverFailure, "replica \(pair.replica) holds \(held.1) keys, its master \(pair.master) \(held.0)")
                }
                usleep(10_000)  // a poll of the replication, not a wait for a guessed duration
                held = (try keys(pair.master), try keys(pair.replica))
            }
        }
    }

    /// What keeps the cluster from being healthy, or `nil`.
    private func healthProblem(excluding: Set<Int>) -> String? {
        let running = Set(runningNodes.map(\.port))
        for node in runningNodes where !excluding.contains(node.port) {
            do {
                let info = try command(on: node.port, "CLUSTER", "INFO")
                guard info.contains("cluster_state:ok"), info.contains("cluster_slots_assigned:16384") else {
                    return "node \(node.port): \(info.split(separator: "\n").prefix(3).joined(separator: ", "))"
                }
                let infos = try nodeInfos(askingPort: node.port)
                let served = infos.filter { $0.isMaster && !$0.isFailed && running.contains($0.port) }
                    .flatMap(\.slots).reduce(0) { $0 + $1.count }
                guard served == 16384 else { return "node \(node.port) sees \(served) slots served by running masters" }
                guard infos.count == nodes.count else { return "node \(node.port) knows \(infos.count) of \(nodes.count) nodes" }
            } catch {
                return "node \(node.port): \(error)"
            }
        }
        return nil
    }

    /// Stops every node by its PID; harmless when already stopped.
    public func stop() {
        for node in nodes { node.stop() }
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
