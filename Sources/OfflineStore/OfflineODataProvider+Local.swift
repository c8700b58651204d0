import Foundation
import HTTPTypes
public import ODataCore
import ODataQuery
import ODataTyped

extension OfflineODataProvider {
    /// Executes a request against the local store: reads are answered from it, creates, updates
    /// and deletes change it at once and are appended to the request queue.
    ///
    /// Relationships are changed like entities: `POST Set(key)/Nav/$ref` adds a link to a collection,
    /// `PUT Set(key)/Nav/$ref` sets a single-valued one (body `{"@odata.id": "Target(key)"}`), and
    /// `DELETE Set(key)/Nav/$ref` (a collection's: `Nav(key)/$ref` or `?$id=Target(key)`) removes one; V2's
    /// `Set(key)/$links/Nav` (body `{"uri": …}`) is read the same way. The foreign key the navigation's
    /// referential constraint names changes at once, and the request is queued in the service's form.
    ///
    /// Reads support `$filter`, `$orderby`, `$select`, `$expand`, `$top`, `$skip`, `$count`, key
    /// lookups, navigation paths, `/$count`, the `RequestQueue` entity set, a media entity's `$value` and an
    /// entity's stream property `Set(key)/Name` (see ``readMedia(of:property:)``). With
    /// ``OfflineODataParameters/pageSize`` set, a longer collection carries an `@odata.nextLink`
    /// for ``execute(nextLink:)``.
    ///
    /// - Parameter request: The request; its path is relative to the service root.
    /// - Returns: A 200 response with OData V4 JSON for reads, 201 with the entity for creates,
    ///   204 for updates and deletes, 204 for a single-valued navigation that leads nowhere.
    /// - Throws: `OfflineODataError` — `.notOpen`, `.invalidRequest` naming what was wrong,
    ///   `.entityNotFound`, `.entityExists`, `.storage`, `.operationNotAvailableOffline` for a call of the service's
    ///   actions and functions (neither answered nor queued: their effect is the back end's to compute).
    ///
    /// A read runs on the caller's executor, as ``read(_:)`` does: it neither enters the provider's actor nor leaves
    /// the caller's (an app's main actor, say) and returns what ``read(_:)`` returns. A change enters the actor.
    public nonisolated(nonsending) func execute(_ request: ODataRequest) async throws -> ODataResponse {
        if request.method == .get { return try read(request) }
        return try await change(request)
    }

    /// Executes a create, update or delete (of an entity or a link) inside the actor.
    private func change(_ request: ODataRequest) async throws -> ODataResponse {
        let store = try openStore()
        try model.refuseOperation(request.resourcePath, method: request.method.rawValue)
        let parsed = try LocalRequest(request: request)
        // A change reads what it depends on inside its write transaction (see `queueChange`), so changes
        // and an upload's steps never interleave between a read and its write.
        if Self.isRelationship(parsed) {
            return try await changeLink(parsed, method: request.method.rawValue, body: request.body, customTag: request.customTag, store: store)
        }
        switch request.method {
        case .post:
            return try await create(parsed, body: request.body, customTag: request.customTag, store: store)
        case .patch, .put:
            return try await update(parsed, body: request.body, replace: request.method == .put, customTag: request.customTag, store: store)
        case .delete:
            return try await delete(parsed, customTag: request.customTag, store: store)
        default:
            throw OfflineODataError(.invalidRequest, "the offline store does not execute \(request.method.rawValue) requests")
        }
    }

    /// Reads the page a local `@odata.nextLink` names.
    ///
    /// - Parameter nextLink: The link from an earlier local read.
    /// - Returns: The next page.
    /// - Throws: As ``execute(_:)``; `.invalidRequest` for a link that is not under the service root.
    public nonisolated(nonsending) func execute(nextLink: String) async throws -> ODataResponse {
        let (store, model) = try readSnapshot.opened()
        return try read(try LocalRequest(nextLink, serviceRoot: serviceRoot), store: store, model: model)
    }

    // MARK: Reads

    private enum Target {
        case entity(String, JSONObject)
        case collection(String, [JSONObject])
        /// Every visible entity of a set: planned (``LocalQuery/answer(_:set:entitiesNeeded:)``), never loaded whole.
        case set(String)
        case nothing
    }

    /// Answers a local read without entering the actor: reads run concurrently with each other
    /// and with writes (with its write-ahead log, the store's reading connection never waits for the writer).
    ///
    /// - Parameter request: A `GET` request; its path is relative to the service root.
    /// - Returns: The same response ``execute(_:)`` gives for a read.
    /// - Throws: `OfflineODataError.notOpen` on a closed store, `.invalidRequest` for a request that
    ///   is not a `GET` or is malformed, `.entityNotFound`, `.storage`.
    public nonisolated func read(_ request: ODataRequest) throws -> ODataResponse {
        guard request.method == .get else {
            throw OfflineODataError(.invalidRequest, "read(_:) runs GET requests; use execute(_:) for \(request.method.rawValue)")
        }
        let (store, model) = try readSnapshot.opened()
        try model.refuseOperation(request.resourcePath, method: "GET")
        if let media = try mediaRead(request, store: store, model: model) { return media }
        return try read(try LocalRequest(request: request), store: store, model: model)
    }

    private nonisolated func read(_ parsed: LocalRequest, store: EntityStore, model: ServiceModel) throws -> ODataResponse {
        let query = LocalQuery(store: store, model: model)
        var segments = parsed.path.segments
        let countOnly = segments.last?.name == "$count"
        if countOnly { segments.removeLast() }
        guard !segments.isEmpty else { throw OfflineODataError(.invalidRequest, "'\(parsed.rawPath)' names no entity set") }
        let target = try resolve(segments, query: query, store: store)
        let options = parsed.options.isEmpty ? QueryOptions() : try LocalQuery.options(parsed.options)
        switch target {
        case .nothing:
            return ODataResponse(statusCode: 204)
        case .entity(let set, let entity):
            guard !countOnly else { throw OfflineODataError(.invalidRequest, "/$count needs a collection") }
            var object = JSONObject()
            object.append(.string(serviceRoot + "$metadata#" + set + "/$entity"), forKey: "@odata.context")
            if options.select == nil && options.expand == nil {
                // A plain key lookup: the entity as read, no evaluator.
                for (name, value) in entity { object.append(value, forKey: name) }
            } else {
                var single = QueryOptions()
                single.select = options.select
                single.expand = options.expand
                let result = try LocalQuery.apply(single, to: [entity], navigation: query)
                for (name, value) in result.entities.first ?? entity { object.append(value, forKey: name) }
            }
            return Self.jsonResponse(.object(object), status: 200)
        case .collection(let set, _), .set(let set):
            if let filter = options.filter { try FilterTypes.check(filter, set: set, model: model) }
            // A whole set is answered by the planner; the related entities of a navigation are few and in memory.
            let answer = { (options: QueryOptions, entitiesNeeded: Bool) throws -> ODataQuery.QueryResult in
                if case .collection(_, let entities) = target { return try LocalQuery.apply(options, to: entities, navigation: query) }
                return try query.answer(options, set: set, entitiesNeeded: entitiesNeeded)
            }
            if countOnly {
                var counting = options
                counting.count = true
                counting.select = nil
                counting.expand = nil
                let count = try answer(counting, false).count ?? 0
                var fields = HTTPFields()
                fields[.contentType] = "text/plain"
                return ODataResponse(statusCode: 200, headerFields: fields, payload: Data(String(count).utf8))
            }
            let offset = try parsed.value(of: "$skiptoken").map { token throws(OfflineODataError) -> Int in
                guard let value = Int(token), value >= 0 else {
                    throw OfflineODataError(.invalidRequest, "the $skiptoken '\(token)' was not made by this store")
                }
                return value
            } ?? 0
            var paged = options
            let pageSize = parameters.pageSize
            var remaining = Int.max
            if pageSize > 0 || offset > 0 {
                paged.skip = (options.skip ?? 0) + offset
                remaining = options.top.map { max(0, $0 - offset) } ?? Int.max
                paged.top = pageSize > 0 ? min(remaining, pageSize + 1) : (options.top.map { _ in remaining })
            }
            var result = try answer(paged, true)
            var nextLink: String?
            if pageSize > 0, result.entities.count > pageSize {
                result.entities.removeLast(result.entities.count - pageSize)
                if remaining > pageSize {
                    nextLink = serviceRoot + parsed.relativeURL(replacing: [.init(name: "$skiptoken", value: String(offset + pageSize))])
                }
            }
            var object = JSONObject()
            object.append(.string(serviceRoot + "$metadata#" + set), forKey: "@odata.context")
            if let count = result.count { object.append(.int(Int64(count)), forKey: "@odata.count") }
            object.append(.array(result.entities.map(JSONValue.object)), forKey: "value")
            if let nextLink { object.append(.string(nextLink), forKey: "@odata.nextLink") }
            return Self.jsonResponse(.object(object), status: 200)
        }
    }

    private nonisolated func resolve(_ segments: [ResourcePath.Segment], query: LocalQuery, store: EntityStore) throws -> Target {
        let model = query.model
        let first = segments[0]
        if first.name == LocalQuery.requestQueueSet {
            let entries = try store.queuedRequests().map { $0.jsonObject() }
            guard segments.count <= 1 else { throw OfflineODataError(.invalidRequest, "RequestQueue has no navigation properties") }
            guard let key = first.key?.parts else { return .collection(first.name, entries) }
            guard key.count == 1, let id = key[0].value.intValue, key[0].name == nil || key[0].name == "RequestID" else {
                throw OfflineODataError(.invalidRequest, "a RequestQueue key is the integer RequestID")
            }
            guard let entry = entries.first(where: { $0["RequestID"]?.intValue == id }) else {
                throw OfflineODataError(.entityNotFound, "no queued request has the RequestID \(id)")
            }
            return .entity(first.name, entry)
        }
        if first.name == LocalQuery.errorArchiveSet {
            guard let key = first.key?.parts else {
                guard segments.count == 1 else { throw OfflineODataError(.invalidRequest, "address one ErrorArchive entry before '\(segments[1].name)'") }
                return .collection(first.name, try store.errorEntries().map { $0.properties(for: .v4) })
            }
            let keyName = ErrorArchiveEntry.keyPropertyNames[0]
            guard key.count == 1, let id = key[0].value.intValue, key[0].name == nil || key[0].name == keyName else {
                throw OfflineODataError(.invalidRequest, "an ErrorArchive key is the integer \(keyName)")
            }
            guard let entry = try store.errorEntry(Int64(id)) else {
                throw OfflineODataError(.entityNotFound, "no ErrorArchive entry has the \(keyName) \(id)")
            }
            guard segments.count > 1 else { return .entity(first.name, entry.properties(for: .v4)) }
            guard segments.count == 2, segments[1].name == "AffectedEntity", segments[1].key == nil else {
                throw OfflineODataError(.invalidRequest, "ErrorArchive entries have one navigation property, AffectedEntity")
            }
            guard let record = try query.record(reference: entry.affectedEntityReference) else {
                return .nothing
            }
            return .entity(record.set, record.json)
        }
        guard let type = model.entityType(ofSet: first.name) else {
            throw OfflineODataError(.invalidRequest, "'\(first.name)' is not an entity set of this store")
        }
        var set = first.name
        var current: EntityRecord?
        var collection: [EntityRecord]?
        if first.key == nil && segments.count == 1 {
            return .set(set)
        }
        if let key = first.key {
            let canonical = try CanonicalKey.render(predicate: key, type: type, set: set)
            guard let record = try store.record(set: set, key: canonical), record.isVisible else {
                throw OfflineODataError(.entityNotFound, "\(set)\(canonical) is not in the local store")
            }
            current = record
        } else {
            collection = []  // a navigation from a collection is refused below
        }
        for segment in segments.dropFirst() {
            guard let record = current else {
                throw OfflineODataError(.invalidRequest, "'\(segment.name)' follows a collection; address a single entity first")
            }
            guard let related = try query.related(record, navigation: segment.name) else {
                throw OfflineODataError(.invalidRequest, "'\(segment.name)' is not a navigation property of \(set)")
            }
            set = related.set
            if let key = segment.key {
                guard let targetType = model.entityType(ofSet: set) else { throw OfflineODataError(.invalidRequest, "unknown set \(set)") }
                let canonical = try CanonicalKey.render(predicate: key, type: targetType, set: set)
                guard let match = related.records.first(where: { $0.key == canonical }) else {
                    throw OfflineODataError(.entityNotFound, "\(set)\(canonical) is not related to \(record.reference) by \(segment.name)")
                }
                current = match
                collection = nil
            } else if related.isCollection {
                current = nil
                collection = related.records
            } else {
                guard let single = related.records.first else { return .nothing }
                current = single
                collection = nil
            }
        }
        if let current { return .entity(set, LocalQuery.json(current)) }
        return .collection(set, (collection ?? []).map(LocalQuery.json))
    }

    static func jsonResponse(_ value: JSONValue, status: Int) -> ODataResponse {
        jsonResponse(payload: JSON.serialize(value), status: status)
    }

    static func jsonResponse(payload: [UInt8], status: Int) -> ODataResponse {
        ODataResponse(statusCode: status, headerFields: jsonFields, payload: Data(payload))
    }

    /// The header fields of a JSON answer, made (and checked by HTTPTypes) once.
    private static let jsonFields: HTTPFields = {
        var fields = HTTPFields()
        fields[.contentType] = "application/json;odata.metadata=minimal"
        fields[HTTPField.Name("OData-Version")!] = "4.0"
        return fields
    }()
}
