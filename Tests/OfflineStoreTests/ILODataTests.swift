import Foundation
import ODataCore
import ODataFixtures
import Synchronization
import Testing

@testable import OfflineStore

/// Runs the built `ilodata` binary as a child process, the way a user would.
final class ILODataProcess: @unchecked Sendable {
    /// The `ilodata` built with this test bundle (the same scratch path, so a sanitizer run tests
    /// its own instrumented binary), else the default build's.
    static var binary: String {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("ilodata").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/ilodata").path
    }

    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    /// What the child wrote: both streams in the order read, and each on its own.
    private final class Collected: Sendable {
        let text = LockedValue<String>("")
        let standardOutput = LockedValue<String>("")
        let standardError = LockedValue<String>("")
    }

    private let collected = Collected()

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        let collected = self.collected
        for (pipe, stream) in [(output, collected.standardOutput), (errors, collected.standardError)] {
            pipe.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                guard !data.isEmpty else { return }
                let text = String(decoding: data, as: UTF8.self)
                stream.withLock { $0 += text }
                collected.text.withLock { $0 += text }
            }
        }
        try process.run()
    }

    /// Standard output and standard error together, in the order read.
    var text: String { collected.text.withLock { $0 } }
    /// Standard output alone: the answers of the commands.
    var standardOutput: String { collected.standardOutput.withLock { $0 } }
    /// Standard error alone: progress and the argument parser's errors.
    var standardError: String { collected.standardError.withLock { $0 } }

    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Waits until the output satisfies `condition` (or ten seconds pass).
    func waitFor(_ condition: (String) -> Bool) async -> Bool {
        for _ in 0..<1000 {
            if condition(text) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(text)
    }

    func waitForExit() async -> Int32 {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
        try? await Task.sleep(for: .milliseconds(50))
        output.fileHandleForReading.readabilityHandler = nil
        errors.fileHandleForReading.readabilityHandler = nil
        return process.terminationStatus
    }

    /// Runs one command to completion and returns the exit code and output (both streams).
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (Int32, String) {
        let child = try await finished(arguments, environment: environment)
        return (child.process.terminationStatus, child.text)
    }

    /// Runs one command to completion (standard input closed) and returns the finished child, whose streams can be
    /// read apart.
    static func finished(_ arguments: [String], environment: [String: String] = [:]) async throws -> ILODataProcess {
        let child = try ILODataProcess(arguments, environment: environment)
        child.closeInput()
        _ = await child.waitForExit()
        return child
    }
}

@Suite(.serialized) struct ILODataTests {
    static func storeArguments(_ directory: TemporaryDirectory) -> [String] {
        ["--store-path", directory.path, "--store-name", "northwind", "--key", Northwind.key]
    }

    @Test func ilodataWritesToAnSAPBackEndWithBasicAuthenticationAndCSRF() async throws {
        let password = "pw-\(UUID().uuidString)"
        let sap = try MockSAP.start(arguments: ["--auth", "CLERK:\(password)"])
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        let base = ["--store-path", directory.path, "--store-name", "sap", "--key", "k", "--kdf-rounds", "1000",
                    "--user", "CLERK", "--sap-client", "100"]
        let environment = ["ILODATA_PASSWORD": password]
        let (status, text) = try await ILODataProcess.run(base + [
            "--service-root", sap.serviceRoot(MockSAP.gwsampleBasic), "--defining-query", "products=ProductSet",
            "--command", #"patch ProductSet('HT-1000') {"Name":"Patched by ilodata"}"#,
        ], environment: environment)
        #expect(status == 0, "\(text)")
        let (uploaded, uploadText) = try await ILODataProcess.run(base + ["--command", "upload"], environment: environment)
        #expect(uploaded == 0, "\(uploadText)")
        #expect(!text.contains(password) && !uploadText.contains(password))

        // The change arrived (read with the producer's basic authentication, as a second client).
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "-u", "CLERK:\(password)", sap.serviceRoot(MockSAP.gwsampleBasic) + "ProductSet('HT-1000')?$format=json"]
        let output = Pipe()
        curl.standardOutput = output
        try curl.run()
        let body = output.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        #expect(try JSON.parse(body)["d"]?["Name"]?.stringValue == "Patched by ilodata")

        // Without the password in the environment: a clear refusal, before anything is sent.
        let (refused, refusal) = try await ILODataProcess.run(base + ["--command", "queue"])
        #expect(refused != 0 && refusal.contains("ILODATA_PASSWORD"), "\(refusal)")
    }

    /// `--index` declares a defining query's secondary indexes; on an existing store the open builds them. An index of
    /// a defining query not given, or of a property the set does not have, is refused with a message naming it.
    @Test func ilodataDeclaresIndexesAndRefusesBadOnes() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let base = Self.storeArguments(directory) + ["--kdf-rounds", "1000", "--service-root", server.serviceRoot,
                                                      "--defining-query", "customers=Customers"]
        let (created, createdText) = try await ILODataProcess.run(base + ["--command", "get Customers/$count"])
        #expect(created == 0, "\(createdText)")
        let (unknown, unknownText) = try await ILODataProcess.run(base + ["--index", "orders=OrderDate", "--command", "get Customers/$count"])
        #expect(unknown != 0 && unknownText.contains("'orders'"), "\(unknownText)")
        let (badProperty, badPropertyText) = try await ILODataProcess.run(base + ["--index", "customers=NoSuchProperty", "--command", "get Customers/$count"])
        #expect(badProperty != 0 && badPropertyText.contains("NoSuchProperty"), "\(badPropertyText)")

        let (built, builtText) = try await ILODataProcess.run(base + ["--index", "customers=Country,City", "--command", "get Customers?$filter=Country eq 'Germany'&$count=true&$top=0"])
        #expect(built == 0 && builtText.contains("of 11"), "\(builtText)")
        let store = try EntityStore.open(directory: directory.path + "/northwind", parameters: Northwind.parameters(directory))
        defer { store.close() }
        let table = try #require(store.table("Customers"))
        let indexes = try CrashConsistencyTests.indexNames(store)
        #expect(indexes.contains(table.indexName("Country")) && indexes.contains(table.indexName("City")), "\(indexes)")
    }

    @Test func ilodataCreatesAStoreRunsOneShotCommandsAndAnInteractiveSession() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: ILODataProcess.binary), "build ilodata first (swift build --build-tests builds it)")
        let server = try await FixtureServer.start()
        let directory = try TemporaryDirectory()
        let base = Self.storeArguments(directory) + ["--kdf-rounds", "1000"]
        // Create from a service root and defining queries, one-shot read with a readable query. Standard output holds
        // the answer alone (the initial download's progress goes to standard error).
        let created = try await ILODataProcess.finished(base + [
            "--service-root", server.serviceRoot, "--defining-query", "customers=Customers?$expand=Orders",
            "--defining-query", "shippers=Shippers",
            "--command", "get Customers?$filter=Country eq 'Germany'&$orderby=City&$select=CustomerID,City&$count=true&$top=2",
        ])
        let (status, text) = (created.process.terminationStatus, created.standardOutput)
        #expect(status == 0, "\(created.text)")
        #expect(created.standardError.contains("initial download shippers: 3 entities"), "\(created.standardError)")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("CustomerID") == true, "\(text)")
        #expect(lines.contains { $0.hasPrefix("DRACD") && $0.contains("Aachen") }, "\(text)")
        #expect(lines.last == "2 entities of 11", "\(text)")
        await server.stop()

        // Later runs need no network (the producer is stopped) and find the service root themselves.
        let (jsonStatus, json) = try await ILODataProcess.run(Self.storeArguments(directory) + ["--json", "--command", "get Customers('ALFKI')/Orders?$select=OrderID&$top=2"])
        #expect(jsonStatus == 0)
        let parsed = try JSON.parse(json)
        #expect(parsed["value"]?.arrayValue?.compactMap { $0["OrderID"]?.intValue } == [10643, 10692])
        // A count prints as a number in table mode too.
        let (countStatus, count) = try await ILODataProcess.run(Self.storeArguments(directory) + ["--command", "get Customers/$count?$filter=Country eq 'Germany'"])
        #expect(countStatus == 0)
        #expect(count == "11\n", "\(count)")

        // An interactive session through standard input.
        let session = try ILODataProcess(Self.storeArguments(directory))
        session.send(#"post Shippers {"CompanyName":"Night Ferry","Phone":"555"}"#)
        session.send(#"patch Customers('ALFKI') {"City":"Kiel"}"#)
        session.send("get Customers('ALFKI')?$select=CustomerID,City")
        session.send("delete Shippers(2)")
        session.send("queue")
        session.send("frobnicate")
        session.send("pending")
        session.send("quit")
        #expect(await session.waitForExit() == 0)
        let out = session.text
        #expect(out.contains("created Shippers(-1)"), "\(out)")
        #expect(out.contains("ALFKI      | Kiel"), "\(out)")
        #expect(out.contains("deleted Shippers(2)"), "\(out)")
        #expect(out.contains("error: unknown command 'frobnicate'"), "\(out)")
        #expect(out.contains("pending requests: yes"), "\(out)")
        let queueLines = out.split(separator: "\n").filter { $0.hasPrefix("1 ") || $0.hasPrefix("2 ") || $0.hasPrefix("3 ") }
        #expect(queueLines.count == 3, "\(out)")
        #expect(queueLines.first?.contains("POST") == true)
        #expect(queueLines.last?.contains("DELETE") == true)

        // The session's changes are in the store.
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: Northwind.parameters(directory))
        try await provider.open()
        #expect(try await provider.get("Customers('ALFKI')")["City"] == "Kiel")
        #expect(try await provider.pendingRequests().map { $0.properties["Method"]?.stringValue ?? "" } == ["POST", "PATCH", "DELETE"])
        await provider.close()

        // Wrong key and bad input: typed errors, exit code 1, nothing changed.
        let (wrongStatus, wrongText) = try await ILODataProcess.run(["--store-path", directory.path, "--store-name", "northwind", "--key", "nope", "--command", "queue"])
        #expect(wrongStatus != 0)
        #expect(wrongText.contains("wrongKey"), "\(wrongText)")
        let (badStatus, badText) = try await ILODataProcess.run(Self.storeArguments(directory) + ["--command", "get Customers?$filter=City eq"])
        #expect(badStatus == 1)
        #expect(badText.contains("error: invalidRequest"), "\(badText)")
    }

    /// Untested row of issue 30: a store made by a program with the default key (no passphrase: a random key in
    /// `<storeName>.key`) opens in `ilodata` without `--key`; with a passphrase it does not.
    @Test func aStoreMadeWithTheDefaultKeyOpensInIlodataWithoutKey() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: ILODataProcess.binary), "build ilodata first (swift build --build-tests builds it)")
        let directory = try TemporaryDirectory()
        let transport = StoreLifecycleTests.backEnd()
        var parameters = StoreLifecycleTests.parameters(URL(fileURLWithPath: directory.path), transport: transport)
        parameters.storeName = "shop"
        try await StoreLifecycleTests.openedProvider(parameters).close()
        #expect(FileManager.default.fileExists(atPath: directory.path + "/shop.key"))
        let arguments = ["--store-path", directory.path, "--store-name", "shop", "--kdf-rounds", "1000"]
        let (status, text) = try await ILODataProcess.run(arguments + ["--command", "get Products"])
        #expect(status == 0, "\(text)")
        #expect(text.contains("Bread"), "\(text)")
        let (wrongStatus, wrongText) = try await ILODataProcess.run(arguments + ["--key", "a passphrase", "--command", "get Products"])
        #expect(wrongStatus != 0)
        #expect(wrongText.contains("wrongKey") || wrongText.contains("encryptionMismatch"), "\(wrongText)")
    }

    @Test func aStoreOpenInAnotherProcessIsRefused() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        await provider.close()
        let holder = try ILODataProcess(Self.storeArguments(directory))
        holder.send("pending")
        #expect(await holder.waitFor { $0.contains("pending requests: no") })
        let error = await #expect(throws: OfflineODataError.self) { try await provider.open() }
        #expect(error == .storeLocked)
        let (status, text) = try await ILODataProcess.run(Self.storeArguments(directory) + ["--command", "queue"])
        #expect(status != 0)
        #expect(text.contains("storeLocked"), "\(text)")
        holder.send("quit")
        #expect(await holder.waitForExit() == 0)
        try await provider.open()
        #expect(try await provider.getAll("Shippers").count == 3)
        await provider.close()
    }

    @Test func aSIGKILLDuringABurstOfLocalWritesLosesNoCommittedWrite() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        await provider.close()
        let writer = try ILODataProcess(Self.storeArguments(directory))
        for index in 1...400 {
            if index % 3 == 0 {
                writer.send("patch Customers('ALFKI') {\"Phone\":\"burst-\(index)\"}")
            } else {
                writer.send("post Shippers {\"CompanyName\":\"Burst \(index)\"}")
            }
        }
        // Kill it in the middle of the burst.
        let confirmedEnough = await writer.waitFor { $0.components(separatedBy: "\n").filter { $0.hasPrefix("created") || $0.hasPrefix("updated") }.count >= 60 }
        #expect(confirmedEnough, "\(writer.text)")
        kill(writer.process.processIdentifier, SIGKILL)
        _ = await writer.waitForExit()
        #expect(writer.process.terminationReason == .uncaughtSignal)
        let confirmed = writer.text.components(separatedBy: "\n")
        let created = confirmed.filter { $0.hasPrefix("created ") }.map { String($0.dropFirst("created ".count)) }
        #expect(created.count >= 40)

        // Reopen: every confirmed write is there with its queue entry; writes and queue agree.
        try await provider.open()
        let queue = try await provider.pendingRequests().map(\.properties)
        #expect(queue.count >= created.count + confirmed.filter { $0.hasPrefix("updated ") }.count)
        #expect(queue.count < 400, "the kill landed mid-burst")
        #expect(queue.compactMap { $0["RequestID"]?.intValue } == Array(1...Int64(queue.count)), "queue IDs are contiguous and in order")
        for reference in created {
            #expect(try await provider.get(reference)["CompanyName"]?.stringValue?.hasPrefix("Burst") == true, "\(reference)")
        }
        let posts = queue.filter { $0["Method"] == "POST" }
        let localShippers = try await provider.getAll("Shippers?$filter=ShipperID%20lt%200")
        #expect(localShippers.count == posts.count, "each committed create has exactly one queue entry")
        #expect(Set(posts.compactMap { $0["AffectedEntity"]?.stringValue }) == Set(localShippers.compactMap { $0["@odata.id"]?.stringValue }))
        if let lastPatch = queue.last(where: { $0["Method"] == "PATCH" }) {
            let phone = try await provider.get("Customers('ALFKI')")["Phone"]?.stringValue ?? ""
            #expect(lastPatch["Body"]?.stringValue?.contains(phone) == true, "the last committed update is the local state")
        }
        // The store stays writable.
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"After"}"#))
        #expect(try await provider.pendingRequests().count == queue.count + 1)
        await provider.close()
    }

    /// A queue of creates and updates with repeatable requests; `ilodata upload` (one by one, or in
    /// `$batch`es of `batch` change sets) is killed with SIGKILL after a random number of
    /// executions; a new upload in this process (one by one) finishes the job. With `$batch`es a
    /// killed upload can leave a whole `$batch` executed but not recorded; its requests are re-sent
    /// and the producer answers each from its repeatability record.
    @Test(arguments: [(0.15, 0), (0.5, 0), (0.85, 0), (0.3, 4), (0.7, 4)])
    func aSIGKILLDuringAnUploadLosesNoRequestAndDuplicatesNone(fraction: Double, batch: Int) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        var parameters = Northwind.parameters(directory)
        parameters.enableRepeatableRequests = true
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await provider.open()
        let customers = try await provider.getAll("Customers?$top=20").compactMap { $0["CustomerID"]?.stringValue }
        var names: [String] = []
        for (index, customer) in customers.enumerated() {
            _ = try await provider.execute(.local("PATCH", "Customers('\(customer)')", body: #"{"Fax":"kill-\#(index)"}"#))
            names.append("Killed \(index)")
            _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"Killed \#(index)"}"#))
        }
        let total = customers.count * 2
        await provider.close()
        server.resetCounters()
        _ = try server.faults.add(FaultRule(.latency(.milliseconds(25))))

        let executed = { @Sendable in
            server.counters.all.filter { ["POST", "PATCH"].contains($0.method) && $0.path != "$batch" }.reduce(0) { $0 + $1.executed }
        }
        let killAt = max(1, Int(Double(total) * fraction) + Int.random(in: -2...2))
        let uploader = try ILODataProcess(Self.storeArguments(directory) + ["--command", "upload"] + (batch > 0 ? ["--batch", "\(batch)"] : []))
        while executed() < killAt && uploader.process.isRunning { try await Task.sleep(for: .milliseconds(2)) }
        try await Task.sleep(for: .milliseconds(Int.random(in: 0...25)))
        kill(uploader.process.processIdentifier, SIGKILL)
        _ = await uploader.waitForExit()
        #expect(uploader.process.terminationReason == .uncaughtSignal, "killed mid-upload: \(uploader.text)")
        let beforeResume = executed()
        #expect(beforeResume < total, "the kill landed before the end")

        try await provider.open()
        let left = try await provider.pendingRequests().count
        #expect(left >= total - beforeResume && left <= total - beforeResume + max(1, batch),
                "at most the requests in flight are still queued although executed (\(left) left, \(beforeResume) executed)")
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        #expect(try await provider.hasPendingUpload == false)

        // Exactly once: every update once, every create once (a re-sent one is answered from the
        // producer's repeatability record, not executed again).
        for customer in customers {
            #expect(server.counters.executions(method: "PATCH", path: "Customers('\(customer)')") == 1, "\(customer)")
        }
        #expect(server.counters.executions(method: "POST", path: "Shippers") == customers.count)
        let remoteNames = try server.read { try $0.entities(in: "Shippers") }.compactMap { $0["CompanyName"]?.stringValue }
        #expect(remoteNames.filter { $0.hasPrefix("Killed ") }.sorted() == names.sorted(), "each create exactly once on the producer")
        for (index, customer) in customers.enumerated() {
            #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": .string(customer)]) }?["Fax"] == .string("kill-\(index)"))
        }
        // Locally, every create carries the producer's key.
        #expect(try await provider.getAll("Shippers?$filter=ShipperID%20lt%200").isEmpty)
        #expect(try await provider.getAll("Shippers").count == 3 + customers.count)
        await provider.close()
    }

    @Test func ilodataPlansAnUploadAndDownloadsProducerChanges() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        await provider.close()
        try server.mutate { data in _ = try data.update(in: "Shippers", key: ["ShipperID": 1], changes: ["Phone": "(503) 555-0199"]) }
        let session = try ILODataProcess(Self.storeArguments(directory) + ["--json"])
        session.send(#"patch Customers('ALFKI') {"City":"Kiel"}"#)
        session.send("plan")
        session.send("download shippers")
        session.send("get Shippers(1)")
        session.send("download nope")
        session.send("quit")
        #expect(await session.waitForExit() == 0)
        let out = session.text
        #expect(out.contains(#"1 PATCH \#(server.serviceRoot)Customers('ALFKI') {"City":"Kiel"}"#), "\(out)")
        #expect(out.contains("downloaded"), "\(out)")
        #expect(out.contains("(503) 555-0199"), "\(out)")
        #expect(out.contains("there is no defining query named 'nope'"), "\(out)")
        #expect(server.counters.executions(method: "PATCH", path: "Customers('ALFKI')") == 0, "a plan sends nothing")
    }

    @Test func ilodataUploadsAndShowsTheErrorArchive() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        await provider.close()
        _ = try server.faults.add(FaultRule(.fail(status: 400, code: "BadPhone", message: "phone rejected"), method: "PATCH", path: "Customers('BLAUS')"))
        let session = try ILODataProcess(Self.storeArguments(directory))
        session.send(#"patch Customers('ALFKI') {"City":"Kiel"}"#)
        session.send(#"patch Customers('BLAUS') {"Phone":"x"}"#)
        session.send("upload")
        session.send("errors")
        session.send("pending")
        session.send("quit")
        #expect(await session.waitForExit() == 0)
        let out = session.text
        #expect(out.contains("uploaded: 2 sent, 1 succeeded, 1 failed"), "\(out)")
        #expect(out.contains("failed 2 PATCH Customers('BLAUS'): 400 phone rejected"), "\(out)")
        #expect(out.contains("BadPhone"), "\(out)")
        #expect(out.contains("pending requests: no"), "\(out)")
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"]) }?["City"] == "Kiel")
    }

    /// `upload` with the producer stopped: says the back end is unreachable and how many requests are still queued,
    /// exits non-zero, and `queue` still lists every request; nothing reached the ErrorArchive.
    @Test func ilodataUploadAgainstAStoppedProducerSaysUnreachableAndKeepsTheQueue() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {} }
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"City":"Kiel"}"#))
        _ = try await provider.execute(.local("PATCH", "Customers('ANATR')", body: #"{"City":"Lübeck"}"#))
        await provider.close()
        await server.stop()
        let (status, out) = try await ILODataProcess.run(Self.storeArguments(directory) + ["--quiet", "--command", "upload"])
        #expect(status != 0, "\(out)")
        #expect(out.contains("unreachable") && out.contains("2 requests still queued"), "\(out)")
        let (queueStatus, queue) = try await ILODataProcess.run(Self.storeArguments(directory) + ["--quiet", "--command", "queue"])
        #expect(queueStatus == 0)
        #expect(queue.contains("Customers('ALFKI')") && queue.contains("Customers('ANATR')"), "\(queue)")
        let (_, errors) = try await ILODataProcess.run(Self.storeArguments(directory) + ["--quiet", "--json", "--command", "errors"])
        #expect(errors.contains(#""value":[]"#) || errors.contains("(empty)"), "\(errors)")
    }

    /// `sync` uploads and downloads by itself and prints its states until interrupted; the session goes on after.
    @Test func ilodataSyncPrintsItsStatesUntilInterrupted() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        await provider.close()
        let session = try ILODataProcess(Self.storeArguments(directory) + ["--quiet"])
        session.send(#"patch Customers('ALFKI') {"City":"Kiel"}"#)
        session.send("sync 600")
        #expect(await session.waitFor { $0.contains("sync: idle (last success") }, "\(session.text)")
        #expect(session.text.contains("sync: syncing (uploading)") && session.text.contains("sync: syncing (downloading)"), "\(session.text)")
        #expect(server.counters.executions(method: "PATCH", path: "Customers('ALFKI')") == 1)
        kill(session.process.processIdentifier, SIGINT)
        #expect(await session.waitFor { $0.contains("sync: stopped") }, "\(session.text)")
        session.send("pending")
        session.send("quit")
        #expect(await session.waitForExit() == 0)
        #expect(session.text.contains("pending requests: no"), "\(session.text)")
    }
}
