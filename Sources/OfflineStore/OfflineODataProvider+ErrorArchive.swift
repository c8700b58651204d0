import Foundation
import ODataCore
import ODataQuery
import ODataTyped

/// A relationship in error state: a relationship request (`POST`/`PUT`/`DELETE` of `Set(key)/Nav/$ref`, V2
/// `Set(key)/$links/Nav`) that the back end refused in an upload (see
/// ``OfflineODataProvider/relationshipsInError()``).
///
/// The local relationship was put back as it was before the request (a deleted link reappears) and both ends are
/// in error state (`inErrorState()` finds them) until the ErrorArchive entry with ``requestID`` is deleted
/// (`DELETE ErrorArchive(RequestID)`); then make the change again if it is still wanted.
public struct OfflineODataRelationshipInError: Sendable, Hashable {
    /// The failed request's ID: its ErrorArchive entry's key.
    public var requestID: Int64
    /// `POST` or `PUT` (a link created or set) or `DELETE` (a link removed).
    public var method: String
    /// `Set(key)` of the "from" end: the entity whose navigation property the request changed (the entry's `AffectedEntity`).
    public var from: String
    /// The navigation property of the "from" end.
    public var navigationProperty: String
    /// `Set(key)` of the "to" end: the entity linked or unlinked.
    public var to: String
    /// What the back end (or the upload) said.
    public var message: String
    /// The HTTP status the back end answered with, if it answered.
    public var httpStatusCode: Int?

    /// Creates a relationship in error state.
    ///
    /// - Parameters:
    ///   - requestID: The failed request's ID.
    ///   - method: Its method.
    ///   - from: The "from" end.
    ///   - navigationProperty: The navigation property of the "from" end.
    ///   - to: The "to" end.
    ///   - message: The failure's message.
    ///   - httpStatusCode: The back end's status.
    public init(requestID: Int64, method: String, from: String, navigationProperty: String, to: String, message: String,
                httpStatusCode: Int? = nil) {
        self.requestID = requestID
        self.method = method
        self.from = from
        self.navigationProperty = navigationProperty
        self.to = to
        self.message = message
        self.httpStatusCode = httpStatusCode
    }
}

extension OfflineODataProvider {
    /// The relationships in error state: one per ErrorArchive entry of a failed relationship request, in request
    /// order, with both ends named (the reference can only reach the "from" end, through `AffectedEntity`). Repair one
    /// by deleting its entry (`DELETE ErrorArchive(RequestID)`), which releases both ends, and making the change
    /// again.
    ///
    /// - Returns: The relationships in error state, oldest first.
    /// - Throws: `OfflineODataError.notOpen`, `.storage` for an unreadable record.
    public func relationshipsInError() throws -> [OfflineODataRelationshipInError] {
        let model = self.model
        return try openStore().errorEntries().compactMap { try relationship(of: $0, model: model) }
    }

    /// What an ErrorArchive entry says of a relationship: the "from" end and navigation from its URL, the "to" end
    /// from its body (``OfflineODataProvider/changeLink(_:method:body:customTag:store:)`` writes one for a delete too).
    /// `nil` for an entry of another request.
    nonisolated func relationship(of entry: ErrorArchiveEntry, model: ServiceModel) throws -> OfflineODataRelationshipInError? {
        guard Self.isRelationship(url: entry.requestURL) else { return nil }
        let parsed = try LocalRequest(entry.requestURL, serviceRoot: serviceRoot)
        let body = try Self.bodyObject(entry.requestBody.map { Data($0.utf8) })
        guard let named = (body["@odata.id"] ?? body["uri"])?.stringValue else {
            throw OfflineODataError(.storage, "the ErrorArchive entry \(entry.requestID) of a relationship request names no \"to\" end")
        }
        let path = try LocalRequest.path(named.hasPrefix(serviceRoot) ? String(named.dropFirst(serviceRoot.count)) : named)
        guard let segment = path.segments.first, let key = segment.key, let type = model.entityType(ofSet: segment.name) else {
            throw OfflineODataError(.storage, "the ErrorArchive entry \(entry.requestID) names '\(named)', not an entity of this store")
        }
        let to = segment.name + (try CanonicalKey.render(predicate: key, type: type, set: segment.name))
        return OfflineODataRelationshipInError(requestID: entry.requestID, method: entry.requestMethod, from: entry.affectedEntityReference,
                                               navigationProperty: parsed.path.segments[1].name, to: to, message: entry.message,
                                               httpStatusCode: entry.httpStatusCode.map(Int.init))
    }

    /// Whether a queued or archived URL (relative to the service root) is a relationship request's.
    static func isRelationship(url: String) -> Bool {
        do { return isRelationship(try LocalRequest(url, serviceRoot: "")) } catch {
            return false  // every URL the store queues parses; one that does not is no relationship's
        }
    }

    /// Deletes an ErrorArchive entry and releases its entity from error state (when no other entry
    /// names it as its affected entity) — both ends of a relationship request. The requests queued on an entity whose create failed go
    /// with the entry. An entity with no request left in the queue is given up: one that never reached the back end
    /// goes; another returns to its downloaded state and the next download reads it again — so a
    /// 412 is repaired by deleting the entry, downloading, and making the change again.
    func deleteErrorEntry(_ parsed: LocalRequest, store: EntityStore) async throws -> ODataResponse {
        let segments = parsed.path.segments
        guard segments.count == 1, let key = segments[0].key?.parts, key.count == 1, let id = key[0].value.intValue else {
            throw OfflineODataError(.invalidRequest, "DELETE ErrorArchive(RequestID) deletes one entry")
        }
        let model = self.model
        try await store.write { changes in
            guard let entry = try changes.errorEntry(id) else {
                throw OfflineODataError(.entityNotFound, "no ErrorArchive entry has the RequestID \(id)")
            }
            let relationship = try self.relationship(of: entry, model: model)
            let failedCreate = entry.requestMethod == "POST" && relationship == nil
            let queued = try changes.queuedRequests(after: 0)
            try changes.removeError(id)
            // The requests queued on a never-created entity cannot succeed and go with the entry.
            if failedCreate { for dependent in queued where dependent.entity == entry.affectedEntityReference { try changes.dequeue(dependent.id) } }
            for reference in [entry.affectedEntityReference] + (relationship.map { [$0.to] } ?? []) {
                // Another entry naming the entity as its affected one keeps it in error state (read through the index).
                guard try changes.errorEntries(affecting: reference).isEmpty, let open = reference.firstIndex(of: "("),
                      var touched = try changes.current(set: String(reference[..<open]), key: String(reference[open...])) else { continue }
                touched.inErrorState = false
                touched.isDeleteError = false
                if failedCreate || !queued.contains(where: { $0.changes(reference) }) {
                    // Nothing left to upload for it: a local-only entity goes, another one is given
                    // up to its downloaded state and read again by the next download.
                    if touched.state == .created {
                        try changes.remove(set: touched.set, key: touched.key)
                        continue
                    }
                    if let original = touched.original { touched.entity = original }
                    touched.state = .downloaded
                    touched.original = nil
                    touched.needsRefresh = true
                }
                try changes.put(touched)
            }
        }
        return ODataResponse(statusCode: 204)
    }
}
