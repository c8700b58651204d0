import CurlHTTP
import Foundation
import HTTPTypes
import Logging
import ODataCore
public import ODataTyped
import ODataSession
import ODataTelemetry
import Tracing

/// The outcome of an ``OfflineODataProvider/upload()``.
public struct OfflineODataUploadResult: Sendable, Hashable {
    /// Requests sent to the back end.
    public var sent: Int
    /// Requests the back end accepted.
    public var succeeded: Int
    /// Requests that failed, in queue order: each the entry the `ErrorArchive` holds for it.
    public var failed: [ErrorArchiveEntry]
    /// Requests still queued when the upload ended: those it did not settle because the back end could not be
    /// reached (``OfflineODataError/backEndUnreachable``), or queued while it ran after it had read the queue.
    public var stillQueued: Int
    /// Conflicts resolved by ``OfflineODataParameters/conflictPolicy`` without archiving them, in queue order (a
    /// resolution by a re-send is here once the back end accepted it, and counted in ``succeeded``).
    public var resolvedConflicts: [OfflineODataResolvedConflict]

    /// Creates a result.
    ///
    /// - Parameters:
    ///   - sent: Requests sent.
    ///   - succeeded: Requests accepted.
    ///   - failed: Requests that failed.
    ///   - stillQueued: Requests still queued at the end.
    ///   - resolvedConflicts: Conflicts resolved.
    public init(sent: Int = 0, succeeded: Int = 0, failed: [ErrorArchiveEntry] = [], stillQueued: Int = 0,
                resolvedConflicts: [OfflineODataResolvedConflict] = []) {
        self.sent = sent
        self.succeeded = succeeded
        self.failed = failed
        self.stillQueued = stillQueued
        self.resolvedConflicts = resolvedConflicts
    }
}

/// One request the next upload would send (see ``OfflineODataProvider/pendingUpload()``).
public struct OfflineODataPlannedRequest: Sendable, Hashable {
    /// The queued request's ID.
    public var requestID: Int64
    /// The HTTP method.
    public var method: String
    /// The absolute URL.
    public var url: String
    /// The headers it would carry (credentials left out).
    public var headers: HTTPFields
    /// The JSON body, if any.
    public var body: String?
}

extension OfflineODataProvider {
    /// Sends every queued request to the back end in order: one by one, or with
    /// ``OfflineODataUploadMode/batch(maxRequestsPerBatch:)`` consecutive requests in `$batch`
    /// bodies, each request its own change set; every outcome goes through the same steps in
    /// both modes (see ``OfflineODataParameters/uploadMode``). A request the back end answers with an error
    /// never stops the upload: it is reported once to the delegate, written to the `ErrorArchive`,
    /// and its entity goes into error state (a failed delete makes the entity visible again with
    /// `isDeleteError`). A request on an entity whose create failed is not sent and fails too.
    /// When a create succeeds, the server's key replaces the temporary key in the store and in
    /// every later queued request. A failure that may be re-sent (no answer, 408, 429, 5xx) is
    /// re-sent as ``OfflineODataParameters/retryPolicy`` says; without
    /// ``OfflineODataParameters/enableRepeatableRequests``, a request that is not idempotent
    /// (`POST`, `PATCH`, `MERGE`) only when the failure proves the back end never got it, else its
    /// report says the back end may have executed it.
    ///
    /// A back end that cannot be reached stops the upload: when the policy gives up on a request that got no
    /// answer at all (refused, reset before a status line, no name, TLS, a timeout, a CSRF token fetch that got no
    /// answer), what settled before it is committed and reported, and it and every later request stay queued as
    /// they were — no ErrorArchive entry, no error state, no delegate failure, the same repeatability IDs. A
    /// request that may have reached the back end and must not be sent twice (not idempotent, repeatable requests
    /// off) is archived as possibly executed first.
    ///
    /// It runs on the background threads (``OfflineODataParameters/backgroundExecutor``), at their lower priority,
    /// beside the process's other work; the caller is resumed where it runs.
    ///
    /// - Returns: How many requests were sent, accepted and failed.
    /// - Throws: ``OfflineODataError/backEndUnreachable`` (with ``OfflineODataError/uploadResult``: what was done,
    ///   and how many requests are still queued), `OfflineODataError.notOpen`, `.invalidRequest` when an upload
    ///   already runs, `.storage` when the store cannot be written (the request then stays queued).
    public nonisolated func upload() async throws -> OfflineODataUploadResult {
        try await parameters.backgroundExecutor.run { try await self.performUpload() }
    }

    /// ``upload()``, on the actor.
    func performUpload() async throws -> OfflineODataUploadResult {
        let store = try openStore()
        guard currentState == .open else { throw OfflineODataError(.invalidRequest, "an upload or download is already running") }
        setState(.uploading)
        defer { setState(.open) }
        return try await reported(.upload) {
            let result = try await uploadQueue(store: store)
            reportUploaded(result)
            return result
        }
    }

    /// Performs what the ``UploadMachine`` asks, and tells it what happened.
    private func uploadQueue(store: EntityStore) async throws -> OfflineODataUploadResult {
        let model = self.model
        var configuration = UploadMachine.Configuration(
            batchLimit: { if case .batch(let limit) = parameters.uploadMode { limit } else { nil } }(),
            retry: parameters.retryPolicy,
            repeatable: parameters.enableRepeatableRequests,
            keyMadeLocally: { entry in Self.keyMadeLocally(entry, model: model) })
        configuration.conflictRule = conflictRule
        configuration.conflictStatuses = parameters.conflictStatuses
        var machine = UploadMachine(configuration: configuration, failedCreates: try Self.failedCreates(in: store))
        let clock = parameters.clock
        // The last failure without an answer, for the error that stops the upload.
        var lastNoAnswer: (any Error & Sendable)?
        while let action = machine.next() {
            switch action {
            case .readQueue(let after):
                machine.queueRead(try store.queuedRequests().filter { $0.id > after })
            case .send(let entry, let delay):
                guard await pause(delay) else { machine.cancel(); continue }
                var request = uploadRequest(entry)
                let spool = entry.isMedia ? try mediaUploadBody(entry, store: store) : nil
                request.bodySource = spool
                do {
                    let answer = try await sendOnce(request, noAnswer: &lastNoAnswer)
                    machine.answered(answer, at: clock.now)
                } catch {
                    machine.cancel()  // stopped by the caller: the request stays queued, with its repeatability headers
                }
                if let spool { removeMediaFile(spool.path) }
            case .sendBatch(let group, let delay):
                guard await pause(delay) else { machine.cancel(); continue }
                do {
                    let answer = try await sendBatch(group, noAnswer: &lastNoAnswer)
                    machine.batchAnswered(answer, at: clock.now)
                } catch {
                    machine.cancel()
                }
            case .commit(let outcomes):
                try await commit(outcomes, model: model, machine: &machine, store: store)
            case .readConflict(let entry):
                do {
                    machine.conflictRead(try await readConflict(entry, store: store, noAnswer: &lastNoAnswer), at: clock.now)
                } catch is CancellationError {
                    machine.cancel()  // the request stays queued as it was
                }
            case .resolve(let conflict):
                let resolution = await askResolver(conflict)
                if Task.isCancelled { machine.cancel() } else { machine.resolverAnswered(resolution, at: clock.now) }
            case .reportProgress(let progress):
                reportUploadProgress(progress)
            case .finish(let result):
                return result
            case .stopped:
                throw CancellationError()
            case .halted(var result, let halt):
                result.stillQueued = try store.queuedRequests().count
                reportUploaded(result)
                let done = "the upload stopped with \(result.stillQueued) requests still queued "
                    + "(\(result.sent) sent, \(result.succeeded) succeeded, \(result.failed.count) failed)"
                switch halt {
                case .unreachable(let description):
                    throw OfflineODataError(.backEndUnreachable, "the back end could not be reached (\(description)): " + done,
                                            underlying: lastNoAnswer, uploadResult: result)
                case .unauthorized(let description):
                    throw OfflineODataError(.authenticationFailed, "the back end refused the credentials (\(description)): " + done,
                                            httpStatus: 401, uploadResult: result)
                }
            }
        }
        return machine.currentResult
    }

    /// Waits before a re-send, on the parameters' clock. - Returns: `false` when the caller stopped the upload.
    private func pause(_ delay: Duration?) async -> Bool {
        if let delay {
            do { try await parameters.clock.sleep(for: delay) } catch { return false }
        }
        return !Task.isCancelled
    }

    /// Applies outcomes in one transaction, then reports their failures; tells the machine.
    private func commit(_ outcomes: [UploadMachine.Outcome], model: ServiceModel, machine: inout UploadMachine, store: EntityStore) async throws {
        if outcomes.count == 1, case .created(let entry, let reply) = outcomes[0] {
            let changed = try await store.write { changes in try UploadSteps.created(entry, reply: reply, model: model, changes: changes) }
            if changed.keyUnreadable {
                // The back end's key values make no key: the entity keeps the local one (told, not silent).
                parameters.telemetry.logger.warning("offline create answered with a key that makes no key; the local key is kept", metadata: [
                    "request_id": .stringConvertible(entry.id), "store": .string(parameters.storeName),
                ])
            }
            machine.committed(keyChanged: changed.keyChanged)
            return
        }
        if outcomes.count == 1, case .serverWon(let entry, var resolved) = outcomes[0] {
            let winner = resolved
            resolved.droppedRequestIDs = try await store.write { changes in try UploadSteps.serverWon(entry, winner, changes: changes) }
            machine.committed(dropped: resolved.droppedRequestIDs)
            reportResolved(resolved)
            return
        }
        let steps = outcomes.map { UploadSteps.step($0, model: model) }
        try await store.write { changes in for step in steps { try step(changes) } }
        machine.committed()
        for outcome in outcomes {
            switch outcome {
            case .failed(let entry, let failure, let domain):
                spanEvent("request failed", ["odata.request_id": .int64(entry.id), "http.request.method": .string(entry.method), "odata.domain": .string(domain.rawValue)])
                reportFailure(failure)
            case .resolved(_, _, let resolved, _, _, _):
                reportResolved(resolved)
            default:
                break
            }
        }
    }

    /// Whether a create's key was made up locally (a key property absent from its body): only the back end's answer
    /// can tell the real one.
    static func keyMadeLocally(_ entry: QueuedRequest, model: ServiceModel) -> Bool {
        guard let type = model.entityType(ofSet: UploadSteps.split(entry.entity).set) else { return true }
        // A body that is not an object gives no key (a local change refuses such a body, so only a damaged queue holds one).
        let body = entry.body.flatMap { (try? JSON.parse(Array($0.utf8)))?.objectValue } ?? JSONObject()
        return type.key.contains { body[$0] == nil || body[$0]?.isNull == true }
    }

    /// The HTTP request an upload sends for a queued request: method, URL under the service root,
    /// the back end's headers and credentials, the request's own headers (`If-Match`,
    /// `Repeatability-*`) and its body.
    func uploadRequest(_ entry: QueuedRequest) -> TransportRequest {
        var fields = backEndHeaders()
        Self.addOwnHeaders(of: entry, to: &fields)
        var request = TransportRequest(method: entry.method, url: serviceRoot + entry.url, headerFields: fields, body: entry.sentBody.map { Data($0.utf8) })
        request.allowsAutomaticResend = UploadMachine.allowsAutomaticResend([entry.method], repeatable: parameters.enableRepeatableRequests)
        return request
    }

    /// A queued request's own headers: `Content-Type` for a body, `If-Match`, `Repeatability-*`.
    private static func addOwnHeaders(of entry: QueuedRequest, to fields: inout HTTPFields) {
        if entry.sentBody != nil { fields[.contentType] = "application/json" }
        if let mediaContentType = entry.mediaContentType { fields[.contentType] = mediaContentType }
        for field in entry.headers { fields[field.name] = field.value }
    }

    /// The queued requests that go into one `$batch` (``UploadMachine/batchGroup(_:limit:failedCreates:)``).
    static func batchGroup(_ entries: ArraySlice<QueuedRequest>, limit: Int, failedCreates: [String: Int64]) -> [QueuedRequest] {
        UploadMachine.batchGroup(entries, limit: limit, failedCreates: failedCreates)
    }

    /// A dry run: exactly the requests the next upload would send, in order, without sending
    /// anything. A request on an entity created locally is shown with the temporary key; the
    /// upload puts the server's key in once the create is accepted.
    ///
    /// - Returns: Per queued request its ID, method, absolute URL, headers (credentials are left out) and body.
    /// - Throws: `OfflineODataError.notOpen`, `.storage` for an unreadable record.
    public func pendingUpload() throws -> [OfflineODataPlannedRequest] {
        let credentialNames = Set((parameters.credentials[credentialsUser ?? parameters.currentUser ?? ""] ?? [:]).map(\.name))
        return try openStore().queuedRequests().map { entry in
            let request = uploadRequest(entry)
            let headers = HTTPFields(request.headerFields.filter { !credentialNames.contains($0.name) })
            return OfflineODataPlannedRequest(requestID: entry.id, method: entry.method, url: request.url, headers: headers, body: entry.sentBody)
        }
    }

    /// Sends a request once; the machine decides about re-sends.
    ///
    /// - Returns: The answer, or the failure classified for the machine's rules.
    /// - Throws: `CancellationError` when the caller stopped the upload.
    private func sendOnce(_ request: TransportRequest, noAnswer: inout (any Error & Sendable)?) async throws -> UploadAnswer {
        do {
            return .reply(UploadReply(try await transport().send(request)))
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            return .failure(Self.classify(error, noAnswer: &noAnswer))
        }
    }

    /// A transport or session error as the machine sees it. A failure without an answer (`NoAnswer`: for
    /// `CurlError`, `connectFailed`, `couldNotResolveHost`, `tls`, `timedOut`, `connectionClosed`; a CSRF token
    /// fetch that got no answer) is `.transport`, never reached when it proves the back end never got the request;
    /// it is kept in `noAnswer` for the error that stops the upload. A session's refusal is `.session`; anything else
    /// (a malformed or over-large answer) `.unusable`.
    static func classify(_ error: any Error, noAnswer: inout (any Error & Sendable)?) -> UploadSendFailure {
        if let how = NoAnswer.of(error) {
            noAnswer = error
            return .transport(neverReached: how == .requestNotSent, description: "\(error)")
        }
        if let error = error as? SessionError {
            return .session(retryable: error.isRetryable, statusCode: error.statusCode, description: "\(error)")
        }
        return .unusable("\(error)")
    }

    /// Sends queued requests in one `$batch` POST, each in its own change set (Content-ID = request
    /// ID), so one failure never rolls back another. Each request's answer is returned by request ID;
    /// a `$batch` with no usable answer as a whole (transport error, error status) is returned whole:
    /// the machine re-sends it by the rules of a single request (a `$batch` holding a request that is
    /// not idempotent counts as one), or gives its failure to every request in it.
    private func sendBatch(_ group: [QueuedRequest], noAnswer: inout (any Error & Sendable)?) async throws -> UploadMachine.BatchAnswer {
        spanEvent("$batch", ["odata.batch.parts": .int64(Int64(group.count)), "odata.request_id.first": .int64(group[0].id)])
        var parts: [BatchRequest.Part] = []
        for entry in group {
            var fields = HTTPFields()
            Self.addOwnHeaders(of: entry, to: &fields)
            let pieces = entry.url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            let query = pieces.count > 1 ? pieces[1].split(separator: "&").map { QueryOption.encoded(String($0)) } : []
            let request = ODataRequest(
                method: HTTPRequest.Method(entry.method) ?? .post, resourcePath: String(pieces[0]), queryOptions: query,
                headerFields: fields, body: entry.sentBody.map { Data($0.utf8) })
            parts.append(.changeSet([BatchRequest.ChangeSetRequest(contentID: String(entry.id), request: request)]))
        }
        var answers: [Int64: UploadAnswer] = [:]
        func failAll(_ description: String) -> UploadMachine.BatchAnswer {
            .parts(Dictionary(uniqueKeysWithValues: group.map { ($0.id, .failure(.unreadableBatchAnswer(description))) }))
        }
        let encoded: (body: Data, contentType: String)
        do {
            encoded = try MultipartBatch.encode(session.dialect(BatchRequest(parts: parts)))
        } catch {
            return failAll("\(error)")
        }
        var fields = backEndHeaders(accept: "multipart/mixed")
        fields[.contentType] = encoded.contentType
        // With repeatable requests the `$batch` itself gets its own `Repeatability-*` headers
        // (the parts keep theirs), so a re-send after a lost answer is not executed again.
        for field in queuedHeaders() { fields[field.name] = field.value }
        var request = TransportRequest(method: "POST", url: serviceRoot + "$batch", headerFields: fields, body: encoded.body)
        request.allowsAutomaticResend = UploadMachine.allowsAutomaticResend(group.map(\.method), repeatable: parameters.enableRepeatableRequests)
        let response: TransportResponse
        do {
            response = try await transport().send(request)
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            return .whole(.failure(Self.classify(error, noAnswer: &noAnswer)))
        }
        guard (200..<300).contains(response.status) else {
            return .whole(.reply(UploadReply(response)))
        }
        let decoded: BatchResponse
        do {
            decoded = try MultipartBatch.decodeResponse(response.body, contentType: response.headerFields[.contentType] ?? "")
        } catch {
            return failAll("the $batch answer cannot be read: \(error)")
        }
        for (position, part) in decoded.parts.enumerated() {
            let members: [(contentID: String?, response: ODataResponse)]
            switch part {
            case .response(let member, let contentID): members = [(contentID, member)]
            case .changeSet(let list): members = list
            }
            for member in members {
                let id = member.contentID.flatMap { Int64($0) } ?? (position < group.count ? group[position].id : nil)
                guard let id, group.contains(where: { $0.id == id }) else { continue }
                answers[id] = .reply(UploadReply(
                    status: member.response.statusCode, etag: member.response.headerFields[.eTag], body: member.response.payload))
            }
        }
        return .parts(answers)
    }

    /// The entities whose create failed in an earlier upload and is still in the ErrorArchive, with
    /// that request's ID: a request on such an entity (it still has its temporary key) cannot
    /// succeed, so an upload fails it without sending it.
    static func failedCreates(in store: EntityStore) throws -> [String: Int64] {
        var result: [String: Int64] = [:]
        for entry in try store.errorEntries() where entry.requestMethod == "POST" && !isRelationship(url: entry.requestURL) {
            result[entry.affectedEntityReference] = entry.requestID
        }
        return result
    }
}

extension UploadReply {
    /// The parts of a transport's answer the upload's rules read.
    init(_ response: TransportResponse) {
        self.init(status: response.status, etag: response.headerFields[.eTag], body: response.body,
                  retryAfter: response.headerFields[.retryAfter])
    }
}
