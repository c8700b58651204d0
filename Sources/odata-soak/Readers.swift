// The soak's online readers: each read's answer is checked against its URL and against what the producer
// had acknowledged before the read.
import Foundation
import ODataCore
import ODataFixtures
import OnlineStore
#if canImport(Glibc)
import Glibc
#endif

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

/// One reader: random reads, each identifiable by its payload, until the deadline or the end of the request budget.
/// A hot reader reads only `Products(1)` and `Products(2)`, so that answers to concurrent reads of one
/// URL often overtake each other.
func reader(stores: [OnlineODataStore], seed: UInt64, hot: Bool = false, deadline: ContinuousClock.Instant, budget: RequestBudget, committed: Committed,
            inFlight: ReadsInFlight, figures: Figures) async {
    var random = SeededRandom(seed: seed)
    let customers = ["ALFKI", "ANATR", "ANTON", "AROUT", "BERGS", "BLAUS", "BLONP", "BOLID"]
    while ContinuousClock.now < deadline, await budget.take() {
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
