import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataTyped
import SQLCipher
import TechnicalCache
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import OfflineStore

/// SIGKILL at random points of an initial download, a delta merge and an index build (issue #16): after every kill
/// the store reopens consistent — SQLite's `integrity_check` is ok, every record decodes, a download is resumable at
/// its last committed page, a merge is applied whole or not at all, each index is built whole or not at all, the
/// request queue and the ErrorArchive are as they were — and no file of the store holds a value, key or index entry
/// in plaintext. At the end the work is finished uninterrupted and every entity equals the producer's.
///
/// The worker is `ilodata` (a real process, on a real store directory, against the real `FixtureServer`), killed
/// after a random delay from a point it reached: its start, the n-th page the producer was asked for (the download,
/// every page 15 ms late), its last delta request (the merge), the end of an open as measured (the index build), or
/// the first bytes it wrote to the write-ahead log (a commit under way). The windows are learnt from runs that were
/// not killed, so they follow the machine's speed. The seed is printed; `KILL_SEED` replays the delays (where they
/// land depends on the machine). Under a sanitizer fewer kills (`KILL_COUNT` sets the kills per kind).
@Suite(.serialized) struct CrashConsistencyTests {
    /// Kills per kind: download, merge, index build (≥ 20 in all in a plain run).
    static let killsPerKind: (download: Int, merge: Int, index: Int) = {
        if let count = ProcessInfo.processInfo.environment["KILL_COUNT"].flatMap(Int.init) { return (count, count, count) }
        return Sanitizers.active ? (3, 3, 3) : (8, 7, 7)
    }()

    static let queries = ["customers=Customers", "events=Events", "orders=Orders"]
    /// The entity set and key property of each defining query.
    static let sets = [("Customers", "CustomerID"), ("Events", "EventID"), ("Orders", "OrderID")]
    static let indexes = ["--index", "events=Title,Kind,OccurredAt,Severity", "--index", "orders=ShipCity,ShipCountry,OrderDate"]

    @Test func sigkillDuringADownloadAMergeAndAnIndexBuildLeavesAConsistentStore() async throws {
        let seed = ProcessInfo.processInfo.environment["KILL_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("CrashConsistencyTests seed \(seed) (KILL_SEED=\(seed) replays it)")
        let random = SeededRandom(seed: seed)
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var run = try KillRun(server: server, directory: directory, random: random)
        print("CrashConsistencyTests: \(run.producerCount("Events")) events, \(run.producerCount("Orders")) orders")

        let clock = ContinuousClock()
        var phase = clock.now
        func lap(_ name: String) {
            print("CrashConsistencyTests: \(name) \(clock.now - phase)")
            phase = clock.now
        }
        try await run.killDownloads(Self.killsPerKind.download)
        lap("downloads")
        try await run.killMerges(Self.killsPerKind.merge)
        lap("merges")
        try await run.killIndexBuilds(Self.killsPerKind.index)
        lap("index builds")
        try await run.finish()
        lap("finish")

        let total = run.outcomes.values.reduce(0) { $0 + $1.values.reduce(0, +) }
        print("CrashConsistencyTests seed \(seed): \(total) kills: \(run.outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.sorted { $0.key < $1.key })" }.joined(separator: "; "))")
        #expect(total >= Self.killsPerKind.download + Self.killsPerKind.merge + Self.killsPerKind.index, "seed \(seed)")
    }

    /// mock-sap (a producer nobody here wrote; one page per set, no server-driven paging): an initial download
    /// killed after some defining queries were committed resumes on `open()` at the first one not committed (no
    /// `$metadata` read again, no committed set read again) and ends with exactly the producer's entities.
    @Test func aKilledDownloadFromMockSAPResumesOnOpenWithExactlyTheProducersEntities() async throws {
        let sap = try MockSAP.start(arguments: ["--latency-ms", "80"])
        defer { sap.stop() }
        let root = sap.serviceRoot(MockSAP.gwsampleBasic)
        let directory = try TemporaryDirectory()
        let sets = [("BusinessPartnerSet", ["BusinessPartnerID"]), ("ProductSet", ["ProductID"]), ("ContactSet", ["ContactGuid"]),
                    ("SalesOrderSet", ["SalesOrderID"]), ("SalesOrderLineItemSet", ["SalesOrderID", "ItemPosition"])]
        let names = sets.map(\.0)
        let key = "sap-\(UUID().uuidString)"
        let parameters = OfflineODataParameters(storeName: "sap", storePath: directory.path, storeEncryptionKey: key,
                                                keyDerivation: .pbkdf2(rounds: 1_000))
        let child = try ILODataProcess(["--store-path", directory.path, "--store-name", "sap", "--key", key, "--kdf-rounds", "1000",
                                        "--service-root", root] + names.flatMap { ["--defining-query", "\($0)=\($0)"] }
                                       + ["--command", "get ProductSet/$count"])
        // mock-sap logs a request when it has answered it: kill once the second set's answer is out.
        var answered = 0
        for _ in 0..<1000 where child.process.isRunning && answered < 2 {
            answered = try Self.sapGETs(sap, names).values.reduce(0, +)
            try await Task.sleep(for: .milliseconds(5))
        }
        kill(child.process.processIdentifier, SIGKILL)
        _ = await child.waitForExit()
        #expect(child.process.terminationReason == .uncaughtSignal, "killed mid-download: \(child.text)")

        let store = try EntityStore.open(directory: parameters.storeDirectory, parameters: parameters)
        #expect(try Self.integrity(store) == "ok")
        let (configuration, _) = try #require(try store.configuration())
        let resume = try #require(configuration.resume, "the download is resumable")
        #expect(!configuration.downloadComplete && (1..<sets.count).contains(resume.query), "resume at \(resume.query)")
        let records = try store.everyRecord()
        for (index, set) in names.enumerated() {
            let held = records.count(where: { $0.queries.contains(set) })
            #expect(index < resume.query ? held > 0 : held == 0, "\(set): \(held) records with the resume at \(resume.query)")
        }
        store.close()
        #expect(Self.plaintext(in: directory.path, [key]).isEmpty)

        let before = try Self.sapGETs(sap, names + ["$metadata"])
        let provider = try OfflineODataProvider(serviceRoot: root, parameters: parameters)
        for set in names { try await provider.add(definingQuery: OfflineODataDefiningQuery(name: set, query: set)) }
        try await provider.open()
        let after = try Self.sapGETs(sap, names + ["$metadata"])
        let resumedReads = (names + ["$metadata"]).filter { (after[$0] ?? 0) > (before[$0] ?? 0) }
        #expect(resumedReads == Array(names[resume.query...]), "the resume read only the sets not committed, and no $metadata")

        // Exactly the producer's entities: its keys, and entity by entity what an uninterrupted download stores.
        let fresh = try OfflineODataProvider(serviceRoot: root, parameters: OfflineODataParameters(
            storeName: "fresh", storePath: directory.path, storeEncryptionKey: key, keyDerivation: .pbkdf2(rounds: 1_000)))
        for set in names { try await fresh.add(definingQuery: OfflineODataDefiningQuery(name: set, query: set)) }
        try await fresh.open()
        for (set, keyProperties) in sets {
            let producerKeys = try await Self.sapKeys(root, set: set, key: keyProperties)
            let local = try await provider.getAll(set).map(plain)
            let reference = try await fresh.getAll(set).map(plain)
            let localKeys = local.map { entity in keyProperties.map { entity[$0].map { JSON.string($0) } ?? "" }.joined(separator: ",") }
            #expect(!producerKeys.isEmpty && localKeys.sorted() == producerKeys.sorted(), "\(set): \(local.count) local, \(producerKeys.count) on the producer")
            #expect(difference(local, reference) == nil, "\(set): \(difference(local, reference) ?? "")")
        }
        await fresh.close()
        await provider.close()
    }

    // MARK: Helpers

    /// SQLite's `PRAGMA integrity_check`, read through the store's writing connection.
    static func integrity(_ store: EntityStore) throws -> String {
        try store.withWriter { connection in
            let statement = try connection.prepare("PRAGMA integrity_check")
            var lines: [String] = []
            while try statement.step() { lines.append(statement.text(at: 0)) }
            return lines.joined(separator: "; ")
        }
    }

    /// The names of the indexes in the store's database.
    static func indexNames(_ store: EntityStore) throws -> [String] {
        try store.withWriter { connection in
            let select = try connection.prepare("SELECT name FROM sqlite_master WHERE type = 'index'")
            var names: [String] = []
            while try select.step() { names.append(select.text(at: 0)) }
            return names
        }
    }

    /// How many GETs mock-sap answered on each of `paths` (a path's last segment).
    static func sapGETs(_ sap: MockSAP, _ paths: [String]) throws -> [String: Int] {
        let (_, body) = try sap.admin("GET", "requests?limit=500")
        var result: [String: Int] = [:]
        for entry in try JSON.parse(body)["results"]?.arrayValue ?? [] where entry["method"]?.stringValue == "GET" {
            if let path = entry["path"]?.stringValue, let name = paths.first(where: { path.hasSuffix("/" + $0) }) { result[name, default: 0] += 1 }
        }
        return result
    }

    /// The keys of a mock-sap set (V2 JSON), each as its properties' JSON text joined by commas.
    static func sapKeys(_ root: String, set: String, key: [String]) async throws -> [String] {
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let url = root + set + "?$select=\(key.joined(separator: ","))&$format=json"
        let response = try await transport.send(TransportRequest(url: url, headerFields: [.accept: "application/json"]))
        try #require(response.status == 200, "GET \(set): \(response.status)")
        return (try JSON.parse(response.body)["d"]?["results"]?.arrayValue ?? []).map { entity in
            key.map { entity[$0].map { JSON.string($0) } ?? "" }.joined(separator: ",")
        }
    }

    /// Whether `bytes` contain `pattern` (a scan for its first byte, then a comparison).
    static func contains(_ bytes: [UInt8], _ pattern: [UInt8]) -> Bool {
        guard let first = pattern.first, bytes.count >= pattern.count else { return false }
        return bytes.withUnsafeBufferPointer { haystack in
            pattern.withUnsafeBufferPointer { needle in
                var offset = 0
                let last = haystack.count - needle.count
                while offset <= last {
                    guard let hit = memchr(haystack.baseAddress! + offset, Int32(first), last - offset + 1) else { return false }
                    offset = haystack.baseAddress!.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(haystack.baseAddress! + offset, needle.baseAddress!, needle.count) == 0 { return true }
                    offset += 1
                }
                return false
            }
        }
    }

    /// Which of `needles` a file under `directory` holds, as "needle in file".
    static func plaintext(in directory: String, _ needles: [String]) -> [String] {
        var found: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let file = enumerator?.nextObject() as? String {
            guard let data = FileManager.default.contents(atPath: directory + "/" + file), !data.isEmpty else { continue }
            let bytes = [UInt8](data)
            for needle in needles where contains(bytes, Array(needle.utf8)) { found.append("'\(needle)' in \(file)") }
        }
        return found
    }
}

/// One store taken through downloads, merges and index builds that are killed, with the checks after each kill.
struct KillRun {
    let server: FixtureServer
    let directory: TemporaryDirectory
    var random: SeededRandom
    let key = "kill-\(UUID().uuidString)"
    /// What each kill found, by kind: e.g. "download" → ["page committed": 3].
    var outcomes: [String: [String: Int]] = [:]
    /// Values, keys and index entries that must never be readable in the store's files.
    var needles: [String] = []
    /// The customers whose local state (a pending change, a failed one) wins over the producer's.
    let localCustomers = ["ALFKI", "ANATR"]
    var expectedQueue: [Int64] = []
    var expectedErrors: [Int64] = []
    var nextEvent = 0
    let customerIDs: [String]

    var storeDirectory: String { directory.path + "/crash" }
    var parameters: OfflineODataParameters {
        OfflineODataParameters(storeName: "crash", storePath: directory.path, storeEncryptionKey: key, keyDerivation: .pbkdf2(rounds: 1_000))
    }

    var arguments: [String] {
        ["--store-path", directory.path, "--store-name", "crash", "--key", key, "--kdf-rounds", "1000", "--service-root", server.serviceRoot]
            + CrashConsistencyTests.queries.flatMap { ["--defining-query", $0] }
    }

    init(server: FixtureServer, directory: TemporaryDirectory, random: SeededRandom) throws {
        self.server = server
        self.directory = directory
        self.random = random
        customerIDs = try server.read { try $0.entities(in: "Customers") }.compactMap { $0["CustomerID"]?.stringValue }
        // A few thousand events on the producer: the initial download has dozens of pages.
        let count = Sanitizers.rounds(plain: 2_000, sanitized: 1_000)
        try insertEvents(count)
        let events = try server.read { try $0.entities(in: "Events") }
        for event in events.prefix(4) {
            needles.append(try #require(event["Title"]?.stringValue))
            needles.append(try #require(event["EventID"]?.stringValue))
        }
        needles += [key, "Alfreds Futterkiste", "Obere Str. 57"]
    }

    func producerCount(_ set: String) -> Int { (try? server.read { try $0.count(in: set) }) ?? 0 }

    /// Adds `count` events on the producer, made from the seed.
    mutating func insertEvents(_ count: Int) throws {
        var events: [JSONObject] = []
        for _ in 0..<count { events.append(makeEvent()) }
        try server.mutate { data in for event in events { _ = try data.insert(event, into: "Events") } }
    }

    mutating func makeEvent() -> JSONObject {
        nextEvent += 1
        let customer = customerIDs[Int(random.next() % UInt64(customerIDs.count))]
        let kinds = ["call", "visit", "email", "complaint"]
        let hex = (0..<4).map { _ in String(UInt32(truncatingIfNeeded: random.next()), radix: 16) }
            .map { String(repeating: "0", count: 8 - $0.count) + $0 }.joined()
        let guid = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
            .joined(separator: "-")
        return [
            "EventID": .string(guid),
            "CustomerID": .string(customer),
            "Title": .string("Kill probe \(nextEvent) with \(customer) \(random.next() % 100_000)"),
            "Kind": .string(kinds[Int(random.next() % 4)]),
            "OccurredAt": .string("2026-\(two(1 + random.next() % 12))-\(two(1 + random.next() % 28))T\(two(random.next() % 24)):\(two(random.next() % 60)):00Z"),
            "Severity": .int(Int64(random.next() % 5)),
        ]
    }

    func two(_ number: UInt64) -> String { number < 10 ? "0\(number)" : "\(number)" }

    mutating func uniform(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }

    mutating func note(_ kind: String, _ outcome: String) { outcomes[kind, default: [:]][outcome, default: 0] += 1 }

    /// GETs the producer received on the defining queries' sets.
    func served() -> Int {
        CrashConsistencyTests.sets.reduce(0) { $0 + server.counters.requests(method: "GET", path: $1.0) }
    }

    /// Runs `ilodata` with `extra` arguments and SIGKILLs it `delay` ms after `reference` returns.
    ///
    /// - Returns: Whether it was killed; if not, how many ms after the reference it ended by itself.
    func runAndKill(_ extra: [String], after delay: Int, reference: @Sendable (ILODataProcess) async throws -> Void = { _ in })
        async throws -> (killed: Bool, endedAfter: Int?) {
        let child = try ILODataProcess(arguments + extra)
        try await reference(child)
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .milliseconds(delay)
        while child.process.isRunning && clock.now < deadline { try await Task.sleep(for: .microseconds(500)) }
        let wasRunning = child.process.isRunning
        if wasRunning { kill(child.process.processIdentifier, SIGKILL) }
        let ended = clock.now - start
        _ = await child.waitForExit()
        if child.process.terminationReason == .uncaughtSignal && wasRunning { return (true, nil) }
        #expect(child.process.terminationStatus == 0, "ilodata ended by itself: \(child.text)")
        return (false, Int(ended.components.seconds * 1000 + ended.components.attoseconds / 1_000_000_000_000_000))
    }

    // MARK: Checks after a kill

    /// The size of the write-ahead log a killed process left (0 when it wrote nothing: a closed store has none).
    func walSize() -> Int { Self.size(of: walPath) }

    var walPath: String { EntityStore.databasePath(in: storeDirectory) + "-wal" }

    static func size(of path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// Waits until the child writes to the write-ahead log (its transaction commits, or spills) or ends.
    static func waitForWAL(_ child: ILODataProcess, path: String) async throws {
        while child.process.isRunning && size(of: path) == 0 { try await Task.sleep(for: .microseconds(200)) }
    }

    /// What a reopened store holds.
    struct Inspection {
        var configuration: StoreConfiguration?
        var records: [EntityRecord]
        var indexes: [String]
    }

    /// Reopens the store (in this process, through its own storage) and reads everything; every record decodes.
    func inspect() throws -> Inspection {
        let store = try EntityStore.open(directory: storeDirectory, parameters: parameters)
        defer { store.close() }
        let records = try store.everyRecord()
        for record in records { _ = record.json }
        return Inspection(configuration: try store.configuration()?.0, records: records, indexes: try CrashConsistencyTests.indexNames(store))
    }

    /// The checks every kill is followed by: no plaintext in the files the kill left, and a store that opens with
    /// `integrity_check` ok, every record decoding, the request queue and the ErrorArchive as they were.
    mutating func checkAfterKill(_ kind: String) throws -> Inspection {
        // Before anything reopens it (a reopen folds the write-ahead log into the database).
        let leaked = CrashConsistencyTests.plaintext(in: directory.path, needles)
        #expect(leaked.isEmpty, "after a kill during \(kind): \(leaked)")
        let store = try EntityStore.open(directory: storeDirectory, parameters: parameters)
        defer { store.close() }
        #expect(try CrashConsistencyTests.integrity(store) == "ok", "\(kind)")
        let records = try store.everyRecord()
        for record in records { _ = record.json }
        #expect(try store.queuedRequests().map(\.id) == expectedQueue, "\(kind): the request queue")
        #expect(try store.errorEntries().map(\.requestID) == expectedErrors, "\(kind): the ErrorArchive")
        return Inspection(configuration: try store.configuration()?.0, records: records, indexes: try CrashConsistencyTests.indexNames(store))
    }

    // MARK: Download

    mutating func killDownloads(_ kills: Int) async throws {
        let latency = 15
        let slow = try server.faults.add(FaultRule(.latency(.milliseconds(latency)), method: "GET"))
        var killed = 0
        var finishedFirst = 0
        while killed < kills {
            let start = served()
            // Now and then while the process starts and creates the store; else while a page is read or committed.
            let pages = uniform(0...6)
            let extra = uniform(0...(latency + 20))
            let early = uniform(0...300)
            let producer = self.server
            let sets = CrashConsistencyTests.sets
            let (didKill, _) = try await runAndKill(["--command", "get Events/$count"], after: pages == 0 ? early : extra) { child in
                while pages > 0 && child.process.isRunning && sets.reduce(0, { $0 + producer.counters.requests(method: "GET", path: $1.0) }) < start + pages {
                    try await Task.sleep(for: .milliseconds(1))
                }
            }
            guard didKill else {
                // The download finished before its kill came (a fast moment of a shared machine): not a kill, and the
                // store is complete, so the next run would not download. Start over on no store, a bounded number of times.
                finishedFirst += 1
                #expect(finishedFirst <= kills, "the download finished before its kill \(finishedFirst) times")
                if finishedFirst > kills { break }
                try FileManager.default.removeItem(atPath: storeDirectory)
                continue
            }
            killed += 1
            checkDownload(try checkAfterKill("download"))
        }
        _ = server.faults.remove(slow)

        // Finished uninterrupted: resumed where it stopped, without reading $metadata again.
        let resumable = try inspect().configuration?.resume != nil
        let metadataBefore = server.counters.requests(method: "GET", path: "$metadata")
        let provider = try await makeProvider()
        try await provider.open()
        #expect(!resumable || server.counters.requests(method: "GET", path: "$metadata") == metadataBefore, "a resumed download reads no $metadata")
        try await expectProducersEntities(provider)
        await provider.close()
    }

    /// A killed initial download: each defining query before the one in progress complete, the one in progress
    /// holding exactly the entities of its committed pages, the rest empty.
    mutating func checkDownload(_ inspection: Inspection) {
        let records = inspection.records
        guard let configuration = inspection.configuration else {
            #expect(records.isEmpty)
            note("download", "nothing committed")
            return
        }
        let names = CrashConsistencyTests.queries.map { String($0.prefix { $0 != "=" }) }
        let resumeAt = configuration.resume?.query ?? names.count
        #expect(configuration.downloadComplete == (configuration.resume == nil))
        for (index, name) in names.enumerated() {
            let held = records.count(where: { $0.queries.contains(name) })
            let set = CrashConsistencyTests.sets[index].0
            if index < resumeAt {
                #expect(held == producerCount(set), "\(name): complete before the resume point")
                #expect(configuration.deltaLinks[name] != nil, "\(name): its delta link is kept")
            } else if index == resumeAt {
                #expect(held == configuration.resume?.entities, "\(name): the committed pages, no more, no less")
            } else {
                #expect(held == 0, "\(name): not begun")
            }
        }
        note("download", configuration.downloadComplete ? "complete" : "resumable at query \(resumeAt)")
    }

    func makeProvider() async throws -> OfflineODataProvider {
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        for query in CrashConsistencyTests.queries {
            let equals = query.firstIndex(of: "=")!
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: String(query[..<equals]), query: String(query[query.index(after: equals)...])))
        }
        return provider
    }

    // MARK: Entities

    typealias Snapshot = [String: [String: JSONObject]]

    /// The producer's entities, by set and key (JSON text), without annotations.
    func producerSnapshot() throws -> Snapshot {
        var result: Snapshot = [:]
        for (set, key) in CrashConsistencyTests.sets {
            for entity in try server.read({ try $0.entities(in: set) }) { result[set, default: [:]][JSON.string(entity[key] ?? .null)] = plain(entity) }
        }
        return result
    }

    /// The store's entities, read through the open provider.
    func localSnapshot(_ provider: OfflineODataProvider) async throws -> Snapshot {
        var result: Snapshot = [:]
        for (set, key) in CrashConsistencyTests.sets {
            for entity in try await provider.getAll(set) { result[set, default: [:]][JSON.string(entity[key] ?? .null)] = plain(entity) }
        }
        return result
    }

    /// The store's visible entities as its records hold them (without reading them through the provider).
    func recordSnapshot(_ records: [EntityRecord]) -> Snapshot {
        var result: Snapshot = [:]
        let keys = Dictionary(uniqueKeysWithValues: CrashConsistencyTests.sets.map { ($0.0, $0.1) })
        for record in records where record.state != .deleted {
            guard let key = keys[record.set] else { continue }
            result[record.set, default: [:]][JSON.string(record.entity[key] ?? .null)] = plain(record.entity)
        }
        return result
    }

    /// Where two snapshots differ (the customers with local state left out unless `all`), nil when equal.
    func mismatch(_ local: Snapshot, _ expected: Snapshot, all: Bool = false) -> String? {
        for (set, _) in CrashConsistencyTests.sets {
            var mine = local[set] ?? [:]
            var theirs = expected[set] ?? [:]
            if set == "Customers" && !all {
                for id in localCustomers { mine[JSON.string(.string(id))] = nil; theirs[JSON.string(.string(id))] = nil }
            }
            if mine.count != theirs.count { return "\(set): \(mine.count) local, \(theirs.count) expected" }
            for (key, entity) in theirs where mine[key] != entity {
                return "\(set)(\(key)): local \(mine[key].map { JSON.string(.object($0)) } ?? "missing"), expected \(JSON.string(.object(entity)))"
            }
        }
        return nil
    }

    func expectProducersEntities(_ provider: OfflineODataProvider, all: Bool = false) async throws {
        let difference = mismatch(try await localSnapshot(provider), try producerSnapshot(), all: all)
        #expect(difference == nil, "\(difference ?? "")")
    }

    // MARK: Merge

    /// Changes on the producer: updated, deleted and added events, updated orders and customers.
    mutating func changeProducer(round: Int) throws {
        let events = try server.read { try $0.entities(in: "Events") }.compactMap { $0["EventID"] }
        let orders = try server.read { try $0.entities(in: "Orders") }.compactMap { $0["OrderID"] }
        let customers = customerIDs.filter { !localCustomers.contains($0) }
        var touched: Set<Int> = []
        for _ in 0..<60 {
            let index = uniform(0...(events.count - 1))
            guard touched.insert(index).inserted else { continue }
            let severity = Int64(uniform(0...4))
            let title = "Kill probe merged \(round)-\(index)"
            try server.mutate { data in
                _ = try data.update(in: "Events", key: ["EventID": events[index]], changes: ["Severity": .int(severity), "Title": .string(title)])
            }
        }
        for _ in 0..<15 {
            let index = uniform(0...(events.count - 1))
            guard touched.insert(index).inserted else { continue }
            try server.mutate { data in try data.delete(from: "Events", key: ["EventID": events[index]]) }
        }
        try insertEvents(30)
        for _ in 0..<5 {
            let order = orders[uniform(0...(orders.count - 1))]
            let city = "Merged \(round)-\(uniform(0...999))"
            try server.mutate { data in _ = try data.update(in: "Orders", key: ["OrderID": order], changes: ["ShipCity": .string(city)]) }
        }
        let customer = customers[uniform(0...(customers.count - 1))]
        let contact = "Merge contact \(round)"
        try server.mutate { data in _ = try data.update(in: "Customers", key: ["CustomerID": .string(customer)], changes: ["ContactName": .string(contact)]) }
    }

    mutating func killMerges(_ kills: Int) async throws {
        // Local state the merges must leave alone: a failed change in the ErrorArchive, a pending one in the queue.
        let provider = try await makeProvider()
        try await provider.open()
        let refusal = try server.faults.add(FaultRule(.fail(status: 400, code: "Refused", message: "refused"), method: "PATCH", path: "Customers('ANATR')"))
        _ = try await provider.execute(.local("PATCH", "Customers('ANATR')", body: #"{"City":"Refused city of the kill test"}"#))
        let upload = try await provider.upload()
        #expect(upload.failed.count == 1)
        _ = server.faults.remove(refusal)
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"Fax":"Pending fax kill-test"}"#))
        needles += ["Refused city of the kill test", "Pending fax kill-test"]
        var lastApplied = try await localSnapshot(provider)
        #expect(mismatch(lastApplied, try producerSnapshot()) == nil)
        #expect(mismatch(recordSnapshot(try inspect().records), lastApplied) == nil, "the records hold what the provider reads")
        await provider.close()
        let store = try EntityStore.open(directory: storeDirectory, parameters: parameters)
        expectedQueue = try store.queuedRequests().map(\.id)
        expectedErrors = try store.errorEntries().map(\.requestID)
        store.close()
        #expect(expectedQueue.count == 1 && expectedErrors.count == 1)

        // One merge uninterrupted: how long the child runs after the producer answered its last delta request.
        try changeProducer(round: 0)
        let producer = self.server
        let asked = served()
        let clock = ContinuousClock()
        let timing = LockedValue<(Duration, Duration)>((.zero, .zero))
        _ = try await runAndKill(["--command", "download"], after: 60_000) { child in
            let start = clock.now
            var answered = start
            while child.process.isRunning {
                if answered == start && CrashConsistencyTests.sets.reduce(0, { $0 + producer.counters.requests(method: "GET", path: $1.0) }) >= asked + 3 {
                    answered = clock.now
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            timing.withLock { $0 = (answered - start, clock.now - answered) }
        }
        let (network, tail) = timing.withLock { $0 }
        print("CrashConsistencyTests: an uninterrupted merge: \(network) of requests, then \(tail) until exit")
        lastApplied = try producerSnapshot()
        let calibrated = try inspect()
        #expect(mismatch(recordSnapshot(calibrated.records), lastApplied) == nil, "the uninterrupted merge applied the producer's changes")
        // Where the tail ends, learnt again from every run that ended before its kill.
        var tailMilliseconds = max(5, Int(tail.components.seconds * 1000 + tail.components.attoseconds / 1_000_000_000_000_000))
        let networkMilliseconds = max(5, Int(network.components.seconds * 1000 + network.components.attoseconds / 1_000_000_000_000_000))

        var linksBefore = calibrated.configuration?.deltaLinks
        var killed = 0
        var round = 0
        while killed < kills {
            round += 1
            try changeProducer(round: round)
            let expected = try producerSnapshot()
            let start = served()
            // A third of the kills while the delta is read, a third while it is merged, a third once its commit began
            // (the first bytes in the write-ahead log: the commit, the checkpoint at close).
            let mode = uniform(0...2)
            let delay = [uniform(0...networkMilliseconds), uniform((tailMilliseconds / 3)...(tailMilliseconds + 5)), uniform(0...20)][mode]
            let wal = walPath
            let (didKill, endedAfter) = try await runAndKill(["--command", "download"], after: delay) { child in
                while mode == 1 && child.process.isRunning
                    && CrashConsistencyTests.sets.reduce(0, { $0 + producer.counters.requests(method: "GET", path: $1.0) }) < start + 3 {
                    try await Task.sleep(for: .milliseconds(1))
                }
                if mode == 2 { try await KillRun.waitForWAL(child, path: wal) }
            }
            if didKill { killed += 1 }
            if let endedAfter, mode == 1 { tailMilliseconds = max(5, endedAfter) }
            let walWritten = walSize() > 0
            let inspection = try checkAfterKill("merge")
            let staged = try stagedRows()
            let configuration = inspection.configuration
            let local = recordSnapshot(inspection.records)
            if mismatch(local, expected) == nil {
                lastApplied = expected
                if didKill { note("merge", "applied before the kill") }
                #expect(configuration?.deltaLinks != linksBefore, "a merge applied moved its delta links")
                #expect(staged == 0, "a merge applied emptied its staging table in the same transaction")
                linksBefore = configuration?.deltaLinks
            } else {
                let difference = mismatch(local, lastApplied)
                #expect(difference == nil, "killed merge: neither the state before nor the one after: \(difference ?? "")")
                #expect(configuration?.deltaLinks == linksBefore, "a merge not applied keeps its delta links")
                // Pages spooled into the staging table before the kill are never read: the next merge empties it first
                // and the next round's checks compare every entity with the producer's.
                note("merge", staged > 0 ? "rolled back, its staged pages left"
                     : walWritten ? "rolled back, its commit under way (WAL written)" : "rolled back, before its commit")
            }
        }
        // Finished uninterrupted: the delta from the links kept brings everything.
        let last = try await makeProvider()
        try await last.open()
        try await last.download()
        try await expectProducersEntities(last)
        await last.close()
    }

    /// The rows a killed download left in the staging table (`EntityStore+Staging.swift`; 0 when it has none).
    func stagedRows() throws -> Int {
        let store = try EntityStore.open(directory: storeDirectory, parameters: parameters)
        defer { store.close() }
        return try store.reading("the staging table") { connection in
            let exists = try connection.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'download:staging'")
            guard try exists.step(), exists.integer(at: 0) == 1 else { return 0 }
            let select = try connection.prepare("SELECT count(*) FROM \(EntityStore.stagingTable)")
            return try select.step() ? Int(select.integer(at: 0)) : 0
        }
    }

    // MARK: Index build

    /// The declared indexes (by name), and those of them in `indexes`.
    func declaredIndexes(among indexes: [String]) throws -> (present: [String], declared: [String]) {
        let store = try EntityStore.open(directory: storeDirectory, parameters: parameters)
        defer { store.close() }
        var declared: [String] = []
        for (set, properties) in [("Events", ["Title", "Kind", "OccurredAt", "Severity"]), ("Orders", ["ShipCity", "ShipCountry", "OrderDate"])] {
            let table = try #require(store.table(set))
            declared += properties.map(table.indexName)
        }
        return (indexes.filter(declared.contains), declared)
    }

    func dropIndexes(_ names: [String]) throws {
        let store = try EntityStore.open(directory: storeDirectory, parameters: parameters)
        defer { store.close() }
        try store.withWriter { connection in
            for name in names { try connection.execute("DROP INDEX \(EntityTable.quote(name))") }
        }
    }

    mutating func killIndexBuilds(_ kills: Int) async throws {
        #expect(try declaredIndexes(among: inspect().indexes).present.isEmpty)
        // How long an open takes without the new indexes and with them, on a copy of the store.
        let copy = directory.path + "/copy"
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: storeDirectory, toPath: copy + "/crash")
        var copied = arguments
        copied[1] = copy
        let clock = ContinuousClock()
        func timed(_ extra: [String]) async throws -> Int {
            let start = clock.now
            let (status, text) = try await ILODataProcess.run(copied + extra)
            #expect(status == 0, "\(text)")
            let elapsed = clock.now - start
            return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        }
        // `pending` reads nothing more after the open: the build is the end of the run.
        let plain = try await timed(["--command", "pending"])
        let building = try await timed(CrashConsistencyTests.indexes + ["--command", "pending"])
        try FileManager.default.removeItem(atPath: copy)
        print("CrashConsistencyTests: an open takes \(plain) ms, \(building) ms while it builds the indexes")
        // Around the end of the open without the build, up to the end with it: where the build runs.
        // The build ends where the run does; it takes about the difference. The end is learnt again from every run
        // that ended before its kill.
        let span = max(building - plain, 10) + 20
        var end = max(plain, building)
        var killed = 0
        let wal = walPath
        while killed < kills {
            // Half of the kills in the window of the build, half once its commit began (bytes in the write-ahead log).
            let atCommit = uniform(0...1) == 1
            let delay = atCommit ? uniform(0...20) : uniform(max(0, end - span)...end)
            let (didKill, endedAfter) = try await runAndKill(CrashConsistencyTests.indexes + ["--command", "pending"], after: delay) { child in
                if atCommit { try await KillRun.waitForWAL(child, path: wal) }
            }
            if didKill { killed += 1 }
            if let endedAfter, !atCommit { end = endedAfter }
            let walWritten = walSize() > 0
            let (present, declared) = try declaredIndexes(among: checkAfterKill("index build").indexes)
            // Each index is built in a write transaction of its own (`EntityStore+Indexes.swift`): any of them may be
            // there after a kill, each one whole (`integrity_check` above compares every index with its table), and the
            // next open builds the others.
            #expect(Set(present).isSubset(of: Set(declared)), "\(present)")
            if !present.isEmpty {
                if didKill { note("index build", present.count == declared.count ? "built before the kill" : "\(present.count) of \(declared.count) built") }
                try dropIndexes(present)  // so that the next run builds them again
            } else {
                note("index build", walWritten ? "rolled back, its commit under way (WAL written)" : "rolled back, before its commit")
            }
        }
    }

    // MARK: The end

    mutating func finish() async throws {
        // The indexes built uninterrupted, answers through them equal to the producer's.
        let (status, text) = try await ILODataProcess.run(arguments + CrashConsistencyTests.indexes + ["--command", "get Events/$count"])
        #expect(status == 0, "\(text)")
        let (present, declared) = try declaredIndexes(among: inspect().indexes)
        #expect(Set(present) == Set(declared))
        let provider = try await makeProvider()
        try await provider.open()
        for query in ["Events?$filter=Kind eq 'visit'&$orderby=Title", "Events?$filter=Severity ge 3&$orderby=OccurredAt,EventID",
                      "Orders?$filter=ShipCity eq 'Reims'&$orderby=OrderID"] {
            let local = try await provider.getAll(query.replacingOccurrences(of: " ", with: "%20")).map(plain)
            let (expected, _) = try await Producer.getAll(server, query.replacingOccurrences(of: " ", with: "%20"))
            #expect(!expected.isEmpty && difference(local, expected.map(plain)) == nil, "\(query): \(difference(local, expected.map(plain)) ?? "")")
        }
        // The local state settled: the pending change uploaded, the failed one given up (read again by the download).
        let upload = try await provider.upload()
        #expect(upload.failed.isEmpty && upload.succeeded == 1, "\(upload.failed.map { "\($0.requestMethod) \($0.requestURL): \($0.httpStatusCode.map(String.init) ?? "-") \($0.message)" })")
        for id in expectedErrors { _ = try await provider.execute(.local("DELETE", "ErrorArchive(\(id))")) }
        try await provider.download()
        try await expectProducersEntities(provider, all: true)
        await provider.close()
        let leaked = CrashConsistencyTests.plaintext(in: directory.path, needles)
        #expect(leaked.isEmpty, "\(leaked)")
        // The search does see plaintext where it is.
        let control = directory.path + "/control"
        try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: control + "/file", contents: Data(("x" + needles.joined(separator: "|")).utf8))
        #expect(CrashConsistencyTests.plaintext(in: control, needles).count == needles.count)
    }
}
