import Testing
@testable import OnlineStore

@Suite struct CallbackPlanTests {
    /// Every cell of SPEC's two tables, written out as the SPEC writes them.
    static let table: [(StoreMode, Bool, CacheState, RequestKind, String)] = [
        // Single read with useCache=true, or a $batch with at least one such read.
        (.active, true, .open, .cachedRead, "cache+server"),
        (.active, true, .closed, .cachedRead, "server"),
        (.active, true, .disabled, .cachedRead, "server"),
        (.active, false, .open, .cachedRead, "failure"),
        (.active, false, .closed, .cachedRead, "failure"),
        (.active, false, .disabled, .cachedRead, "failure"),
        (.passive, true, .open, .cachedRead, "cache"),
        (.passive, true, .closed, .cachedRead, "failure"),
        (.passive, true, .disabled, .cachedRead, "failure"),
        (.passive, false, .open, .cachedRead, "failure"),
        (.passive, false, .closed, .cachedRead, "failure"),
        // CUD, reads with useCache=false, batches with no cached read.
        (.active, true, .open, .other, "server"),
        (.active, true, .closed, .other, "server"),
        (.active, true, .disabled, .other, "server"),
        (.active, false, .open, .other, "failure"),
        (.active, false, .closed, .other, "failure"),
        (.active, false, .disabled, .other, "failure"),
        (.passive, true, .open, .other, "failure"),
        (.passive, true, .closed, .other, "failure"),
        (.passive, false, .open, .other, "failure"),
        (.passive, false, .closed, .other, "failure"),
    ]

    @Test(arguments: table)
    func followsTheStateTables(mode: StoreMode, storeIsOpen: Bool, cache: CacheState, kind: RequestKind, expected: String) {
        let plan = CallbackPlan.plan(mode: mode, storeIsOpen: storeIsOpen, cache: cache, kind: kind)
        let name: String = switch plan {
        case .cacheThenServer: "cache+server"
        case .serverOnly: "server"
        case .passiveRead: "cache"
        case .failure: "failure"
        }
        #expect(name == expected)
        #expect(plan.readsCache == (expected == "cache+server" || expected == "cache"))
        #expect(plan.contactsServer == (expected == "cache+server" || expected == "server"))
    }

    @Test func failuresSayWhy() {
        guard case .failure(let reason) = CallbackPlan.plan(mode: .passive, storeIsOpen: true, cache: .closed, kind: .cachedRead) else {
            Issue.record("expected a failure")
            return
        }
        #expect(reason.contains("closed"))
        guard case .failure(let closed) = CallbackPlan.plan(mode: .active, storeIsOpen: false, cache: .open, kind: .other) else {
            Issue.record("expected a failure")
            return
        }
        #expect(closed.contains("not open"))
    }
}
