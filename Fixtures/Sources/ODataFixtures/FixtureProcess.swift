import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
#if canImport(Glibc)
import Glibc
#endif

/// The fixture producer in a process of its own (`odata-fixture-server`), driven through its control
/// endpoint `/$fixture/...`: for a caller whose own memory must not include the producer's (the soak).
///
/// ```swift
/// let producer = try await FixtureProcess.start()
/// let id = try await producer.addFault(FaultRule(.dropConnection, method: "GET", path: "Products*", times: 1))
/// // … requests to producer.serviceRoot …
/// let executed = try await producer.counters().filter { $0.method == "POST" }
/// producer.stop()
/// ```
///
/// Everything it says about the producer comes over HTTP on 127.0.0.1, except its resident memory, which
/// is read from `/proc/<pid>/statm`. ``stop()`` ends the process by its process ID.
public final class FixtureProcess: Sendable {
    /// The OData service root, `http://127.0.0.1:PORT/`.
    public let serviceRoot: String
    /// The producer's process ID.
    public let processIdentifier: Int32
    private let process: LockedValue<Process?>
    private let control: CurlTransport

    private init(process: Process, serviceRoot: String, control: CurlTransport) {
        self.process = LockedValue(process)
        self.processIdentifier = process.processIdentifier
        self.serviceRoot = serviceRoot
        self.control = control
    }

    /// The `odata-fixture-server` executable built beside the running program (same build directory), if any.
    public static func executableBesideThisProgram() -> String? {
        executable(named: "odata-fixture-server")
    }

    /// An executable of this package built beside the running program (same build directory), if any.
    static func executable(named name: String) -> String? {
        let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let path = directory.appendingPathComponent(name).path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// Starts the producer on a free port of 127.0.0.1 and waits until it listens.
    /// - Parameters:
    ///   - executable: the `odata-fixture-server` binary; by default the one beside this program.
    ///   - arguments: further arguments (`--page-size`, `--data`, …; see `odata-fixture-server --help`).
    /// - Returns: the running producer.
    /// - Throws: ``FixtureError`` `.serverFailure` when there is no executable, it does not start, or it
    ///   ends before it names its service root; `.invalidArgument` when `arguments` contain `--port`.
    public static func start(executable: String? = nil, arguments: [String] = []) async throws(FixtureError) -> FixtureProcess {
        guard !arguments.contains("--port") else { throw FixtureError(.invalidArgument, "the port is chosen by start (a free one)") }
        guard let executable = executable ?? executableBesideThisProgram() else {
            throw FixtureError(.serverFailure, "odata-fixture-server is not built beside this program (swift build --product odata-fixture-server)")
        }
        let control: CurlTransport
        do { control = try CurlTransport() } catch { throw FixtureError(.serverFailure, "no HTTP client for the control endpoint: \(error)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--port", "0"] + arguments
        let output = Pipe()
        process.standardOutput = output
        do { try process.run() } catch { throw FixtureError(.serverFailure, "\(executable) did not start: \(error)") }
        // The first line names the service root: `odata-fixture-server: serving http://127.0.0.1:PORT/ (Ctrl-C to stop)`.
        let handle = output.fileHandleForReading
        let firstLine: String = await withCheckedContinuation { continuation in
            Thread {
                var text = Data()
                while !text.contains(UInt8(ascii: "\n")) {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    text.append(chunk)
                }
                continuation.resume(returning: String(decoding: text, as: UTF8.self))
            }.start()
        }
        guard let start = firstLine.range(of: "serving "), let end = firstLine.range(of: " (", range: start.upperBound..<firstLine.endIndex) else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            throw FixtureError(.serverFailure, "odata-fixture-server did not name its service root: \(firstLine)")
        }
        // Its later output is not read: it says nothing more unless it fails, and then on standard error.
        return FixtureProcess(process: process, serviceRoot: String(firstLine[start.upperBound..<end.lowerBound]), control: control)
    }

    /// Installs a fault (`POST /$fixture/faults`).
    /// - Parameter rule: the fault.
    /// - Returns: its identifier, for ``removeFault(_:)``.
    /// - Throws: ``FixtureError`` `.serverFailure` when the producer does not answer `201` with an id.
    @discardableResult
    public func addFault(_ rule: FaultRule) async throws(FixtureError) -> FaultID {
        let answer = try await call("POST", "faults", body: JSON.serialize(.object(ControlEndpoint.json(rule))))
        guard let id = answer["id"]?.intValue else { throw FixtureError(.serverFailure, "POST /$fixture/faults answered without an id") }
        return FaultID(rawValue: Int(id))
    }

    /// Removes one fault (`DELETE /$fixture/faults/N`).
    /// - Parameter id: the fault; one that already fired its last time and went is not a failure.
    /// - Throws: ``FixtureError`` `.serverFailure` when the producer cannot be reached or fails.
    public func removeFault(_ id: FaultID) async throws(FixtureError) {
        _ = try await call("DELETE", "faults/\(id.rawValue)", accepting: [204, 404])
    }

    /// Removes every fault (`DELETE /$fixture/faults`).
    /// - Throws: ``FixtureError`` `.serverFailure` when the producer cannot be reached or fails.
    public func removeAllFaults() async throws(FixtureError) {
        _ = try await call("DELETE", "faults")
    }

    /// The producer's request counts per method and path (`GET /$fixture/counters`).
    /// - Returns: one entry per method and path.
    /// - Throws: ``FixtureError`` `.serverFailure` when the producer cannot be reached or fails.
    public func counters() async throws(FixtureError) -> [RequestCounters.Entry] {
        let list = try await call("GET", "counters")["value"]?.arrayValue ?? []
        return list.map { entry in
            RequestCounters.Entry(
                method: entry["method"]?.stringValue ?? "", path: entry["path"]?.stringValue ?? "",
                received: Int(entry["received"]?.intValue ?? 0), executed: Int(entry["executed"]?.intValue ?? 0),
                replayed: Int(entry["replayed"]?.intValue ?? 0), faulted: Int(entry["faulted"]?.intValue ?? 0))
        }
    }

    /// Every row of an entity set as the producer holds it (`GET /$fixture/data/<set>`).
    /// - Parameter set: the entity set's name.
    /// - Returns: the rows, in creation order.
    /// - Throws: ``FixtureError`` `.serverFailure` when the producer cannot be reached or refuses (an unknown set).
    public func entities(in set: String) async throws(FixtureError) -> [JSONObject] {
        try await call("GET", "data/\(set)")["value"]?.arrayValue?.compactMap(\.objectValue) ?? []
    }

    /// The producer's resident memory now (`/proc/<pid>/statm`), 0 once it has ended.
    public var residentBytes: Int { ResidentMemory.bytes(ofProcess: processIdentifier) }

    /// Ends the producer by its process ID (`SIGTERM`, then `SIGKILL` after `grace`) and waits for it.
    /// Stopping twice is harmless.
    /// - Parameter grace: how long it may take to end after `SIGTERM`.
    public func stop(grace: Duration = .seconds(5)) {
        guard let process = process.withLock({ process in
            defer { process = nil }
            return process
        }) else { return }
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let deadline = ContinuousClock.now + grace
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        control.shutdown()
    }

    private func call(_ method: String, _ path: String, body: [UInt8]? = nil, accepting: Set<Int> = [200, 201, 204]) async throws(FixtureError) -> JSONValue {
        var request = TransportRequest(method: method, url: serviceRoot + "$fixture/" + path, body: body.map { Data($0) })
        if body != nil { request.headerFields[.contentType] = "application/json" }
        let response: TransportResponse
        do { response = try await control.send(request) } catch {
            throw FixtureError(.serverFailure, "\(method) /$fixture/\(path): \(error)")
        }
        guard accepting.contains(response.status) else {
            throw FixtureError(.serverFailure, "\(method) /$fixture/\(path) answered \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        }
        guard !response.body.isEmpty else { return .null }
        do { return try JSON.parse(response.body) } catch {
            throw FixtureError(.serverFailure, "\(method) /$fixture/\(path) answered a body that is not JSON: \(error)")
        }
    }
}

/// Resident memory of a process, from `/proc/<pid>/statm` (Linux).
public enum ResidentMemory {
    /// The resident bytes of a process; 0 when it does not exist (or on a system without `/proc`).
    /// - Parameter pid: the process ID; `nil` for this process.
    public static func bytes(ofProcess pid: Int32? = nil) -> Int {
        statm(field: 1, ofProcess: pid)
    }

    /// The resident bytes of a process that are pages of mapped files (its code, its libraries', mapped data
    /// files) or shared memory: `RssFile + RssShmem`; 0 when it does not exist. The rest is anonymous memory
    /// (heap arenas, thread stacks).
    /// - Parameter pid: the process ID; `nil` for this process.
    public static func fileBackedBytes(ofProcess pid: Int32? = nil) -> Int {
        statm(field: 2, ofProcess: pid)
    }

    /// The number of threads of a process (`Threads:` in `/proc/<pid>/status`); 0 when it does not exist. Each thread
    /// holds a stack, and glibc keeps the stacks of ended threads for new ones: resident memory the heap does not show.
    /// - Parameter pid: the process ID; `nil` for this process.
    public static func threads(ofProcess pid: Int32? = nil) -> Int {
        let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") })
        else { return 0 }
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }

    private static func statm(field: Int, ofProcess pid: Int32?) -> Int {
        let path = pid.map { "/proc/\($0)/statm" } ?? "/proc/self/statm"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > field ? (Int(fields[field]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }
}
