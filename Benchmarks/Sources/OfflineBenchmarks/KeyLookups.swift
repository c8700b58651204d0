// The key lookup through the store's three public doors — `read(_:)`, `await execute(_:)` and the typed
// `DataService.fetchEntity` — timed by the `store` role, and counted in instructions by the `keys` role
// (`OFFLINE_BENCH_INSTRUCTIONS=N` under callgrind: `make bench-instructions-offline`).
import BenchmarkKit
import CCallgrind
import Foundation
import ODataCore
import ODataTyped
import OfflineStore

/// The three doors, each looking up the next of `keys` (the same sequence for each) and checking the answer.
struct KeyLookups {
    let provider: OfflineODataProvider
    let service: DataService
    let keys: [Int]
    private var next = 0

    /// The rows' labels, as the tables and the instruction dumps name them.
    static let read = "key lookup, read()", execute = "key lookup, await execute()", typed = "key lookup, typed DataService.fetchEntity"

    init(provider: OfflineODataProvider, count: Int) {
        self.provider = provider
        service = DataService(provider: provider, entitySets: [TypedItem.set])
        var generator = SystemRandomNumberGenerator()
        keys = (0..<5_000).map { _ in Int.random(in: 1...count, using: &generator) }
    }

    private mutating func nextKey() -> Int {
        next = (next + 1) % keys.count
        return keys[next]
    }

    mutating func read() throws {
        let response = try provider.read(ODataRequest(resourcePath: "Items(\(nextKey()))"))
        precondition(response.statusCode == 200)
    }

    nonisolated(nonsending) mutating func execute() async throws {
        let response = try await provider.execute(ODataRequest(resourcePath: "Items(\(nextKey()))"))
        precondition(response.statusCode == 200)
    }

    nonisolated(nonsending) mutating func typed() async throws {
        let key = nextKey()
        let item = try await service.fetchEntity(TypedItem.set, key: EntityKey(("ItemID", Int32(key))))
        precondition(Int(item.itemID) == key)
    }

    /// The three doors' wall times in interleaved rounds (drift on a shared machine hits all three alike), on the
    /// caller's executor: the benchmark's top-level code, the main actor — an app's usual caller. (`measureAsync`
    /// runs on the global executor and calls back into the caller's for every call: it would time those hops too.)
    /// - Returns: the medians in nanoseconds, in the order of ``read``, ``execute``, ``typed``.
    nonisolated(nonsending) mutating func medians(warmup: Int, rounds: Int) async throws -> [Double] {
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
    nonisolated(nonsending) mutating func countInstructions(iterations: Int, count: Int) async throws {
        guard ccallgrind_running() != 0 else {
            print("OFFLINE_BENCH_INSTRUCTIONS counts instructions under callgrind: run `make bench-instructions-offline`")
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
