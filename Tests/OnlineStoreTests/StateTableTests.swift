import Foundation
import HTTPTypes
import ODataCore
import ODataTesting
import Testing
@testable import OnlineStore

/// One test per cell of SPEC's two state tables, against a scripted back end (the callbacks depend on the store's
/// state and the kind of request, not on the data).
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
        case .passiveRead: passiveSuccess
        case .failure: immediateFailure
        }
    }

    /// A back end that answers every request the cells make: reads of a customer, a create, a `$batch`, and the
    /// CSRF token fetch before a write.
    static func backEnd() -> ScriptedTransport {
        ScriptedTransport()
            .on("GET", "", reply: .status(200))
            .on("GET", "Customers(*", reply: .entity(["CustomerID": "ALFKI"]))
            .on("POST", "Events", reply: .entity(["EventID": 1, "Title": "Launch"], status: 201))
            .on("POST", "$batch", reply: .batch { _ in
                ODataResponse(statusCode: 200, headerFields: [.contentType: "application/json"], payload: Data(#"{"CustomerID":"ALFKI"}"#.utf8))
            })
    }

    @Test(arguments: cells)
    func callbackSequenceMatchesTheTable(cell: Cell) async throws {
        let backEnd = Self.backEnd()
        var options = OnlineStoreOptions()
        options.useCache = cell.cache != .disabled
        try await backEnd.withOnlineStore(options: options) { store in
            // Warm the cache so that the passive cells have something to deliver.
            _ = await record(store, .get("Customers('ALFKI')"))
            try store.setMode(cell.mode)
            if cell.cache == .closed { store.closeCache() }
            if !cell.storeOpen { store.close() }
            backEnd.removeRecordedRequests()

            let (recorder, execution) = await run(cell.kind, on: store)
            #expect(recorder.entries == Self.expected(cell), "\(cell.testDescription)")
            let contacted = !backEnd.requests.isEmpty
            let plan = CallbackPlan.plan(mode: cell.mode, storeIsOpen: cell.storeOpen, cache: cell.cache, kind: cell.kind.tableKind)
            #expect(contacted == plan.contactsServer, "server contacted: \(contacted)")
            #expect(execution.status == (recorder.entries.contains("failed(failed)") ? .failed : .completed))
        }
        #expect(backEnd.unmatchedRequests.isEmpty)
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
        var options = OnlineStoreOptions()
        options.useCache = false
        try await ScriptedTransport().withOnlineStore(options: options) { store in
            #expect(throws: ODataError.self) { try store.setMode(.passive) }
            #expect(store.mode == .active)
            #expect(!store.isCacheEnabled)
        }
    }
}
