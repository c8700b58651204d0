import Foundation
import HTTPTypes
import ODataCore
import TechnicalCache
import ODataFixtures
import ODataTesting
import OfflineStore
import ServiceLifecycle
import Testing

/// `OfflineStoreService` in a `ServiceGroup`: graceful shutdown while an upload runs loses no queued request.
@Suite(.serialized)
struct OfflineStoreServiceTests {
    static let products = Array(1...6)

    static func provider(_ serviceRoot: String, _ directory: TemporaryDirectory, transport: (any HTTPTransport)? = nil) async throws -> OfflineODataProvider {
        let parameters = OfflineODataParameters(storeName: "service", storePath: directory.path,
                                                storeEncryptionKey: "correct horse battery staple",
                                                keyDerivation: .pbkdf2(rounds: 1_000), enableRepeatableRequests: true,
                                                transport: transport)
        let provider = try OfflineODataProvider(serviceRoot: serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "Products"))
        return provider
    }

    static func change(_ id: Int) -> ODataRequest {
        ODataRequest(method: .patch, resourcePath: "Products(\(id))", body: Data(#"{"UnitsInStock":\#(100 + id)}"#.utf8))
    }

    /// The queued requests' product IDs.
    static func queued(_ provider: OfflineODataProvider) async throws -> Set<Int> {
        Set(try await provider.pendingUpload().compactMap { planned in
            guard let open = planned.url.lastIndex(of: "("), let close = planned.url.lastIndex(of: ")") else { return nil }
            return Int(planned.url[planned.url.index(after: open)..<close])
        })
    }

    /// With a sync configuration the service runs a synchronizer from open to shutdown: a queued change is uploaded
    /// by itself, and graceful shutdown stops the synchronizer before the store closes.
    @Test func theServiceSyncsByItselfAndStopsTheSynchronizerAtShutdown() async throws {
        try await withFixtureServer { server in
            let directory = try TemporaryDirectory()
            let provider = try await Self.provider(server.serviceRoot, directory)
            let service = OfflineStoreService(provider: provider, logger: quietLogger,
                                              synchronization: OfflineSyncConfiguration(interval: .seconds(3600), debounce: .milliseconds(20)))
            let synchronizer = try #require(service.synchronizer)
            let group = ServiceGroup(configuration: .init(services: [service], logger: quietLogger))
            var states = synchronizer.states().makeAsyncIterator()
            _ = try await withServiceGroup(group) {
                // The sync at start, then a change queued: synced after the debounce.
                while let state = await states.next() {
                    if case .idle(let last) = state, last != nil { break }
                }
                _ = try await provider.execute(Self.change(1))
                var synced = false
                while let state = await states.next() {
                    if case .idle = state, try await !provider.hasPendingUpload { synced = true; break }
                }
                #expect(synced)
                #expect(server.counters.executions(method: "PATCH", path: "Products(1)") == 1)
                await group.triggerGracefulShutdown()
            }
            var last: OfflineSyncState?
            while let state = await states.next() { last = state }
            #expect(last == .stopped)
            #expect(await provider.currentState == .closed)
        }
    }

    /// Six queued changes, each held 500 ms by the producer; graceful shutdown 700 ms into the upload
    /// with a 300 ms deadline cancels it. Every change was executed once or is still queued; after a
    /// restart the next upload sends the rest, and every change was executed exactly once.
    @Test func shutdownDuringAnUploadLosesNoQueuedRequest() async throws {
        try await withFixtureServer { server in
            let directory = try TemporaryDirectory()
            let provider = try await Self.provider(server.serviceRoot, directory)
            let service = OfflineStoreService(provider: provider, drainDeadline: .milliseconds(300), logger: quietLogger)
            let group = ServiceGroup(configuration: .init(services: [service], logger: quietLogger))
            let upload = LockedValue<Task<OfflineODataUploadResult, any Error>?>(nil)
            _ = try await withServiceGroup(group) {
                try await waitUntil("the store opens") { await provider.currentState == .open }
                for id in Self.products { _ = try await provider.execute(Self.change(id)) }
                #expect(try await Self.queued(provider) == Set(Self.products))
                _ = try server.faults.add(FaultRule(.latency(.milliseconds(500)), method: "PATCH", path: "Products(*)"))
                server.resetCounters()
                upload.withLock { $0 = Task { try await service.upload() } }
                try await waitUntil("the upload runs") { await provider.currentState == .uploading }
                try await Task.sleep(for: .milliseconds(700))
                await group.triggerGracefulShutdown()
            }
            #expect(await provider.currentState == .closed, "the service closed the store")
            let outcome = await upload.withLock { $0 }!.result
            if case .success(let result) = outcome { Issue.record("the upload was not cancelled: \(result)") }
            // A request the upload was cancelled on still reaches the producer's handler after its latency.
            try await Task.sleep(for: .milliseconds(700))
            await #expect(throws: (any Error).self, "a closed service starts no upload") { try await service.upload() }

            // Restart: a new provider and service over the same directory.
            let restarted = try await Self.provider(server.serviceRoot, directory)
            let again = OfflineStoreService(provider: restarted, logger: quietLogger)
            let secondGroup = ServiceGroup(configuration: .init(services: [again], logger: quietLogger))
            _ = try await withServiceGroup(secondGroup) {
                try await waitUntil("the store opens again") { await restarted.currentState == .open }
                let queued = try await Self.queued(restarted)
                #expect(!queued.isEmpty, "the cancelled upload left requests queued")
                for id in Self.products {
                    let executed = server.counters.executions(method: "PATCH", path: "Products(\(id))")
                    #expect(executed <= 1, "Products(\(id)) executed \(executed) times")
                    #expect(executed == 1 || queued.contains(id), "Products(\(id)) was neither uploaded nor kept queued")
                }
                server.faults.removeAll()
                let result = try await again.upload()
                #expect(result.failed.isEmpty)
                #expect(try await Self.queued(restarted).isEmpty)
                await secondGroup.triggerGracefulShutdown()
            }
            for id in Self.products {
                #expect(server.counters.executions(method: "PATCH", path: "Products(\(id))") == 1, "Products(\(id)) executed exactly once")
            }
            #expect(await restarted.currentState == .closed)
        }
    }

    /// An upload that ends within the deadline is waited for: everything is uploaded before the store closes.
    @Test func anUploadWithinTheDeadlineFinishes() async throws {
        let directory = try TemporaryDirectory()
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "$metadata", reply: .metadata(Self.productMetadata))
            .on("GET", "Products", reply: .collection(Self.products.map { ["ProductID": .int(Int64($0)), "UnitsInStock": 10] }))
            .on("GET", "", reply: .status(200))  // the CSRF token fetch before the upload
            .on("PATCH", "Products(*", reply: .status(204).after(.milliseconds(200)))
        let provider = try await Self.provider(backEnd.serviceRoot, directory, transport: backEnd)
        let service = OfflineStoreService(provider: provider, drainDeadline: .seconds(20), logger: quietLogger)
        let group = ServiceGroup(configuration: .init(services: [service], logger: quietLogger))
        let upload = LockedValue<Task<OfflineODataUploadResult, any Error>?>(nil)
        _ = try await withServiceGroup(group) {
            try await waitUntil("the store opens") { await provider.currentState == .open }
            for id in 1...3 { _ = try await provider.execute(Self.change(id)) }
            upload.withLock { $0 = Task { try await service.upload() } }
            try await waitUntil("the upload runs") { await provider.currentState == .uploading }
            await group.triggerGracefulShutdown()
        }
        #expect(await provider.currentState == .closed)
        let result = try await upload.withLock { $0 }!.value
        #expect(result.succeeded == 3)
        for id in 1...3 {
            #expect(backEnd.requests("PATCH", "Products(\(id))").count == 1)
        }
        #expect(backEnd.unmatchedRequests.isEmpty)
    }

    /// The part of the fixture's `$metadata` the upload test needs: products with a stock.
    static let productMetadata = """
        <?xml version="1.0" encoding="utf-8"?>
        <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
          <edmx:DataServices>
            <Schema Namespace="NorthwindModel" xmlns="http://docs.oasis-open.org/odata/ns/edm">
              <EntityType Name="Product">
                <Key><PropertyRef Name="ProductID"/></Key>
                <Property Name="ProductID" Type="Edm.Int32" Nullable="false"/>
                <Property Name="UnitsInStock" Type="Edm.Int16"/>
              </EntityType>
              <EntityContainer Name="Entities">
                <EntitySet Name="Products" EntityType="NorthwindModel.Product"/>
              </EntityContainer>
            </Schema>
          </edmx:DataServices>
        </edmx:Edmx>
        """
}
