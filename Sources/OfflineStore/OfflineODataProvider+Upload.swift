import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataSession
import ODataTyped
import Tracing

/// The outcome of an ``OfflineODataProvider/upload()``.
public struct OfflineODataUploadResult: Sendable, Hashable {
    /// Requests sent to the back end.
    public var sent: Int
    /// Requests the back end accepted.
    public var succeeded: Int
    /// Requests that failed (also in the `ErrorArchive`), in queue order.
    public var failed: [OfflineODataFailedRequest]

    /// Creates a result.
    ///
    /// - Parameters:
    ///   - sent: Requests sent.
    ///   - succeeded: Requests accepted.
    ///   - failed: Requests that failed.
    public init(sent: Int = 0, succeeded: Int = 0, failed: [OfflineODataFailedRequest] = []) {
        self.sent = sent
        self.succeeded = succeeded
        self.failed = failed
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
    /// The headers by lower-case name (credentials left out).
    public var headers: [String: String]
    /// The JSON body, if any.
    public var body: String?
}

extension OfflineODataProvider {
    /// Sends every queued request to the back end in order: one by one, or with
    /// ``OfflineODataUploadMode/batch(maxRequestsPerBatch:)`` consecutive requests in `$batch`
    /// bodies, each request its own change set; every outcome goes through the same steps in
    /// both modes (see ``OfflineODataParameters/uploadMode``). A failing request
    /// never stops the upload: it is reported once to the delegate, written to the `ErrorArchive`,
    /// and its entity goes into error state (a failed delete makes the entity visible again with
    /// `isDeleteError`). A request on an entity whose create failed is not sent and fails too.
    /// When a create succeeds, the server's key replaces the temporary key in the store and in
    /// every later queued request.
    ///
    /// - Returns: How many requests were sent, accepted and failed.
    /// - Throws: `OfflineODataError.notOpen`, `.invalidRequest` when an upload already runs,
    ///   `.storage` when the store cannot be written (the request then stays queued).
    public func upload() async throws -> OfflineODataUploadResult {
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

    /// Sends the queue (see ``upload()``).
    private func uploadQueue(store: EntityStore) async throws -> OfflineODataUploadResult {
        var result = OfflineODataUploadResult()
        var total = try store.queueCount()
        var settled = 0
        var failedCreates = try Self.failedCreates(in: store)
        var lastID: Int64 = 0
        // Outcomes not yet committed: the answers of one `$batch` are applied in one transaction
        // (one by one: each answer in its own); failures are reported once that committed.
        var pending = PendingOutcomes()
        func failed(_ entry: QueuedRequest, _ failure: OfflineODataFailedRequest, domain: String) {
            pending.steps.append(Self.failureStep(entry, failure, domain: domain))
            pending.failures.append(failure)
            if entry.method == "POST" { failedCreates[entry.entity] = entry.id }
            spanEvent("request failed", ["odata.request_id": .int64(entry.id), "http.request.method": .string(entry.method), "odata.domain": .string(domain)])
            result.failed.append(failure)
        }
        while true {
            let batch = try store.queuedRequests().filter { $0.id > lastID }
            guard let snapshotEnd = batch.last?.id else { break }
            if settled + batch.count > total { total = settled + batch.count }
            // Answers of a `$batch` already sent, by request ID, for the requests still to settle.
            var prefetched: [Int64: Result<TransportResponse, any Error>] = [:]
            var reread = false
            for (index, entry) in batch.enumerated() {
                if prefetched.isEmpty { try await commit(&pending, store: store) }
                // Later requests were rewritten in the store (a create's key, an update's ETag): read
                // them again once every answer of the `$batch` already sent is applied.
                if reread && prefetched.isEmpty { break }
                if settled > 0 || lastID > 0 {
                    reportUploadProgress(OfflineODataUploadProgress(settled: settled, total: total, requestID: lastID))
                }
                settled += 1
                lastID = entry.id
                if let failedID = failedCreates[entry.entity] {
                    failed(entry, OfflineODataFailedRequest(
                        requestID: entry.id, method: entry.method, url: entry.url, body: entry.body, customTag: entry.customTag,
                        statusCode: nil, serviceError: nil,
                        message: "not sent: the request \(failedID) that created \(entry.entity) failed", affectedEntity: entry.entity),
                        domain: "Dependency")
                    continue
                }
                // An answer already received is applied even when the caller stopped the upload.
                if prefetched[entry.id] == nil { try Task.checkCancellation() }
                let response: TransportResponse
                do {
                    result.sent += 1
                    if let answer = prefetched.removeValue(forKey: entry.id) {
                        response = try answer.get()
                    } else if case .batch(let limit) = parameters.uploadMode,
                        case let group = Self.batchGroup(batch[index...], limit: limit, failedCreates: failedCreates), group.count > 1
                    {
                        prefetched = try await sendBatch(group)
                        response = try (prefetched.removeValue(forKey: entry.id) ?? .failure(BatchAnswerError("the $batch answer has no part for request \(entry.id)"))).get()
                    } else {
                        response = try await send(uploadRequest(entry))
                    }
                } catch {
                    if error is CancellationError || Task.isCancelled {
                        // Stopped by the caller: the request stays queued (with its repeatability
                        // headers) and the next upload sends it again.
                        try await commit(&pending, store: store)
                        throw CancellationError()
                    }
                    if let error = error as? SessionError {
                        // Refused by the session's rules (a CSRF token the back end keeps rejecting): not executed.
                        failed(entry, OfflineODataFailedRequest(
                            requestID: entry.id, method: entry.method, url: entry.url, body: entry.body, customTag: entry.customTag,
                            statusCode: error.statusCode, serviceError: nil, message: "session error: \(error)", affectedEntity: entry.entity),
                            domain: "Session")
                        continue
                    }
                    failed(entry, OfflineODataFailedRequest(
                        requestID: entry.id, method: entry.method, url: entry.url, body: entry.body, customTag: entry.customTag,
                        statusCode: nil, serviceError: nil, message: "transport error: \(error)", affectedEntity: entry.entity),
                        domain: "Transport")
                    continue
                }
                if (200..<300).contains(response.status) {
                    result.succeeded += 1
                    if entry.method == "POST" {
                        // A create is the last request of its `$batch`; its key may change every
                        // later queued request, so it commits on its own.
                        try await commit(&pending, store: store)
                        // URLs, affected entities and foreign keys in bodies of later requests.
                        if try await created(entry, response: response, store: store) { reread = true }
                    } else {
                        let laterInSnapshot = batch[(index + 1)...].contains { $0.entity == entry.entity }
                        pending.steps.append(Self.successStep(entry, response: response, laterInSnapshot: laterInSnapshot, snapshotEnd: snapshotEnd))
                        // Their `If-Match` gets this answer's ETag.
                        if laterInSnapshot { reread = true }
                    }
                } else {
                    let serviceError = ODataServiceError.parse(response.body, statusCode: response.status)
                    failed(entry, OfflineODataFailedRequest(
                        requestID: entry.id, method: entry.method, url: entry.url, body: entry.body, customTag: entry.customTag,
                        statusCode: response.status, serviceError: serviceError, message: serviceError.message, affectedEntity: entry.entity),
                        domain: "OData")
                }
            }
            try await commit(&pending, store: store)
        }
        if settled > 0 { reportUploadProgress(OfflineODataUploadProgress(settled: settled, total: total, requestID: lastID)) }
        return result
    }

    /// The HTTP request an upload sends for a queued request: method, URL under the service root,
    /// the back end's headers and credentials, the request's own headers (`If-Match`,
    /// `Repeatability-*`) and its body.
    func uploadRequest(_ entry: QueuedRequest) -> TransportRequest {
        var fields = backEndHeaders()
        Self.addOwnHeaders(of: entry, to: &fields)
        return TransportRequest(method: entry.method, url: serviceRoot + entry.url, headerFields: fields, body: entry.body.map { Data($0.utf8) })
    }

    /// A queued request's own headers: `Content-Type` for a body, `If-Match`, `Repeatability-*`.
    private static func addOwnHeaders(of entry: QueuedRequest, to fields: inout HTTPFields) {
        if entry.body != nil { fields[.contentType] = "application/json" }
        for (name, value) in entry.headers {
            if let fieldName = HTTPField.Name(name), let text = value.stringValue { fields[fieldName] = text }
        }
    }

    /// The queued requests that go into one `$batch`, starting with the first of `entries`: at most
    /// `limit`, none on an entity whose create failed (that one fails in its turn without being
    /// sent), and the batch ends after a create, so a request using the create's temporary key
    /// is only sent once the server's key replaced it.
    static func batchGroup(_ entries: ArraySlice<QueuedRequest>, limit: Int, failedCreates: [String: Int64]) -> [QueuedRequest] {
        var group: [QueuedRequest] = []
        for entry in entries {
            guard group.count < limit, failedCreates[entry.entity] == nil else { break }
            group.append(entry)
            // A later request on the same entity waits for this one's new key or ETag (next batch).
            if entry.method == "POST" || entries.contains(where: { $0.id > entry.id && $0.entity == entry.entity }) { break }
        }
        return group
    }

    /// Sends queued requests in one `$batch` POST, each in its own change set (Content-ID = request
    /// ID), so one failure never rolls back another. The `$batch` itself is retried like a single
    /// request. Each request's answer is returned by request ID; a failed `$batch` (transport error
    /// or unreadable answer) fails every request in it, and a `$batch` refused as a whole gives its
    /// status and error to every request — the caller reports each as in one-by-one mode.
    private func sendBatch(_ group: [QueuedRequest]) async throws -> [Int64: Result<TransportResponse, any Error>] {
        spanEvent("$batch", ["odata.batch.parts": .int64(Int64(group.count)), "odata.request_id.first": .int64(group[0].id)])
        var parts: [BatchRequest.Part] = []
        for entry in group {
            var fields = HTTPFields()
            Self.addOwnHeaders(of: entry, to: &fields)
            let pieces = entry.url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            let query = pieces.count > 1 ? pieces[1].split(separator: "&").map { QueryOption.encoded(String($0)) } : []
            let request = ODataRequest(
                method: HTTPRequest.Method(entry.method) ?? .post, resourcePath: String(pieces[0]), queryOptions: query,
                headerFields: fields, body: entry.body.map { Data($0.utf8) })
            parts.append(.changeSet([BatchRequest.ChangeSetRequest(contentID: String(entry.id), request: request)]))
        }
        var answers: [Int64: Result<TransportResponse, any Error>] = [:]
        func failAll(_ error: any Error) -> [Int64: Result<TransportResponse, any Error>] {
            Dictionary(uniqueKeysWithValues: group.map { ($0.id, .failure(error)) })
        }
        let encoded: (body: Data, contentType: String)
        do {
            encoded = try MultipartBatch.encode(session.dialect(BatchRequest(parts: parts)))
        } catch {
            return failAll(error)
        }
        var fields = backEndHeaders(accept: "multipart/mixed")
        fields[.contentType] = encoded.contentType
        // With repeatable requests the `$batch` itself gets its own `Repeatability-*` headers
        // (the parts keep theirs), so a re-send after a lost answer is not executed again.
        for (name, value) in queuedHeaders() {
            if let fieldName = HTTPField.Name(name), let text = value.stringValue { fields[fieldName] = text }
        }
        let response: TransportResponse
        do {
            response = try await send(TransportRequest(method: "POST", url: serviceRoot + "$batch", headerFields: fields, body: encoded.body))
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            return failAll(error)
        }
        guard (200..<300).contains(response.status) else {
            return Dictionary(uniqueKeysWithValues: group.map { ($0.id, .success(response)) })
        }
        let decoded: BatchResponse
        do {
            decoded = try MultipartBatch.decodeResponse(response.body, contentType: response.headerFields[.contentType] ?? "")
        } catch {
            return failAll(BatchAnswerError("the $batch answer cannot be read: \(error)"))
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
                answers[id] = .success(TransportResponse(
                    status: member.response.statusCode, headerFields: member.response.headerFields,
                    body: member.response.payload, metrics: response.metrics))
            }
        }
        for entry in group where answers[entry.id] == nil {
            answers[entry.id] = .failure(BatchAnswerError("the $batch answer has no part for request \(entry.id)"))
        }
        return answers
    }

    /// A dry run: exactly the requests the next upload would send, in order, without sending
    /// anything. A request on an entity created locally is shown with the temporary key; the
    /// upload puts the server's key in once the create is accepted.
    ///
    /// - Returns: Per queued request its ID, method, absolute URL, headers (credentials are left out) and body.
    /// - Throws: `OfflineODataError.notOpen`, `.storage` for an unreadable record.
    public func pendingUpload() throws -> [OfflineODataPlannedRequest] {
        let credentialNames = Set((parameters.credentials[credentialsUser ?? parameters.currentUser ?? ""] ?? [:]).keys.map { $0.lowercased() })
        return try openStore().queuedRequests().map { entry in
            let request = uploadRequest(entry)
            var headers: [String: String] = [:]
            for field in request.headerFields where !credentialNames.contains(field.name.canonicalName) {
                headers[field.name.canonicalName] = field.value
            }
            return OfflineODataPlannedRequest(requestID: entry.id, method: entry.method, url: request.url, headers: headers, body: entry.body)
        }
    }

    /// Sends a request, re-sending it (with the same headers, so the same repeatability ID) after
    /// a transport failure, 408, 429 or 5xx, with a doubling pause, up to `uploadRetries` times.
    private func send(_ request: TransportRequest) async throws -> TransportResponse {
        var attempt = 0
        var delay = parameters.uploadRetryDelay
        while true {
            do {
                let response = try await transport().send(request)
                let retryable = response.status == 408 || response.status == 429 || (500..<600).contains(response.status)
                if !retryable || attempt >= parameters.uploadRetries { return response }
            } catch let error as SessionError where !error.isRetryable {
                throw error  // the back end would refuse it the same way
            } catch {
                if attempt >= parameters.uploadRetries { throw error }
            }
            attempt += 1
            try await Task.sleep(for: delay)
            delay *= 2
        }
    }

    static func renamed(_ entry: QueuedRequest, from old: String, to new: String) -> QueuedRequest {
        var entry = entry
        if entry.entity == old { entry.entity = new }
        let encodedOld = PercentEncoding.encodePath(old)
        if entry.url == encodedOld || entry.url.hasPrefix(encodedOld + "/") {
            entry.url = PercentEncoding.encodePath(new) + entry.url.dropFirst(encodedOld.count)
        }
        return entry
    }

    /// After a create got the server's key: the foreign keys (referential constraints) in other
    /// local entities and in the bodies of later queued requests that hold the temporary key value
    /// get the server's value. A foreign key that is part of the dependent's own key (an order
    /// item keyed by its order's ID) changes that entity's key too: it moves to the new key, and
    /// the later queued requests on it are renamed.
    ///
    /// - Returns: The changed records, the keys they moved away from, and the queued requests.
    private func foreignKeysRewritten(to principalSet: String, changedKeys: [String: (JSONValue, JSONValue)], store: EntityStore,
                                      queued: [QueuedRequest]) throws -> (records: [EntityRecord], movedFrom: [(set: String, key: String)], queued: [QueuedRequest]) {
        guard !changedKeys.isEmpty else { return ([], [], queued) }
        var records: [String: EntityRecord] = [:]
        var movedFrom: [(set: String, key: String)] = []
        var renames: [(from: String, to: String)] = []
        var queued = queued
        for (setName, set) in model.entitySets.sorted(by: { $0.key < $1.key }) {
            guard let type = model.entityTypes[set.entityType] else { continue }
            var columns: [String: (JSONValue, JSONValue)] = [:]
            for navigation in type.navigation.values where model.targetSet(from: setName, navigation: navigation.name) == principalSet {
                for (dependent, principal) in navigation.constraints {
                    if let change = changedKeys[principal] { columns[dependent] = change }
                }
            }
            guard !columns.isEmpty else { continue }
            // The dependents holding a temporary value, read through the foreign keys' columns (indexed).
            var holding: [String: EntityRecord] = [:]
            for (column, change) in columns.sorted(by: { $0.key < $1.key }) {
                for record in try store.records(in: setName, property: column, equalTo: change.0) { holding[record.key] = record }
            }
            for var record in holding.values.sorted(by: { $0.order < $1.order }) {
                var changed = false
                for (column, change) in columns where record.entity[column] == change.0 {
                    record.entity[column] = change.1
                    changed = true
                }
                guard changed else { continue }
                if let newKey = try? CanonicalKey.render(record.entity, type: type), newKey != record.key {
                    movedFrom.append((record.set, record.key))
                    renames.append((record.reference, record.set + newKey))
                    record.key = newKey
                }
                records[record.reference] = record
            }
            for index in queued.indices where queued[index].entity.hasPrefix(setName + "(") {
                guard let text = queued[index].body, var body = (try? JSON.parse(Array(text.utf8)))?.objectValue else { continue }
                var changed = false
                for (column, change) in columns where body[column] == change.0 {
                    body[column] = change.1
                    changed = true
                }
                if changed { queued[index].body = String(decoding: JSON.serialize(.object(body)), as: UTF8.self) }
            }
        }
        for rename in renames {
            queued = queued.map { Self.renamed($0, from: rename.from, to: rename.to) }
        }
        return (Array(records.values), movedFrom, queued)
    }

    /// Commits the outcomes not yet committed in one transaction, then reports their failures.
    private func commit(_ pending: inout PendingOutcomes, store: EntityStore) async throws {
        guard !pending.steps.isEmpty else { return }
        let steps = pending.steps
        await enterChangeGate()
        defer { leaveChangeGate() }
        try await store.write { changes in for step in steps { try step(changes) } }
        pending.steps.removeAll()
        for failure in pending.failures { reportFailure(failure) }
        pending.failures.removeAll()
    }

    /// Applies an accepted create: the server's key and ETag replace the local ones, and a changed
    /// key is put into every later queued request and into the foreign keys that held the
    /// temporary value — one transaction.
    ///
    /// - Returns: Whether later queued requests were rewritten (the caller reads the queue again).
    private func created(_ entry: QueuedRequest, response: TransportResponse, store: EntityStore) async throws -> Bool {
        await enterChangeGate()
        defer { leaveChangeGate() }
        let later = try store.queuedRequests().filter { $0.id > entry.id }
        let laterOnEntity = later.contains { $0.entity == entry.entity }
        guard var record = try store.record(set: String(entry.entity.prefix { $0 != "(" }), key: String(entry.entity.drop { $0 != "(" })),
              let type = model.entityType(ofSet: record.set)
        else {
            try await store.write { changes in try changes.dequeue(entry.id) }
            return false
        }
        var serverEntity = JSONObject()
        if let object = (try? JSON.parse(response.body))?.objectValue {
            for (name, value) in object where !name.contains("@") && type.propertyTypes[name] != nil { serverEntity[name] = value }
            if let bodyETag = object["@odata.etag"] { serverEntity["@odata.etag"] = bodyETag }
        }
        var entity = record.entity
        let oldEntity = record.entity
        for name in type.key { if let value = serverEntity[name] { entity[name] = value } }
        if let tag = response.headerFields[.eTag] ?? serverEntity["@odata.etag"]?.stringValue { entity["@odata.etag"] = .string(tag) }
        let newKey = (try? CanonicalKey.render(entity, type: type)) ?? record.key
        let oldReference = record.reference
        let oldKey = record.key
        record.key = newKey
        record.entity = entity
        if record.state != .deleted { record.state = laterOnEntity ? .updated : .downloaded }
        record.original = laterOnEntity ? (serverEntity.isEmpty ? entity : serverEntity) : nil
        let newReference = record.reference
        let finalRecord = record
        var rewritten = later.map { Self.renamed($0, from: oldReference, to: newReference) }
        var dependents: [EntityRecord] = []
        var movedFrom: [(set: String, key: String)] = []
        if oldKey != newKey {
            var changedKeys: [String: (JSONValue, JSONValue)] = [:]
            for name in type.key {
                if let old = oldEntity[name], let new = entity[name], old != new { changedKeys[name] = (old, new) }
            }
            (dependents, movedFrom, rewritten) = try foreignKeysRewritten(to: record.set, changedKeys: changedKeys, store: store, queued: rewritten)
        }
        rewritten = rewritten.filter { rewrittenEntry in later.first { $0.id == rewrittenEntry.id } != rewrittenEntry }
        let finalRewritten = rewritten
        let finalDependents = dependents
        let finalMovedFrom = movedFrom
        try await store.write { changes in
            if oldKey != newKey { try changes.remove(set: finalRecord.set, key: oldKey) }
            for old in finalMovedFrom { try changes.remove(set: old.set, key: old.key) }
            try changes.put(finalRecord)
            for dependent in finalDependents { try changes.put(dependent) }
            for updated in finalRewritten { try changes.enqueue(updated) }
            try changes.dequeue(entry.id)
        }
        return oldReference != newReference
    }

    /// The store changes for an accepted update or delete, run inside the transaction that commits
    /// them, so they see the entity as it is then (a local change made while the request was
    /// under way is kept, not overwritten). An update's new ETag goes to the later queued requests
    /// on the entity.
    ///
    /// - Parameters:
    ///   - laterInSnapshot: Whether a later request of the upload's queue snapshot is on the same entity.
    ///   - snapshotEnd: The last request ID of that snapshot; requests queued after it are looked up in the transaction.
    private static func successStep(_ entry: QueuedRequest, response: TransportResponse, laterInSnapshot: Bool, snapshotEnd: Int64) -> UploadStep {
        let etag = response.headerFields[.eTag]
        let set = String(entry.entity.prefix { $0 != "(" })
        let key = String(entry.entity.drop { $0 != "(" })
        return { changes in
            let laterOnEntity = try laterInSnapshot || changes.queuedRequests(after: snapshotEnd).contains { $0.entity == entry.entity }
            if var record = try changes.current(set: set, key: key) {
                if entry.method == "DELETE" {
                    if !laterOnEntity && record.state == .deleted { try changes.remove(set: record.set, key: record.key) }
                } else {
                    if let etag { record.entity["@odata.etag"] = .string(etag) }
                    if laterOnEntity {
                        for updated in Self.withNewETag(try changes.queuedRequests(after: entry.id), after: entry, etag: etag) {
                            try changes.enqueue(updated)
                        }
                    }
                    if !laterOnEntity && record.state != .deleted && !record.inErrorState {
                        record.state = .downloaded
                        record.original = nil
                    }
                    try changes.put(record)
                }
            }
            try changes.dequeue(entry.id)
        }
    }

    /// The store changes for a failed request: ErrorArchive entry, entity in error state (a failed
    /// delete makes it visible again with `isDeleteError`), request dequeued.
    private static func failureStep(_ entry: QueuedRequest, _ failure: OfflineODataFailedRequest, domain: String) -> UploadStep {
        let archived = ErrorArchiveEntry(
            requestID: entry.id, requestMethod: entry.method, requestURL: entry.url, requestBody: entry.body,
            httpStatusCode: failure.statusCode.map { Int32(clamping: $0) }, code: failure.serviceError?.code, message: failure.message,
            innerError: failure.serviceError?.innerError.map(JSON.string), domain: domain, customTag: entry.customTag,
            affectedEntityReference: entry.entity)
        let set = String(entry.entity.prefix { $0 != "(" })
        let key = String(entry.entity.drop { $0 != "(" })
        return { changes in
            try changes.archiveError(archived)
            if var record = try changes.current(set: set, key: key) {
                record.inErrorState = true
                if entry.method == "DELETE" {
                    record.isDeleteError = true
                    if record.state == .deleted { record.state = record.original == nil ? .created : .updated }
                }
                try changes.put(record)
            }
            try changes.dequeue(entry.id)
        }
    }
}

/// One answered request's changes to the store, run inside a write transaction.
typealias UploadStep = @Sendable (EntityStore.Changes) throws -> Void

/// Answered requests whose changes are not committed yet, and their failures to report once they are.
struct PendingOutcomes {
    var steps: [UploadStep] = []
    var failures: [OfflineODataFailedRequest] = []
}

/// A `$batch` answer that does not give a request's outcome.
struct BatchAnswerError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
