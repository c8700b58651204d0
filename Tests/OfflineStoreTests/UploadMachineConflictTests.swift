import Foundation
import HTTPTypes
import ODataCore
import Testing
@testable import OfflineStore

/// The conflict policies (``OfflineODataConflictPolicy``) as tables: each policy × {PATCH, MERGE, PUT, DELETE} ×
/// {412, 409}, driven through ``UploadMachine`` with no server (the harness of ``UploadMachineTests``).
struct UploadMachineConflictTests {
    typealias T = UploadMachineTests

    /// The policies, as the machine's rules (the custom resolver answers `.send(["Price": 21])`).
    enum Policy: String, CaseIterable, CustomTestStringConvertible {
        case archive, serverWins, clientWins, mergeFields, custom
        var rule: UploadMachine.ConflictRule {
            switch self {
            case .archive: .fixed(.archive)
            case .serverWins: .fixed(.serverWins)
            case .clientWins: .fixed(.clientWins)
            case .mergeFields: .fixed(.mergeFields)
            case .custom: .custom
            }
        }
        var testDescription: String { rawValue }
    }

    static let base: JSONObject = ["ID": 1, "Name": "Chai", "Price": 18]
    /// Another client renamed the product: a field the local change does not touch.
    static let renamed: JSONObject = ["ID": 1, "Name": "Chai Tea", "Price": 18]
    /// Another client changed the price too.
    static let repriced: JSONObject = ["ID": 1, "Name": "Chai", "Price": 19]

    /// A queued change of `Products(1)` made on the downloaded copy (`If-Match: W/"1"`): the price to 20.
    static func change(_ method: String, id: Int64 = 1, repeatable: Bool = false) -> QueuedRequest {
        let body: String? = switch method {
        case "DELETE": nil
        case "PUT": #"{"ID":1,"Name":"Chai","Price":20}"#
        default: #"{"Price":20}"#
        }
        var headers: HTTPFields = [.ifMatch: "W/\"1\""]
        if repeatable {
            headers[UploadMachine.repeatabilityRequestID] = "00000000-0000-4000-8000-00000000000\(id)"
            headers[UploadMachine.repeatabilityFirstSent] = "Sun, 01 Nov 2026 10:00:00 GMT"
        }
        return QueuedRequest(id: id, method: method, url: "Products(1)", body: body, customTag: nil, headers: headers,
                             entity: "Products(1)", createdAt: "")
    }

    static func versions(_ remote: JSONObject?) -> ConflictRead {
        .versions(base: base, localEntity: ["ID": 1, "Name": "Chai", "Price": 20], remote: remote, remoteETag: remote == nil ? nil : "W/\"2\"")
    }

    static func run(_ policy: Policy, _ queue: [QueuedRequest], status: Int, remote: JSONObject?, statuses: Set<Int> = [412, 409],
                    answers: [Int64: [UploadAnswer]]? = nil, batch: Int? = nil, repeatable: Bool = false) -> T.Run {
        T.run(queue, batch: batch, repeatable: repeatable, answers: answers ?? [1: [T.status(status), T.ok(204)]], conflictRule: policy.rule,
              conflictStatuses: statuses, conflictRead: versions(remote), resolver: { _ in .send(["Price": 21]) })
    }

    static let cases: [(String, Int)] = ["PATCH", "MERGE", "PUT", "DELETE"].flatMap { method in [412, 409].map { (method, $0) } }

    /// The body a re-send carries, as JSON.
    static func body(_ entry: QueuedRequest?) -> JSONObject? {
        entry?.body.flatMap { try? JSON.parse(Array($0.utf8)).objectValue }
    }

    // MARK: The table

    /// Another client renamed the product; the local change sets its price (or deletes it). Each policy does what its
    /// table says, for every method and for `412` as for a configured `409`.
    @Test(arguments: Policy.allCases, cases)
    func eachPolicyResolvesAConflictOnEachMethod(policy: Policy, method: (String, Int)) {
        let (method, status) = method
        let run = Self.run(policy, [Self.change(method)], status: status, remote: Self.renamed)
        let isDelete = method == "DELETE"
        let resent = run.sent.count > 1 ? run.sent[1] : nil
        switch policy {
        case .archive:
            #expect(run.trace == ["read>0", "send 1", "commit fail1:OData", "read>1", "progress 1/1@1", "finish sent 1 ok 0 failed 1"], "\(run.trace)")
            #expect(run.failures.first?.httpStatusCode == Int32(status))
        case .serverWins:
            #expect(run.trace == ["read>0", "send 1", "read 1", "commit won1", "read>1", "progress 1/1@1", "finish sent 1 ok 0 failed 0"], "\(run.trace)")
            guard case .serverWon(_, let report)? = run.committed.first else { Issue.record("no server win"); return }
            #expect(report.conflict.remote == Self.renamed && report.conflict.base == Self.base && report.resolution == .serverWins)
        case .clientWins:
            #expect(run.trace == ["read>0", "send 1", "read 1", "send 1", "commit resolved1", "read>1", "progress 1/1@1", "finish sent 1 ok 1 failed 0"], "\(run.trace)")
            #expect(resent?.headers[.ifMatch] == "W/\"2\"")
            #expect(resent?.body == Self.change(method).body, "client wins re-sends the change as it is")
        case .mergeFields where isDelete:
            #expect(run.trace == ["read>0", "send 1", "read 1", "commit fail1:OData", "read>1", "progress 1/1@1", "finish sent 1 ok 0 failed 1"], "\(run.trace)")
            #expect(run.failures.first?.message.contains("deleted here, changed on the back end (Name)") == true, "\(run.failures)")
        case .mergeFields:
            #expect(run.trace == ["read>0", "send 1", "read 1", "send 1", "commit resolved1", "read>1", "progress 1/1@1", "finish sent 1 ok 1 failed 0"], "\(run.trace)")
            #expect(resent?.headers[.ifMatch] == "W/\"2\"")
            // A PATCH (MERGE) sends only what changed here, so the back end keeps its name; a PUT sends the whole entity.
            #expect(Self.body(resent) == (method == "PUT" ? ["ID": 1, "Name": "Chai Tea", "Price": 20] : ["Price": 20]))
            guard case .resolved(_, _, _, let keep, _, _)? = run.committed.first else { Issue.record("not resolved"); return }
            #expect(keep["Name"] == "Chai Tea", "the local copy takes the back end's name: \(keep)")
        case .custom where isDelete:
            #expect(run.trace.contains("ask 1") && run.trace.contains("commit fail1:OData"), "\(run.trace)")
            #expect(run.failures.first?.message.contains("answers no delete") == true)
        case .custom:
            #expect(run.asked.map(\.local) == [method == "PUT" ? ["ID": 1, "Name": "Chai", "Price": 20] : ["Price": 20]])
            #expect(Self.body(resent) == ["Price": 21])
            #expect(run.trace.contains("commit resolved1"), "\(run.trace)")
        }
        if policy == .archive { #expect(!run.trace.contains("read 1"), "archiving reads nothing") }
    }

    /// A status that is not configured as a conflict (`409` by default) is archived by every policy, unread.
    @Test(arguments: Policy.allCases)
    func anUnconfiguredStatusIsArchivedUnread(policy: Policy) {
        let run = Self.run(policy, [Self.change("PATCH")], status: 409, remote: Self.renamed, statuses: [412])
        #expect(run.trace == ["read>0", "send 1", "commit fail1:OData", "read>1", "progress 1/1@1", "finish sent 1 ok 0 failed 1"], "\(run.trace)")
    }

    /// The same field changed on both sides: a merge archives it with the three values (message and inner error).
    @Test(arguments: ["PATCH", "MERGE", "PUT"])
    func aFieldChangedOnBothSidesIsArchivedWithBothValues(method: String) throws {
        let run = Self.run(.mergeFields, [Self.change(method)], status: 412, remote: Self.repriced)
        #expect(run.sends[1] == 1, "nothing re-sent")
        let failure = try #require(run.failures.first)
        #expect(failure.message.contains("Price: here 20, on the back end 19, downloaded 18"), "\(failure.message)")
        let innerError = try #require(failure.innerError)
        let conflict = try #require(JSON.parse(Data(innerError.utf8)).objectValue?["conflict"]?.objectValue)
        #expect(conflict["fields"] == ["Price"])
        #expect(conflict["remote"]?.objectValue == Self.repriced)
        #expect(conflict["base"]?.objectValue == Self.base)
    }

    /// The back end deleted the entity: a delete is done by every policy but archive (nothing re-sent); an update is
    /// archived unless the back end wins (the local copy then goes).
    @Test(arguments: Policy.allCases, cases.filter { $0.1 == 412 })
    func theBackEndDeletedTheEntity(policy: Policy, method: (String, Int)) {
        let method = method.0
        let run = Self.run(policy, [Self.change(method)], status: 412, remote: nil)
        #expect(run.sends[1] == 1, "\(run.trace)")
        let last = run.trace.first { $0.hasPrefix("commit") }
        switch (policy, method) {
        case (.serverWins, _): #expect(last == "commit won1")
        case (.archive, _), (.custom, "DELETE"): #expect(last == "commit fail1:OData")
        case (_, "DELETE"): #expect(last == "commit resolved1")
        default:
            #expect(last == "commit fail1:OData")
            #expect(run.failures.first?.message.contains("another client deleted it") == true)
        }
    }

    // MARK: Re-sends

    /// A re-send is a new request to the back end: with repeatable requests, a new `Repeatability-Request-ID` and the
    /// time of the resolution as `Repeatability-First-Sent`; its own re-sends after a lost answer keep them.
    @Test func aResolvingReSendIsANewRepeatableRequest() throws {
        let answers: [Int64: [UploadAnswer]] = [1: [T.status(412), T.lost, T.ok(204)]]
        let run = Self.run(.clientWins, [Self.change("PATCH", repeatable: true)], status: 412, remote: Self.renamed, answers: answers, repeatable: true)
        #expect(run.sent.count == 3, "\(run.trace)")
        let original = run.sent[0].headers[UploadMachine.repeatabilityRequestID]
        let first = try #require(run.sent[1].headers[UploadMachine.repeatabilityRequestID])
        #expect(first != original && first.count == 36)
        #expect(run.sent[2].headers[UploadMachine.repeatabilityRequestID] == first, "a lost answer's re-send keeps the new ID")
        #expect(run.sent[1].headers[UploadMachine.repeatabilityFirstSent] == "Fri, 15 Jan 2027 08:00:00 GMT")
        #expect(run.trace.contains("commit resolved1"))
    }

    /// A request is resolved once: a second conflict on its re-send is archived, saying so.
    @Test(arguments: [Policy.clientWins, .mergeFields, .custom])
    func aSecondConflictIsArchived(policy: Policy) throws {
        let run = Self.run(policy, [Self.change("PATCH")], status: 412, remote: Self.renamed, answers: [1: [T.status(412)]])
        #expect(run.sends[1] == 2)
        #expect(run.trace.filter { $0 == "read 1" }.count == 1)
        let failure = try #require(run.failures.first)
        #expect(failure.message.contains("failed too"), "\(failure.message)")
    }

    /// The back end wins: this and every later change of the entity are dropped (never sent), other entities' go.
    @Test(arguments: [nil, 10] as [Int?])
    func theBackEndWinningDropsTheLaterChangesOfTheEntity(batch: Int?) throws {
        let queue = [Self.change("PATCH", id: 1), Self.change("PATCH", id: 2), T.request(3, "PATCH", "Products(2)"), Self.change("DELETE", id: 4)]
        let run = Self.run(.serverWins, queue, status: 412, remote: Self.renamed, answers: [1: [T.status(412)]], batch: batch)
        #expect(run.sends[2] == nil && run.sends[4] == nil, "\(run.trace)")
        #expect(run.sends[3] == 1)
        guard case .finish(let result)? = run.end else { Issue.record("no finish: \(run.trace)"); return }
        #expect(result.resolvedConflicts.map(\.droppedRequestIDs) == [[2, 4]])
        #expect(result.succeeded == 1 && result.failed.isEmpty)
    }

    /// A conflict inside a `$batch` is resolved on its own, after the other answers of the `$batch`.
    @Test func aConflictInABatchIsResolvedAlone() {
        let queue = [Self.change("PATCH", id: 1), T.request(2, "PATCH", "Products(2)")]
        let run = Self.run(.clientWins, queue, status: 412, remote: Self.renamed, answers: [1: [T.status(412), T.ok(204)]], batch: 10)
        #expect(run.trace.contains("batch 1,2") && run.trace.contains("read 1") && run.trace.contains("send 1"), "\(run.trace)")
        #expect(run.failures.isEmpty)
        #expect(run.end.flatMap { if case .finish(let result) = $0 { result.succeeded } else { nil } } == 2)
    }

    // MARK: Reading the back end's entity

    /// The caller stops the upload while the back end's entity is read, or while the resolver decides: nothing is
    /// committed, the request stays queued as it was.
    @Test(arguments: [Policy.clientWins, .custom])
    func aStopDuringAResolutionKeepsTheRequestQueued(policy: Policy) {
        var configuration = UploadMachine.Configuration(batchLimit: nil, retry: T.policy(retries: 0), repeatable: false)
        configuration.conflictRule = policy.rule
        var machine = UploadMachine(configuration: configuration)
        _ = machine.next()
        machine.queueRead([Self.change("PATCH")])
        guard case .send = machine.next() else { Issue.record("no send"); return }
        machine.answered(T.status(412))
        guard case .readConflict = machine.next() else { Issue.record("no read"); return }
        if policy == .custom {
            machine.conflictRead(Self.versions(Self.renamed))
            guard case .resolve = machine.next() else { Issue.record("no resolver asked"); return }
        }
        machine.cancel()
        #expect(machine.next() == .stopped)
    }

    /// No answer to the read: the request stays queued (the next upload meets its conflict again), the upload stops.
    @Test func anUnansweredReadKeepsTheRequestQueued() {
        let run = T.run([Self.change("PATCH")], answers: [1: [T.status(412)]], conflictRule: .fixed(.mergeFields),
                        conflictRead: .unanswered("connection refused"))
        #expect(run.committed.isEmpty, "\(run.trace)")
        #expect(run.trace.last == "unreachable sent 0 ok 0 failed 0", "\(run.trace)")
    }

    /// A read the back end refuses: the conflict is archived, saying why.
    @Test func aRefusedReadArchivesTheConflict() throws {
        let run = T.run([Self.change("PATCH")], answers: [1: [T.status(412)]], conflictRule: .fixed(.clientWins),
                        conflictRead: .failed("GET Products(1) answered 500: boom"))
        let failure = try #require(run.failures.first)
        #expect(failure.message.contains("could not be read: GET Products(1) answered 500"), "\(failure.message)")
        #expect(run.sends[1] == 1)
    }

    /// Creates, relationship requests and media replaces are not resolved: their conflicts are archived unread.
    @Test func onlyUpdatesAndDeletesOfEntitiesAreResolved() {
        let queue = [T.request(1, "POST", "Products(-1)"), T.link(2, "PUT", from: "Products(1)", to: "Categories(1)")]
        let run = T.run(queue, answers: [1: [T.status(412)], 2: [T.status(412)]], conflictRule: .fixed(.clientWins), conflictRead: Self.versions(Self.renamed))
        #expect(!run.trace.contains { $0.hasPrefix("read ") }, "\(run.trace)")
        #expect(run.failures.count == 2)
    }

    // MARK: The merge's rules

    @Test func theMergeComparesEachFieldWithTheBase() {
        let conflict = OfflineODataConflict(requestID: 1, method: "PATCH", affectedEntity: "Products(1)", statusCode: 412, base: Self.base,
                                            local: ["Price": 20, "Name": "Chai"], remote: ["ID": 1, "Name": "Chai", "Price": 20], remoteETag: nil)
        #expect(conflict.conflictingFields.isEmpty, "both set the price to 20: no conflict")
        #expect(ConflictMerge.mergedBody(conflict) == ["Price": 20], "a field the local change left as downloaded is not sent")
        let unknownBase = OfflineODataConflict(requestID: 1, method: "PATCH", affectedEntity: "Products(1)", statusCode: 412, base: nil,
                                               local: ["Price": 20], remote: ["ID": 1, "Name": "X", "Price": 19], remoteETag: nil)
        #expect(unknownBase.conflictingFields == ["Price"], "without a base, a local field the back end holds otherwise conflicts")
    }
}
