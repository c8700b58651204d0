import Foundation
import HTTPTypes
import ODataCore
import TechnicalCache
import ODataTesting
import OnlineStore
import ServiceLifecycle
import Testing

/// `OnlineStoreService` in a `ServiceGroup`: graceful shutdown while reads are in flight.
@Suite(.serialized)
struct OnlineStoreServiceTests {
    static func store(_ transport: ScriptedTransport, _ directory: TemporaryDirectory) throws -> OnlineODataStore {
        var options = OnlineStoreOptions()
        options.storeDirectory = directory.url
        options.cacheEncryptionKey = "correct horse battery staple"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        return try OnlineODataStore(serviceRoot: transport.serviceRoot, options: options, transport: transport)
    }

    /// Many concurrent reads, each held 300 ms by the back end: graceful shutdown lets every one of
    /// them finish (deadline 10 s), then closes the store.
    @Test func inFlightReadsFinishBeforeTheStoreCloses() async throws {
        do {
            let directory = try TemporaryDirectory()
            let backEnd = ScriptedTransport()
            backEnd.on("GET", "Products(*", reply: .entity(["ProductID": 1]).after(.milliseconds(300)))
            let store = try Self.store(backEnd, directory)
            let service = OnlineStoreService(store: store, drainDeadline: .seconds(10), logger: quietLogger)
            let group = ServiceGroup(configuration: .init(services: [service], logger: quietLogger))
            let executions = LockedValue<[RequestExecution]>([])
            let direct = LockedValue<[Task<ODataResponse?, any Error>]>([])
            let drained = try await withServiceGroup(group) {
                try await waitUntil("the store opens") { store.isOpen }
                executions.withLock { list in
                    list = (1...40).map { store.execute(ODataRequest(resourcePath: "Products(\($0))")) }
                }
                direct.withLock { list in
                    list = (41...50).map { id in Task { try await store.response(for: ODataRequest(resourcePath: "Products(\(id))")) } }
                }
                // Every read reached the back end and waits there.
                try await waitUntil("the reads reach the back end") { !backEnd.requests("GET", "Products(1)").isEmpty }
                #expect(store.isOpen)
                await group.triggerGracefulShutdown()
            }
            #expect(!store.isOpen, "the service closed the store")
            #expect(drained < .seconds(10), "the drain ended once the reads did, not at the deadline")
            for execution in executions.withLock({ $0 }) {
                let response = try await execution.result()
                #expect(execution.status == .completed)
                #expect(response?.statusCode == 200)
            }
            for task in direct.withLock({ $0 }) {
                #expect(try await task.value?.statusCode == 200)
            }
        }
    }

    /// Reads held 5 s by the back end and a drain deadline of 200 ms: after the deadline the store
    /// closes and the reads still running end with a failure — at once, not when the back end answers.
    @Test func readsStillRunningAfterTheDeadlineAreCancelled() async throws {
        do {
            let directory = try TemporaryDirectory()
            let backEnd = ScriptedTransport()
            backEnd.on("GET", "Products(*", reply: .entity(["ProductID": 1]).after(.seconds(5)))
            let store = try Self.store(backEnd, directory)
            let service = OnlineStoreService(store: store, drainDeadline: .milliseconds(200), logger: quietLogger)
            let group = ServiceGroup(configuration: .init(services: [service], logger: quietLogger))
            let executions = LockedValue<[RequestExecution]>([])
            let drained = try await withServiceGroup(group) {
                try await waitUntil("the store opens") { store.isOpen }
                executions.withLock { list in
                    list = (1...30).map { store.execute(ODataRequest(resourcePath: "Products(\($0))")) }
                }
                try await waitUntil("the reads reach the back end") { backEnd.requests.count >= 8 }
                await group.triggerGracefulShutdown()
            }
            #expect(!store.isOpen, "the service closed the store")
            #expect(drained >= .milliseconds(200), "the service waited for the deadline")
            #expect(drained < .seconds(4), "the service did not wait for the back end")
            let clock = ContinuousClock()
            let start = clock.now
            for execution in executions.withLock({ $0 }) {
                await #expect(throws: (any Error).self) { try await execution.result() }
                #expect(execution.status == .failed)
            }
            #expect(clock.now - start < .seconds(3), "the cancelled reads ended without waiting for the back end")
        }
    }

    /// A group cancelled (not shut down gracefully) closes the store at once.
    @Test func cancellationClosesTheStore() async throws {
        do {
            let directory = try TemporaryDirectory()
            let store = try Self.store(ScriptedTransport(), directory)
            let service = OnlineStoreService(store: store, logger: quietLogger)
            let group = ServiceGroup(configuration: .init(services: [service], logger: quietLogger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                try await waitUntil("the store opens") { store.isOpen }
                tasks.cancelAll()
                try? await tasks.next()
            }
            #expect(!store.isOpen)
        }
    }
}
