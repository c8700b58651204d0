// The soak's shared figures and its online readers: each read's answer is checked against its URL and
// against what the producer had acknowledged before the read.
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
    /// Takes one unit from a budget; `false` once it is spent.
    func take(_ name: String) -> Bool { values.withLock { $0[name, default: 0] -= 1; return $0[name]! >= 0 } }
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
/// installed (each fires as its rule says, counted by the producer); removes every fault at the end.
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
    do { try await producer.removeAllFaults() } catch {
        print("odata-soak: \(error)")
        figures.add("producer control failures")
    }
}


/// Checks one successful read: the payload must belong to the URL it was asked for, and a response
/// that claims to be fresh must not be older than what the producer had acknowledged before the read.
func check(_ response: ODataResponse, productID: Int?, customerID: String?, top: Int?, floor: Int64, figures: Figures) {
    guard response.statusCode == 200 else { figures.add("answers with status \(response.statusCode)"); return }
    if response.isFromCache && !response.isRevalidated { figures.add("cache answers (unrevalidated)") } else { figures.add("fresh answers") }
    if let top {
        guard let set = try? response.entitySet() else { figures.add("wrong cache answers"); return }
        if set.entities.count != top || set.entities.first?.properties["ProductID"]?.intValue != 1 { figures.add("wrong cache answers") }
        return
    }
    guard let entity = try? response.entity() else { figures.add("wrong cache answers"); return }
    // The producer names each entity's version in its body and in the ETag header: a cached copy
    // whose headers were refreshed onto another version's body shows here (found a real bug once).
    if let header = response.etag, let body = entity.etag, header != body {
        figures.add("answers whose ETag names another version")
        print("odata-soak: \(response.isFromCache ? "cached" : "network") answer with ETag \(header) on a body of version \(body) (revalidated \(response.isRevalidated))")
    }
    if let productID {
        guard entity.properties["ProductID"]?.intValue == Int64(productID) else { figures.add("wrong cache answers"); return }
        let claimsFresh = !response.isFromCache || response.isRevalidated
        if claimsFresh, let stock = entity.properties["UnitsInStock"]?.intValue, stock < floor {
            figures.add("stale answers served as fresh")
            print("odata-soak: stale answer for Products(\(productID)): UnitsInStock \(stock) < \(floor) acknowledged before the read; "
                  + "from cache \(response.isFromCache), revalidated \(response.isRevalidated), ETag \(response.etag ?? "none")")
        }
    }
    if let customerID, entity.properties["CustomerID"]?.stringValue != customerID { figures.add("wrong cache answers") }
}

/// Checks every cached copy a store delivers (`requestCacheResponse`) against the URL it was asked for.
final class CacheAnswerChecker: ODataRequestListener {
    let productID: Int?
    let customerID: String?
    let top: Int?
    let figures: Figures

    init(productID: Int?, customerID: String?, top: Int?, figures: Figures) {
        self.productID = productID
        self.customerID = customerID
        self.top = top
        self.figures = figures
    }

    func requestCacheResponse(_ execution: RequestExecution, response: ODataResponse?) {
        guard let response else { figures.add("cache callbacks without an entry"); return }
        figures.add("cache callbacks with an entry")
        check(response, productID: productID, customerID: customerID, top: top, floor: Int64.min, figures: figures)
    }
}

/// One reader: random reads, each identifiable by its payload, until the deadline or the request budget.
/// A hot reader reads only `Products(1)` and `Products(2)`, so that answers to concurrent reads of one
/// URL often overtake each other.
func reader(stores: [OnlineODataStore], seed: UInt64, hot: Bool = false, deadline: ContinuousClock.Instant, committed: Committed, inFlight: ReadsInFlight, figures: Figures) async {
    var random = SeededRandom(seed: seed)
    let customers = ["ALFKI", "ANATR", "ANTON", "AROUT", "BERGS", "BLAUS", "BLONP", "BOLID"]
    while ContinuousClock.now < deadline, figures.take("budget") {
        var productID: Int?
        var customerID: String?
        var top: Int?
        let request: ODataRequest
        switch hot ? 0 : Int.random(in: 0..<3, using: &random) {
        case 0:
            productID = Int.random(in: hot ? 1...2 : 1...12, using: &random)
            request = .get("Products(\(productID!))")
        case 1:
            customerID = customers[Int.random(in: 0..<customers.count, using: &random)]
            request = .get("Customers('\(customerID!)')")
        default:
            top = Int.random(in: 1...5, using: &random)
            request = .get("Products", .top(top!), .orderBy(["ProductID"]))
        }
        let storeIndex = Int.random(in: 0..<stores.count, using: &random)
        let store = stores[storeIndex]
        let key = "\(storeIndex) \((try? request.relativeURL()) ?? "")"
        let (token, floor) = inFlight.begin(key, floor: productID.map { committed.get($0) } ?? Int64.min)
        defer { inFlight.end(key, token: token) }
        figures.add("requests issued")
        do {
            let checker = CacheAnswerChecker(productID: productID, customerID: customerID, top: top, figures: figures)
            if let response = try await store.execute(request, listener: checker).result() {
                check(response, productID: productID, customerID: customerID, top: top, floor: floor, figures: figures)
            } else {
                figures.add("executions without a response")
            }
        } catch {
            figures.add("requests failed (expected under faults)")
        }
    }
}
