import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import Testing
@testable import OnlineStore

/// One test per cell of SPEC's two state tables, against the real fixture producer.
@Suite struct StateTableTests {
    enum Kind: String, CaseIterable, Sendable {
        case cachedRead, uncachedRead, create, batchWithCachedRead, batchWithoutCachedRead

        var tableKind: RequestKind { self == .cachedRead || self == .batchWithCachedRead ? .cachedRead : .other }
    }

    struct Cell: Sendable, CustomTestStringConvertible {
        var mode: StoreMode
        var storeOpen: Bool
        var cache: CacheState
        var kind: Kind
        var testDescription: String { "\(mode) store=\(storeOpen ? "open" : "closed") cache=\(cache) \(kind)" }
    }

    static let cells: [Cell] = StoreMode.allCases.flatMap { mode in
        [true, false].flatMap { storeOpen in
            CacheState.allCases.filter { !(mode == .passive && $0 == .disabled) }.flatMap { cache in
                Kind.allCases.map { Cell(mode: mode, storeOpen: storeOpen, cache: cache, kind: $0) }
            }
        }
    }

    static func expected(_ cell: Cell) -> [String] {
        switch CallbackPlan.plan(mode: cell.mode, storeIsOpen: cell.storeOpen, cache: cell.cache, kind: cell.kind.tableKind) {
        case .cacheThenServer: activeSuccess
        case .serverOnly: serverSuccess
        case .cacheOnly: passiveSuccess
        case .failure: immediateFailure
        }
    }

    @Test(arguments: cells)
    func callbackSequenceMatchesTheTable(cell: Cell) async throws {
        try await Harness.run { harness in
            let store = try harness.store { $0.useCache = cell.cache != .disabled }
            try await store.open()
            // Warm the cache so that the passive cells have something to deliver.
            _ = await record(store, .get("Customers('ALFKI')"))
            try store.setMode(cell.mode)
            if cell.cache == .closed { store.closeCache() }
            if !cell.storeOpen { store.close() }
            harness.server.resetCounters()

            let (recorder, execution) = await run(cell.kind, on: store)
            #expect(recorder.entries == Self.expected(cell), "\(cell.testDescription)")
            let contacted = harness.server.counters.totalRequests > 0
            let plan = CallbackPlan.plan(mode: cell.mode, storeIsOpen: cell.storeOpen, cache: cell.cache, kind: cell.kind.tableKind)
            #expect(contacted == plan.contactsServer, "server contacted: \(contacted)")
            #expect(execution.status == (recorder.entries.contains("failed(failed)") ? .failed : .completed))
        }
    }

    private func run(_ kind: Kind, on store: OnlineODataStore) async -> (CallbackRecorder, RequestExecution) {
        switch kind {
        case .cachedRead:
            return await record(store, .get("Customers('ALFKI')"))
        case .uncachedRead:
            return await record(store, ODataRequest(resourcePath: "Customers('ALFKI')", useCache: false))
        case .create:
            let body = Data(#"{"Title":"Launch","Kind":"call","OccurredAt":"2026-11-22T10:00:00Z","CustomerID":"ALFKI","Severity":1}"#.utf8)
            return await record(store, ODataRequest(method: .post, resourcePath: "Events", headerFields: [.contentType: "application/json"], body: body))
        case .batchWithCachedRead:
            return await record(store, batch: BatchRequest(parts: [.request(.get("Customers('ALFKI')")), .request(.get("Customers('ANATR')"))]))
        case .batchWithoutCachedRead:
            return await record(store, batch: BatchRequest(parts: [.request(ODataRequest(resourcePath: "Customers('ALFKI')", useCache: false))]))
        }
    }

    @Test func passiveModeIsImpossibleWithoutACache() async throws {
        try await Harness.run { harness in
            let store = try harness.store { $0.useCache = false }
            #expect(throws: ODataError.self) { try store.setMode(.passive) }
            #expect(store.mode == .active)
            #expect(!store.isCacheEnabled)
        }
    }
}
