import Dispatch
import ODataCore
import Synchronization

/// The connections to one Redis server and its back-off after failures: what ``RedisClient`` does for a single
/// server, and for each node of a cluster.
///
/// Up to `maximumConnections` hiredis contexts, each behind its own lock; a caller takes a free one (or waits
/// for one). After a connection failure the pool answers ``RedisError/unavailable`` at once for the retry
/// interval; the next call after it probes the server (only one caller does), and success makes every older
/// connection be replaced.
final class RedisNodePool: Sendable {
    /// A change of availability (see ``RedisClient/AvailabilityHandler``).
    typealias AvailabilityHandler = @Sendable (_ available: Bool, _ failure: RedisError?) -> Void

    private final class Slot: Sendable {
        /// The connection and the generation it was made in; held for a whole command (a hiredis context is
        /// not thread-safe). A pthread mutex (`LockedValue`), which ThreadSanitizer sees, not `Mutex`.
        let state = LockedValue<(connection: RedisConnection?, generation: UInt64)>((nil, 0))
    }

    /// The server this pool connects to, with the client's timeouts and credentials.
    let configuration: RedisConfiguration
    private let slots: [Slot]
    private let nextSlot = Atomic<Int>(0)
    /// Connections made before a failure of the server are not used again.
    private let generation = Atomic<UInt64>(1)
    /// 0 while available; otherwise the uptime (ns) before which calls are not tried.
    private let downUntil = Atomic<UInt64>(0)
    private let onAvailabilityChange: AvailabilityHandler?

    init(configuration: RedisConfiguration, onAvailabilityChange: AvailabilityHandler?) {
        self.configuration = configuration
        self.slots = (0..<configuration.maximumConnections).map { _ in Slot() }
        self.onAvailabilityChange = onAvailabilityChange
    }

    /// Whether the pool would try the server now (it is not backing off after a failure).
    var isAvailable: Bool {
        let until = downUntil.load(ordering: .relaxed)
        return until == 0 || Self.now() >= until
    }

    /// Whether the last command that reached a verdict found the server answering.
    var isUp: Bool { downUntil.load(ordering: .relaxed) == 0 }

    /// Runs `commands` one after the other on one connection (`ASKING` before a command must share its
    /// connection) and returns the last reply; the back-off decides whether the server is tried at all.
    func execute(_ commands: [[[UInt8]]]) -> Result<RedisReply, RedisError> {
        let now = Self.now()
        let until = downUntil.load(ordering: .acquiring)
        if until != 0 {
            // Backing off; after the interval one caller claims the probe by moving the deadline on.
            guard now >= until,
                  downUntil.compareExchange(expected: until, desired: now + retryNanoseconds, ordering: .acquiringAndReleasing).exchanged
            else { return .failure(RedisError(.unavailable, "backing off after a failure")) }
        }
        let result = run(commands)
        switch result {
        case .success:
            markUp()
        case .failure(let error) where error.isConnectionFailure:
            markDown(error)
        case .failure:
            markUp()  // the server answered (with an error reply)
        }
        return result
    }

    /// Closes every connection; the next command connects again.
    func close() {
        generation.add(1, ordering: .relaxed)
        for slot in slots { slot.state.withLock { $0.connection = nil } }
    }

    private var retryNanoseconds: UInt64 {
        let (seconds, attoseconds) = configuration.retryInterval.components
        return UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000) + 1
    }

    /// Takes a free connection (or waits for the next one in turn) and runs the commands on it.
    private func run(_ commands: [[[UInt8]]]) -> Result<RedisReply, RedisError> {
        let start = nextSlot.wrappingAdd(1, ordering: .relaxed).oldValue
        let current = generation.load(ordering: .acquiring)
        for offset in 0..<slots.count {
            let slot = slots[((start &+ offset) & Int.max) % slots.count]
            if let result = slot.state.withLockIfAvailable({ state in Self.run(commands, on: &state, generation: current, configuration) }) {
                return result
            }
        }
        return slots[(start & Int.max) % slots.count].state.withLock { state in Self.run(commands, on: &state, generation: current, configuration) }
    }

    private static func run(_ commands: [[[UInt8]]], on state: inout (connection: RedisConnection?, generation: UInt64),
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
            var reply = RedisReply.null
            for command in commands { reply = try connection.command(command) }
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

    static func now() -> UInt64 {
        DispatchTime.now().uptimeNanoseconds
    }
}
