import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataTesting
import TechnicalCache
import Testing
@testable import OnlineStore

/// Counts what reaches the producer through the store: each request's method and path, and each answer's status and
/// size on the wire (status line, headers, body).
final class CountingTransport: HTTPTransport {
    let base: any HTTPTransport
    let answers = LockedValue<[(path: String, status: Int, bytes: Int)]>([])

    init(_ base: any HTTPTransport) { self.base = base }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await base.send(request)
        let headers = response.headerFields.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 }
        let bytes = "HTTP/1.1 \(response.status) \r\n".utf8.count + headers + 2 + response.body.count
        answers.withLock { $0.append((URL(string: request.url)?.path ?? request.url, response.status, bytes)) }
        return response
    }
}

/// `OnlineODataStore.observe(_:every:)` against the fixture producer over real HTTP, the intervals on a `TestClock`.
@Suite struct OnlineObservationTests {
    struct Setup {
        let server: FixtureServer
        let store: OnlineODataStore
        let clock: TestClock
        let wire: CountingTransport
        let directory: URL
    }

    static func setup(passive: Bool = false) async throws -> Setup {
        let server = try await FixtureServer.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("observe-\(UUID().uuidString)")
        var options = OnlineStoreOptions()
        options.storeDirectory = directory
        options.cacheEncryptionKey = "correct horse battery staple"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        options.retryPolicy = nil
        let clock = TestClock()
        options.retryClock = clock
        let wire = CountingTransport(try CurlTransport())
        let store = try OnlineODataStore(serviceRoot: server.serviceRoot, options: options, transport: wire)
        try await store.open()
        return Setup(server: server, store: store, clock: clock, wire: wire, directory: directory)
    }

    static func tearDown(_ setup: Setup) async {
        setup.store.close()
        await setup.server.stop()
        try? FileManager.default.removeItem(at: setup.directory)
    }

    static let shipper = ODataRequest(method: .get, resourcePath: "Shippers(1)")

    static func phone(_ answer: Result<ODataResponse?, any Error>?) throws -> String? {
        guard case .success(let response?)? = answer else { return nil }
        return try JSON.parse(response.payload)["Phone"]?.stringValue
    }

    /// Ten intervals of an unchanged resource: one answer (the cached copy), ten `304`s of at most 300 bytes; then a
    /// change on the producer is the next answer, one interval later.
    @Test func anUnchangedResourceCostsA304PerIntervalAndAChangeComesWithinOne() async throws {
        let setup = try await Self.setup()
        defer { Task { await Self.tearDown(setup) } }
        let cached = try #require(try await setup.store.response(for: Self.shipper))  // the cache holds it now
        var answers = setup.store.observe(Self.shipper, every: .seconds(30)).makeAsyncIterator()
        #expect(try Self.phone(await answers.next()) == JSON.parse(cached.payload)["Phone"]?.stringValue)
        _ = await setup.clock.nextSleep()  // the first read (cache, then a revalidation) is done
        setup.wire.answers.withLock { $0.removeAll() }
        for _ in 0..<10 {
            setup.clock.advance(by: .seconds(30))
            _ = await setup.clock.nextSleep()
        }
        let revalidations = setup.wire.answers.withLock { $0 }
        #expect(revalidations.count == 10 && revalidations.allSatisfy { $0.status == 304 }, "\(revalidations)")
        #expect(revalidations.allSatisfy { $0.bytes <= 300 }, "\(revalidations.map(\.bytes))")
        #expect(setup.store.liveResources.emitted.withLock { $0 } == 1, "one answer for ten unchanged intervals")
        _ = try setup.server.mutate { try $0.update(in: "Shippers", key: ["ShipperID": 1], changes: ["Phone": "(555) 000-0000"]) }
        setup.clock.advance(by: .seconds(30))
        #expect(try Self.phone(await answers.next()) == "(555) 000-0000")
        #expect(setup.store.liveResources.emitted.withLock { $0 } == 2)
    }

    /// Two observers of one resource share its reads; one that starts later gets the last answer at once; the last
    /// one cancelled stops the reads.
    @Test func observersOfOneResourceShareItsReads() async throws {
        let setup = try await Self.setup()
        defer { Task { await Self.tearDown(setup) } }
        let (firstSeen, seen) = AsyncStream.makeStream(of: Void.self)
        let first = Task { for await _ in setup.store.observe(Self.shipper, every: .seconds(10)) { seen.yield() } }
        var signals = firstSeen.makeAsyncIterator()
        _ = await signals.next()  // nothing cached: nil at once
        _ = await signals.next()  // the producer's answer
        _ = await setup.clock.nextSleep()
        var second = setup.store.observe(Self.shipper, every: .seconds(10)).makeAsyncIterator()
        #expect(try Self.phone(await second.next()) != nil, "the last answer at once")
        setup.wire.answers.withLock { $0.removeAll() }
        setup.clock.advance(by: .seconds(10))
        _ = await setup.clock.nextSleep()
        #expect(setup.wire.answers.withLock { $0.count } == 1, "one read for both observers")
        #expect(setup.store.liveResources.count == 1)
        first.cancel()
        _ = await first.value
        #expect(setup.store.liveResources.count == 1, "the second still observes")
    }

    /// A failure is an element, and the reads go on; cancelling the last observer ends them.
    @Test func aFailureIsAnElementNotTheEnd() async throws {
        let setup = try await Self.setup()
        defer { Task { await Self.tearDown(setup) } }
        var answers = setup.store.observe(Self.shipper, every: .seconds(5)).makeAsyncIterator()
        _ = await answers.next()  // nil: nothing cached
        _ = await answers.next()  // the producer's answer
        _ = await setup.clock.nextSleep()
        let fault = try setup.server.faults.add(FaultRule(.fail(status: 500, code: "Down", message: "down"), method: "GET", path: "Shippers(1)"))
        setup.clock.advance(by: .seconds(5))
        guard case .failure? = await answers.next() else { Issue.record("no failure"); return }
        _ = setup.server.faults.remove(fault)
        _ = try setup.server.mutate { try $0.update(in: "Shippers", key: ["ShipperID": 1], changes: ["Phone": "back"]) }
        _ = await setup.clock.nextSleep()
        setup.clock.advance(by: .seconds(5))
        #expect(try Self.phone(await answers.next()) == "back")
    }

    /// In passive mode the cache alone is read: nothing reaches the producer.
    @Test func passiveModeReadsTheCacheOnly() async throws {
        let setup = try await Self.setup()
        defer { Task { await Self.tearDown(setup) } }
        _ = try await setup.store.response(for: Self.shipper)
        try setup.store.setMode(.passive)
        setup.wire.answers.withLock { $0.removeAll() }
        var answers = setup.store.observe(Self.shipper, every: .seconds(5)).makeAsyncIterator()
        #expect(try Self.phone(await answers.next()) != nil)
        for _ in 0..<3 {
            _ = await setup.clock.nextSleep()
            setup.clock.advance(by: .seconds(5))
        }
        _ = await setup.clock.nextSleep()
        #expect(setup.wire.answers.withLock { $0.isEmpty })
        #expect(setup.store.liveResources.emitted.withLock { $0 } == 1)
    }

    /// Closing the store ends every observation.
    @Test func closingTheStoreEndsTheObservation() async throws {
        let setup = try await Self.setup()
        defer { Task { await setup.server.stop() } }
        let ended = Task { var count = 0; for await _ in setup.store.observe(Self.shipper, every: .seconds(5)) { count += 1 }; return count }
        _ = await setup.clock.nextSleep()
        setup.store.close()
        #expect(await ended.value >= 1)
        #expect(setup.store.liveResources.count == 0)
    }
}
