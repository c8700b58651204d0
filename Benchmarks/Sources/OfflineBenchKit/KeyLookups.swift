// The key lookup through the store's three public doors — `read(_:)`, `await execute(_:)` and the typed
// `DataService.fetchEntity` — timed by OfflineBenchmarks' `store` role, and counted in instructions by
// OfflineKeyInstructions under callgrind (`make bench-instructions-offline`).
import BenchmarkKit
import CCallgrind
import Foundation
import ODataCore
import ODataTyped
import OfflineStore

/// The three doors, each looking up the next of `keys` (the same sequence for each) and checking the answer.
public struct KeyLookups {
    let provider: OfflineODataProvider
    let service: DataService
    let keys: [Int]
    private var next = 0

    /// The rows' labels, as the tables and the instruction dumps name them.
    public static let read = "key lookup, read()", execute = "key lookup, await execute()", typed = "key lookup, typed DataService.fetchEntity"

    /// Lookups of keys drawn from 1...`count`.
    /// - Parameters:
    ///   - provider: the open provider.
    ///   - count: the store's number of entities.
    public init(provider: OfflineODataProvider, count: Int) {
        self.provider = provider
        service = DataService(provider: provider, entitySets: [TypedItem.set])
        var generator = SystemRandomNumberGenerator()
        keys = (0..<5_000).map { _ in Int.random(in: 1...count, using: &generator) }
    }

    private mutating func nextKey() -> Int {
        next = (next + 1) % keys.count
        return keys[next]
    }

    /// One lookup through `read(_:)`.
    public mutating func read() throws {
        let response = try provider.read(ODataRequest(resourcePath: "Items(\(nextKey()))"))
        precondition(response.statusCode == 200)
    }

    /// One lookup through `await execute(_:)`.
    public nonisolated(nonsending) mutating func execute() async throws {
        let response = try await provider.execute(ODataRequest(resourcePath: "Items(\(nextKey()))"))
        precondition(response.statusCode == 200)
    }

    /// One lookup through the typed `DataService.fetchEntity`.
    public nonisolated(nonsending) mutating func typed() async throws {
        let key = nextKey()
        let item = try await service.fetchEntity(TypedItem.set, key: EntityKey(("ItemID", Int32(key))))
        precondition(Int(item.itemID) == key)
    }

    /// The three doors' wall times in interleaved rounds (drift on a shared machine hits all three alike), on the
    /// caller's executor: the benchmark's top-level code, the main actor — an app's usual caller. (`measureAsync`
    /// runs on the global executor and calls back into the caller's for every call: it would time those hops too.)
    /// - Returns: the medians in nanoseconds, in the order of ``read``, ``execute``, ``typed``.
    public nonisolated(nonsending) mutating func medians(warmup: Int, rounds: Int) async throws -> [Double] {
        var timings: [[Double]] = [[], [], []]
        for round in 0..<(warmup + rounds) {
            for door in 0..<3 {
                let start = DispatchTime.now().uptimeNanoseconds
                switch door {
                case 0: try read()
                case 1: try await execute()
                default: try await typed()
                }
                if round >= warmup { timings[door].append(Double(DispatchTime.now().uptimeNanoseconds - start)) }
            }
        }
        return timings.map { Samples(name: "key", nanoseconds: $0).median }
    }

    /// Each door `iterations` times after 20 warm-up lookups, callgrind's counts zeroed before and dumped after
    /// under `N = count|row|iterations` (what `scripts/bench-instructions.py` reads).
    public nonisolated(nonsending) mutating func countInstructions(iterations: Int, count: Int) async throws {
        guard ccallgrind_running() != 0 else {
            print("OfflineKeyInstructions counts instructions under callgrind: run `make bench-instructions-offline`")
            return
        }
        for label in [Self.read, Self.execute, Self.typed] {
            for round in 0..<(20 + iterations) {
                if round == 20 { ccallgrind_zero() }
                switch label {
                case Self.read: try read()
                case Self.execute: try await execute()
                default: try await typed()
                }
            }
            ccallgrind_dump("N = \(count)|\(label)|\(iterations)")
        }
    }
}

/// The benchmark's provider over the store `storeName` in `work`, served from `serviceRoot`, with the one defining query
/// (indexes on `Price` and `Category`); not opened.
public func makeBenchProvider(work: String, serviceRoot: String, storeName: String = "bench", pageSize: Int = 4096) async throws -> OfflineODataProvider {
    var parameters = OfflineODataParameters(storeName: storeName, storePath: work, storeEncryptionKey: "benchmark key")
    parameters.databasePageSize = pageSize
    let provider = try OfflineODataProvider(serviceRoot: serviceRoot, parameters: parameters)
    try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "items", query: "Items", indexes: ["Price", "Category"]))
    return provider
}
