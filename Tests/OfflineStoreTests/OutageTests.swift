import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataSession
import ODataTesting
import Testing
@testable import OfflineStore

/// An unreachable back end stops the upload and loses nothing (issue 42): against the real fixture producer, stopped,
/// restarted on its port, or cutting connections from a request on; the retry policy's waits on a test clock.
struct OutageTests {
    /// Customers' PATCHes, one per customer.
    static let customers = ["ALFKI", "ANATR", "ANTON", "AROUT", "BERGS"]

    static func parameters(_ directory: TemporaryDirectory, clock: TestClock, repeatable: Bool = true,
                           mode: OfflineODataUploadMode = .oneByOne) -> OfflineODataParameters {
        var parameters = Northwind.parameters(directory)
        parameters.clock = clock
        parameters.enableRepeatableRequests = repeatable
        parameters.uploadMode = mode
        parameters.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), jitter: false)
        return parameters
    }

    static func open(_ server: FixtureServer, _ parameters: OfflineODataParameters, transport: (any HTTPTransport)? = nil) async throws -> OfflineODataProvider {
        var parameters = parameters
        parameters.transport = transport
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        return provider
    }

    static func patch(_ provider: OfflineODataProvider, _ ids: some Sequence<String>) async throws {
        for id in ids {
            _ = try await provider.execute(.local("PATCH", "Customers('\(id)')", body: #"{"ContactTitle":"Outage \#(id)"}"#))
        }
    }

    static func errorState(_ provider: OfflineODataProvider) async throws -> (archive: Int, inError: Int) {
        (try await provider.getAll("ErrorArchive").count, try await provider.getAll("Customers?$filter=inErrorState()").count)
    }

    /// Done-when 1: producer stopped, three requests queued: the upload throws `backEndUnreachable` with nothing
    /// sent and all three queued, exactly as they were; nothing archived, nothing in error state, no failure told.
    /// With the producer back on its port, one upload executes each request once.
    @Test(arguments: [false, true])
    func aStoppedProducerStopsTheUploadAndTheNextUploadSendsEachRequestOnce(repeatable: Bool) async throws {
        let server = try await FixtureServer.start()
        let directory = try TemporaryDirectory()
        let clock = TestClock(advancesBySleeping: true)
        let delegate = RecordingDelegate()
        var parameters = Self.parameters(directory, clock: clock, repeatable: repeatable)
        parameters.transport = nil
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters, delegate: delegate)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        try await Self.patch(provider, Self.customers.prefix(2))
        _ = try await provider.execute(.local("POST", "Customers", body: #"{"CustomerID":"NEWCO","CompanyName":"New Co"}"#))
        let planned = try await provider.pendingUpload()
        let port = server.port
        await server.stop()

        let error = try await #require(throws: OfflineODataError.self) { try await provider.upload() }
        #expect(error == .backEndUnreachable, "\(error)")
        #expect(error.uploadResult == OfflineODataUploadResult(sent: 0, succeeded: 0, failed: [], stillQueued: 3))
        #expect(error.message.contains("could not be reached") && error.message.contains("3 requests still queued"), "\(error.message)")
        #expect(NoAnswer.of(try #require(error.underlying)) == .requestNotSent, "\(String(describing: error.underlying))")
        #expect(try await provider.pendingUpload() == planned, "queued exactly as before, repeatability IDs included")
        let state = try await Self.errorState(provider)
        #expect(state.archive == 0 && state.inError == 0)
        #expect(delegate.failedRequests.isEmpty)
        #expect(clock.sleeps.count == 2, "the policy's two re-sends of the first request: \(clock.sleeps)")
        #expect(await provider.currentState == .open)

        let back = try await FixtureServer.start(FixtureConfiguration(port: port))
        defer { Task { await back.stop() } }
        let result = try await provider.upload()
        #expect(result.sent == 3 && result.succeeded == 3 && result.failed.isEmpty && result.stillQueued == 0)
        for id in Self.customers.prefix(2) {
            #expect(back.counters.executions(method: "PATCH", path: "Customers('\(id)')") == 1)
        }
        #expect(back.counters.executions(method: "POST", path: "Customers") == 1)
        #expect(try back.read { try $0.entity(in: "Customers", key: ["CustomerID": "ANATR"]) }?["ContactTitle"] == "Outage ANATR")
        #expect(try await provider.hasPendingUpload == false)
        await provider.close()
    }

    /// Done-when 2: the producer stops answering from request 3 on (each connection closed before a status line):
    /// 1 and 2 are committed, 3 to 5 stay queued unchanged, and the error says so — one by one and in `$batch`es. With
    /// repeatable requests off, the `PATCH` that may have reached the back end is archived as possibly executed,
    /// and the upload stops there.
    @Test(arguments: [(OfflineODataUploadMode.oneByOne, true), (.batch(maxRequestsPerBatch: 2), true), (.oneByOne, false), (.batch(maxRequestsPerBatch: 2), false)])
    func aProducerThatStopsAnsweringFromRequest3KeepsTheRestQueued(mode: OfflineODataUploadMode, repeatable: Bool) async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let clock = TestClock(advancesBySleeping: true)
        let provider = try await Self.open(server, Self.parameters(directory, clock: clock, repeatable: repeatable, mode: mode))
        try await Self.patch(provider, Self.customers)
        let planned = try await provider.pendingUpload()
        let rule = mode == .oneByOne
            ? FaultRule(.dropConnection, method: "PATCH", path: "Customers(*)", firstMatch: 3)
            : FaultRule(.dropConnection, method: "POST", path: "$batch", firstMatch: 2)
        _ = try server.faults.add(rule)
        server.resetCounters()

        let error = try await #require(throws: OfflineODataError.self) { try await provider.upload() }
        #expect(error == .backEndUnreachable, "\(error)")
        let archived = repeatable ? 0 : (mode == .oneByOne ? 1 : 2)
        let result = try #require(error.uploadResult)
        #expect(result.succeeded == 2 && result.failed.count == archived && result.stillQueued == 3 - archived, "\(result)")
        #expect(error.message.contains("\(3 - archived) requests still queued"), "\(error.message)")
        for id in Self.customers.prefix(2) {
            #expect(server.counters.executions(method: "PATCH", path: "Customers('\(id)')") == 1, "executed once, inside its $batch or alone")
        }
        #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ANATR"]) }?["ContactTitle"] == "Outage ANATR")
        #expect(try await provider.pendingUpload() == Array(planned.suffix(3 - archived)), "the rest queued exactly as before")
        let state = try await Self.errorState(provider)
        #expect(state.archive == archived && state.inError == archived)
        if archived > 0 {
            let archive = try await provider.getAll("ErrorArchive")
            #expect(archive.allSatisfy { $0["Message"]?.stringValue?.contains("may have executed") == true }, "\(archive)")
            #expect(archive.allSatisfy { $0["Domain"] == "Transport" })
        }
        await provider.close()
    }

    /// Done-when 3: `429` with `Retry-After: 2` and `503` with an HTTP-date five seconds ahead: the re-send waits
    /// exactly that long on the test clock (beyond the backoff's cap of 1 s); a `Retry-After` past the budget is not
    /// waited for, and the answer is archived as the back end gave it.
    @Test(arguments: [(429, "2", [Duration.seconds(2)], false), (503, "date+5", [.seconds(5)], false), (503, "30", [], true)])
    func retryAfterIsWaitedOnTheClock(status: Int, retryAfter: String, sleeps: [Duration], archived: Bool) async throws {
        let (server, curl) = try await (FixtureServer.start(), CurlTransport())
        defer { Task { await server.stop() }; curl.shutdown() }
        let directory = try TemporaryDirectory()
        let clock = TestClock(advancesBySleeping: true)
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        let value: String
        if retryAfter == "date+5" {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            value = formatter.string(from: clock.now.addingTimeInterval(5))
        } else {
            value = retryAfter
        }
        transport.on("PATCH", "Customers('ALFKI')", replies: [.status(status, headerFields: [.retryAfter: value]), .forward])
        var parameters = Self.parameters(directory, clock: clock)
        parameters.retryPolicy = RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(500), maxDelay: .seconds(1), budget: .seconds(10), jitter: false)
        let provider = try await Self.open(server, parameters, transport: transport)
        try await Self.patch(provider, ["ALFKI"])
        let result = try await provider.upload()
        #expect(clock.sleeps == sleeps)
        #expect(result.failed.map(\.httpStatusCode) == (archived ? [Int32(status)] : []))
        #expect(transport.requests("PATCH", "Customers('ALFKI')").count == sleeps.count + 1)
        await provider.close()
    }

    /// The backoff's cap and the budget: `500`s, 1 s doubling capped at 2 s, within 4 s: waits of 1 s and 2 s, then
    /// the next (2 s more) would end past the budget, and the answer is archived.
    @Test func theBackoffIsCappedAndEndsAtTheBudget() async throws {
        let (server, curl) = try await (FixtureServer.start(), CurlTransport())
        defer { Task { await server.stop() }; curl.shutdown() }
        let directory = try TemporaryDirectory()
        let clock = TestClock(advancesBySleeping: true)
        let transport = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        transport.on("PATCH", "Customers('ALFKI')", reply: .status(500))
        var parameters = Self.parameters(directory, clock: clock)
        parameters.retryPolicy = RetryPolicy(maxAttempts: 10, baseDelay: .seconds(1), maxDelay: .seconds(2), budget: .seconds(4), jitter: false)
        let provider = try await Self.open(server, parameters, transport: transport)
        try await Self.patch(provider, ["ALFKI"])
        let result = try await provider.upload()
        #expect(clock.sleeps == [.seconds(1), .seconds(2)])
        #expect(result.failed.map(\.httpStatusCode) == [500])
        await provider.close()
    }

    /// A download with the producer stopped fails with `backEndUnreachable` and changes nothing; an initial download
    /// stays resumable (the next open with the producer back completes it).
    @Test func aDownloadWithTheProducerStoppedFailsUnreachableAndChangesNothing() async throws {
        let server = try await FixtureServer.start()
        let directory = try TemporaryDirectory()
        let clock = TestClock(advancesBySleeping: true)
        let provider = try await Self.open(server, Self.parameters(directory, clock: clock))
        try await Self.patch(provider, ["ALFKI"])
        let before = try await provider.getAll("Customers")
        let port = server.port
        await server.stop()
        let error = try await #require(throws: OfflineODataError.self) { try await provider.download() }
        #expect(error == .backEndUnreachable, "\(error)")
        #expect(try await provider.getAll("Customers") == before)
        #expect(try await provider.pendingUpload().count == 1)
        await provider.close()

        // An initial download against a stopped producer: unreachable, and the next open downloads it all.
        let fresh = try TemporaryDirectory()
        var parameters = Self.parameters(fresh, clock: clock)
        parameters.transport = nil
        let first = try OfflineODataProvider(serviceRoot: "http://127.0.0.1:\(port)/", parameters: parameters)
        try await first.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        let opening = try await #require(throws: OfflineODataError.self) { try await first.open() }
        #expect(opening == .backEndUnreachable, "\(opening)")
        let back = try await FixtureServer.start(FixtureConfiguration(port: port))
        defer { Task { await back.stop() } }
        try await first.open()
        #expect(try await first.getAll("Customers").count == 91)
        await first.close()
    }
}
