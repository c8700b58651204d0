import Foundation
import HTTPTypes
import ODataCore
import ODataTyped
import ODataSession

/// The upload's rules as a value: which request goes next, one by one or in a `$batch`, which failure is
/// re-sent, how each answer changes the store, when the queue must be read again, progress and the result.
///
/// The owner (``OfflineODataProvider``) performs the actions ``next()`` returns and feeds back what happened
/// (``queueRead(_:)``, ``answered(_:at:)``, ``batchAnswered(_:at:)``, ``committed(keyChanged:dropped:)``,
/// ``conflictRead(_:at:)``, ``resolverAnswered(_:at:)``, ``cancel()``).
/// Nothing here waits, sends or writes: every transition is tested without a server (`UploadMachineTests`).
struct UploadMachine {
    private enum State {
        /// Walking the snapshot.
        case stepping
        /// A ``Action/readQueue(after:)`` is out.
        case readingQueue
        /// A send is out; `attempt` counts re-sends.
        case sending(QueuedRequest, attempt: Int)
        /// A `$batch` is out.
        case sendingBatch([QueuedRequest], attempt: Int)
        /// A re-send is due, after the policy's wait (none for a conflict's re-send).
        case resending(QueuedRequest, attempt: Int, after: Duration?)
        /// A `$batch` re-send is due, after the policy's wait.
        case resendingBatch([QueuedRequest], attempt: Int, after: Duration)
        /// A commit is out; a create's commit may change later requests (read the queue again).
        case committing(create: Bool)
        /// A ``Action/readConflict(_:)`` is out for this request and its conflict answer.
        case readingConflict(QueuedRequest, UploadReply)
        /// The custom resolver is to be asked (``Action/resolve(_:)``), or has been (`asked`).
        case resolving(QueuedRequest, UploadReply, OfflineODataConflict, localEntity: JSONObject?, asked: Bool)
        /// Done.
        case finished
    }

    let configuration: Configuration
    private var state = State.readingQueue
    private var started = false
    private var snapshot: [QueuedRequest] = []
    private var index = 0
    /// Answers of a `$batch` already received, for requests still to settle.
    private var prefetched: [Int64: UploadAnswer] = [:]
    private var reread = false
    private var pending: [Outcome] = []
    private var failedCreates: [String: Int64]
    private var result = OfflineODataUploadResult()
    private var settled = 0
    private var total = 0
    private var lastID: Int64 = 0
    private var progressDue = false
    private var cancelled = false
    /// Requests whose failure was not re-sent only because they are not idempotent.
    private var notResent: Set<Int64> = []
    /// When the request (or `$batch`) now being sent first failed, for the retry policy's budget.
    private var firstFailure: Date?
    /// Why the upload stops, once what settled is committed.
    private var halt: Halt?
    private var generator: SeededRandom
    /// A request whose answer is a conflict to resolve, before anything else is done.
    private var conflictDue: (entry: QueuedRequest, reply: UploadReply)?
    /// Requests re-sent to resolve a conflict: the report, what was sent and the local copy when it was read.
    private var resolutions: [Int64: (report: OfflineODataResolvedConflict, sent: JSONObject, localEntity: JSONObject)] = [:]
    /// Later requests a ``Outcome/serverWon(_:_:)`` dropped: skipped when stepped on.
    private var dropped: Set<Int64> = []
    /// The request of the ``Outcome/serverWon(_:_:)`` being committed.
    private var committingServerWon: Int64?

    /// - Parameters:
    ///   - configuration: The rules' settings.
    ///   - failedCreates: Entities whose create failed in an earlier upload (still archived), with that request's ID.
    init(configuration: Configuration, failedCreates: [String: Int64] = [:]) {
        self.configuration = configuration
        self.failedCreates = failedCreates
        self.generator = SeededRandom(seed: configuration.seed)
    }

    /// The result so far.
    var currentResult: OfflineODataUploadResult { result }
    // MARK: Events

    /// The queued requests read for the last ``Action/readQueue(after:)``.
    mutating func queueRead(_ entries: [QueuedRequest]) {
        guard case .readingQueue = state else { return }
        snapshot = entries.filter { $0.id > lastID }
        index = 0
        reread = false
        total = max(total, settled + snapshot.count)
        state = .stepping
    }

    /// The answer to the last ``Action/send(_:after:)``, got at `now` (for the retry policy's budget and `Retry-After`).
    mutating func answered(_ answer: UploadAnswer, at now: Date = Date()) {
        guard case .sending(let entry, let attempt) = state else { return }
        if let wait = retryWait(answer, methods: [entry.method], attempt: attempt, now: now) {
            state = .resending(entry, attempt: attempt + 1, after: wait)
            return
        }
        firstFailure = nil
        if notResendable(answer, methods: [entry.method]) { notResent.insert(entry.id) }
        state = .stepping
        if let halt = halting(answer, methods: [entry.method]) {
            stop(at: [entry], halt)
            return
        }
        settle(entry, answer)
        if case .failure(.transport(_, let description)) = answer { halt = .unreachable(description) }
    }

    /// The policy's wait before re-sending after `answer`, or `nil` when it is not re-sent: the failure may not be
    /// re-sent (``retryable(_:methods:repeatable:policy:)``), or the policy gave up.
    private mutating func retryWait(_ answer: UploadAnswer, methods: [String], attempt: Int, now: Date) -> Duration? {
        let policy = configuration.retry
        guard Self.retryable(answer, methods: methods, repeatable: configuration.repeatable, policy: policy) else { return nil }
        let failure: RetryPolicy.Failure
        switch answer {
        case .reply(let reply): failure = RetryPolicy.Failure(status: reply.status, retryAfter: reply.retryAfter)
        case .failure(.session(_, let status?, _)): failure = RetryPolicy.Failure(status: status)
        case .failure: failure = .noAnswer
        }
        let first = firstFailure ?? now
        firstFailure = first
        let random = Double(generator.next() >> 11) / Double(1 << 53)
        let elapsed = Duration(timeInterval: now.timeIntervalSince(first))
        guard case .retry(let wait) = policy.decision(after: failure, attempts: attempt + 1, sinceFirstFailure: elapsed, now: now, random: random)
        else { return nil }
        return wait
    }

    /// Whether a request (a `$batch` of `methods`) that got `answer` and will not be re-sent stops the upload and
    /// stays queued, and why: a `401` (the credentials were refused), or no answer when sending it again later is
    /// safe (it never reached the back end, or it is idempotent, or repeatable requests are on). One that got no
    /// answer, may have reached the back end and must not be sent twice is archived ("may have executed") before
    /// the upload stops.
    private func halting(_ answer: UploadAnswer, methods: [String]) -> Halt? {
        switch answer {
        case .reply(let reply) where reply.status == 401:
            let error = ODataServiceError.parse(reply.body, statusCode: 401)
            return .unauthorized("HTTP 401: \(error.message)")
        case .failure(.transport(let neverReached, let description)):
            return neverReached || configuration.repeatable || methods.allSatisfy(Self.isIdempotent) ? .unreachable(description) : nil
        default:
            return nil
        }
    }

    /// Stops the upload at `entries` (counted as sent when stepped on): they stay queued.
    private mutating func stop(at entries: [QueuedRequest], _ halt: Halt) {
        result.sent -= 1
        settled -= 1
        for entry in entries { notResent.remove(entry.id) }
        self.halt = halt
    }

    /// The answer to the last ``Action/sendBatch(_:after:)``, got at `now`.
    mutating func batchAnswered(_ answer: BatchAnswer, at now: Date = Date()) {
        guard case .sendingBatch(let group, let attempt) = state, let first = group.first else { return }
        switch answer {
        case .whole(let whole):
            let methods = group.map(\.method)
            if let wait = retryWait(whole, methods: methods, attempt: attempt, now: now) {
                state = .resendingBatch(group, attempt: attempt + 1, after: wait)
                return
            }
            firstFailure = nil
            if notResendable(whole, methods: methods) { notResent.formUnion(group.map(\.id)) }
            if let halt = halting(whole, methods: methods) {
                state = .stepping
                stop(at: group, halt)
                return
            }
            // Archived as possibly executed, each in its turn; then the upload stops.
            if case .failure(.transport(_, let description)) = whole { halt = .unreachable(description) }
            for entry in group { prefetched[entry.id] = whole }
        case .parts(let parts):
            for entry in group {
                prefetched[entry.id] = parts[entry.id] ?? .failure(.unreadableBatchAnswer("the $batch answer has no part for request \(entry.id)"))
            }
        }
        state = .stepping
        // The first request of the `$batch` settles now (it was counted as sent); the others in their turn.
        if let answer = prefetched.removeValue(forKey: first.id) { settle(first, answer) }
    }

    /// Whether a failure that would be re-sent is not, because of the rule for requests that are not idempotent:
    /// its report says the back end may have executed it.
    private func notResendable(_ answer: UploadAnswer, methods: [String]) -> Bool {
        Self.retryable(answer, methods: methods, repeatable: true, policy: configuration.retry)
            && !Self.retryable(answer, methods: methods, repeatable: configuration.repeatable, policy: configuration.retry)
    }

    /// The last ``Action/commit(_:)`` is written; `keyChanged` when a create's key replaced the temporary one
    /// in later requests (they are read again).
    /// A ``Outcome/serverWon(_:_:)``'s commit also dropped the later queued requests `dropped`.
    mutating func committed(keyChanged: Bool = false, dropped: [Int64] = []) {
        guard case .committing(let create) = state else { return }
        if create && keyChanged { reread = true }
        self.dropped.formUnion(dropped)
        if let won = committingServerWon, let at = result.resolvedConflicts.lastIndex(where: { $0.conflict.requestID == won }) {
            result.resolvedConflicts[at].droppedRequestIDs = dropped
        }
        committingServerWon = nil
        state = .stepping
    }

    /// The versions of the entity of the request in conflict (``Action/readConflict(_:)``), read at `now`.
    mutating func conflictRead(_ read: ConflictRead, at now: Date = Date()) {
        guard case .readingConflict(let entry, let reply) = state else { return }
        state = .stepping
        switch read {
        case .unanswered(let answer):
            // No answer: the request stays queued (its conflict is met again by the next upload), the upload stops.
            stop(at: [entry], .unreachable(answer))
        case .failed(let why):
            let conflict = OfflineODataConflict(requestID: entry.id, method: entry.method, affectedEntity: entry.entity, statusCode: reply.status,
                                                base: nil, local: ConflictMerge.localChange(of: entry), remote: nil, remoteETag: nil)
            failConflict(entry, reply, conflict, why: "the back end's current entity could not be read: \(why)")
        case .versions(let base, let localEntity, let remote, let remoteETag):
            let conflict = OfflineODataConflict(requestID: entry.id, method: entry.method, affectedEntity: entry.entity, statusCode: reply.status,
                                                base: base, local: ConflictMerge.localChange(of: entry), remote: remote, remoteETag: remoteETag)
            switch configuration.conflictRule {
            case .custom: state = .resolving(entry, reply, conflict, localEntity: localEntity, asked: false)
            case .fixed(let resolution): apply(resolution, entry, reply, conflict, localEntity: localEntity, now: now)
            }
        }
    }

    /// The custom resolver's answer to the last ``Action/resolve(_:)``, got at `now`.
    mutating func resolverAnswered(_ resolution: OfflineODataConflictResolution, at now: Date = Date()) {
        guard case .resolving(let entry, let reply, let conflict, let localEntity, asked: true) = state else { return }
        state = .stepping
        apply(resolution, entry, reply, conflict, localEntity: localEntity, now: now)
    }

    /// Carries out a resolution of `entry`'s conflict (``ConflictMerge/decision(_:_:)``).
    private mutating func apply(_ resolution: OfflineODataConflictResolution, _ entry: QueuedRequest, _ reply: UploadReply,
                                _ conflict: OfflineODataConflict, localEntity: JSONObject?, now: Date) {
        let report = OfflineODataResolvedConflict(conflict: conflict, resolution: resolution)
        switch ConflictMerge.decision(resolution, conflict) {
        case .archive(let why):
            failConflict(entry, reply, conflict, why: why)
        case .serverWins:
            result.resolvedConflicts.append(report)
            pending.append(.serverWon(entry, report))
        case .done:
            accept(entry, UploadReply(status: 204, etag: nil, body: Data()), report, keep: JSONObject())
        case .resend(let body):
            resend(entry, body: body, report, localEntity: localEntity, now: now)
        }
    }

    /// Re-sends `entry` once with the back end's current ETag (and `body`, if given): a new request to the back end,
    /// so with repeatable requests it gets a new `Repeatability-Request-ID` and `Repeatability-First-Sent` (its own
    /// re-sends after a lost answer keep them).
    private mutating func resend(_ entry: QueuedRequest, body: JSONObject?, _ report: OfflineODataResolvedConflict,
                                 localEntity: JSONObject?, now: Date) {
        var resent = entry
        resent.headers[.ifMatch] = report.conflict.remoteETag ?? "*"
        if let body { resent.body = String(decoding: JSON.serialize(.object(body)), as: UTF8.self) }
        if entry.headers[Self.repeatabilityRequestID] != nil {
            for field in Self.repeatabilityHeaders(requestID: generator.uuid(), firstSent: now) { resent.headers[field.name] = field.value }
        }
        resolutions[entry.id] = (report, body ?? ConflictMerge.localChange(of: entry), localEntity ?? JSONObject())
        state = .resending(resent, attempt: 0, after: nil)
    }

    /// A resolved conflict the back end accepted: reported, committed as an accepted request.
    private mutating func accept(_ entry: QueuedRequest, _ reply: UploadReply, _ report: OfflineODataResolvedConflict, keep: JSONObject) {
        result.succeeded += 1
        result.resolvedConflicts.append(report)
        let later = snapshot[index...].contains { $0.entity == entry.entity }
        pending.append(.resolved(entry, reply, report, keep: keep, laterInSnapshot: later, snapshotEnd: snapshot.last?.id ?? entry.id))
        if later { reread = true }
    }

    /// A conflict no policy resolved: archived with the three versions (``ConflictMerge/innerError(_:backEnd:)``).
    private mutating func failConflict(_ entry: QueuedRequest, _ reply: UploadReply, _ conflict: OfflineODataConflict, why: String) {
        var serviceError = ODataServiceError.parse(reply.body, statusCode: reply.status)
        serviceError.innerError = ConflictMerge.innerError(conflict, backEnd: serviceError.innerError)
        fail(entry, statusCode: reply.status, serviceError: serviceError,
             message: ConflictMerge.unresolvedMessage(conflict, original: serviceError.message, why: why), domain: .oData)
    }

    /// The caller stopped the upload: nothing more is sent; answers already received are still applied.
    mutating func cancel() {
        cancelled = true
        switch state {
        case .sending, .sendingBatch, .resending, .resendingBatch, .readingConflict, .resolving: state = .stepping
        default: break
        }
    }

    // MARK: Actions

    /// The next thing to do, or `nil` while an event is due or once finished.
    mutating func next() -> Action? {
        switch state {
        case .readingQueue:
            guard !started else { return nil }
            started = true
            return .readQueue(after: 0)
        case .sending, .sendingBatch, .committing, .finished, .readingConflict, .resolving(_, _, _, _, asked: true):
            return nil
        case .resolving(let entry, let reply, let conflict, let localEntity, asked: false):
            state = .resolving(entry, reply, conflict, localEntity: localEntity, asked: true)
            return .resolve(conflict)
        case .resending(let entry, let attempt, let wait):
            state = .sending(entry, attempt: attempt)
            return .send(entry, after: wait)
        case .resendingBatch(let group, let attempt, let wait):
            state = .sendingBatch(group, attempt: attempt)
            return .sendBatch(group, after: wait)
        case .stepping:
            return step()
        }
    }

    private mutating func step() -> Action? {
        while true {
            if let (entry, reply) = conflictDue {
                conflictDue = nil
                state = .readingConflict(entry, reply)
                return .readConflict(entry)
            }
            if prefetched.isEmpty, !pending.isEmpty { return commitPending() }
            if cancelled && prefetched.isEmpty {
                state = .finished
                return .stopped
            }
            if let halt, prefetched.isEmpty {
                state = .finished
                return .halted(result, halt)
            }
            if index >= snapshot.count || (reread && prefetched.isEmpty) {
                if snapshot.isEmpty {
                    if progressDue { return progress() }
                    state = .finished
                    return .finish(result)
                }
                state = .readingQueue
                snapshot = []
                return .readQueue(after: lastID)
            }
            if progressDue { return progress() }
            let entry = snapshot[index]
            index += 1
            settled += 1
            lastID = entry.id
            progressDue = true
            if dropped.remove(entry.id) != nil { continue }
            if let (created, failedID) = entry.failedDependency(failedCreates) {
                fail(entry, statusCode: nil, serviceError: nil,
                     message: "not sent: the request \(failedID) that created \(created) failed", domain: .dependency)
                continue
            }
            if let answer = prefetched.removeValue(forKey: entry.id) {
                result.sent += 1
                settle(entry, answer)
                continue
            }
            result.sent += 1
            if let limit = configuration.batchLimit, case let group = Self.batchGroup(ArraySlice(snapshot[(index - 1)...].filter { !dropped.contains($0.id) }), limit: limit, failedCreates: failedCreates),
               group.count > 1 {
                state = .sendingBatch(group, attempt: 0)
                return .sendBatch(group, after: nil)
            }
            state = .sending(entry, attempt: 0)
            return .send(entry, after: nil)
        }
    }

    private mutating func progress() -> Action {
        progressDue = false
        return .reportProgress(OfflineODataUploadProgress(settled: settled, total: total, requestID: lastID))
    }

    /// Commits the outcomes not committed yet, up to the first create or conflict the back end won; those commit alone.
    private mutating func commitPending() -> Action {
        let createAt = pending.firstIndex { switch $0 { case .created, .serverWon: true; default: false } }
        let count = createAt == 0 ? 1 : (createAt ?? pending.count)
        let outcomes = Array(pending.prefix(count))
        pending.removeFirst(count)
        if case .serverWon(let entry, _) = outcomes[0] { committingServerWon = entry.id }
        state = .committing(create: createAt == 0 && outcomes[0].isCreate)
        return .commit(outcomes)
    }

    private mutating func settle(_ entry: QueuedRequest, _ answer: UploadAnswer) {
        let caveat = notResent.remove(entry.id) != nil ? "; not re-sent (\(entry.method) is not idempotent and repeatable requests are off): the back end may have executed it" : ""
        switch answer {
        case .failure(.session(_, let status, let description)):
            fail(entry, statusCode: status, serviceError: nil, message: "session error: \(description)", domain: .session)
        case .failure(.transport(_, let description)), .failure(.unusable(let description)), .failure(.unreadableBatchAnswer(let description)):
            fail(entry, statusCode: nil, serviceError: nil, message: "transport error: \(description)" + caveat, domain: .transport)
        case .reply(let reply) where (200..<300).contains(reply.status):
            if entry.isCreate {
                if Self.createdEntity(reply) == nil && configuration.keyMadeLocally(entry) {
                    fail(entry, statusCode: reply.status, serviceError: nil, message:
                        "the back end accepted the create (HTTP \(reply.status)) but its answer is not a readable entity, so the key it gave "
                        + "\(entry.entity) is unknown: the entity keeps its temporary key; delete this entry and download to get the back end's copy",
                         domain: .oData)
                    return
                }
                result.succeeded += 1
                // A create is the last request of its `$batch`; its key may change every later request, so it
                // commits alone (``commitPending()``).
                pending.append(.created(entry, reply))
            } else if let resolution = resolutions.removeValue(forKey: entry.id) {
                accept(entry, reply, resolution.report, keep: ConflictMerge.kept(resolution.report, sent: resolution.sent, localEntity: resolution.localEntity))
            } else {
                result.succeeded += 1
                let later = snapshot[index...].contains { $0.entity == entry.entity }
                pending.append(.accepted(entry, reply, laterInSnapshot: later, snapshotEnd: snapshot.last?.id ?? entry.id))
                if later { reread = true }
            }
        case .reply(let reply) where configuration.conflictStatuses.contains(reply.status) && resolutions[entry.id] == nil
            && configuration.conflictRule != .fixed(.archive) && Self.resolvable(entry):
            conflictDue = (entry, reply)
        case .reply(let reply):
            let again = resolutions.removeValue(forKey: entry.id).map { " (the re-send that resolved its conflict with \($0.report.resolution) failed too)" } ?? ""
            let serviceError = ODataServiceError.parse(reply.body, statusCode: reply.status)
            fail(entry, statusCode: reply.status, serviceError: serviceError, message: serviceError.message + again + caveat, domain: .oData)
        }
    }

    private mutating func fail(_ entry: QueuedRequest, statusCode: Int?, serviceError: ODataServiceError?, message: String, domain: UploadFailureDomain) {
        let failure = Self.failedRequest(entry, statusCode: statusCode, serviceError: serviceError, message: message, domain: domain)
        pending.append(.failed(entry, failure, domain))
        if entry.isCreate { failedCreates[entry.entity] = entry.id }
        result.failed.append(failure)
    }

    /// The one place a failed request's report is made: the ErrorArchive's entry, which the delegate and the result get too.
    static func failedRequest(_ entry: QueuedRequest, statusCode: Int?, serviceError: ODataServiceError?, message: String,
                              domain: UploadFailureDomain) -> ErrorArchiveEntry {
        ErrorArchiveEntry(
            requestID: entry.id, requestMethod: entry.method, requestURL: entry.url, requestBody: entry.body,
            httpStatusCode: statusCode.map { Int32(clamping: $0) }, code: serviceError?.code, message: message,
            innerError: serviceError?.innerError.map(JSON.string), domain: domain.rawValue, customTag: entry.customTag,
            affectedEntityReference: entry.entity)
    }
}
