import Foundation
import HTTPTypes
import ODataCore

/// The local state of a stored entity relative to the back end.
enum EntityState: String, Sendable {
    /// As downloaded.
    case downloaded = "d"
    /// Created locally, not uploaded.
    case created = "c"
    /// Changed locally, not uploaded.
    case updated = "u"
    /// Deleted locally, not uploaded (kept as a tombstone so undo can restore it).
    case deleted = "x"
}

/// One stored entity: its set, canonical key, properties (with `@odata.etag`), local state, the
/// downloaded original (for undo) and navigation links kept from `$expand`.
struct EntityRecord: Sendable, Hashable {
    var set: String
    var key: String
    var order: Int64
    var state: EntityState
    var entity: JSONObject
    var original: JSONObject?
    var links: JSONObject
    /// Set when an uploaded request on this entity failed (until its ErrorArchive entry is deleted).
    var inErrorState = false
    /// Set when the failed request was a delete: the entity is visible again.
    var isDeleteError = false
    /// The defining queries that brought this entity (a downloaded entity no query holds any more goes).
    var queries: [String] = []
    /// Set when the local copy may be behind the back end: a download skipped the entity's changes
    /// (it had local state then), or its failed change was given up. The next download reads it again.
    var needsRefresh = false

    static let inErrorStateAnnotation = "@com.sap.vocabularies.Offline.v1.inErrorState"
    static let isDeleteErrorAnnotation = "@com.sap.vocabularies.Offline.v1.isDeleteError"

    var reference: String { self.set + self.key }

    /// The JSON an entity is read as: `@odata.id` (its local reference), `@odata.etag`, then its properties.
    var json: JSONObject {
        var object = JSONObject()
        object.append(.string(reference), forKey: "@odata.id")
        if let etag = entity["@odata.etag"] { object.append(etag, forKey: "@odata.etag") }
        if inErrorState { object.append(.bool(true), forKey: Self.inErrorStateAnnotation) }
        if isDeleteError { object.append(.bool(true), forKey: Self.isDeleteErrorAnnotation) }
        for (name, value) in entity where name != "@odata.etag" { object.append(value, forKey: name) }
        return object
    }
    /// This record with what a download brought of the same entity: its properties and links over these
    /// (a second defining query or an `$expand` may carry other properties), its defining query added.
    func merging(downloaded: EntityRecord) -> EntityRecord {
        var merged = self
        for (name, value) in downloaded.entity { merged.entity[name] = value }
        for (name, value) in downloaded.links { merged.links[name] = value }
        for query in downloaded.queries where !merged.queries.contains(query) { merged.queries.append(query) }
        return merged
    }
    var isVisible: Bool { state != .deleted }
    /// Whether the entity holds local state a download must not overwrite: a change not uploaded, or a failed one.
    var hasLocalState: Bool { state != .downloaded || inErrorState }
}

/// One queued request, as kept in the request queue and shown by the `RequestQueue` entity set.
struct QueuedRequest: Sendable, Hashable {
    var id: Int64
    var method: String
    /// The URL relative to the service root, as it will be sent.
    var url: String
    var body: String?
    var customTag: String?
    /// The request's own headers (`If-Match`, `Repeatability-*`); kept in the record as a JSON object by name.
    var headers: HTTPFields
    /// `Set(key)` of the entity the request affects (its local, possibly temporary, key).
    var entity: String
    var createdAt: String
    /// For the replace of a media resource (`PUT Set(key)/$value`, or `PUT Set(key)/Name` of a stream property): its
    /// content type. The body is then not ``body`` but the entity's media resource as the store holds it when the
    /// request is sent, streamed from the store.
    var mediaContentType: String? = nil
    /// For the replace of a stream property: its name (``mediaContentType`` is set); `nil` for `$value`.
    var mediaProperty: String? = nil

    /// Whether the request replaces a media resource (``mediaContentType``).
    var isMedia: Bool { mediaContentType != nil }

    /// Set for a relationship request (`…/Nav/$ref`, V2 `…/$links/Nav`): its local effect, to undo it on failure.
    var link: LinkChange? = nil

    /// Whether the request creates its entity (a relationship `POST` does not).
    var isCreate: Bool { method == "POST" && link == nil }

    /// Whether the request changes `reference`: the entity it affects, or the one holding the foreign key it sets.
    func changes(_ reference: String) -> Bool {
        entity == reference || link?.holder == reference
    }

    /// The entity this request needs whose create failed in this or an earlier upload (the one it affects, or the
    /// "to" end it links to), with that create's request ID.
    func failedDependency(_ failedCreates: [String: Int64]) -> (String, Int64)? {
        if let id = failedCreates[entity] { return (entity, id) }
        if let target = link?.target, let id = failedCreates[target] { return (target, id) }
        return nil
    }

    /// The body sent: a relationship delete keeps its body (naming the "to" end, for the ErrorArchive) but sends none.
    var sentBody: String? {
        link != nil && method == "DELETE" ? nil : body
    }

    func encoded() -> [UInt8] {
        JSON.serialize(.object(jsonObject(internal: true)))
    }

    /// The entity `RequestQueue` shows; `internal` adds the members kept for upload.
    func jsonObject(internal: Bool = false) -> JSONObject {
        var object = JSONObject()
        object.append(.int(id), forKey: "RequestID")
        object.append(.string(method), forKey: "Method")
        object.append(.string(url), forKey: "URL")
        object.append(body.map(JSONValue.string) ?? .null, forKey: "Body")
        object.append(customTag.map(JSONValue.string) ?? .null, forKey: "CustomTag")
        object.append(.string("pending"), forKey: "Status")
        object.append(.string(entity), forKey: "AffectedEntity")
        object.append(.string(createdAt), forKey: "CreatedAt")
        if `internal` {
            var fields = JSONObject()
            for field in headers { fields.append(.string(field.value), forKey: field.name.rawName) }
            object.append(.object(fields), forKey: "Headers")
            if let mediaContentType { object.append(.string(mediaContentType), forKey: "MediaContentType") }
            if let mediaProperty { object.append(.string(mediaProperty), forKey: "MediaProperty") }
            if let link { object.append(.object(link.jsonObject()), forKey: "Link") }
        }
        return object
    }

    static func decode(_ bytes: [UInt8]) throws(OfflineODataError) -> QueuedRequest {
        guard let value = try? JSON.parse(bytes), let object = value.objectValue,
              let id = object["RequestID"]?.intValue, let method = object["Method"]?.stringValue,
              let url = object["URL"]?.stringValue, let entity = object["AffectedEntity"]?.stringValue
        else { throw OfflineODataError(.storage, "a queued request record is malformed") }
        var headers = HTTPFields()
        for (name, value) in object["Headers"]?.objectValue ?? JSONObject() {
            guard let fieldName = HTTPField.Name(name), let text = value.stringValue else {
                throw OfflineODataError(.storage, "queued request \(id) has a malformed header (\(name.debugDescription.prefix(40)))")
            }
            headers.append(HTTPField(name: fieldName, value: text))
        }
        return QueuedRequest(id: id, method: method, url: url, body: object["Body"]?.stringValue,
                             customTag: object["CustomTag"]?.stringValue, headers: headers,
                             entity: entity, createdAt: object["CreatedAt"]?.stringValue ?? "",
                             mediaContentType: object["MediaContentType"]?.stringValue,
                             mediaProperty: object["MediaProperty"]?.stringValue,
                             link: try object["Link"].map { value throws(OfflineODataError) in try LinkChange.decode(value, request: id) })
    }
}

/// The local effect of a queued relationship request: which link it changed and how, so that a refused request
/// puts the relationship back as it was (a deleted link reappears).
struct LinkChange: Sendable, Hashable {
    /// The navigation property of the "from" end (the request's ``QueuedRequest/entity``).
    var navigation: String
    /// `Set(key)` of the "to" end.
    var target: String
    /// `Set(key)` of the entity holding the foreign key: the "from" end of a single-valued navigation, the "to" end
    /// of a collection.
    var holder: String
    /// The holder's foreign-key values before the request.
    var before: JSONObject
    /// The values the request wrote (`null` for a delete).
    var after: JSONObject

    func jsonObject() -> JSONObject {
        ["Navigation": .string(navigation), "Target": .string(target), "Holder": .string(holder),
         "Before": .object(before), "After": .object(after)]
    }

    static func decode(_ value: JSONValue, request id: Int64) throws(OfflineODataError) -> LinkChange {
        guard let object = value.objectValue, let navigation = object["Navigation"]?.stringValue, let target = object["Target"]?.stringValue,
              let holder = object["Holder"]?.stringValue, let before = object["Before"]?.objectValue, let after = object["After"]?.objectValue
        else { throw OfflineODataError(.storage, "queued request \(id) has a malformed relationship record") }
        return LinkChange(navigation: navigation, target: target, holder: holder, before: before, after: after)
    }
}

/// The store's configuration record: service root, defining queries, completion of the initial
/// download, delta links, the CSDL, and counters.
/// Where an initial download that has not finished goes on: the defining query being read (an index into the
/// configuration's list), the URL of its first page not committed (nil: its first page), and its progress so far.
struct DownloadResume: Sendable, Hashable {
    var query: Int
    var next: String? = nil
    var entities = 0
    var bytes = 0
}

struct StoreConfiguration: Sendable, Hashable {
    var serviceRoot: String
    var definingQueries: [OfflineODataDefiningQuery]
    var downloadComplete: Bool
    var deltaLinks: [String: String]
    /// The service's CSDL. Not in ``encoded()`` (format 4 stores it in a `meta` row of its own); ``decode(_:)`` reads it
    /// from a record of format 2 or 3, and leaves it empty otherwise.
    var metadata: String
    var user: String?
    /// Set while the initial download is under way (``downloadComplete`` is false).
    var resume: DownloadResume? = nil

    func encoded() -> [UInt8] {
        var object = JSONObject()
        object.append(.string(serviceRoot), forKey: "serviceRoot")
        object.append(.array(definingQueries.map { query in
            var item: JSONObject = ["name": .string(query.name), "query": .string(query.query), "streams": .bool(query.automaticallyRetrievesStreams)]
            if !query.indexes.isEmpty { item.append(.array(query.indexes.map(JSONValue.string)), forKey: "indexes") }
            return .object(item)
        }), forKey: "definingQueries")
        object.append(.bool(downloadComplete), forKey: "complete")
        object.append(.object(JSONObject(deltaLinks.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) })), forKey: "deltaLinks")
        object.append(user.map(JSONValue.string) ?? .null, forKey: "user")
        if let resume {
            object.append(.object([
                "query": .int(Int64(resume.query)), "next": resume.next.map(JSONValue.string) ?? .null,
                "entities": .int(Int64(resume.entities)), "bytes": .int(Int64(resume.bytes)),
            ]), forKey: "resume")
        }
        return JSON.serialize(.object(object))
    }

    static func decode(_ bytes: [UInt8]) throws(OfflineODataError) -> StoreConfiguration {
        guard let value = try? JSON.parse(bytes), let object = value.objectValue,
              let root = object["serviceRoot"]?.stringValue, let queries = object["definingQueries"]?.arrayValue
        else { throw OfflineODataError(.storage, "the store's configuration record is malformed") }
        var links: [String: String] = [:]
        for (name, link) in object["deltaLinks"]?.objectValue ?? JSONObject() { links[name] = link.stringValue }
        return StoreConfiguration(
            serviceRoot: root,
            definingQueries: queries.compactMap { item in
                guard let name = item["name"]?.stringValue, let query = item["query"]?.stringValue else { return nil }
                return OfflineODataDefiningQuery(name: name, query: query, automaticallyRetrievesStreams: item["streams"]?.boolValue ?? false,
                                                 indexes: item["indexes"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            },
            downloadComplete: object["complete"]?.boolValue ?? false,
            deltaLinks: links,
            metadata: object["metadata"]?.stringValue ?? "",
            user: object["user"]?.stringValue,
            resume: object["resume"]?.objectValue.flatMap { resume in
                resume["query"]?.intValue.map { query in
                    DownloadResume(query: Int(query), next: resume["next"]?.stringValue,
                                   entities: Int(resume["entities"]?.intValue ?? 0), bytes: Int(resume["bytes"]?.intValue ?? 0))
                }
            })
    }
}

/// Counters that only grow: request IDs, entity order, temporary keys.
struct StoreCounters: Sendable, Hashable {
    var nextRequestID: Int64 = 1
    var nextOrder: Int64 = 1
    var nextTemporaryKey: Int64 = 1

    func encoded() -> [UInt8] {
        JSON.serialize(.object(["r": .int(nextRequestID), "o": .int(nextOrder), "t": .int(nextTemporaryKey)]))
    }

    static func decode(_ bytes: [UInt8]) throws(OfflineODataError) -> StoreCounters {
        guard let object = (try? JSON.parse(bytes))?.objectValue, let r = object["r"]?.intValue, let o = object["o"]?.intValue,
              let t = object["t"]?.intValue
        else { throw OfflineODataError(.storage, "the store's counter record is malformed") }
        return StoreCounters(nextRequestID: r, nextOrder: o, nextTemporaryKey: t)
    }
}
