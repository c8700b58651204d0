import Foundation
import HTTPTypes
import ODataCore
import ODataQuery
import ODataTyped

extension OfflineODataProvider {
    static func bodyObject(_ body: Data?) throws(OfflineODataError) -> JSONObject {
        guard let body, !body.isEmpty else { throw OfflineODataError(.invalidRequest, "the request needs a JSON body") }
        let value: JSONValue
        do { value = try JSON.parse(body) } catch {
            throw OfflineODataError(.invalidRequest, "the request body is not JSON: \(error.message)")
        }
        guard let object = value.objectValue else { throw OfflineODataError(.invalidRequest, "the request body must be a JSON object") }
        return object
    }

    static func timestamp() -> String {
        Date().formatted(.iso8601)
    }

    /// `If-Match` with the entity's ETag as the back end last gave it (downloaded, or answered to
    /// an earlier uploaded change of ours), for updates and deletes.
    private nonisolated static func ifMatch(_ record: EntityRecord) -> HTTPFields {
        var headers = HTTPFields()
        if let etag = record.entity["@odata.etag"]?.stringValue ?? record.original?["@odata.etag"]?.stringValue {
            headers[.ifMatch] = etag
        }
        return headers
    }

    /// After an accepted update of an entity, the later queued requests on that entity that carry
    /// an `If-Match` get the back end's new ETag: they were made on top of this change, so the
    /// version they expect is the one it produced. A change by someone else is still caught: by
    /// this request's own `If-Match`, or, when it happens after this request, by the new ETag.
    ///
    /// - Returns: The later requests whose `If-Match` changed.
    static func withNewETag(_ later: [QueuedRequest], after entry: QueuedRequest, etag: String?) -> [QueuedRequest] {
        guard let etag else { return [] }
        return later.compactMap { request in
            // A media replace's ETag is the media's, an update's the entity's: each goes to requests of its own kind.
            guard request.entity == entry.entity, request.isMedia == entry.isMedia, request.mediaProperty == entry.mediaProperty,
                  let old = request.headers[.ifMatch], old != etag else { return nil }
            var request = request
            request.headers[.ifMatch] = etag
            return request
        }
    }

    /// A record lookup inside a write transaction (``EntityStore/Changes/current(set:key:)``).
    typealias Lookup = (_ set: String, _ key: String) throws -> EntityRecord?

    /// Queues the request of one local change and writes the changed entity, the request and the counters in the
    /// transaction that read them (so a crash keeps both or neither, and no other change comes in between). A
    /// relationship request (`link`) affects its "from" end; `record` is then the entity holding the foreign key.
    nonisolated func queueChange(_ record: EntityRecord, method: String, url: String, body: Data?, headers: HTTPFields,
                                 customTag: String?, link: (from: String, change: LinkChange)? = nil,
                                 changes: EntityStore.Changes) throws -> StoreCounters {
        var counters = try changes.currentCounters()
        let request = QueuedRequest(id: counters.nextRequestID, method: method, url: url,
                                    body: body.map { String(decoding: $0, as: UTF8.self) }, customTag: customTag,
                                    headers: queuedHeaders(headers), entity: link?.from ?? record.reference, createdAt: Self.timestamp(),
                                    link: link?.change)
        counters.nextRequestID += 1
        try changes.put(record)
        try changes.enqueue(request)
        try changes.putCounters(counters)
        return counters
    }

    /// Keeps the counters a local change wrote (the newest, should changes end out of order).
    /// Tells the queue's observers, which every local change calls after it committed.
    func noteCounters(_ written: StoreCounters) {
        if written.nextRequestID > counters.nextRequestID { counters = written }
        for handler in queueObservers.withLock({ Array($0.handlers.values) }) { handler() }
    }

    /// Calls `handler` after each local change that queued a request, until ``removeQueueObserver(_:)``.
    ///
    /// - Parameter handler: Called on the provider's executor after the change committed; it must not block.
    /// - Returns: The token that removes it.
    nonisolated func addQueueObserver(_ handler: @escaping @Sendable () -> Void) -> UInt64 {
        queueObservers.withLock { observers in
            observers.next += 1
            observers.handlers[observers.next] = handler
            return observers.next
        }
    }

    /// Stops calling the handler `token` names.
    nonisolated func removeQueueObserver(_ token: UInt64) {
        _ = queueObservers.withLock { $0.handlers.removeValue(forKey: token) }
    }

    /// The headers every queued request carries; with repeatable requests a
    /// `Repeatability-Request-ID` and `Repeatability-First-Sent`, stored before the first send so
    /// that a re-send after a lost answer carries the same ones.
    nonisolated func queuedHeaders(_ headers: HTTPFields = HTTPFields()) -> HTTPFields {
        var headers = headers
        if parameters.enableRepeatableRequests {
            for field in UploadMachine.repeatabilityHeaders(requestID: UUID().uuidString.lowercased(), firstSent: Date()) {
                headers[field.name] = field.value
            }
        }
        return headers
    }

    /// Checks a body's members against the entity type and turns `Nav@odata.bind` into
    /// foreign-key values. Returns the structural properties.
    private nonisolated func properties(of body: JSONObject, set: String, type: ServiceModel.EntityType, model: ServiceModel,
                                        lookup: Lookup) throws -> JSONObject {
        var properties = JSONObject()
        for (name, value) in body {
            if name.hasPrefix("@") { continue }
            if name.hasSuffix("@odata.bind") {
                let navigationName = String(name.dropLast("@odata.bind".count))
                guard let navigation = type.navigation[navigationName] else {
                    throw OfflineODataError(.invalidRequest, "'\(navigationName)' is not a navigation property of \(set)")
                }
                guard !navigation.isCollection, let reference = value.stringValue else {
                    throw OfflineODataError(.invalidRequest, "binding '\(name)' must be one entity reference (collections are not bound locally)")
                }
                guard !navigation.constraints.isEmpty, let targetSet = model.targetSet(from: set, navigation: navigationName) else {
                    throw OfflineODataError(.invalidRequest, "'\(navigationName)' has no referential constraint to bind locally")
                }
                let target = try localEntity(reference, in: targetSet, model: model, lookup: lookup, naming: "bound by '\(name)'")
                for (property, referenced) in navigation.constraints { properties[property] = target.entity[referenced] ?? .null }
                continue
            }
            if name.contains("@") { continue }
            if type.navigation[name] != nil {
                throw OfflineODataError(.invalidRequest, "'\(name)': deep inserts and updates are not supported locally; use '\(name)@odata.bind'")
            }
            guard let declared = type.propertyTypes[name] else {
                throw OfflineODataError(.invalidRequest, "'\(name)' is not a property of \(set)")
            }
            properties[name] = CanonicalKey.coerce(value, type: declared)
        }
        return properties
    }

    /// The target of a change: an entity set, or one entity, possibly reached by navigation.
    nonisolated func changeTarget(_ parsed: LocalRequest, store: EntityStore, model: ServiceModel,
                                          lookup: Lookup) throws -> (set: String, record: EntityRecord?, parent: (EntityRecord, String)?) {
        let segments = parsed.path.segments
        guard let first = segments.first, let type = model.entityType(ofSet: first.name) else {
            if segments.first?.name == LocalQuery.requestQueueSet {
                throw OfflineODataError(.invalidRequest, "RequestQueue is read-only; use cancelPendingRequests() to undo local changes")
            }
            throw OfflineODataError(.invalidRequest, "'\(segments.first?.name ?? parsed.rawPath)' is not an entity set of this store")
        }
        guard segments.count <= 2 else { throw OfflineODataError(.invalidRequest, "'\(parsed.rawPath)' is too deep for a local change") }
        guard let key = first.key else {
            guard segments.count == 1 else { throw OfflineODataError(.invalidRequest, "'\(parsed.rawPath)' needs a key before the navigation") }
            return (first.name, nil, nil)
        }
        let canonical = try CanonicalKey.render(predicate: key, type: type, set: first.name)
        guard let record = try lookup(first.name, canonical), record.isVisible else {
            throw OfflineODataError(.entityNotFound, "\(first.name)\(canonical) is not in the local store")
        }
        guard segments.count == 2 else { return (first.name, record, nil) }
        let navigation = segments[1]
        let query = LocalQuery(store: store, model: model)
        guard let related = try query.related(record, navigation: navigation.name) else {
            throw OfflineODataError(.invalidRequest, "'\(navigation.name)' is not a navigation property of \(first.name)")
        }
        if let navigationKey = navigation.key, let targetType = model.entityType(ofSet: related.set) {
            let targetKey = try CanonicalKey.render(predicate: navigationKey, type: targetType, set: related.set)
            guard let match = related.records.first(where: { $0.key == targetKey }) else {
                throw OfflineODataError(.entityNotFound, "\(related.set)\(targetKey) is not related to \(record.reference)")
            }
            return (related.set, match, nil)
        }
        if related.isCollection { return (related.set, nil, (record, navigation.name)) }
        guard let single = related.records.first else {
            throw OfflineODataError(.entityNotFound, "\(record.reference)/\(navigation.name) leads to no entity")
        }
        return (related.set, single, nil)
    }

    func create(_ parsed: LocalRequest, body: Data?, customTag: String?, store: EntityStore) async throws -> ODataResponse {
        let model = self.model
        let (record, counters) = try await store.write { changes in
            try self.createChange(parsed, body: body, customTag: customTag, model: model, store: store, changes: changes)
        }
        noteCounters(counters)
        var payload = JSONObject()
        payload.append(.string(serviceRoot + "$metadata#" + record.set + "/$entity"), forKey: "@odata.context")
        for (name, value) in LocalQuery.json(record) { payload.append(value, forKey: name) }
        return Self.jsonResponse(.object(payload), status: 201)
    }

    /// A create, decided and written in one transaction.
    private nonisolated func createChange(_ parsed: LocalRequest, body: Data?, customTag: String?, model: ServiceModel, store: EntityStore,
                                          changes: EntityStore.Changes) throws -> (EntityRecord, StoreCounters) {
        let lookup: Lookup = { try changes.current(set: $0, key: $1) }
        let target = try changeTarget(parsed, store: store, model: model, lookup: lookup)
        guard target.record == nil else { throw OfflineODataError(.invalidRequest, "POST creates in a collection; '\(parsed.rawPath)' is one entity") }
        let set = target.set
        guard let type = model.entityType(ofSet: set) else { throw OfflineODataError(.invalidRequest, "unknown set \(set)") }
        let object = try Self.bodyObject(body)
        var properties = try properties(of: object, set: set, type: type, model: model, lookup: lookup)
        // Creating through a collection navigation sets the foreign key to the parent.
        if let (parent, navigationName) = target.parent, let parentType = model.entityType(ofSet: parent.set),
           let partnerName = parentType.navigation[navigationName]?.partner, let partner = type.navigation[partnerName] {
            for (property, referenced) in partner.constraints { properties[property] = parent.entity[referenced] ?? .null }
        }
        var counters = try changes.currentCounters()
        try Self.fillTemporaryKey(&properties, type: type, set: set, counters: &counters)
        // Put the properties in declaration order, so local entities look like downloaded ones.
        var ordered = JSONObject()
        for name in type.propertyOrder { if let value = properties[name] { ordered.append(value, forKey: name) } }
        let key = try CanonicalKey.render(ordered, type: type)
        let existing = try changes.current(set: set, key: key)
        if let existing, existing.isVisible {
            throw OfflineODataError(.entityExists, "\(set)\(key) exists already in the local store")
        }
        let record = EntityRecord(set: set, key: key, order: counters.nextOrder, state: .created, entity: ordered,
                                  original: existing?.original, links: JSONObject())
        counters.nextOrder += 1
        try changes.putCounters(counters)
        let written = try queueChange(record, method: "POST", url: parsed.relativeURL(), body: body, headers: HTTPFields(),
                                      customTag: customTag, changes: changes)
        return (record, written)
    }

    /// Gives each key property without a value a temporary one (negative integers, `LOCAL-n`, a new UUID), which the
    /// back end's key replaces when the create is uploaded.
    ///
    /// - Throws: `OfflineODataError.invalidRequest` for a key property of a type no temporary value can be made for.
    nonisolated static func fillTemporaryKey(_ properties: inout JSONObject, type: ServiceModel.EntityType, set: String,
                                             counters: inout StoreCounters) throws(OfflineODataError) {
        for name in type.key where properties[name] == nil || properties[name]?.isNull == true {
            let temporary = counters.nextTemporaryKey
            counters.nextTemporaryKey += 1
            switch type.propertyTypes[name] ?? "Edm.String" {
            case "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte", "Edm.SByte", "Edm.Decimal":
                properties[name] = .int(-temporary)
            case "Edm.Guid":
                properties[name] = .string(UUID().uuidString.lowercased())
            case "Edm.String":
                properties[name] = .string("LOCAL-\(temporary)")
            default:
                throw OfflineODataError(.invalidRequest, "the key property '\(name)' of \(set) has no value and no temporary key can be made for its type")
            }
        }
    }

    func update(_ parsed: LocalRequest, body: Data?, replace: Bool, customTag: String?, store: EntityStore) async throws -> ODataResponse {
        let model = self.model
        let counters = try await store.write { changes in
            try self.updateChange(parsed, body: body, replace: replace, customTag: customTag, model: model, store: store, changes: changes)
        }
        noteCounters(counters)
        return ODataResponse(statusCode: 204)
    }

    /// An update, decided and written in one transaction.
    private nonisolated func updateChange(_ parsed: LocalRequest, body: Data?, replace: Bool, customTag: String?, model: ServiceModel,
                                          store: EntityStore, changes: EntityStore.Changes) throws -> StoreCounters {
        let lookup: Lookup = { try changes.current(set: $0, key: $1) }
        let target = try changeTarget(parsed, store: store, model: model, lookup: lookup)
        guard var record = target.record, let type = model.entityType(ofSet: target.set) else {
            throw OfflineODataError(.invalidRequest, "\(replace ? "PUT" : "PATCH") needs one entity; '\(parsed.rawPath)' is a collection")
        }
        let object = try Self.bodyObject(body)
        let properties = try properties(of: object, set: target.set, type: type, model: model, lookup: lookup)
        for name in type.key {
            if let value = properties[name], value != record.entity[name] {
                throw OfflineODataError(.invalidRequest, "the key property '\(name)' of \(record.reference) cannot change")
            }
        }
        var entity = record.entity
        if replace {
            for name in type.propertyOrder where !type.key.contains(name) { entity[name] = properties[name] ?? .null }
        } else {
            for (name, value) in properties { entity[name] = value }
        }
        if record.state == .downloaded {
            record.original = record.entity
            record.state = .updated
        }
        record.entity = entity
        return try queueChange(record, method: replace ? "PUT" : "PATCH", url: PercentEncoding.encodePath(record.reference), body: body,
                               headers: Self.ifMatch(record), customTag: customTag, changes: changes)
    }

    func delete(_ parsed: LocalRequest, customTag: String?, store: EntityStore) async throws -> ODataResponse {
        if let first = parsed.path.segments.first, first.name == LocalQuery.errorArchiveSet {
            return try await deleteErrorEntry(parsed, store: store)
        }
        let model = self.model
        let counters = try await store.write { changes in
            let target = try self.changeTarget(parsed, store: store, model: model, lookup: { try changes.current(set: $0, key: $1) })
            guard var record = target.record else {
                throw OfflineODataError(.invalidRequest, "DELETE needs one entity; '\(parsed.rawPath)' is a collection")
            }
            if record.state == .downloaded { record.original = record.entity }
            let headers = Self.ifMatch(record)
            record.state = .deleted
            return try self.queueChange(record, method: "DELETE", url: PercentEncoding.encodePath(record.reference), body: nil,
                                        headers: headers, customTag: customTag, changes: changes)
        }
        noteCounters(counters)
        return ODataResponse(statusCode: 204)
    }
}
