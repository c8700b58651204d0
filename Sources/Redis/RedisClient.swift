import ODataCore

/// A thread-safe client of one Redis server or a Redis Cluster over hiredis, with timeouts and a back-off after
/// failures.
///
/// hiredis contexts are not thread-safe; the client keeps up to ``RedisConfiguration/maximumConnections``
/// of them, each behind its own lock, and a caller takes a free one (or waits for one). Commands are
/// blocking calls bounded by ``RedisConfiguration/commandTimeout``: call them from threads of your own or
/// accept that a call holds its thread for at most that long.
///
/// After a connection failure (refused, timeout, lost) the client is *unavailable* for
/// ``RedisConfiguration/retryInterval``: commands throw ``RedisError/unavailable`` at once, without a
/// connect, so an outage costs one failed attempt per interval rather than one per call. The next call
/// after the interval probes the server (only one caller does); success makes the client available again
/// and every older connection is replaced.
///
/// ```swift
/// let redis = try RedisClient(configuration: RedisConfiguration(port: 6379))
/// try redis.set("greeting", value: Array("hello".utf8), expiresAfter: .seconds(60))
/// let value = try redis.get("greeting")   // [UInt8]? — nil when absent
/// ```
///
/// With ``RedisConfiguration/cluster`` the client speaks to a Redis Cluster: it reads the slot map
/// (`CLUSTER SLOTS`) from a seed, sends each command to the master of its key's slot (the second argument is
/// the key; for `EVAL` and `EVALSHA` the first key after `numkeys`), keeps one pool of connections per node, follows `MOVED` (the map is updated) and `ASK` (`ASKING`
/// and one retry) redirects up to ``RedisClusterConfiguration/maximumRedirects``, and reads the map again
/// after a connection failure or `CLUSTERDOWN`. The back-off is per node: a dead master fails only the calls
/// for its slots until a replica takes over.
///
/// ## Topics
/// - ``command(_:)-([[UInt8]])``
/// - ``get(_:)-([UInt8])``
/// - ``set(_:value:expiresAfter:)-([UInt8],_,_)``
/// - ``delete(_:)``
/// - ``expire(_:after:)``
/// - ``ping()``
/// - ``isAvailable``
/// - ``keySlot(_:)``
/// - ``clusterStatistics``
public final class RedisClient: Sendable {
    /// Where the client connects and how long it waits.
    public let configuration: RedisConfiguration

    /// A change of availability: `true` when the server answers again, `false` when it stopped answering
    /// (with the failure that showed it). Called once per change, on the thread of the call that saw it.
    public typealias AvailabilityHandler = @Sendable (_ available: Bool, _ failure: RedisError?) -> Void

    /// One server's connections, or a cluster's router with one such pool per node.
    private enum Backend: Sendable {
        case single(RedisNodePool)
        case cluster(RedisClusterRouter)
    }

    private let backend: Backend

    /// Creates a client; nothing connects until the first command.
    ///
    /// - Parameters:
    ///   - configuration: Host, port, timeouts, back-off, connections.
    ///   - onAvailabilityChange: Called when the server stops or starts answering again. The default is `nil`.
    /// - Throws: ``RedisError/invalidArgument`` for a value out of range.
    public init(configuration: RedisConfiguration, onAvailabilityChange: AvailabilityHandler? = nil) throws(RedisError) {
        try configuration.validate()
        self.configuration = configuration
        if let cluster = configuration.cluster {
            backend = .cluster(RedisClusterRouter(configuration: configuration, cluster: cluster, onAvailabilityChange: onAvailabilityChange))
        } else {
            backend = .single(RedisNodePool(configuration: configuration, onAvailabilityChange: onAvailabilityChange))
        }
    }

    /// Whether the client would try the server now (it is not backing off after a failure). For a cluster:
    /// whether some node that serves slots would be tried (a node backing off fails only its own slots' calls).
    public var isAvailable: Bool {
        switch backend {
        case .single(let pool): return pool.isAvailable
        case .cluster(let router): return router.isAvailable
        }
    }

    /// Whether the last command that reached a verdict found the server answering (for a cluster: every node
    /// that serves slots).
    public var isUp: Bool {
        switch backend {
        case .single(let pool): return pool.isUp
        case .cluster(let router): return router.isUp
        }
    }

    /// What the cluster router did since the client was created (redirects, map refreshes); all zero for a
    /// single server.
    public var clusterStatistics: RedisClusterStatistics {
        switch backend {
        case .single: return RedisClusterStatistics()
        case .cluster(let router): return router.statistics
        }
    }

    // MARK: Commands

    /// Runs one command with binary-safe arguments (the command name first).
    ///
    /// - Parameter arguments: The command and its arguments, each sent with its length.
    /// - Returns: The server's reply.
    /// - Throws: ``RedisError`` `.unavailable` while backing off; `.connectionFailed`, `.timeout`,
    ///   `.connectionLost` or `.protocolError` when the connection failed (the back-off starts);
    ///   `.serverError` for an error reply; `.invalidArgument` for an empty command. In a cluster the second
    ///   argument is taken as the key — for `EVAL` and `EVALSHA` the first key, the fourth — (a command of
    ///   several keys needs them in one slot: hash tags), and
    ///   `.serverError` also means `CLUSTERDOWN` or more redirects than allowed.
    public func command(_ arguments: [[UInt8]]) throws(RedisError) -> RedisReply {
        guard !arguments.isEmpty else { throw RedisError(.invalidArgument, "a command needs a name") }
        switch backend {
        case .single(let pool): return try pool.execute([arguments]).get()
        case .cluster(let router): return try router.execute(arguments)
        }
    }

    /// Runs one command given as text arguments (the command name first).
    ///
    /// - Parameter arguments: The command and its arguments.
    /// - Returns: The server's reply.
    /// - Throws: As ``command(_:)-([[UInt8]])``.
    public func command(_ arguments: String...) throws(RedisError) -> RedisReply {
        try command(arguments.map { Array($0.utf8) })
    }

    /// `GET key`.
    ///
    /// - Parameter key: The key's bytes.
    /// - Returns: The value, or `nil` when the key does not exist (or expired).
    /// - Throws: As ``command(_:)-([[UInt8]])``; ``RedisError/unexpectedReply`` for a non-string value.
    public func get(_ key: [UInt8]) throws(RedisError) -> [UInt8]? {
        switch try command([Self.getName, key]) {
        case .bulkString(let value): return value
        case .null: return nil
        default: throw RedisError(.unexpectedReply, "GET did not answer a string")
        }
    }

    /// `GET key` with a text key.
    ///
    /// - Parameter key: The key.
    /// - Returns: The value, or `nil` when the key does not exist.
    /// - Throws: As ``get(_:)-([UInt8])``.
    public func get(_ key: String) throws(RedisError) -> [UInt8]? {
        try get(Array(key.utf8))
    }

    /// `SET key value [PX milliseconds]`.
    ///
    /// - Parameters:
    ///   - key: The key's bytes.
    ///   - value: The value's bytes.
    ///   - expiresAfter: The time to live (rounded up to whole milliseconds), or `nil` for none.
    /// - Throws: As ``command(_:)-([[UInt8]])``; ``RedisError/invalidArgument`` for a time to live that is
    ///   not positive.
    public func set(_ key: [UInt8], value: [UInt8], expiresAfter: Duration? = nil) throws(RedisError) {
        var arguments = [Self.setName, key, value]
        if let expiresAfter {
            arguments += [Self.pxName, Array(String(try Self.milliseconds(expiresAfter)).utf8)]
        }
        guard case .status = try command(arguments) else { throw RedisError(.unexpectedReply, "SET did not answer OK") }
    }

    /// `SET key value [PX milliseconds]` with a text key.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value's bytes.
    ///   - expiresAfter: The time to live, or `nil`.
    /// - Throws: As ``set(_:value:expiresAfter:)-([UInt8],_,_)``.
    public func set(_ key: String, value: [UInt8], expiresAfter: Duration? = nil) throws(RedisError) {
        try set(Array(key.utf8), value: value, expiresAfter: expiresAfter)
    }

    /// `DEL key…`.
    ///
    /// - Parameter keys: The keys' bytes.
    /// - Returns: How many keys existed and were removed.
    /// - Throws: As ``command(_:)-([[UInt8]])``.
    @discardableResult
    public func delete(_ keys: [[UInt8]]) throws(RedisError) -> Int {
        guard !keys.isEmpty else { return 0 }
        guard case .integer(let count) = try command([Self.delName] + keys) else {
            throw RedisError(.unexpectedReply, "DEL did not answer an integer")
        }
        return Int(count)
    }

    /// `PEXPIRE key milliseconds`: sets a key's time to live.
    ///
    /// - Parameters:
    ///   - key: The key's bytes.
    ///   - after: The time to live (rounded up to whole milliseconds).
    /// - Returns: `true` when the key exists and got the time to live.
    /// - Throws: As ``command(_:)-([[UInt8]])``; ``RedisError/invalidArgument`` when `after` is not positive.
    @discardableResult
    public func expire(_ key: [UInt8], after: Duration) throws(RedisError) -> Bool {
        guard case .integer(let set) = try command([Self.pexpireName, key, Array(String(try Self.milliseconds(after)).utf8)]) else {
            throw RedisError(.unexpectedReply, "PEXPIRE did not answer an integer")
        }
        return set == 1
    }

    /// `PING`: checks that the server answers.
    ///
    /// - Throws: As ``command(_:)-([[UInt8]])``.
    public func ping() throws(RedisError) {
        guard case .status("PONG") = try command([Array("PING".utf8)]) else { throw RedisError(.unexpectedReply, "PING did not answer PONG") }
    }

    /// The Redis Cluster slot of `key` (0…16383): CRC16 of the key, or of its hash tag — the part between the
    /// first `{` and the next `}` when that part is not empty — so `{user42}.a` and `{user42}.b` share a slot.
    ///
    /// - Parameter key: The key's bytes.
    /// - Returns: Its slot.
    public static func keySlot(_ key: [UInt8]) -> Int {
        ClusterSlotMap.slot(of: key)
    }

    /// Closes every connection; the next command connects again.
    public func close() {
        switch backend {
        case .single(let pool): pool.close()
        case .cluster(let router): router.close()
        }
    }

    // MARK: Internals

    private static let getName = Array("GET".utf8)
    private static let setName = Array("SET".utf8)
    private static let pxName = Array("PX".utf8)
    private static let delName = Array("DEL".utf8)
    private static let pexpireName = Array("PEXPIRE".utf8)

    private static func milliseconds(_ duration: Duration) throws(RedisError) -> Int64 {
        guard duration > .zero else { throw RedisError(.invalidArgument, "a time to live must be positive") }
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}
