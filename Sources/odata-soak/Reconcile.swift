// The end of the offline part: every queue drained, then the ledger reconciled with what the producer
// executed and holds, and with the stores' ErrorArchives.
import Foundation
import ODataCore
import ODataFixtures
import ODataTyped
import OfflineStore

// MARK: - The end: drain, then reconcile

/// What the producer executed and holds at the end, read over its control endpoint once every queue is drained.
struct ProducerState {
    var counters: [RequestCounters.Entry]
    var customers: [JSONObject]
    var shippers: [JSONObject]

    static func read(from producer: FixtureProcess) async throws(FixtureError) -> ProducerState {
        ProducerState(counters: try await producer.counters(), customers: try await producer.entities(in: "Customers"),
                      shippers: try await producer.entities(in: "Shippers"))
    }

    /// Requests the producer executed on a method and path (batch members included).
    func executions(method: String, path: String) -> Int {
        counters.first { $0.method == method.uppercased() && $0.path == path }?.executed ?? 0
    }
}

/// Uploads until the queue is empty (faults are off by now); returns whether it emptied.
func drain(_ provider: OfflineODataProvider, figures: Figures) async -> Bool {
    for _ in 0..<6 {
        if (try? await provider.hasPendingUpload) == false { return true }
        await synchronize(provider, download: false, figures: figures)
    }
    return (try? await provider.hasPendingUpload) == false
}

/// Compares the ledger's changes (`intents`) with the producer's executions, data and the stores' ErrorArchives.
///
/// - Parameters:
///   - archives: Every ErrorArchive entry of every store.
///   - initialFax: Each customer's `Fax` before the soak.
func reconcile(producer: ProducerState, intents: [Intent], archives: [ErrorArchiveEntry], initialFax: [String: JSONValue], figures: Figures) {
    // The ErrorArchive: which changes and entities it holds, and why.
    var archivedValues = Set<String>()
    var archivedTargets = Set<String>()
    var faultTargets = Set<String>()
    var refusals: [(String, ErrorArchiveEntry)] = []
    let deleteKeys = Dictionary(intents.compactMap { intent in intent.key.map { ($0, intent.target) } }, uniquingKeysWith: { first, _ in first })
    for entry in archives {
        let url = entry.requestURL
        let body = entry.requestBody.flatMap { try? JSON.parse($0) }
        var target = ""
        if url.hasPrefix("Customers('") {
            target = String(url.dropFirst("Customers('".count).prefix { $0 != "'" })
            if let fax = body?["Fax"]?.stringValue { archivedValues.insert(fax) }
        } else if let name = body?["CompanyName"]?.stringValue {
            target = name
            archivedValues.insert(name)
        } else if let phone = body?["Phone"]?.stringValue {
            target = String(phone.prefix { $0 != "#" })
            archivedValues.insert(phone)
        } else if url.hasPrefix("Shippers("), let key = Int64(url.dropFirst("Shippers(".count).prefix { $0 != ")" }), let marker = deleteKeys[key] {
            target = marker
            archivedValues.insert("delete " + marker)
        }
        archivedTargets.insert(target)
        let status = entry.httpStatusCode ?? 0
        let domain = entry.domain ?? ""
        // With repeatable requests on, a request that got no answer stays queued: an entry for one is an outage's.
        if domain != "OData", ["CurlError.connectFailed", "CurlError.connectionClosed", "CurlError.timedOut", "CurlError.couldNotResolveHost"]
            .contains(where: { entry.message.contains($0) }) {
            figures.add("offline archived for an outage")
            print("odata-soak: archived for an outage: \(entry.requestMethod) \(entry.requestURL): \(entry.message)")
        }
        if domain != "OData" || status == 408 || status == 429 || status >= 500 {
            faultTargets.insert(target)
            figures.add("offline requests archived after faults")
        } else {
            refusals.append((target, entry))
        }
    }
    for (target, entry) in refusals {
        if faultTargets.contains(target) {
            figures.add("offline follow-ups of a fault archived")
        } else {
            figures.add("offline requests refused (not a fault)")
            print("odata-soak: refused: \(JSON.string(entry.jsonValue(for: .v4)))")
        }
    }
    func archived(_ intent: Intent) -> Bool {
        archivedValues.contains(intent.kind == .deleteShipper ? "delete " + intent.target : (intent.kind == .create ? intent.target : intent.value))
    }
    /// Executions of one method and path against the changes that asked for them.
    func count(_ method: String, _ path: String, _ changes: [Intent], what: String) {
        let executed = producer.executions(method: method, path: path)
        let twice = executed - changes.count
        let lost = changes.filter { $0.acknowledged && !archived($0) }.count - executed
        if twice > 0 {
            figures.add("offline requests executed twice", twice)
            print("odata-soak: \(method) \(path) executed \(executed) times for \(changes.count) \(what)")
        }
        if lost > 0 {
            figures.add("offline requests lost", lost)
            print("odata-soak: \(method) \(path) executed \(executed) times for \(changes.count) \(what), \(lost) lost")
        }
    }
    /// The values the producer may hold after the changes: the last acknowledged one, or one of
    /// the uncertain ones made after it.
    func acceptable(_ changes: [Intent], initial: JSONValue) -> [JSONValue] {
        guard let last = changes.lastIndex(where: \.acknowledged) else { return [initial] + changes.map { .string($0.value) } }
        return changes[last...].map { .string($0.value) }
    }

    // Customers: every update executed once, the last one on the producer.
    let customers = producer.customers
    let faxes = Dictionary(customers.compactMap { row in row["CustomerID"]?.stringValue.map { ($0, row["Fax"] ?? .null) } }, uniquingKeysWith: { first, _ in first })
    for (customer, changes) in Dictionary(grouping: intents.filter { $0.kind == .patchCustomer }, by: \.target) {
        count("PATCH", "Customers('\(customer)')", changes, what: "updates")
        guard !archivedTargets.contains(customer) else { continue }
        let allowed = acceptable(changes, initial: initialFax[customer] ?? .null)
        if !allowed.contains(faxes[customer] ?? .null) {
            figures.add("offline final-state mismatches")
            print("odata-soak: Customers('\(customer)') has Fax \(JSON.string(faxes[customer] ?? .null)) on the producer, expected one of \(allowed.map { JSON.string($0) })")
        }
    }

    // Shippers: each create once (one row per marker), its updates and delete once, the last state on the producer.
    let shippers = producer.shippers
    let rows = Dictionary(grouping: shippers, by: { $0["CompanyName"]?.stringValue ?? "" })
    let creates = intents.filter { $0.kind == .create }
    let postsExecuted = producer.executions(method: "POST", path: "Shippers")
    if postsExecuted > creates.count {
        figures.add("offline requests executed twice", postsExecuted - creates.count)
        print("odata-soak: POST Shippers executed \(postsExecuted) times for \(creates.count) creates")
    }
    let certainCreates = creates.filter { $0.acknowledged && !archived($0) }.count
    if postsExecuted < certainCreates {
        figures.add("offline requests lost", certainCreates - postsExecuted)
        print("odata-soak: POST Shippers executed \(postsExecuted) times for \(certainCreates) acknowledged creates")
    }
    // The producer reuses the key of a deleted shipper (max + 1), so updates and deletes are counted
    // per key over every marker that had it.
    var byKey: [Int64: [Intent]] = [:]
    let markers = Dictionary(grouping: intents.filter { $0.kind != .patchCustomer }, by: \.target)
    for (marker, changes) in markers {
        let found = rows[marker] ?? []
        if found.count > 1 {
            figures.add("offline requests executed twice", found.count - 1)
            print("odata-soak: \(found.count) producer rows named '\(marker)'")
        }
        if let key = changes.first(where: { $0.kind == .deleteShipper })?.key ?? found.first?["ShipperID"]?.intValue {
            byKey[key, default: []] += changes.filter { $0.kind == .patchShipper || $0.kind == .deleteShipper }
        }
    }
    for (key, changes) in byKey {
        count("PATCH", "Shippers(\(key))", changes.filter { $0.kind == .patchShipper }, what: "updates")
        count("DELETE", "Shippers(\(key))", changes.filter { $0.kind == .deleteShipper }, what: "deletes")
    }
    for (marker, changes) in markers {
        let found = rows[marker] ?? []
        let delete = changes.first { $0.kind == .deleteShipper }
        guard !archivedTargets.contains(marker), let create = changes.first(where: { $0.kind == .create }) else { continue }
        if let delete, delete.acknowledged {
            if !found.isEmpty {
                figures.add("offline final-state mismatches")
                print("odata-soak: '\(marker)' was deleted locally but is on the producer")
            }
        } else if found.isEmpty {
            if create.acknowledged && delete == nil {
                figures.add("offline requests lost")
                print("odata-soak: the create of '\(marker)' never reached the producer")
            }
        } else if found.count == 1 {
            let allowed = acceptable(changes.filter { $0.kind != .deleteShipper }, initial: .null)
            if !allowed.contains(found[0]["Phone"] ?? .null) {
                figures.add("offline final-state mismatches")
                print("odata-soak: '\(marker)' has Phone \(JSON.string(found[0]["Phone"] ?? .null)) on the producer, expected one of \(allowed.map { JSON.string($0) })")
            }
        }
    }
    // Every repeated request answered from the producer's repeatability record (a lost
    // acknowledgement or a request re-sent after a kill), and the write faults that fired.
    let writes = producer.counters.filter { $0.method != "GET" }
    figures.set("offline re-sends replayed (repeatability)", writes.reduce(0) { $0 + $1.replayed })
    figures.set("offline write faults injected (fired)", writes.reduce(0) { $0 + $1.faulted })
}

/// Every entry of a store's ErrorArchive, read as a user reads it: a local `GET ErrorArchive`.
func errorArchive(_ provider: OfflineODataProvider) throws -> [ErrorArchiveEntry] {
    let value = try JSON.parse(provider.read(.get(ErrorArchiveEntry.entitySet.name)).payload)
    return try (value["value"]?.arrayValue ?? []).map { try ErrorArchiveEntry.decode(JSON.serialize($0)) }
}
