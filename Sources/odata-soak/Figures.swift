// What every task of the soak shares: its counters, the producer's acknowledged writes, the reads in flight,
// and fault rotation through the producer's control endpoint.
import Foundation
import ODataCore
import ODataFixtures
import OnlineStore
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Figures

/// Counters shared by every task.
final class Figures: Sendable {
    private let values = LockedValue<[String: Int]>([:])
    func add(_ name: String, _ amount: Int = 1) { values.withLock { $0[name, default: 0] += amount } }
    func value(_ name: String) -> Int { values.withLock { $0[name] ?? 0 } }
    func set(_ name: String, _ value: Int) { values.withLock { $0[name] = value } }
    func raise(_ name: String, to value: Int) { values.withLock { $0[name] = max($0[name] ?? 0, value) } }
}

/// The readers' request budget, spread over the run: request n may begin at `start + n × length ÷ total`, so that
/// a long run reads until its end. (Spent as fast as the readers could, 200,000 requests lasted ~65 s: a 600-s soak
/// judged the memory of idle online stores over its last half, and its tier outage at 40–70 % met no reader.)
final class RequestBudget: Sendable {
    private let start: ContinuousClock.Instant
    private let spacing: Duration
    private let total: Int
    private let taken = LockedValue(0)

    /// A budget of `total` requests over `length` from `start`.
    init(_ total: Int, over length: Duration, from start: ContinuousClock.Instant) {
        self.start = start
        self.total = total
        spacing = length / max(total, 1)
    }

    /// Takes one request, waiting until its turn; `false` once the budget is spent.
    func take() async -> Bool {
        let index = taken.withLock { taken in
            taken += 1
            return taken - 1
        }
        guard index < total else { return false }
        try? await Task.sleep(until: start + spacing * index, clock: .continuous)
        return true
    }
}

/// The last value acknowledged by the producer for each product's `UnitsInStock`.
final class Committed: Sendable {
    private let values = LockedValue<[Int: Int64]>([:])
    func get(_ id: Int) -> Int64 { values.withLock { $0[id] ?? Int64.min } }
    func set(_ id: Int, _ value: Int64) { values.withLock { $0[id] = max($0[id] ?? Int64.min, value) } }
}

/// The reads in flight, by store and URL, with the floor each began with. A store shares one network
/// request among identical reads in flight together (`coalescesIdenticalReads`), so a read may get the
/// answer to one that began before it: its floor is the lowest of those in flight when it began.
final class ReadsInFlight: Sendable {
    private let reads = LockedValue<[String: [Int: Int64]]>([:])
    private let next = LockedValue(0)

    /// Registers a read; returns its token and the floor its answer must reach.
    func begin(_ key: String, floor: Int64) -> (token: Int, floor: Int64) {
        let token = next.withLock { $0 += 1; return $0 }
        return reads.withLock { reads in
            let lowest = min(floor, reads[key]?.values.min() ?? floor)
            reads[key, default: [:]][token] = floor
            return (token, lowest)
        }
    }

    func end(_ key: String, token: Int) {
        reads.withLock { reads in
            reads[key]?[token] = nil
            if reads[key]?.isEmpty == true { reads[key] = nil }
        }
    }
}

/// Installs the rule `next` makes every `interval` until the deadline, keeping the last `keep` of them
/// installed (each fires as its rule says, counted by the producer); removes the ones it installed at the end.
/// A control call the producer does not answer is counted in `producer control failures`.
func rotateFaults(producer: FixtureProcess, seed: UInt64, every interval: Duration, keep: Int, deadline: ContinuousClock.Instant,
                  figures: Figures, _ next: (inout SeededRandom) -> FaultRule) async {
    var random = SeededRandom(seed: seed)
    var installed: [FaultID] = []
    while ContinuousClock.now < deadline {
        do {
            installed.append(try await producer.addFault(next(&random)))
            if installed.count > keep { try await producer.removeFault(installed.removeFirst()) }
        } catch {
            print("odata-soak: \(error)")
            figures.add("producer control failures")
        }
        try? await Task.sleep(for: interval)
    }
    for id in installed {
        do { try await producer.removeFault(id) } catch {
            print("odata-soak: \(error)")
            figures.add("producer control failures")
        }
    }
}
