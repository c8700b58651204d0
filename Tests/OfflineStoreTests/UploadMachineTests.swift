import Foundation
import HTTPTypes
import ODataCore
import ODataSession
import Testing
@testable import OfflineStore

/// The upload's rules, driven through ``UploadMachine`` with no server, no store and no clock: a scripted back end
/// answers each send, a list stands for the queue, and every action is written down as a line of a trace.
struct UploadMachineTests {
    static func request(_ id: Int64, _ method: String, _ entity: String) -> QueuedRequest {
        QueuedRequest(id: id, method: method, url: entity, body: method == "DELETE" ? nil : "{}", customTag: nil, headers: [:],
                      entity: entity, createdAt: "")
    }

    static func ok(_ status: Int = 200, body: String = #"{"ID":1}"#) -> UploadAnswer {
        .reply(UploadReply(status: status, etag: "W/\"e\(status)\"", body: Data(body.utf8)))
    }

    static func status(_ status: Int) -> UploadAnswer {
        .reply(UploadReply(status: status, etag: nil, body: Data(#"{"error":{"code":"E\#(status)","message":"status \#(status)"}}"#.utf8)))
    }

    static let refused = UploadAnswer.failure(.transport(neverReached: true, description: "connection refused"))
    static let lost = UploadAnswer.failure(.transport(neverReached: false, description: "connection closed"))
    static let malformed = UploadAnswer.failure(.unusable("malformed response"))

    /// A policy of `retries` re-sends, 10 ms doubling without jitter, no budget to speak of.
    static func policy(retries: Int) -> RetryPolicy {
        RetryPolicy(maxAttempts: retries + 1, baseDelay: .milliseconds(10), maxDelay: .seconds(3600), budget: .seconds(3600), jitter: false)
    }

    /// Runs a machine to its end: `answers[id]` are the successive answers to request `id` (the last one repeats),
    /// `keyChanged` the creates whose commit renames later requests, `cancelAt` the action index at which the
    /// caller stops. Returns the trace, the outcomes committed and the final action.
    struct Run {
        var trace: [String] = []
        var committed: [UploadMachine.Outcome] = []
        var end: UploadMachine.Action?
        var sends: [Int64: Int] = [:]
        var delays: [Duration] = []
        /// Every request sent one by one, as sent.
        var sent: [QueuedRequest] = []
        /// The conflicts the resolver was asked about.
        var asked: [OfflineODataConflict] = []

        var failures: [ErrorArchiveEntry] {
            committed.compactMap { if case .failed(_, let failure, _) = $0 { failure } else { nil } }
        }
        var domains: [UploadFailureDomain] {
            committed.compactMap { if case .failed(_, _, let domain) = $0 { domain } else { nil } }
        }
    }

    static func run(_ queue: [QueuedRequest], batch: Int? = nil, retries: Int = 3, repeatable: Bool = false,
                    answers: [Int64: [UploadAnswer]] = [:], batchWhole: [UploadAnswer] = [], keyChanged: Set<Int64> = [],
                    failedCreates: [String: Int64] = [:], cancelBeforeSend: Int? = nil, stoppingBatchesFrom: Int64? = nil,
                    conflictRule: UploadMachine.ConflictRule = .fixed(.archive), conflictStatuses: Set<Int> = [412],
                    conflictRead: ConflictRead = .failed("no read scripted"),
                    resolver: (OfflineODataConflict) -> OfflineODataConflictResolution = { _ in .archive }) -> Run {
        var configuration = UploadMachine.Configuration(batchLimit: batch, retry: policy(retries: retries), repeatable: repeatable)
        configuration.keyMadeLocally = { $0.body == "{}" }
        configuration.conflictRule = conflictRule
        configuration.conflictStatuses = conflictStatuses
        configuration.seed = 7
        var machine = UploadMachine(configuration: configuration, failedCreates: failedCreates)
        var queue = queue
        var run = Run()
        var sendCount = 0
        var batchCount = 0
        func answer(_ id: Int64) -> UploadAnswer {
            let list = answers[id] ?? [ok()]
            run.sends[id, default: 0] += 1
            return list[min(run.sends[id]! - 1, list.count - 1)]
        }
        var steps = 0
        while let action = machine.next() {
            steps += 1
            precondition(steps < 1000, "the machine does not end")
            switch action {
            case .readQueue(let after):
                run.trace.append("read>\(after)")
                machine.queueRead(queue)
            case .send(let entry, let delay):
                if let delay { run.delays.append(delay) }
                sendCount += 1
                if sendCount == cancelBeforeSend {
                    run.trace.append("cancel")
                    machine.cancel()
                    continue
                }
                run.trace.append("send \(entry.id)")
                run.sent.append(entry)
                machine.answered(answer(entry.id))
            case .sendBatch(let group, let delay):
                if let delay { run.delays.append(delay) }
                sendCount += 1
                if sendCount == cancelBeforeSend {
                    run.trace.append("cancel")
                    machine.cancel()
                    continue
                }
                run.trace.append("batch " + group.map { String($0.id) }.joined(separator: ","))
                batchCount += 1
                if let from = stoppingBatchesFrom, group.contains(where: { $0.id >= from }) {
                    machine.batchAnswered(.whole(batchWhole.first ?? refused))
                } else if stoppingBatchesFrom == nil, batchCount <= batchWhole.count {
                    machine.batchAnswered(.whole(batchWhole[batchCount - 1]))
                } else {
                    machine.batchAnswered(.parts(Dictionary(uniqueKeysWithValues: group.map { ($0.id, answer($0.id)) })))
                }
            case .commit(let outcomes):
                run.committed += outcomes
                var renamed = false
                run.trace.append("commit " + outcomes.map { outcome in
                    switch outcome {
                    case .accepted(let entry, _, _, _): return "ok\(entry.id)"
                    case .created(let entry, _):
                        renamed = keyChanged.contains(entry.id)
                        return "created\(entry.id)"
                    case .failed(let entry, _, let domain): return "fail\(entry.id):\(domain.rawValue)"
                    case .serverWon(let entry, _): return "won\(entry.id)"
                    case .resolved(let entry, _, _, _, _, _): return "resolved\(entry.id)"
                    }
                }.joined(separator: ","))
                let done = Set(outcomes.map { outcome -> Int64 in
                    switch outcome {
                    case .accepted(let entry, _, _, _), .created(let entry, _), .failed(let entry, _, _), .serverWon(let entry, _),
                         .resolved(let entry, _, _, _, _, _): return entry.id
                    }
                })
                // A conflict the back end won drops the later queued changes of its entity.
                var dropped: [Int64] = []
                for case .serverWon(let entry, _) in outcomes {
                    dropped = queue.filter { $0.id > entry.id && $0.entity == entry.entity && UploadMachine.resolvable($0) }.map(\.id)
                }
                queue.removeAll { done.contains($0.id) || dropped.contains($0.id) }
                machine.committed(keyChanged: renamed, dropped: dropped)
            case .readConflict(let entry):
                run.trace.append("read \(entry.id)")
                machine.conflictRead(conflictRead, at: Date(timeIntervalSince1970: 1_800_000_000))
            case .resolve(let conflict):
                run.trace.append("ask \(conflict.requestID)")
                run.asked.append(conflict)
                machine.resolverAnswered(resolver(conflict), at: Date(timeIntervalSince1970: 1_800_000_000))
            case .reportProgress(let progress):
                run.trace.append("progress \(progress.settled)/\(progress.total)@\(progress.requestID)")
            case .finish(let result):
                run.trace.append("finish sent \(result.sent) ok \(result.succeeded) failed \(result.failed.count)")
                run.end = action
            case .stopped:
                run.trace.append("stopped")
                run.end = action
            case .halted(let result, let halt):
                let kind = if case .unreachable = halt { "unreachable" } else { "unauthorized" }
                run.trace.append("\(kind) sent \(result.sent) ok \(result.succeeded) failed \(result.failed.count)")
                run.end = action
            }
        }
        return run
    }

    // MARK: Re-sends

    /// An answer with a status: re-sent (up to 3 times) per method, status and repeatability.
    @Test(arguments: [
        ("POST", 500, false, 1), ("POST", 500, true, 4), ("POST", 503, false, 1), ("PATCH", 500, false, 1), ("MERGE", 502, false, 1),
        ("PATCH", 500, true, 4), ("PUT", 500, false, 4), ("DELETE", 503, false, 4), ("PUT", 429, false, 4), ("DELETE", 408, false, 4),
        ("POST", 429, false, 1), ("POST", 408, true, 4), ("POST", 400, true, 1), ("PUT", 404, false, 1), ("PATCH", 412, true, 1),
    ])
    func aStatusIsResentByMethodAndRepeatability(method: String, status: Int, repeatable: Bool, sends: Int) {
        let run = Self.run([Self.request(1, method, "Customers('A')")], repeatable: repeatable, answers: [1: [Self.status(status)]])
        #expect(run.sends[1] == sends, "\(run.trace)")
        #expect(run.failures.map(\.httpStatusCode) == [Int32(status)])
        let mayHaveExecuted = run.failures.first?.message.contains("may have executed") == true
        #expect(mayHaveExecuted == (sends == 1 && [408, 429, 500, 502, 503].contains(status)), "\(run.failures.map(\.message))")
    }

    /// A failure without an answer: re-sent per kind, method and repeatability; a re-send that succeeds settles it.
    @Test(arguments: [
        ("POST", UploadMachineTests.refused, false, 2, true), ("PATCH", UploadMachineTests.refused, false, 2, true), ("POST", UploadMachineTests.lost, false, 1, false), ("PATCH", UploadMachineTests.lost, false, 1, false),
        ("POST", UploadMachineTests.lost, true, 2, true), ("PUT", UploadMachineTests.lost, false, 2, true), ("DELETE", UploadMachineTests.lost, false, 2, true),
        ("POST", UploadAnswer.failure(.session(retryable: true, statusCode: nil, description: "no token")), false, 2, true),
        ("PUT", UploadAnswer.failure(.session(retryable: false, statusCode: 403, description: "token rejected")), true, 1, false),
    ])
    func aFailureWithoutAnswerIsResentByKind(method: String, failure: UploadAnswer, repeatable: Bool, sends: Int, succeeded: Bool) {
        let run = Self.run([Self.request(1, method, "Customers('A')")], repeatable: repeatable, answers: [1: [failure, Self.ok()]])
        #expect(run.sends[1] == sends, "\(run.trace)")
        #expect(run.failures.isEmpty == succeeded)
        if case .failure(.transport(false, _)) = failure, !succeeded {
            #expect(run.failures.first?.message.contains("the back end may have executed it") == true)
        }
    }

    /// Re-sends pause `retryDelay`, doubling, and stop after `retries`.
    @Test(arguments: [0, 1, 3, 5])
    func reSendsDoubleTheirPauseAndStopAtTheLimit(retries: Int) {
        let run = Self.run([Self.request(1, "PUT", "Customers('A')")], retries: retries, answers: [1: [Self.status(503)]])
        #expect(run.sends[1] == retries + 1)
        #expect(run.delays == (0..<retries).map { Duration.milliseconds(10) * (1 << $0) })
        #expect(run.domains == [.oData])
    }

    // MARK: An unreachable back end

    /// The back end stops answering at request `from` (no answer, whatever the retries): what settled before is
    /// committed, the upload ends unreachable, nothing of the rest is archived, the rest is never sent — one by one
    /// and in `$batch`es. A failure that proves nothing reached the back end, or one of a request that may be sent
    /// twice, keeps the request queued.
    @Test(arguments: [(nil, 1, false), (nil, 3, false), (nil, 3, true), (2, 3, false), (2, 1, true), (10, 1, false)] as [(Int?, Int64, Bool)])
    func anUnreachableBackEndStopsTheUploadAndKeepsTheRestQueued(batch: Int?, from: Int64, lostNotRefused: Bool) {
        let queue = (1...5).map { Self.request(Int64($0), "PATCH", "Customers('\($0)')") }
        let noAnswer = lostNotRefused ? Self.lost : Self.refused
        let answers = Dictionary(uniqueKeysWithValues: (from...5).map { ($0, [noAnswer]) })
        // In `$batch` mode the group holding request `from` gets no answer as a whole.
        let run = Self.run(queue, batch: batch, repeatable: lostNotRefused, answers: answers,
                           batchWhole: [noAnswer], stoppingBatchesFrom: from)
        #expect(run.committed.map { if case .accepted(let entry, _, _, _) = $0 { entry.id } else { -1 } } == Array(1..<from), "\(run.trace)")
        #expect(run.failures.isEmpty)
        #expect(run.trace.last == "unreachable sent \(from - 1) ok \(from - 1) failed 0", "\(run.trace)")
        #expect(run.sends.keys.allSatisfy { $0 <= from + Int64(batch ?? 1) - 1 }, "nothing after the stop is sent: \(run.sends)")
    }

    /// A `401` (the credentials refused after the session's renewal) stops the upload at that request: none of it or
    /// after it is archived or sent — one by one and in `$batch`es.
    @Test(arguments: [nil, 10] as [Int?])
    func refusedCredentialsStopTheUpload(batch: Int?) {
        let queue = [Self.request(1, "PUT", "Customers('A')"), Self.request(2, "PATCH", "Customers('A')"), Self.request(3, "PUT", "Customers('B')")]
        let run = Self.run(queue, batch: batch, answers: [2: [Self.status(401)]], batchWhole: batch == nil ? [] : [Self.status(401)])
        #expect(run.failures.isEmpty, "\(run.trace)")
        #expect(run.sends[3] == nil)
        #expect(run.trace.last == "unauthorized sent 1 ok 1 failed 0", "\(run.trace)")
    }

    /// A `PATCH` whose connection died after it went out, without repeatable requests: archived as possibly executed
    /// (it must not be sent twice), then the upload stops with the later requests unsent and queued.
    @Test(arguments: [nil, 10] as [Int?])
    func aLostNonIdempotentRequestIsArchivedThenTheUploadStops(batch: Int?) {
        let queue = [Self.request(1, "PATCH", "Customers('A')"), Self.request(2, "PATCH", "Customers('A')"), Self.request(3, "PUT", "Customers('B')")]
        let run = Self.run(queue, batch: batch, answers: [1: [Self.lost]], batchWhole: [])
        #expect(run.sends[1] == 1, "not re-sent: \(run.trace)")
        #expect(run.domains == [.transport])
        #expect(run.failures.first?.message.contains("may have executed") == true)
        #expect(run.sends[2] == nil && run.sends[3] == nil)
        #expect(run.trace.last == "unreachable sent 1 ok 0 failed 1", "\(run.trace)")
    }

    /// `Retry-After` on `429` and `503` (delta-seconds) is the re-send's wait, beyond the backoff's cap; one past
    /// the budget is not waited for: the answer is archived as the back end gave it.
    @Test(arguments: [(429, "2", Duration?.some(.seconds(2))), (503, "7", .seconds(7)), (503, "120", nil), (500, "2", .milliseconds(10))])
    func retryAfterIsTheWaitWithinTheBudget(status: Int, retryAfter: String, wait: Duration?) {
        var configuration = UploadMachine.Configuration(batchLimit: nil, retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(10),
                                                        maxDelay: .seconds(1), budget: .seconds(60), jitter: false), repeatable: true)
        configuration.keyMadeLocally = { _ in false }
        var machine = UploadMachine(configuration: configuration)
        _ = machine.next()
        machine.queueRead([Self.request(1, "PATCH", "Customers('A')")])
        guard case .send = machine.next() else { Issue.record("no send"); return }
        machine.answered(.reply(UploadReply(status: status, etag: nil, body: Data(), retryAfter: retryAfter)))
        let next = machine.next()
        if let wait {
            #expect(next == .send(Self.request(1, "PATCH", "Customers('A')"), after: wait))
        } else {
            guard case .commit(let outcomes) = next, case .failed(_, let failure, .oData) = outcomes.first else {
                Issue.record("not archived: \(String(describing: next))"); return
            }
            #expect(failure.httpStatusCode == Int32(status))
        }
    }

    // MARK: Failure domains

    @Test(arguments: [
        (UploadMachineTests.status(400), UploadFailureDomain.oData, Optional(400)), (UploadMachineTests.status(412), .oData, 412), (UploadMachineTests.malformed, .transport, nil),
        (UploadAnswer.failure(.session(retryable: false, statusCode: 403, description: "rejected")), .session, 403),
        (UploadAnswer.failure(.unreadableBatchAnswer("no part")), .transport, nil),
    ])
    func eachFailureIsArchivedWithItsDomain(answer: UploadAnswer, domain: UploadFailureDomain, statusCode: Int?) {
        let run = Self.run([Self.request(1, "PUT", "Customers('A')")], retries: 0, answers: [1: [answer]])
        #expect(run.domains == [domain])
        #expect(run.failures.map(\.httpStatusCode) == [statusCode.map { Int32($0) }])
        #expect(run.end == .finish(OfflineODataUploadResult(sent: 1, succeeded: 0, failed: run.failures)))
    }

    // MARK: Dependent requests

    /// Every later request on an entity whose create failed fails too, unsent, in the Dependency domain.
    @Test(arguments: [UploadMachineTests.status(400), UploadMachineTests.malformed, UploadAnswer.failure(.session(retryable: false, statusCode: 403, description: "x"))])
    func requestsOnAFailedCreateFailUnsent(createAnswer: UploadAnswer) {
        let queue = [Self.request(1, "POST", "Orders(-1)"), Self.request(2, "PATCH", "Orders(-1)"), Self.request(3, "PATCH", "Orders(7)"),
                     Self.request(4, "DELETE", "Orders(-1)")]
        let run = Self.run(queue, retries: 0, answers: [1: [createAnswer]])
        #expect(run.sends[2] == nil && run.sends[4] == nil)
        #expect(run.domains.dropFirst() == [.dependency, .dependency])
        #expect(run.failures.map(\.requestID) == [1, 2, 4])
        #expect(run.failures[1].message == "not sent: the request 1 that created Orders(-1) failed")
        #expect(run.end == .finish(OfflineODataUploadResult(sent: 2, succeeded: 1, failed: run.failures)))
    }

    /// A create that failed in an earlier upload (still archived) fails the requests on its entity.
    @Test(arguments: [nil, 10] as [Int?])
    func aCreateFailedEarlierFailsItsDependents(batch: Int?) {
        let queue = [Self.request(5, "PATCH", "Orders(-1)"), Self.request(6, "PATCH", "Orders(2)")]
        let run = Self.run(queue, batch: batch, failedCreates: ["Orders(-1)": 3])
        #expect(run.trace.contains("commit fail5:Dependency"), "\(run.trace)")
        #expect(run.sends == [6: 1])
    }

    // MARK: `$batch`

    /// Groups: at most the limit, ending after a create or before a second request on one entity, never holding a
    /// request on an entity whose create failed.
    @Test(arguments: [
        (["PATCH A", "PATCH B", "POST C", "PATCH D"], 10, ["batch 1,2,3", "send 4"]),
        (["PATCH A", "PATCH B", "PATCH C", "PATCH D", "PATCH E"], 2, ["batch 1,2", "batch 3,4", "send 5"]),
        (["PATCH A", "PATCH A", "PATCH B"], 10, ["send 1", "batch 2,3"]),
        (["PATCH A", "PATCH B", "PATCH A"], 10, ["send 1", "batch 2,3"]),
        (["POST A", "POST B"], 10, ["send 1", "send 2"]),
        (["PATCH A", "PATCH F", "PATCH B"], 10, ["send 1", "send 3"]),
    ])
    func batchesGroupConsecutiveRequests(requests: [String], limit: Int, sends: [String]) {
        let queue = requests.enumerated().map { index, text in
            let parts = text.split(separator: " ")
            return Self.request(Int64(index + 1), String(parts[0]), "Customers('\(parts[1])')")
        }
        let run = Self.run(queue, batch: limit, failedCreates: ["Customers('F')": 99])
        #expect(run.trace.filter { $0.hasPrefix("send") || $0.hasPrefix("batch") } == sends, "\(run.trace)")
    }

    /// A `$batch` with no usable answer as a whole: re-sent by the rules of its methods, else every member fails.
    @Test(arguments: [
        (["PUT", "DELETE"], UploadMachineTests.lost, false, 2, 0), (["PUT", "PATCH"], UploadMachineTests.lost, false, 1, 2), (["PUT", "PATCH"], UploadMachineTests.lost, true, 2, 0),
        (["PUT", "POST"], UploadMachineTests.status(500), false, 1, 2), (["PUT", "POST"], UploadMachineTests.refused, false, 2, 0), (["PUT", "PUT"], UploadMachineTests.status(400), true, 1, 2),
    ])
    func aWholeBatchFailureIsResentByItsMembers(methods: [String], whole: UploadAnswer, repeatable: Bool, batches: Int, failed: Int) {
        let queue = methods.enumerated().map { Self.request(Int64($0.offset + 1), $0.element, "Customers('\($0.offset)')") }
        let run = Self.run(queue, batch: 10, repeatable: repeatable, batchWhole: [whole])
        #expect(run.trace.filter { $0.hasPrefix("batch") }.count == batches, "\(run.trace)")
        #expect(run.failures.count == failed)
        #expect(run.committed.count == methods.count)
        if failed > 0, case .failure(.transport(false, _)) = whole {
            #expect(run.failures.allSatisfy { $0.message.contains("may have executed") })
        }
    }

    /// The answers of a `$batch` commit in one transaction; each part has its own outcome.
    @Test(arguments: [[200, 400, 204], [500, 200, 412], [404, 404, 404]])
    func aBatchCommitsItsAnswersTogether(statuses: [Int]) {
        let queue = statuses.indices.map { Self.request(Int64($0 + 1), "PATCH", "Customers('\($0)')") }
        let answers = Dictionary(uniqueKeysWithValues: statuses.enumerated().map { (Int64($0.offset + 1), [$0.element < 300 ? Self.ok($0.element) : Self.status($0.element)]) })
        let run = Self.run(queue, batch: 10, answers: answers)
        #expect(run.trace.filter { $0.hasPrefix("commit") }.count == 1, "\(run.trace)")
        #expect(run.failures.map(\.httpStatusCode) == statuses.filter { $0 >= 300 }.map { Optional(Int32($0)) })
        #expect(run.end == .finish(OfflineODataUploadResult(sent: 3, succeeded: statuses.filter { $0 < 300 }.count, failed: run.failures)))
    }

    // MARK: Successive changes

    /// An accepted update followed by another request on the entity hands its ETag on; the queue is read again
    /// after the commit, before the next request is sent.
    @Test(arguments: [nil, 10] as [Int?])
    func anUpdateHandsItsETagToTheNextChange(batch: Int?) {
        let queue = [Self.request(1, "PATCH", "Customers('A')"), Self.request(2, "PATCH", "Customers('A')")]
        let run = Self.run(queue, batch: batch)
        #expect(run.trace == ["read>0", "send 1", "commit ok1", "read>1", "progress 1/2@1", "send 2", "commit ok2", "read>2",
                              "progress 2/2@2", "finish sent 2 ok 2 failed 0"])
        #expect(run.committed.first == .accepted(queue[0], UploadReply(status: 200, etag: "W/\"e200\"", body: Data(#"{"ID":1}"#.utf8)),
                                                 laterInSnapshot: true, snapshotEnd: 2))
    }

    /// A create commits alone; when its key replaced the temporary one in later requests, the queue is read again.
    @Test(arguments: [true, false])
    func aCreateCommitsAloneAndRenamesLaterRequests(keyChanged: Bool) {
        let queue = [Self.request(1, "PATCH", "Customers('B')"), Self.request(2, "POST", "Customers('LOCAL-1')"),
                     Self.request(3, "PATCH", "Customers('LOCAL-1')")]
        let run = Self.run(queue, batch: 10, keyChanged: keyChanged ? [2] : [])
        #expect(run.trace.filter { $0.hasPrefix("commit") } == ["commit ok1", "commit created2", "commit ok3"], "\(run.trace)")
        let afterCreate = run.trace.firstIndex(of: "commit created2")! + 1
        #expect((run.trace[afterCreate] == "read>2") == keyChanged, "\(run.trace)")
    }

    /// An accepted create whose answer is no entity: with a key made locally it is archived (the back end's key is
    /// unknown, and requests on it fail as dependents); with the key the client chose it is applied.
    @Test(arguments: [("", "{}", true), ("not json", "{}", true), ("", #"{"ID":"NEWCO"}"#, false), (#"{"ID":5}"#, "{}", false)])
    func aCreateAnsweredWithoutAnEntity(answer: String, body: String, archived: Bool) {
        var create = Self.request(1, "POST", "Customers('LOCAL-1')")
        create.body = body
        let run = Self.run([create, Self.request(2, "PATCH", "Customers('LOCAL-1')")], answers: [1: [Self.ok(201, body: answer)]])
        #expect(run.domains == (archived ? [.oData, .dependency] : []), "\(run.trace)")
        #expect((run.failures.first?.message.contains("keeps its temporary key") ?? false) == archived)
        #expect((run.sends[2] == nil) == archived)
    }

    // MARK: Cancel, progress

    /// Stopped before a send: what was answered is committed, the rest stays queued, and the run ends stopped.
    @Test(arguments: [(nil, 1), (nil, 2), (nil, 3), (10, 1), (10, 2)] as [(Int?, Int)])
    func aStopBeforeASendKeepsTheRestQueued(batch: Int?, stopAt: Int) {
        let queue = (1...3).map { Self.request(Int64($0), "PATCH", "Customers('\($0 == 3 ? 1 : $0)')") }
        let run = Self.run(queue, batch: batch, cancelBeforeSend: stopAt)
        #expect(run.end == .stopped, "\(run.trace)")
        #expect(run.trace.suffix(2) == ["cancel", "stopped"], "\(run.trace)")
        #expect(run.committed.count == stopAt - 1)
    }

    /// Answers already received are applied even when the caller stops while they are stepped through; a new
    /// machine (the next upload) resumes with what is still queued.
    @Test(arguments: [2, 3])
    func aStopWithAnswersReceivedAppliesThemAndResumes(members: Int) {
        let queue = (1...Int64(members)).map { Self.request($0, "PATCH", "Customers('\($0)')") } + [Self.request(9, "PATCH", "Customers('Z')")]
        var machine = UploadMachine(configuration: .init(batchLimit: members, retry: .never, repeatable: true))
        #expect(machine.next() == .readQueue(after: 0))
        machine.queueRead(queue)
        guard case .sendBatch(let group, nil) = machine.next() else { Issue.record("no batch"); return }
        machine.batchAnswered(.parts(Dictionary(uniqueKeysWithValues: group.map { ($0.id, Self.ok()) })))
        machine.cancel()
        var actions: [UploadMachine.Action] = []
        while let action = machine.next() {
            actions.append(action)
            if case .commit = action { machine.committed() }
        }
        let commits = actions.compactMap { if case .commit(let outcomes) = $0 { outcomes.count } else { nil } }
        #expect(commits == [members])
        #expect(actions.last == .stopped)
        #expect(!actions.contains { if case .send = $0 { true } else { false } })
        let resumed = Self.run([queue.last!], batch: members)
        #expect(resumed.trace == ["read>0", "send 9", "commit ok9", "read>9", "progress 1/1@9", "finish sent 1 ok 1 failed 0"])
    }

    /// A stop during a re-send's pause leaves the request queued.
    @Test(arguments: [1, 2])
    func aStopDuringAReSendKeepsTheRequestQueued(failures: Int) {
        let run = Self.run([Self.request(1, "PUT", "Customers('A')")], answers: [1: Array(repeating: Self.status(503), count: failures) + [Self.ok()]],
                           cancelBeforeSend: failures + 1)
        #expect(run.committed.isEmpty)
        #expect(run.end == .stopped)
    }

    /// Progress: once per settled request, before the next one starts and at the end; the total grows with
    /// requests queued during the upload.
    @Test(arguments: [1, 2, 5])
    func progressCountsEverySettledRequest(count: Int) {
        let queue = (1...count).map { Self.request(Int64($0), $0 % 2 == 0 ? "PUT" : "DELETE", "Customers('\($0)')") }
        let run = Self.run(queue, answers: [2: [Self.status(400)]])
        #expect(run.trace.filter { $0.hasPrefix("progress") } == (1...count).map { "progress \($0)/\(count)@\($0)" })
        #expect(run.end == .finish(OfflineODataUploadResult(sent: count, succeeded: count - (count >= 2 ? 1 : 0), failed: run.failures)))
    }

    /// An empty queue finishes at once, with no progress.
    @Test func anEmptyQueueFinishesAtOnce() {
        let run = Self.run([])
        #expect(run.trace == ["read>0", "finish sent 0 ok 0 failed 0"])
    }

    // MARK: Relationships

    static func link(_ id: Int64, _ method: String, from: String, to: String) -> QueuedRequest {
        var entry = request(id, method, from)
        entry.url = from + "/Nav/$ref"
        entry.body = #"{"@odata.id":"\#(to)"}"#
        entry.link = LinkChange(navigation: "Nav", target: to, holder: from, before: ["FK": .null], after: ["FK": .string("x")])
        return entry
    }

    /// A relationship request needs its "to" end: it is not sent (and ends no `$batch` before it) when that end's
    /// create failed; a failed relationship `POST` is no failed create, so the requests on its "from" end still go.
    @Test(arguments: [nil, 5] as [Int?])
    func aLinkToAFailedCreateIsNotSentAndAFailedLinkPostBlocksNothing(batch: Int?) {
        let queue = [Self.request(1, "POST", "Orders(-1)"), Self.link(2, "POST", from: "Customers('A')", to: "Orders(-1)"),
                     Self.link(3, "POST", from: "Customers('B')", to: "Orders(7)"), Self.request(4, "PATCH", "Customers('B')")]
        let run = Self.run(queue, batch: batch, answers: [1: [Self.status(400)], 3: [Self.status(409)]])
        #expect(run.committed.map { outcome -> String in
            switch outcome {
            case .accepted(let entry, _, _, _): "ok\(entry.id)"
            case .created(let entry, _): "created\(entry.id)"
            case .failed(let entry, _, let domain): "fail\(entry.id):\(domain.rawValue)"
            case .serverWon(let entry, _), .resolved(let entry, _, _, _, _, _): "resolved\(entry.id)"
            }
        } == ["fail1:OData", "fail2:Dependency", "fail3:OData", "ok4"], "\(run.trace)")
        #expect(run.sends[2] == nil)
        #expect(run.failures[1].message == "not sent: the request 1 that created Orders(-1) failed")
    }
}
