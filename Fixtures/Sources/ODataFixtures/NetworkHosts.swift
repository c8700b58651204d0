import Foundation
import ODataCore

/// Several "hosts" on one machine for fleet tests: Linux network namespaces (`ip netns`, Debian's iproute2),
/// each joined by a veth pair to a bridge of its own, each with its own address on a private /24 that only
/// this machine routes. The process that creates them is on the bridge too (its address is ``bridgeAddress``),
/// so it reaches every host; a server started on a host (``RedisServer/start(port:maxMemory:arguments:on:)``)
/// listens on that host's address only. Everything is removed by ``remove()`` (and when the object goes).
///
/// Making namespaces needs root (or `CAP_NET_ADMIN`) and a kernel that allows them; ``create(count:)``
/// throws a typed error that says what failed, and ``unsupportedReason`` tells a test why to skip.
///
/// ```swift
/// let hosts = try NetworkHosts.create(count: 3)
/// defer { hosts.remove() }
/// let redis = try RedisServer.start(on: hosts.hosts[1])   // listens on 10.x.y.11 in namespace 2
/// ```
public final class NetworkHosts: Sendable {
    /// One host: a network namespace and its address.
    public struct Host: Sendable, Hashable {
        /// The namespace's name (`ip netns exec <name> …`).
        public let namespace: String
        /// Its IPv4 address on the bridge.
        public let address: String
    }

    /// The hosts, in order.
    public let hosts: [Host]
    /// The creating process's address on the bridge.
    public let bridgeAddress: String
    private let bridge: String
    private let removed = LockedValue(false)
    /// Taken while this process chooses a subnet: the lock file's setup lock is one per process.
    private static let choosing = LockedValue(())

    private init(hosts: [Host], bridgeAddress: String, bridge: String) {
        self.hosts = hosts
        self.bridgeAddress = bridgeAddress
        self.bridge = bridge
    }

    deinit { remove() }

    /// Why namespaces cannot be made here, or `nil` when they can (a namespace is made and removed to find out).
    public static var unsupportedReason: String? {
        let name = "odsprobe\(getpid() % 100_000)"
        do {
            try ip(["netns", "add", name])
            try ip(["netns", "delete", name])
            return nil
        } catch {
            return "network namespaces are not available here (\(error)); run as root on Linux with iproute2"
        }
    }

    /// Makes `count` hosts on a new bridge with a /24 of 10.0.0.0/8 that no interface uses yet.
    ///
    /// - Parameter count: How many hosts (1…200).
    /// - Returns: The hosts.
    /// - Throws: ``FixtureError`` `.serverFailure` naming the `ip` command that failed and its message;
    ///   whatever was made is removed.
    public static func create(count: Int) throws(FixtureError) -> NetworkHosts {
        guard (1...200).contains(count) else { throw FixtureError(.serverFailure, "between 1 and 200 hosts, not \(count)") }
        let tag = String(UInt32(truncatingIfNeeded: getpid()) &* 2_654_435_761 &+ UInt32.random(in: 0..<1 << 20), radix: 36).suffix(6)
        let bridge = "odsbr\(tag)"
        // The subnet is chosen and given to the bridge under a lock that other processes take too (CI runs test
        // processes side by side), so that each sees the others' bridges among the addresses in use.
        let subnet = try choosing.withLock { _ throws(FixtureError) in
            let lock: StorageLock
            do { lock = try StorageLock.acquire(URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("odata-network-hosts.lock").path, exclusive: false) } catch {
                throw FixtureError(.serverFailure, "cannot take the lock for choosing a subnet: \(error)")
            }
            defer { lock.release() }
            do {
                return try lock.duringSetup {
                    let used = try ip(["-o", "-4", "addr", "show"])
                    var subnet = "10.213.\(Int.random(in: 1...254))"
                    for _ in 0..<50 where used.contains(" \(subnet).") { subnet = "10.\(Int.random(in: 100...250)).\(Int.random(in: 1...254))" }
                    try ip(["link", "add", bridge, "type", "bridge"])
                    do throws(FixtureError) { try ip(["addr", "add", "\(subnet).1/24", "dev", bridge]) } catch {
                        // The error that says why is the one thrown; a bridge that could not be removed is named in it.
                        do throws(FixtureError) { _ = try ip(["link", "delete", bridge]) } catch let left {
                            throw FixtureError(error, "\(error.message); the bridge \(bridge) stays: \(left.message)")
                        }
                        throw error
                    }
                    return subnet
                }
            } catch let error as FixtureError {
                throw error
            } catch {
                throw FixtureError(.serverFailure, "cannot take the lock for choosing a subnet: \(error)")
            }
        }
        let hosts = (0..<count).map { Host(namespace: "ods\(tag)h\($0)", address: "\(subnet).\($0 + 10)") }
        let made = NetworkHosts(hosts: hosts, bridgeAddress: "\(subnet).1", bridge: bridge)
        do {
            try ip(["link", "set", bridge, "up"])
            for (index, host) in hosts.enumerated() {
                let veth = "odsv\(tag)\(index)"
                try ip(["netns", "add", host.namespace])
                try ip(["link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", host.namespace])
                try ip(["link", "set", veth, "master", bridge, "up"])
                try ip(["-n", host.namespace, "addr", "add", "\(host.address)/24", "dev", "eth0"])
                try ip(["-n", host.namespace, "link", "set", "eth0", "up"])
                try ip(["-n", host.namespace, "link", "set", "lo", "up"])
            }
        } catch {
            made.remove()
            throw error
        }
        return made
    }

    /// The arguments that run `executable` on `host`: `ip netns exec <namespace> <executable>` (which execs it,
    /// so the process ID is the program's).
    public func launcher(for host: Host, executable: String) -> (executable: String, arguments: [String]) {
        (Self.ipExecutable, ["netns", "exec", host.namespace, executable])
    }

    /// Removes the namespaces (their veth pairs go with them) and the bridge; harmless twice.
    public func remove() {
        guard !removed.withLock({ done in defer { done = true }; return done }) else { return }
        for host in hosts { _ = try? Self.ip(["netns", "delete", host.namespace]) }
        _ = try? Self.ip(["link", "delete", bridge])
    }

    static let ipExecutable = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"

    /// Runs `ip arguments…`; its output, or a typed error with its message.
    @discardableResult
    static func ip(_ arguments: [String]) throws(FixtureError) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ipExecutable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw FixtureError(.serverFailure, "ip did not start: \(error)")
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FixtureError(.serverFailure, "ip \(arguments.joined(separator: " ")) failed: \(text.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return text
    }
}
