import Foundation
import ODataCore
#if canImport(Glibc)
import Glibc
#endif

/// What `odata-fleet-instance` says on standard output: one JSON object a line — ``Kind-swift.enum/ready`` once its
/// stores are open, ``Kind-swift.enum/round`` after each round of its fresh mode, ``Kind-swift.enum/final`` at the
/// end (the sums over every instance and round, and every read's latency).
public struct FleetInstanceReport: Codable, Sendable, Hashable {
    /// Which line this is.
    public enum Kind: String, Codable, Sendable {
        /// The stores are open; with `--wait-for-go` the reads start at the next line of standard input.
        case ready
        /// One round of the fresh mode: a new instance read the working set once.
        case round
        /// The last line: everything the program did.
        case final
    }

    /// Which line this is.
    public var kind: Kind
    /// How many instances (each its own `OnlineODataStore` and cache directory) the figures cover.
    public var instances = 0
    /// Reads done.
    public var reads = 0
    /// Reads that answered a response (a passive read of an entry in no tier answers none).
    public var found = 0
    /// Reads that failed (thrown errors).
    public var errors = 0
    /// The first few errors' descriptions.
    public var errorSamples: [String] = []
    /// Requests the instances sent to the back end (`OnlineStoreStatistics.networkRequests`).
    public var networkRequests = 0
    /// The second tier's counters, summed (`SecondTierStatistics`).
    public var tierHits = 0
    /// Tier lookups that found nothing.
    public var tierMisses = 0
    /// Tier writes.
    public var tierWrites = 0
    /// Failed tier calls.
    public var tierFailures = 0
    /// Tier lookups skipped while the tier was backing off.
    public var tierSkippedLookups = 0
    /// When the reads started, in ``now()``'s nanoseconds (`CLOCK_MONOTONIC`: the same in every network namespace
    /// of the machine, so comparable with the parent's clock).
    public var started: UInt64 = 0
    /// When the reads ended (same clock).
    public var ended: UInt64 = 0
    /// Every read's latency in nanoseconds (final line only).
    public var latencies: [Double]?
    /// The latencies of reads during which the instance's tier hit counter moved (final line only).
    public var tierHitLatencies: [Double]?

    /// Now on the clock of ``started`` and ``ended``: `CLOCK_MONOTONIC` in nanoseconds.
    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Creates an empty report of a kind.
    /// - Parameter kind: Which line it is.
    public init(kind: Kind) { self.kind = kind }

    /// Adds another report's counts (and latencies) to this one.
    /// - Parameter other: The report to add.
    public mutating func add(_ other: FleetInstanceReport) {
        instances += other.instances
        reads += other.reads
        found += other.found
        errors += other.errors
        errorSamples += other.errorSamples.prefix(max(0, 5 - errorSamples.count))
        networkRequests += other.networkRequests
        tierHits += other.tierHits
        tierMisses += other.tierMisses
        tierWrites += other.tierWrites
        tierFailures += other.tierFailures
        tierSkippedLookups += other.tierSkippedLookups
        started = started == 0 ? other.started : min(started, other.started == 0 ? started : other.started)
        ended = max(ended, other.ended)
        if let more = other.latencies { latencies = (latencies ?? []) + more }
        if let more = other.tierHitLatencies { tierHitLatencies = (tierHitLatencies ?? []) + more }
    }
}

/// `odata-fleet-instance` — K `OnlineODataStore` instances sharing a second tier, reading a working set — in a
/// process of its own, on a host of ``NetworkHosts`` (`ip netns exec`, so its process ID is the program's) or on
/// this one. Its reports arrive line by line (``nextReport(timeout:)``); ``finish()`` closes its standard input
/// (the fresh mode stops after its current round; `--wait-for-go` starts on ``go()``); ``stop()`` ends it by its
/// process ID.
///
/// The fleet's passphrase goes to the program in its environment (`ODATA_FLEET_PASSPHRASE`), never on its
/// command line. Run `odata-fleet-instance --help` for its arguments.
///
/// ```swift
/// let a = try FleetInstanceProcess.start(["--service-root", root, "--cluster", nodes, "--count", "30"],
///                                        passphrase: secret, on: hosts.hosts[0], of: hosts)
/// defer { a.stop() }
/// let report = try a.finalReport(timeout: .seconds(60))
/// ```
public final class FleetInstanceProcess: Sendable {
    /// The program's process ID.
    public let processIdentifier: Int32
    private let process: LockedValue<Process?>
    private let input: FileHandle
    private let outputHandle: FileHandle
    private let buffer = LockedValue(Data())

    private init(process: Process, input: FileHandle, output: FileHandle) {
        self.process = LockedValue(process)
        self.processIdentifier = process.processIdentifier
        self.input = input
        self.outputHandle = output
    }

    deinit { stop() }

    /// The `odata-fleet-instance` executable built beside the running program, if any.
    public static func executableBesideThisProgram() -> String? {
        FixtureProcess.executable(named: "odata-fleet-instance")
    }

    /// Starts the program.
    /// - Parameters:
    ///   - arguments: Its arguments (`odata-fleet-instance --help`).
    ///   - passphrase: The fleet's cache passphrase, given in the environment.
    ///   - host: The host to run it on; `nil` runs it here.
    ///   - hosts: The hosts `host` belongs to (for its launcher).
    ///   - executable: The program; by default the one beside this program.
    /// - Returns: The running program.
    /// - Throws: ``FixtureError`` `.serverFailure` when there is no executable or it does not start.
    public static func start(
        _ arguments: [String], passphrase: String, on host: NetworkHosts.Host? = nil, of hosts: NetworkHosts? = nil, executable: String? = nil
    ) throws(FixtureError) -> FleetInstanceProcess {
        guard let executable = executable ?? executableBesideThisProgram() else {
            throw FixtureError(.serverFailure, "odata-fleet-instance is not built beside this program (swift build --product odata-fleet-instance)")
        }
        let process = Process()
        if let host, let hosts {
            let launcher = hosts.launcher(for: host, executable: executable)
            process.executableURL = URL(fileURLWithPath: launcher.executable)
            process.arguments = launcher.arguments + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment
        environment["ODATA_FLEET_PASSPHRASE"] = passphrase
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        do { try process.run() } catch { throw FixtureError(.serverFailure, "\(executable) did not start: \(error)") }
        return FleetInstanceProcess(process: process, input: input.fileHandleForWriting, output: output.fileHandleForReading)
    }

    /// The next line it reports.
    /// - Parameter timeout: How long to wait for it.
    /// - Returns: The report; `nil` when none arrived within `timeout`.
    /// - Throws: ``FixtureError`` `.serverFailure` when the program ended without one, or wrote a line that is no report.
    public func nextReport(timeout: Duration) throws(FixtureError) -> FleetInstanceReport? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let line: Data? = buffer.withLock { data in
                guard let end = data.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                defer { data.removeSubrange(data.startIndex...end) }
                return data[data.startIndex..<end]
            }
            if let line {
                do { return try JSONDecoder().decode(FleetInstanceReport.self, from: line) } catch {
                    throw FixtureError(.serverFailure, "odata-fleet-instance wrote a line that is no report: \(String(decoding: line.prefix(200), as: UTF8.self))")
                }
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            let output = outputHandle.fileDescriptor
            var descriptor = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(1_000, max(1, left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000)))
            guard poll(&descriptor, 1, milliseconds) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = read(output, &chunk, chunk.count)
            guard count > 0 else {
                throw FixtureError(.serverFailure, "odata-fleet-instance (pid \(processIdentifier)) ended without a further report")
            }
            buffer.withLock { $0.append(contentsOf: chunk[0..<count]) }
        }
    }

    /// Reads lines until the final report.
    /// - Parameter timeout: How long to wait for it in all.
    /// - Returns: The final report.
    /// - Throws: ``FixtureError`` `.serverFailure` when it does not arrive within `timeout` or the program ends first.
    public func finalReport(timeout: Duration) throws(FixtureError) -> FleetInstanceReport {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let report = try nextReport(timeout: deadline - ContinuousClock.now), report.kind == .final { return report }
        }
        throw FixtureError(.serverFailure, "odata-fleet-instance (pid \(processIdentifier)) gave no final report within \(timeout)")
    }

    /// Reads lines until the `ready` one.
    /// - Parameter timeout: How long to wait for it.
    /// - Throws: ``FixtureError`` `.serverFailure` when it does not arrive within `timeout` or the program ends first.
    public func waitUntilReady(timeout: Duration) throws(FixtureError) {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try nextReport(timeout: deadline - ContinuousClock.now)?.kind == .ready { return }
        }
        throw FixtureError(.serverFailure, "odata-fleet-instance (pid \(processIdentifier)) was not ready within \(timeout)")
    }

    /// Starts the reads of a program started with `--wait-for-go` (writes a line to its standard input).
    /// - Throws: ``FixtureError`` `.serverFailure` when the line cannot be written (the program has ended).
    public func go() throws(FixtureError) {
        do { try input.write(contentsOf: Data("go\n".utf8)) } catch {
            throw FixtureError(.serverFailure, "odata-fleet-instance (pid \(processIdentifier)) did not take its start: \(error)")
        }
    }

    /// Closes its standard input: the fresh mode ends after its current round and reports.
    public func finish() {
        try? input.close()  // closed already (by an earlier finish or stop): nothing left to do
    }

    /// Ends the program by its process ID (`SIGKILL` unless it has ended) and waits for it; harmless twice.
    public func stop() {
        guard let process = process.withLock({ value -> Process? in defer { value = nil }; return value }) else { return }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? input.close()  // closed already by finish(): nothing left to do
    }
}
