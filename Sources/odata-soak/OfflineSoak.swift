// The offline part of the soak: offline stores making local creates, updates and deletes, uploading
// and downloading under write faults, one of them in a child process SIGKILLed at random points;
// at the end every local change is reconciled with what the producer executed.
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataTyped
import ODataSession
import OfflineStore
import TechnicalCache
#if canImport(Glibc)
import Glibc
#endif

// MARK: - The ledger: what the stores acknowledged

/// One local change, as the soak asked a store for it.
struct Intent: Sendable {
    enum Kind: String, Sendable {
        case create, patchCustomer, patchShipper, deleteShipper
    }

    /// The store's name (`o1`, `o2`, `c<generation>` for the child).
    var actor: String
    var kind: Kind
    /// The CustomerID for `patchCustomer`; the shipper's marker (its CompanyName, never changed) otherwise.
    var target: String
    /// The value written (`Fax` of a customer, `Phone` of a shipper); unique per change. Empty for a delete.
    var value: String
    /// For a delete: the shipper's key (deletes are only made once the create got the producer's key).
    var key: Int64?
    /// Whether the store acknowledged the change as queued; `false` for the change the child was
    /// making when it was killed (it may or may not have been committed).
    var acknowledged = true
}

/// Every local change of every offline store, in the order each store made them. Kept in a file, not in
/// memory: the ledger grows with the run, and the soak's own bookkeeping must not pass for the library's memory.
final class Ledger: Sendable {
    private let path: String
    private let handle: LockedValue<FileHandle>

    /// Creates an empty ledger at `path` (its directory must exist).
    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        self.path = path
        self.handle = LockedValue(try FileHandle(forWritingTo: URL(fileURLWithPath: path)))
    }

    /// Appends a change (one tab-separated line); a ledger that cannot be written ends the soak.
    func record(_ intent: Intent) {
        let fields = [intent.actor, intent.kind.rawValue, intent.target, intent.value, intent.key.map(String.init) ?? "", intent.acknowledged ? "1" : "0"]
        let line = Data((fields.joined(separator: "\t") + "\n").utf8)
        handle.withLock { handle in
            do { try handle.write(contentsOf: line) } catch {
                print("odata-soak: the ledger \(path) cannot be written: \(error)")
                exit(1)
            }
        }
    }

    /// Every change recorded so far, in order.
    func all() throws -> [Intent] {
        try handle.withLock { _ in
            let text = try String(contentsOfFile: path, encoding: .utf8)
            return text.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard fields.count == 6, let kind = Intent.Kind(rawValue: fields[1]) else { return nil }
                return Intent(actor: fields[0], kind: kind, target: fields[2], value: fields[3], key: Int64(fields[4]), acknowledged: fields[5] == "1")
            }
        }
    }
}

// MARK: - Local changes

/// Parameters of every offline store in the soak: repeatable requests on, generous retries.
func offlineParameters(directory: String, name: String, batch: Bool) -> OfflineODataParameters {
    var parameters = OfflineODataParameters(storeName: name, storePath: directory, storeEncryptionKey: "soak offline passphrase",
                                            keyDerivation: .pbkdf2(rounds: 1_000), enableRepeatableRequests: true)
    parameters.uploadRetries = 6
    parameters.uploadRetryDelay = .milliseconds(20)
    if batch { parameters.uploadMode = .batch(maxRequestsPerBatch: 8) }
    return parameters
}

let offlineDefiningQueries = [
    OfflineODataDefiningQuery(name: "customers", query: "Customers"),
    OfflineODataDefiningQuery(name: "shippers", query: "Shippers"),
]

/// Makes random local changes on one store: creates of shippers (each with a unique marker as its
/// CompanyName), updates of the store's own customers and shippers, deletes of its own shippers
/// that already have the producer's key.
struct LocalChanger {
    let name: String
    let provider: OfflineODataProvider
    let customers: [String]
    var random: SeededRandom
    /// Markers of this store's shippers that are not deleted.
    var live: [String] = []
    /// At this many live shippers the store stops creating until deletes bring it below: creates (35 %) outnumber
    /// deletes, and a soak whose data set grows without end cannot show that memory stays flat.
    static let liveLimit = 300
    var sequence = 0

    init(name: String, provider: OfflineODataProvider, customers: [String], seed: UInt64) {
        self.name = name
        self.provider = provider
        self.customers = customers
        self.random = SeededRandom(seed: seed)
    }

    /// The local key of a shipper by marker, read without entering the store's actor.
    func key(of marker: String) -> Int64? {
        guard let response = try? provider.read(.get("Shippers", .filter("CompanyName eq '\(marker)'"))),
              let value = try? JSON.parse(response.payload) else { return nil }
        return value["value"]?.arrayValue?.first?["ShipperID"]?.intValue
    }

    /// The store's own shippers (after a restart), by marker prefix.
    mutating func findLive(prefix: String) {
        guard let response = try? provider.read(.get("Shippers")), let value = try? JSON.parse(response.payload) else { return }
        live = (value["value"]?.arrayValue ?? []).compactMap { $0["CompanyName"]?.stringValue }.filter { $0.hasPrefix(prefix) }
    }

    /// Makes one random local change. `announce` runs just before the store is asked.
    ///
    /// - Returns: The change and whether the store accepted it, or `nil` when nothing was asked.
    mutating func change(announce: (Intent) -> Void = { _ in }) async -> (Intent, Bool)? {
        sequence += 1
        let roll = Int.random(in: 0..<100, using: &random)
        let intent: Intent
        let request: ODataRequest
        if (roll < 35 && live.count < Self.liveLimit) || live.isEmpty {
            let marker = "soak \(name)-\(sequence)"
            intent = Intent(actor: name, kind: .create, target: marker, value: "\(marker)#0")
            request = Self.request(.post, "Shippers", #"{"CompanyName":"\#(marker)","Phone":"\#(intent.value)"}"#)
        } else if roll < 70 {
            let customer = customers[Int.random(in: 0..<customers.count, using: &random)]
            intent = Intent(actor: name, kind: .patchCustomer, target: customer, value: "\(name)-\(sequence)")
            request = Self.request(.patch, "Customers('\(customer)')", #"{"Fax":"\#(intent.value)"}"#)
        } else {
            let index = Int.random(in: 0..<live.count, using: &random)
            let marker = live[index]
            guard let key = key(of: marker) else { return nil }
            if roll < 88 || key < 0 {
                intent = Intent(actor: name, kind: .patchShipper, target: marker, value: "\(marker)#\(sequence)")
                request = Self.request(.patch, "Shippers(\(key))", #"{"Phone":"\#(intent.value)"}"#)
            } else {
                intent = Intent(actor: name, kind: .deleteShipper, target: marker, value: "", key: key)
                request = ODataRequest(method: .delete, resourcePath: "Shippers(\(key))")
            }
        }
        announce(intent)
        do {
            _ = try await provider.execute(request)
        } catch {
            return (intent, false)
        }
        switch intent.kind {
        case .create: live.append(intent.target)
        case .deleteShipper: live.removeAll { $0 == intent.target }
        default: break
        }
        return (intent, true)
    }

    static func request(_ method: HTTPRequestMethod, _ path: String, _ body: String) -> ODataRequest {
        ODataRequest(method: method, resourcePath: path, body: Data(body.utf8))
    }
}

typealias HTTPRequestMethod = HTTPRequest.Method

// MARK: - In-process stores

/// One in-process store: a task making local changes and a task uploading and downloading, at the
/// same time (local changes made while an upload runs must survive).
func offlineStoreTasks(_ group: inout TaskGroup<Void>, provider: OfflineODataProvider, name: String, customers: [String], seed: UInt64,
                       continuous: Bool, deadline: ContinuousClock.Instant, ledger: Ledger, figures: Figures) {
    group.addTask {
        var changer = LocalChanger(name: name, provider: provider, customers: customers, seed: seed)
        while ContinuousClock.now < deadline {
            if let outcome = await changer.change() {
                if outcome.1 {
                    ledger.record(outcome.0)
                    figures.add("offline local changes (acknowledged)")
                } else {
                    figures.add("offline local changes refused")
                }
            }
            try? await Task.sleep(for: .milliseconds(Int.random(in: 15...45, using: &changer.random)))
        }
    }
    if continuous {
        group.addTask { await continuousSync(provider, deadline: deadline, figures: figures) }
        return
    }
    group.addTask {
        var random = SeededRandom(seed: seed &+ 77)
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(Int.random(in: 100...400, using: &random)))
            await synchronize(provider, download: Int.random(in: 0..<5, using: &random) == 0, figures: figures)
        }
    }
}

/// An ``OfflineSynchronizer`` on short waits until the deadline, its states counted.
func continuousSync(_ provider: OfflineODataProvider, deadline: ContinuousClock.Instant, figures: Figures) async {
    let configuration = OfflineSyncConfiguration(
        interval: .milliseconds(500), debounce: .milliseconds(50), maximumDebounce: .milliseconds(300),
        unreachableBackoff: RetryPolicy(baseDelay: .milliseconds(100), maxDelay: .seconds(1)), minimumWait: .milliseconds(100))
    let synchronizer = OfflineSynchronizer(provider: provider, configuration: configuration)
    let states = synchronizer.states()
    let running = Task { await synchronizer.run() }
    let stopper = Task {
        try? await Task.sleep(until: deadline, clock: .continuous)
        running.cancel()
    }
    for await state in states {
        switch state {
        case .syncing(.uploading): figures.add("offline syncs")
        case .waiting: figures.add("offline sync waits (unreachable)")
        case .needsAttention(let error): print("odata-soak: the synchronizer needs attention: \(error)")
        default: break
        }
    }
    await running.value
    stopper.cancel()
}

/// Cuts the producer off the offline stores for 0.3–1.5 s every 1–4 s from `from` until the deadline (then it is
/// reachable).
func partitions(_ relay: PartitionRelayProcess, seed: UInt64, from: ContinuousClock.Instant, deadline: ContinuousClock.Instant,
                figures: Figures) async {
    var random = SeededRandom(seed: seed)
    try? await Task.sleep(until: from, clock: .continuous)
    while ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(Int.random(in: 1_000...4_000, using: &random)))
        guard ContinuousClock.now < deadline else { break }
        relay.partition()
        figures.add("offline partitions")
        try? await Task.sleep(for: .milliseconds(Int.random(in: 300...1_500, using: &random)))
        await healing(relay, figures: figures)
    }
    await healing(relay, figures: figures)
}

private func healing(_ relay: PartitionRelayProcess, figures: Figures) async {
    guard await relay.heal() else {
        print("odata-soak: the partition relay did not reopen its port")
        figures.add("producer control failures")
        return
    }
}

/// One upload or download, counted.
func synchronize(_ provider: OfflineODataProvider, download: Bool, figures: Figures) async {
    if download {
        figures.add("offline downloads")
        do { try await provider.download() } catch let error as OfflineODataError where error == .backEndUnreachable {
            figures.add("offline downloads stopped (unreachable)")
        } catch { figures.add("offline downloads failed (under faults)") }
    } else {
        figures.add("offline uploads")
        let started = ContinuousClock.now
        defer { figures.raise("offline upload, longest (ms)", to: Int((ContinuousClock.now - started) / .milliseconds(1))) }
        do {
            let result = try await provider.upload()
            figures.add("offline requests uploaded", result.succeeded)
            figures.add("offline requests archived in uploads", result.failed.count)
        } catch let error as OfflineODataError where error == .backEndUnreachable {
            figures.add("offline uploads stopped (unreachable)")
            figures.add("offline requests uploaded", error.uploadResult?.succeeded ?? 0)
            figures.add("offline requests archived in uploads", error.uploadResult?.failed.count ?? 0)
        } catch {
            figures.add("offline uploads failed")
        }
    }
}

/// Write faults on the offline stores' requests: latency, 5xx, dropped connections, lost acknowledgements.
///
/// The rotating rules live 400 ms each, and a short run under a sanitizer uploads three or four times, some of them
/// only in the drain after the deadline: all of them may meet no rule (CI, stop 54; a rehearsal of session 31). So one
/// standing rule per write route (a store's first change is a create; the child's batches are `$batch`) drops the
/// connection after executing the first write it meets — a lost acknowledgement, the hardest of the four — and stays
/// until it fires, through the drain (removed after it: see `main`), so every run that uploads a create meets one.
func offlineFaults(producer: FixtureProcess, seed: UInt64, deadline: ContinuousClock.Instant, figures: Figures) async {
    for path in ["Shippers", "$batch"] {
        do { _ = try await producer.addFault(FaultRule(.executeThenDropConnection, method: "POST", path: path, times: 1)) } catch {
            print("odata-soak: \(error)")
            figures.add("producer control failures")
        }
    }
    await rotateFaults(producer: producer, seed: seed, every: .milliseconds(100), keep: 4, deadline: deadline, figures: figures) { random in
        let action: FaultAction = switch Int.random(in: 0..<4, using: &random) {
        case 0: .latency(.milliseconds(Int.random(in: 5...60, using: &random)))
        case 1: .fail(status: [500, 502, 503][Int.random(in: 0..<3, using: &random)], code: "SOAK", message: "injected")
        case 2: .dropConnection
        default: .executeThenDropConnection
        }
        let path = ["Shippers*", "Customers*", "$batch"][Int.random(in: 0..<3, using: &random)]
        let method = path == "$batch" ? "POST" : ["POST", "PATCH", "DELETE"][Int.random(in: 0..<3, using: &random)]
        return FaultRule(action, method: method, path: path, times: Int.random(in: 1...2, using: &random))
    }
}

// MARK: - The child: a store killed at random points

/// `odata-soak --offline-child <store path> <service root> <generation> <seed> <customers> [batch]`: opens
/// (or creates) the child's store, uploads what a killed predecessor left, then makes local changes
/// and uploads until killed. Before each change it prints `intent …`, after it `ack` or `nack`.
/// Exit 2: the store did not open for a reason other than the network.
func runOfflineChild(_ arguments: [String]) async -> Never {
    guard arguments.count >= 7, let generation = Int(arguments[4]), let seed = UInt64(arguments[5]) else {
        FileHandle.standardError.write(Data("odata-soak: --offline-child <store path> <service root> <generation> <seed> <customers>\n".utf8))
        exit(64)
    }
    func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    let provider: OfflineODataProvider
    do {
        provider = try OfflineODataProvider(serviceRoot: arguments[3],
                                            parameters: offlineParameters(directory: arguments[2], name: "child", batch: arguments.count > 7 && arguments[7] == "batch"))
        for query in offlineDefiningQueries { try await provider.add(definingQuery: query) }
    } catch {
        say("open failed: \(error)")
        exit(2)
    }
    while true {
        do {
            try await provider.open()
            break
        } catch let error as OfflineODataError where error == .downloadFailed || error == .backEndUnreachable {
            say("open: download failed under faults or a partition")
            try? await Task.sleep(for: .milliseconds(20))
        } catch {
            say("open failed: \(error)")
            exit(2)
        }
    }
    say("open")
    func upload() async {
        say("uploading")
        do {
            let result = try await provider.upload()
            say("uploaded \(result.sent) \(result.succeeded) \(result.failed.count)")
        } catch {
            say("upload failed: \(error)")
        }
    }
    if (try? await provider.hasPendingUpload) == true { await upload() }
    var changer = LocalChanger(name: "c\(generation)", provider: provider, customers: arguments[6].split(separator: ",").map(String.init),
                               seed: seed)
    changer.findLive(prefix: "soak c")
    while true {
        let outcome = await changer.change(announce: { intent in
            say(["intent", intent.kind.rawValue, intent.target, intent.value, intent.key.map(String.init) ?? ""].joined(separator: "\t"))
        })
        if let outcome { say(outcome.1 ? "ack" : "nack") }
        switch Int.random(in: 0..<12, using: &changer.random) {
        case 0, 1: await upload()
        case 2:
            do { try await provider.download(); say("downloaded") } catch { say("download failed: \(error)") }
        default: break
        }
        try? await Task.sleep(for: .milliseconds(Int.random(in: 2...15, using: &changer.random)))
    }
}

/// Reads the lines a child printed into the ledger: each `intent` followed by `ack` is an
/// acknowledged change; one without `ack` or `nack` (the kill came in between) is uncertain.
func recordChildOutput(_ text: String, ledger: Ledger, figures: Figures) {
    var pending: Intent?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        if fields.count == 5, fields[0] == "intent", let kind = Intent.Kind(rawValue: fields[1]) {
            if let unsettled = pending {
                var intent = unsettled
                intent.acknowledged = false
                ledger.record(intent)
            }
            pending = Intent(actor: "c", kind: kind, target: fields[2], value: fields[3], key: Int64(fields[4]))
        } else if line == "ack", let intent = pending {
            ledger.record(intent)
            figures.add("offline local changes (acknowledged)")
            pending = nil
        } else if line == "nack" {
            figures.add("offline local changes refused")
            pending = nil
        }
    }
    if var intent = pending {
        intent.acknowledged = false
        ledger.record(intent)
        figures.add("offline changes in flight at a kill")
    }
    if let start = text.range(of: "uploading\n", options: .backwards), !text[start.upperBound...].contains("uploaded ") {
        figures.add("offline child kills during an upload")
    }
}

/// Starts the child, SIGKILLs it after a random time, starts the next generation, until the deadline.
func offlineChildLoop(executable: String, storePath: String, serviceRoot: String, customers: [String], seed: UInt64, batch: Bool,
                      deadline: ContinuousClock.Instant, ledger: Ledger, figures: Figures) async {
    var random = SeededRandom(seed: seed)
    var generation = 0
    while ContinuousClock.now < deadline {
        generation += 1
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--offline-child", storePath, serviceRoot, String(generation), String(seed &+ UInt64(generation) &* 7919),
                             customers.joined(separator: ","), batch ? "batch" : "single"]
        let pipe = Pipe()
        process.standardOutput = pipe
        let handle = pipe.fileHandleForReading
        let collected = LockedValue<Data?>(nil)
        do { try process.run() } catch {
            figures.add("store-open failures")
            return
        }
        figures.add("offline child generations")
        let reader = Thread { let data = handle.readDataToEndOfFile(); collected.withLock { $0 = data } }
        reader.start()
        let lifetime = Duration.milliseconds(Int.random(in: 300...1_500, using: &random))
        let killAt = min(ContinuousClock.now + lifetime, deadline)
        while process.isRunning && ContinuousClock.now < killAt { try? await Task.sleep(for: .milliseconds(10)) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            figures.add("offline child kills")
        }
        await waitForExit(process)
        var text: Data?
        for _ in 0..<400 {
            text = collected.withLock { $0 }
            if text != nil { break }
            try? await Task.sleep(for: .milliseconds(5))
        }
        let output = String(decoding: text ?? Data(), as: UTF8.self)
        recordChildOutput(output, ledger: ledger, figures: figures)
        if process.terminationReason == .uncaughtSignal {
            if process.terminationStatus != SIGKILL { figures.add("crashes") }
        } else if process.terminationStatus == 2 {
            print("odata-soak: the offline child's store did not open: \(output.split(separator: "\n").last ?? "")")
            figures.add("store-open failures")
        } else {
            figures.add("crashes")
        }
    }
}
