import Dispatch
import ODataCore
import Synchronization

/// A thread-safe client of one Redis server over hiredis, with timeouts and a back-off after failures.
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
/// ## Topics
/// - ``command(_:)-([[UInt8]])``
/// - ``get(_:)-([UInt8])``
/// - ``set(_:value:expiresAfter:)-([UInt8],_,_)``
/// - ``delete(_:)``
/// - ``expire(_:after:)``
/// - ``ping()``
/// - ``isAvailable``
public final class RedisClient: Sendable {
    /// Where the client connects and how long it waits.
    public let configuration: RedisConfiguration

    /// A change of availability: `true` when the server answers again, `false` when it stopped answering
    /// (with the failure that showed it). Called once per change, on the thread of the call that saw it.
    public typealias AvailabilityHandler = @Sendable (_ available: Bool, _ failure: RedisError?) -> Void

    private final class Slot: Sendable {
        /// The connection and the generation it was made in; held for a whole command (a hiredis context is
        /// not thread-safe). A pthread mutex (`LockedValue`), which ThreadSanitizer sees, not `Mutex`.
        let state = LockedValue<(connection: RedisConnection?, generation: UInt64)>((nil, 0))
    }

    private let slots: [Slot]
    private let nextSlot = Atomic<Int>(0)
    /// Connections made before a failure of the server are not used again.
    private let generation = Atomic<UInt64>(1)
    /// 0 while available; otherwise the uptime (ns) before which calls are not tried.
    private let downUntil = Atomic<UInt64>(0)
    private let onAvailabilityChange: AvailabilityHandler?

    /// Creates a client; nothing connects until the first command.
    ///
    /// - Parameters:
    ///   - configuration: Host, port, timeouts, back-off, connections.
    ///   - onAvailabilityChange: Called when the server stops or starts answering again. The default is `nil`.
    /// - Throws: ``RedisError/invalidArgument`` for a value out of range.
    public init(configuration: RedisConfiguration, onAvailabilityChange: AvailabilityHandler? = nil) throws(RedisError) {
        try configuration.validate()
        self.configuration = configuration
        self.slots = (0..<configuration.maximumConnections).map { _ in Slot() }
        self.onAvailabilityChange = onAvailabilityChange
    }

    /// Whether the client would try the server now (it is not backing off after a failure).
    public var isAvailable: Bool {
        let until = downUntil.load(ordering: .relaxed)
        return until == 0 || Self.now() >= until
    }

    /// Whether the last command that reached a verdict found the server answering.
    public var isUp: Bool { downUntil.load(ordering: .relaxed) == 0 }

    // MARK: Commands

    /// Runs one command with binary-safe arguments (the command name first).
    ///
    /// - Parameter arguments: The command and its arguments, each sent with its length.
    /// - Returns: The server's reply.
    /// - Throws: ``RedisError`` `.unavailable` while backing off; `.connectionFailed`, `.timeout`,
    ///   `.connectionLost` or `.protocolError` when the connection failed (the back-off starts);
    ///   `.serverError` for an error reply; `.invalidArgument` for an empty command.
    public func command(_ arguments: [[UInt8]]) throws(RedisError) -> RedisReply {
        guard !arguments.isEmpty else { throw RedisError(.invalidArgument, "a command needs a name") }
        let now = Self.now()
        let until = downUntil.load(ordering: .acquiring)
        if until != 0 {
            // Backing off; after the interval one caller claims the probe by moving the deadline on.
            guard now >= until,
                  downUntil.compareExchange(expected: until, desired: now + retryNanoseconds, ordering: .acquiringAndReleasing).exchanged
            else { throw RedisError(.unavailable, "backing off after a failure") }
        }
        let result = run(arguments)
        switch result {
        case .success:
            markUp()
        case .failure(let error) where error.isConnectionFailure:
            markDown(error)
        case .failure:
            markUp()  // the server answered (with an error reply)
        }
        return try result.get()
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

    /// Closes every connection; the next command connects again.
    public func close() {
        generation.add(1, ordering: .relaxed)
        for slot in slots { slot.state.withLock { $0.connection = nil } }
    }

    // MARK: Internals

    private static let getName = Array("GET".utf8)
    private static let setName = Array("SET".utf8)
    private static let pxName = Array("PX".utf8)
    private static let delName = Array("DEL".utf8)
    private static let pexpireName = Array("PEXPIRE".utf8)

    private var retryNanoseconds: UInt64 {
        let (seconds, attoseconds) = configuration.retryInterval.components
        return UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000) + 1
    }

    /// Takes a free connection (or waits for the next one in turn) and runs the command on it.
    private func run(_ arguments: [[UInt8]]) -> Result<RedisReply, RedisError> {
        let start = nextSlot.wrappingAdd(1, ordering: .relaxed).oldValue
        let current = generation.load(ordering: .acquiring)
        for offset in 0..<slots.count {
            let slot = slots[((start &+ offset) & Int.max) % slots.count]
            if let result = slot.state.withLockIfAvailable({ state in Self.run(arguments, on: &state, generation: current, configuration) }) {
                return result
            }
        }
        return slots[(start & Int.max) % slots.count].state.withLock { state in Self.run(arguments, on: &state, generation: current, configuration) }
    }

    private static func run(_ arguments: [[UInt8]], on state: inout (connection: RedisConnection?, generation: UInt64),
                            generation: UInt64, _ configuration: RedisConfiguration) -> Result<RedisReply, RedisError> {
        if state.generation != generation || state.connection?.isBroken == true { state.connection = nil }
        do {
            let connection: RedisConnection
            if let existing = state.connection {
                connection = existing
            } else {
                connection = try RedisConnection.connect(configuration)
                state = (connection, generation)
            }
            let reply = try connection.command(arguments)
            return .success(reply)
        } catch {
            if state.connection?.isBroken == true { state.connection = nil }
            return .failure(error)
        }
    }

    private func markDown(_ error: RedisError) {
        // Every connection of before the failure is replaced when the server is back.
        generation.add(1, ordering: .relaxed)
        let until = Self.now() + retryNanoseconds
        let previous = downUntil.exchange(until, ordering: .acquiringAndReleasing)
        if previous == 0 { onAvailabilityChange?(false, error) }
    }

    private func markUp() {
        guard downUntil.load(ordering: .relaxed) != 0 else { return }
        if downUntil.exchange(0, ordering: .acquiringAndReleasing) != 0 { onAvailabilityChange?(true, nil) }
    }

    private static func milliseconds(_ duration: Duration) throws(RedisError) -> Int64 {
        guard duration > .zero else { throw RedisError(.invalidArgument, "a time to live must be positive") }
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }

    private static func now() -> UInt64 {
        DispatchTime.now().uptimeNanoseconds
    }
}
