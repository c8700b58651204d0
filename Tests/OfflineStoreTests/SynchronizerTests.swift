import Foundation
import ODataCore
import ODataFixtures
import ODataSession
import ODataTesting
import Testing
@testable import OfflineStore

/// The synchronizer's states on a test clock, against the real fixture producer (stopped and restarted on its
/// port): changes queued → syncing → idle; producer stopped → waiting(until:) → producer back → syncing → idle; the
/// credentials refused → needsAttention, nothing archived; syncNow; stopped.
struct SynchronizerTests {
    @Test func theSynchronizerSyncsByItselfWaitsThroughAnOutageAndAsksForAPerson() async throws {
        let server = try await FixtureServer.start()
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        var parameters = Northwind.parameters(directory)
        parameters.clock = clock
        parameters.retryPolicy = .never
        parameters.enableRepeatableRequests = true
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        try await provider.open()
        let configuration = OfflineSyncConfiguration(
            interval: .seconds(60), debounce: .seconds(2),
            unreachableBackoff: RetryPolicy(baseDelay: .seconds(5), maxDelay: .seconds(40), jitter: false), minimumWait: .seconds(1))
        let synchronizer = OfflineSynchronizer(provider: provider, configuration: configuration)
        var states = synchronizer.states().makeAsyncIterator()
        let running = Task { await synchronizer.run() }
        func patch(_ id: String, _ title: String) async throws {
            _ = try await provider.execute(.local("PATCH", "Customers('\(id)')", body: #"{"ContactTitle":"\#(title)"}"#))
        }
        func expectSync(_ comment: Comment? = nil) async {
            #expect(await states.next() == .syncing(.uploading), comment)
            #expect(await states.next() == .syncing(.downloading), comment)
            #expect(await states.next() == .idle(lastSuccess: clock.now), comment)
        }

        // At start: a sync, then the interval.
        #expect(await states.next() == .idle(lastSuccess: nil))
        await expectSync("at start")
        #expect(await clock.nextSleep() == .seconds(60))

        // A change queued: the sync starts after the debounce.
        try await patch("ALFKI", "one")
        #expect(await clock.nextSleep() == .seconds(2))
        clock.advance(by: .seconds(2))
        await expectSync("after a change")
        #expect(server.counters.executions(method: "PATCH", path: "Customers('ALFKI')") == 1)
        #expect(await clock.nextSleep() == .seconds(60))

        // The producer stops: the upload finds it unreachable, the synchronizer waits 5 s; a change meanwhile keeps
        // the deadline.
        let port = server.port
        await server.stop()
        try await patch("ANATR", "two")
        #expect(await clock.nextSleep() == .seconds(2))
        clock.advance(by: .seconds(2))
        #expect(await states.next() == .syncing(.uploading))
        guard case .waiting(let until, let because) = await states.next() else { Issue.record("not waiting"); return }
        #expect(until == clock.now.addingTimeInterval(5) && because.contains("could not be reached"), "\(because)")
        #expect(await clock.nextSleep() == .seconds(5))
        clock.advance(by: .seconds(1))
        try await patch("ANTON", "three")
        #expect(await clock.nextSleep() == .seconds(4), "the same deadline")
        #expect(try await provider.pendingUpload().count == 2)
        #expect(try await provider.getAll("ErrorArchive").isEmpty)

        // The producer is back: at the deadline the sync runs, and each request is executed once.
        let back = try await FixtureServer.start(FixtureConfiguration(port: port))
        defer { Task { await back.stop() } }
        clock.advance(by: .seconds(4))
        await expectSync("after the outage")
        #expect(back.counters.executions(method: "PATCH", path: "Customers('ANATR')") == 1)
        #expect(back.counters.executions(method: "PATCH", path: "Customers('ANTON')") == 1)
        #expect(await clock.nextSleep() == .seconds(60))

        // The credentials refused: needs a person; the request stays queued, nothing archived. syncNow() tries at once.
        let refusal = try back.faults.add(FaultRule(.fail(status: 401, code: "Unauthorized", message: "credentials expired"), method: "PATCH"))
        try await patch("AROUT", "four")
        #expect(await clock.nextSleep() == .seconds(2))
        clock.advance(by: .seconds(2))
        #expect(await states.next() == .syncing(.uploading))
        guard case .needsAttention(let error) = await states.next() else { Issue.record("no attention asked"); return }
        #expect(error == .authenticationFailed && error.uploadResult?.stillQueued == 1, "\(error)")
        #expect(try await provider.getAll("ErrorArchive").isEmpty)
        _ = back.faults.remove(refusal)
        synchronizer.syncNow()
        await expectSync("after syncNow")
        #expect(back.counters.executions(method: "PATCH", path: "Customers('AROUT')") == 1)

        running.cancel()
        await running.value
        #expect(await states.next() == .stopped)
        #expect(await states.next() == nil)
        await provider.close()
    }
}
