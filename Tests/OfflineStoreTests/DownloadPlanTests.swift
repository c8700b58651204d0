import ODataCore
import Testing
@testable import OfflineStore

/// The download's decisions, driven through ``DownloadPlan`` with no server and no store: a script answers each read,
/// and every action is written down as a line of a trace.
struct DownloadPlanTests {
    static let customers = OfflineODataDefiningQuery(name: "customers", query: "Customers")
    static let orders = OfflineODataDefiningQuery(name: "orders", query: "Orders")
    static let products = OfflineODataDefiningQuery(name: "products", query: "Products")

    /// How the script answers a read of a query.
    enum Answer {
        /// The read ends with this delta link (nil: none).
        case link(String?)
        /// The delta link expired (`410`).
        case expired
    }

    static func configuration(_ queries: [OfflineODataDefiningQuery], links: [String: String]) -> StoreConfiguration {
        StoreConfiguration(serviceRoot: "http://example/", definingQueries: queries, downloadComplete: true, deltaLinks: links, metadata: "")
    }

    /// Runs a plan to its end; `answers[name]` answers the query's reads in turn.
    static func run(_ plan: inout DownloadPlan, _ answers: [String: [Answer]]) -> [String] {
        var answers = answers
        var trace: [String] = []
        while let action = plan.next() {
            switch action {
            case .readDelta(let query, let link):
                trace.append("delta \(query.name) \(link)")
                switch answers[query.name]!.removeFirst() {
                case .link(let next): plan.read(query, endedWith: next)
                case .expired: plan.deltaExpired(query)
                }
            case .discardStagedDelta(let query):
                trace.append("discard \(query.name)")
                plan.discarded(query)
            case .readFull(let query):
                trace.append("full \(query.name)")
                guard case .link(let next) = answers[query.name]!.removeFirst() else { Issue.record("a full read cannot expire"); return trace }
                plan.read(query, endedWith: next)
            }
        }
        return trace
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var known: [OfflineODataDefiningQuery]
        var links: [String: String]
        var names: [String]?
        var answers: [String: [Answer]]
        var trace: [String]
        var full: Set<String>
        var removed: Set<String>
        var newLinks: [String: String]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a first download reads every query in full", known: [], links: [:], names: nil,
            answers: ["customers": [.link("c1")], "orders": [.link(nil)]],
            trace: ["full customers", "full orders"], full: ["customers", "orders"], removed: [], newLinks: ["customers": "c1"]),
        Row(name: "a known query with a link reads its delta and takes the new link", known: [customers, orders], links: ["customers": "c1"], names: nil,
            answers: ["customers": [.link("c2")], "orders": [.link(nil)]],
            trace: ["delta customers c1", "full orders"], full: ["orders"], removed: [], newLinks: ["customers": "c2"]),
        Row(name: "a delta that ends without a link drops it", known: [customers, orders], links: ["customers": "c1", "orders": "o1"], names: nil,
            answers: ["customers": [.link(nil)], "orders": [.link("o2")]],
            trace: ["delta customers c1", "delta orders o1"], full: [], removed: [], newLinks: ["orders": "o2"]),
        Row(name: "an expired link discards the delta's staging and reads in full", known: [customers, orders], links: ["customers": "c1"], names: nil,
            answers: ["customers": [.expired, .link("c9")], "orders": [.link(nil)]],
            trace: ["delta customers c1", "discard customers", "full customers", "full orders"], full: ["customers", "orders"], removed: [],
            newLinks: ["customers": "c9"]),
        Row(name: "a query added since the last download is read in full even with a link on record", known: [customers], links: ["customers": "c1", "orders": "stale"],
            names: nil, answers: ["customers": [.link("c2")], "orders": [.link("o1")]],
            trace: ["delta customers c1", "full orders"], full: ["orders"], removed: [], newLinks: ["customers": "c2", "orders": "o1"]),
        Row(name: "only the named queries are read; the others keep their links", known: [customers, orders], links: ["customers": "c1", "orders": "o1"],
            names: ["orders"], answers: ["orders": [.link("o2")]],
            trace: ["delta orders o1"], full: [], removed: [], newLinks: ["customers": "c1", "orders": "o2"]),
        Row(name: "a removed query loses its link and is released", known: [customers, orders, products], links: ["customers": "c1", "products": "p1"],
            names: nil, answers: ["customers": [.link("c2")], "orders": [.link(nil)]],
            trace: ["delta customers c1", "full orders"], full: ["orders"], removed: ["products"], newLinks: ["customers": "c2"]),
    ]

    @Test(arguments: rows)
    func eachQueryGetsItsRead(row: Row) {
        let last = Self.configuration(row.known, links: row.links)
        var plan = DownloadPlan(names: row.names, definingQueries: [Self.customers, Self.orders], configuration: last)
        #expect(Self.run(&plan, row.answers) == row.trace)
        #expect(plan.fullQueries == row.full)
        #expect(plan.removedQueries == row.removed)
        let next = plan.configuration(after: last)
        #expect(next.deltaLinks == row.newLinks)
        #expect(next.definingQueries == [Self.customers, Self.orders])
        #expect(plan.next() == nil, "a finished plan stays finished")
    }

    // MARK: what an answer does to a stored entity

    static func record(_ entity: JSONObject, queries: [String] = ["customers"], links: JSONObject = [:], inError: Bool = false,
                       needsRefresh: Bool = false) -> EntityRecord {
        record(.downloaded, entity, queries: queries, links: links, inError: inError, needsRefresh: needsRefresh)
    }

    static func record(_ state: EntityState, _ entity: JSONObject, queries: [String] = ["customers"],
                       links: JSONObject = [:], inError: Bool = false, needsRefresh: Bool = false) -> EntityRecord {
        EntityRecord(set: "Customers", key: "('A')", order: 1, state: state, entity: entity, original: nil, links: links,
                     inErrorState: inError, queries: queries, needsRefresh: needsRefresh)
    }

    @Test func aFullReadReplacesAndADeltaMerges() {
        let stored = Self.record(["ID": "A", "Name": "old", "City": "Kiel"])
        let incoming = Self.record(["ID": "A", "Name": "new"], queries: ["orders"])
        #expect(DownloadPlan.arrived(incoming, kind: .full, over: stored, alsoReadInFull: false)
                == .put(Self.record(["ID": "A", "Name": "new"], queries: ["customers", "orders"])))
        #expect(DownloadPlan.arrived(incoming, kind: .delta, over: stored, alsoReadInFull: false)
                == .put(Self.record(["ID": "A", "Name": "new", "City": "Kiel"], queries: ["customers", "orders"])), "a delta carries what changed")
        #expect(DownloadPlan.arrived(incoming, kind: .delta, over: stored, alsoReadInFull: true)
                == .put(Self.record(["ID": "A", "Name": "new"], queries: ["customers", "orders"])), "the full read of the same download wins")
        #expect(DownloadPlan.arrived(incoming, kind: .full, over: nil, alsoReadInFull: false) == .put(incoming), "a new entity as it came")
    }

    @Test(arguments: [EntityState.created, .updated, .deleted])
    func localStateWinsAndIsReadAgainLater(state: EntityState) {
        let stored = Self.record(state, ["ID": "A", "Name": "mine"])
        let incoming = Self.record(["ID": "A", "Name": "theirs"], queries: ["orders"], links: ["Orders": ["Orders(1)"]])
        for kind in [EntityStore.StagedKind.full, .delta] {
            #expect(DownloadPlan.arrived(incoming, kind: kind, over: stored, alsoReadInFull: false)
                    == .put(Self.record(state, ["ID": "A", "Name": "mine"], queries: ["customers", "orders"], needsRefresh: true)))
        }
        let failed = Self.record(["ID": "A", "Name": "mine"], inError: true)
        #expect(DownloadPlan.arrived(incoming, kind: .full, over: failed, alsoReadInFull: false)
                == .put(Self.record(["ID": "A", "Name": "mine"], queries: ["customers", "orders"], inError: true, needsRefresh: true)), "error state is local state")
    }

    @Test func anUnchangedEntityCostsNoWrite() {
        let stored = Self.record(["ID": "A", "Name": "same"], links: ["Orders": ["Orders(1)"]])
        #expect(DownloadPlan.arrived(stored, kind: .full, over: stored, alsoReadInFull: false) == .none)
        #expect(DownloadPlan.arrived(Self.record(["Name": "same"]), kind: .delta, over: stored, alsoReadInFull: false) == .none)
        let flagged = Self.record(["ID": "A", "Name": "same"], needsRefresh: true)
        #expect(DownloadPlan.arrived(flagged, kind: .full, over: flagged, alsoReadInFull: false) == .put(Self.record(["ID": "A", "Name": "same"])),
                "the answer clears the flag")
    }

    @Test func aRecordNoQueryHoldsGoesUnlessItHasLocalState() {
        let shared = Self.record(["ID": "A"], queries: ["customers", "orders"])
        #expect(DownloadPlan.released(shared, from: ["customers"]) == .put(Self.record(["ID": "A"], queries: ["orders"])))
        #expect(DownloadPlan.released(shared, from: ["customers", "orders"]) == .remove)
        #expect(DownloadPlan.released(Self.record(.updated, ["ID": "A"]), from: ["customers"]) == .put(Self.record(.updated, ["ID": "A"], queries: [])))
        #expect(DownloadPlan.released(Self.record(["ID": "A"], inError: true), from: ["customers"])
                == .put(Self.record(["ID": "A"], queries: [], inError: true)))
    }

    @Test func aFullReadReleasesWhatItNoLongerBrings() {
        let held = Self.record(["ID": "A"], queries: ["customers", "products"])
        #expect(DownloadPlan.held(held, readAgainInFull: true, fullQueries: ["customers"], removedQueries: []) == .none)
        #expect(DownloadPlan.held(held, readAgainInFull: true, fullQueries: ["customers"], removedQueries: ["products"])
                == .put(Self.record(["ID": "A"], queries: ["customers"])))
        #expect(DownloadPlan.held(held, readAgainInFull: false, fullQueries: ["customers"], removedQueries: ["products"]) == .remove)
        #expect(DownloadPlan.held(held, readAgainInFull: false, fullQueries: ["customers"], removedQueries: [])
                == .put(Self.record(["ID": "A"], queries: ["products"])))
    }

    @Test func addedAndDeletedLinksChangeTheNavigation() {
        func link(_ target: String?, removed: Bool) -> EntityStore.StagedLink {
            EntityStore.StagedLink(query: "customers", set: "Customers", key: "('A')", relationship: "Orders", target: target, isRemoved: removed)
        }
        let stored = Self.record(["ID": "A"], links: ["Orders": ["Orders(1)"]])
        #expect(DownloadPlan.linked(stored, link("Orders(2)", removed: false)) == .put(Self.record(["ID": "A"], links: ["Orders": ["Orders(1)", "Orders(2)"]])))
        #expect(DownloadPlan.linked(stored, link("Orders(1)", removed: false)) == .put(stored), "a link already there is not added twice")
        #expect(DownloadPlan.linked(stored, link("Orders(1)", removed: true)) == .put(Self.record(["ID": "A"], links: ["Orders": []])))
        #expect(DownloadPlan.linked(Self.record(["ID": "A"]), link(nil, removed: true)) == .put(Self.record(["ID": "A"], links: ["Orders": []])))
        #expect(DownloadPlan.linked(Self.record(.updated, ["ID": "A"]), link("Orders(2)", removed: false)) == .none, "local state keeps its links")
    }

    @Test func anEntityReadAgainTakesTheBackEndsCopyOrGoes() {
        let flagged = Self.record(["ID": "A", "Name": "old"], links: ["Orders": ["Orders(1)"]], needsRefresh: true)
        let fresh = Self.record(["ID": "A", "Name": "new"], queries: [], links: ["Orders": ["Orders(2)"]])
        #expect(DownloadPlan.refreshed(flagged, with: fresh) == .put(Self.record(["ID": "A", "Name": "new"], links: ["Orders": ["Orders(2)"]])))
        #expect(DownloadPlan.refreshed(flagged, with: nil) == .remove, "gone on the back end")
        let changedSince = Self.record(.updated, ["ID": "A", "Name": "mine"], needsRefresh: true)
        #expect(DownloadPlan.refreshed(changedSince, with: fresh) == .none, "a local change made meanwhile stays")
    }
}
