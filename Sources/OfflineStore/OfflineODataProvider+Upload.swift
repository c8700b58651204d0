import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore

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
        var result = OfflineODataUploadResult()
        var total = try store.queueCount()
        var settled = 0
        var failedCreates = try Self.failedCreates(in: store)
        var lastID: Int64 = 0
        while true {
            let batch = try store.queuedRequests().filter { $0.id > lastID }
            guard !batch.isEmpty else { break }
            if settled + batch.count > total { total = settled + batch.count }
            // Answers of a `$batch` already sent, by request ID, for the requests still to settle.
            var prefetched: [Int64: Result<TransportResponse, any Error>] = [:]
            var reread = false
            for (index, entry) in batch.enumerated() {
                // Later requests were rewritten in the store: read them again, once every answer
                // of the `$batch` already sent is applied (dropping one would send it twice).
                if reread && prefetched.isEmpty { break }
                if settled > 0 || lastID > 0 {
                    reportUploadProgress(OfflineODataUploadProgress(settled: settled, total: total, requestID: lastID))
                }
                settled += 1
                lastID = entry.id
                if let failedID = failedCreates[entry.entity] {
                    let failure = OfflineODataFailedRequest(
                        requestID: entry.id, method: entry.method, url: entry.url, body: entry.body, customTag: entry.customTag,
                        statusCode: nil, serviceError: nil,
                        message: "not sent: the request \(failedID) that created \(entry.entity) failed", affectedEntity: entry.entity)
                    try await fail(entry, failure, domain: "Dependency", store: store)
                    if entry.method == "POST" { failedCreates[entry.entity] = entry.id }
                    result.failed.append(failure)
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
                        throw CancellationError()
                    }
                    let failure = OfflineODataFailedRequest(
                        requestID: entry.id, method: entry.method, url: entry.url, body: entry.body, customTag: entry.customTag,
                        statusCode: nil, serviceError: nil, message: "transport error: \(error)", affectedEntity: entry.entity)
                    try await fail(entry, failure, domain: "Transport", store: store)
                    if entry.method == "POST" { failedCreates[entry.entity] = entry.id }
                    result.failed.append(failure)
                    continue
                }
                if (200..<300).contains(response.status) {
                    result.succeeded += 1
                    if try await succeed(entry, response: response, store: store) != nil {
                        // A create's key or an update's ETag changed later requests in the store
                        // (URLs, affected entities, foreign keys in bodies, If-Match).
                        reread = true
                    }
                } else {
                    let serviceError = ODataServiceError.parse(response.body, statusCode: response.status)
                    let failure = OfflineODataFailedRequest(
                        requestID: entry.id, method: entry.method, url: entry.url, body: entry.body, customTag: entry.customTag,
                        statusCode: response.status, serviceError: serviceError, message: serviceError.message, affectedEntity: entry.entity)
                    try await fail(entry, failure, domain: "OData", store: store)
                    if entry.method == "POST" { failedCreates[entry.entity] = entry.id }
                    result.failed.append(failure)
                }
            }
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
            encoded = try MultipartBatch.encode(BatchRequest(parts: parts))
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
    /// get the server's value.
    ///
    /// - Returns: The changed records, and the queued requests with rewritten bodies.
    private func foreignKeysRewritten(to principalSet: String, changedKeys: [String: (JSONValue, JSONValue)], store: EntityStore,
                                      queued: [QueuedRequest]) throws -> ([EntityRecord], [QueuedRequest]) {
        guard !changedKeys.isEmpty else { return ([], queued) }
        var records: [String: EntityRecord] = [:]
        var queued = queued
        for (setName, set) in model.entitySets.sorted(by: { $0.key < $1.key }) {
            guard let type = model.entityTypes[set.entityType] else { continue }
            var columns: [String: (JSONValue, JSONValue)] = [:]
            for navigation in type.navigation.values where model.targetSet(from: setName, navigation: navigation.name) == principalSet {
                // A foreign key that is part of the dependent's own key is not rewritten (see NOTES).
                for (dependent, principal) in navigation.constraints where !type.key.contains(dependent) {
                    if let change = changedKeys[principal] { columns[dependent] = change }
                }
            }
            guard !columns.isEmpty else { continue }
            for var record in try store.records(in: setName).values {
                var changed = false
                for (column, change) in columns where record.entity[column] == change.0 {
                    record.entity[column] = change.1
                    changed = true
                }
                if changed { records[record.reference] = record }
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
        return (Array(records.values), queued)
    }

    /// Applies an accepted request to the store; returns `(old, new)` references when later queued
    /// requests were rewritten (a create's new key, or an update's new ETag), so the queue is read again.
    private func succeed(_ entry: QueuedRequest, response: TransportResponse, store: EntityStore) async throws -> (String, String)? {
        await enterChangeGate(); defer { leaveChangeGate() }
        let query = LocalQuery(store: store, model: model)
        let later = try store.queuedRequests().filter { $0.id > entry.id }
        let laterOnEntity = later.contains { $0.entity == entry.entity }
        guard var record = try store.record(set: String(entry.entity.prefix { $0 != "(" }), key: String(entry.entity.drop { $0 != "(" })) else {
            try await store.write { changes in try changes.dequeue(entry.id) }
            return nil
        }
        _ = query
        let etag = response.headerFields[.eTag]
        switch entry.method {
        case "POST":
            guard let type = model.entityType(ofSet: record.set) else { break }
            var serverEntity = JSONObject()
            if let object = (try? JSON.parse(response.body))?.objectValue {
                for (name, value) in object where !name.contains("@") && type.propertyTypes[name] != nil { serverEntity[name] = value }
                if let bodyETag = object["@odata.etag"] { serverEntity["@odata.etag"] = bodyETag }
            }
            var entity = record.entity
            let oldEntity = record.entity
            for name in type.key { if let value = serverEntity[name] { entity[name] = value } }
            if let tag = etag ?? serverEntity["@odata.etag"]?.stringValue { entity["@odata.etag"] = .string(tag) }
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
            if oldKey != newKey {
                var changedKeys: [String: (JSONValue, JSONValue)] = [:]
                for name in type.key {
                    if let old = oldEntity[name], let new = entity[name], old != new { changedKeys[name] = (old, new) }
                }
                (dependents, rewritten) = try foreignKeysRewritten(to: record.set, changedKeys: changedKeys, store: store, queued: rewritten)
            }
            rewritten = rewritten.filter { rewrittenEntry in later.first { $0.id == rewrittenEntry.id } != rewrittenEntry }
            let finalRewritten = rewritten
            let finalDependents = dependents
            try await store.write { changes in
                if oldKey != newKey { try changes.remove(set: finalRecord.set, key: oldKey) }
                try changes.put(finalRecord)
                for dependent in finalDependents { try changes.put(dependent) }
                for updated in finalRewritten { try changes.enqueue(updated) }
                try changes.dequeue(entry.id)
            }
            return oldReference == newReference ? nil : (oldReference, newReference)
        case "DELETE":
            let deleted = record
            try await store.write { changes in
                if !laterOnEntity && deleted.state == .deleted { try changes.remove(set: deleted.set, key: deleted.key) }
                try changes.dequeue(entry.id)
            }
        default:
            if let etag { record.entity["@odata.etag"] = .string(etag) }
            if !laterOnEntity && record.state != .deleted && !record.inErrorState {
                record.state = .downloaded
                record.original = nil
            }
            let finalRecord = record
            let refreshed = Self.withNewETag(later, after: entry, etag: etag)
            try await store.write { changes in
                try changes.put(finalRecord)
                for updated in refreshed { try changes.enqueue(updated) }
                try changes.dequeue(entry.id)
            }
            if !refreshed.isEmpty { return (entry.entity, entry.entity) }
        }
        return nil
    }

    /// Records a failed request: ErrorArchive entry, entity in error state, request dequeued — in
    /// one transaction — then the delegate call.
    private func fail(_ entry: QueuedRequest, _ failure: OfflineODataFailedRequest, domain: String, store: EntityStore) async throws {
        await enterChangeGate(); defer { leaveChangeGate() }
        var archived = JSONObject()
        archived.append(.int(entry.id), forKey: "RequestID")
        archived.append(.string(entry.method), forKey: "RequestMethod")
        archived.append(.string(entry.url), forKey: "RequestURL")
        archived.append(entry.body.map(JSONValue.string) ?? .null, forKey: "RequestBody")
        archived.append(failure.statusCode.map { .int(Int64($0)) } ?? .null, forKey: "HTTPStatusCode")
        archived.append(failure.serviceError.map { .string($0.code) } ?? .null, forKey: "Code")
        archived.append(.string(failure.message), forKey: "Message")
        archived.append(failure.serviceError?.innerError.map { .string(JSON.string($0)) } ?? .null, forKey: "InnerError")
        archived.append(.string(domain), forKey: "Domain")
        archived.append(entry.customTag.map(JSONValue.string) ?? .null, forKey: "CustomTag")
        archived.append(.string(entry.entity), forKey: "AffectedEntityReference")
        let finalArchive = archived
        var record = try store.record(set: String(entry.entity.prefix { $0 != "(" }), key: String(entry.entity.drop { $0 != "(" }))
        if var touched = record {
            touched.inErrorState = true
            if entry.method == "DELETE" {
                touched.isDeleteError = true
                if touched.state == .deleted { touched.state = touched.original == nil ? .created : .updated }
            }
            record = touched
        }
        let finalRecord = record
        try await store.write { changes in
            try changes.archiveError(finalArchive, id: entry.id)
            if let finalRecord { try changes.put(finalRecord) }
            try changes.dequeue(entry.id)
        }
        reportFailure(failure)
    }
}

/// A `$batch` answer that does not give a request's outcome.
struct BatchAnswerError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
