import Foundation
import HTTPTypes
import ODataCore

/// A media resource (the `$value` of a media entity, or a stream property of an entity) as the offline store holds it.
public struct OfflineMediaResource: Sendable, Hashable {
    /// Its content type, as the back end gave it (or the local replace).
    public var contentType: String
    /// The back end's media ETag when it was downloaded or last uploaded; `nil` when the back end gave none.
    public var etag: String?
    /// Its size in bytes.
    public var size: Int64
    /// Whether it was replaced locally and the replace is not uploaded yet.
    public var isLocal: Bool
}

extension OfflineODataProvider {
    /// What the store holds of the media resource of a media entity, or of a stream property of an entity.
    ///
    /// - Parameters:
    ///   - entity: The entity, `Set(key)` as in a resource path (`Photos(1)`); a trailing `/$value` is allowed.
    ///   - property: A stream property (`Edm.Stream`) of the entity's type; `nil` for the media entity's `$value`.
    /// - Returns: The media resource's facts, or `nil` when the store holds none (not downloaded: its defining query
    ///   does not set ``OfflineODataDefiningQuery/automaticallyRetrievesStreams``).
    /// - Throws: `OfflineODataError` — `.notOpen`, `.invalidRequest` for a path that names no entity of the
    ///   service or a property that is not a stream property of its type, `.storage`.
    public func mediaResource(of entity: String, property: String? = nil) throws -> OfflineMediaResource? {
        let store = try openStore()
        let (id, name) = try mediaTarget(entity, property: property)
        return try store.mediaRecord(set: id.set, key: id.key, property: name).map {
            OfflineMediaResource(contentType: $0.contentType, etag: $0.etag, size: $0.size, isLocal: $0.isLocal)
        }
    }

    /// The bytes of the media resource of a media entity or a stream property, whole (for a small one; see
    /// ``writeMedia(of:property:to:)`` for one of any size).
    ///
    /// - Parameters:
    ///   - entity: The entity, `Photos(1)` or `Photos(1)/$value`.
    ///   - property: A stream property of the entity's type; `nil` for the media entity's `$value`.
    /// - Returns: The bytes, as the back end served them (or the local replace).
    /// - Throws: `OfflineODataError` — `.notOpen`, `.invalidRequest` for a path that names no entity or a property
    ///   that is not a stream property, `.entityNotFound` when the store holds no media resource for it, `.storage`.
    public func readMedia(of entity: String, property: String? = nil) throws -> Data {
        var bytes = Data()
        try streamMedia(of: entity, property: property) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// Writes the media resource of a media entity or a stream property to a file (created, or emptied, with mode
    /// 0600), a chunk at a time: memory holds one chunk whatever the stream's size.
    ///
    /// - Parameters:
    ///   - entity: The entity, `Photos(1)` or `Photos(1)/$value`.
    ///   - property: A stream property of the entity's type; `nil` for the media entity's `$value`.
    ///   - file: Where to write it.
    /// - Returns: The number of bytes written.
    /// - Throws: As ``readMedia(of:property:)``, and `.storage` when the file cannot be written.
    @discardableResult
    public func writeMedia(of entity: String, property: String? = nil, to file: URL) throws -> Int64 {
        guard FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw OfflineODataError(.storage, "cannot create \(file.path)")
        }
        let handle: FileHandle
        do { handle = try FileHandle(forWritingTo: file) } catch {
            throw OfflineODataError(.storage, "cannot write \(file.path): \(error.localizedDescription)", underlying: error)
        }
        var written: Int64 = 0
        do {
            try streamMedia(of: entity, property: property) { chunk in
                try handle.write(contentsOf: chunk)
                written += Int64(chunk.count)
            }
            try handle.close()
        } catch let error as OfflineODataError {
            try? handle.close()  // the first error is the one reported
            throw error
        } catch {
            try? handle.close()  // the first error is the one reported
            throw OfflineODataError(.storage, "cannot write \(file.path): \(error.localizedDescription)", underlying: error)
        }
        return written
    }

    /// Replaces the media resource of a media entity, or a stream property of an entity, locally and queues its
    /// upload: `PUT Set(key)/$value` (or `PUT Set(key)/Name`) with the content type, and `If-Match` with the media ETag
    /// the store holds (when the back end gave one). The file is copied into the encrypted store a chunk at a time
    /// (memory holds one chunk, whatever its size); the upload streams it from there. Local reads give the new bytes
    /// at once. Each replace queues a request of its own, which sends the media as the store holds it when it goes
    /// out; a failed one is archived like any request.
    ///
    /// - Parameters:
    ///   - entity: The entity, `Photos(1)` or `Photos(1)/$value`; the store must hold it.
    ///   - property: A stream property of the entity's type; `nil` for the media entity's `$value`.
    ///   - file: The new media's bytes.
    ///   - contentType: Their content type, sent as `Content-Type`.
    ///   - customTag: A tag kept with the queued request and its ErrorArchive entry.
    /// - Throws: `OfflineODataError` — `.notOpen`, `.invalidRequest` for a path that names no media entity (or a
    ///   property that is not a stream property), `.entityNotFound` when the store does not hold the entity,
    ///   `.storage` (also when the file cannot be read).
    public func replaceMedia(of entity: String, property: String? = nil, from file: URL, contentType: String, customTag: String? = nil) async throws {
        let store = try openStore()
        let (id, name) = try mediaTarget(entity, property: property)
        if property == nil, model.entityType(ofSet: id.set)?.hasStream != true {
            throw OfflineODataError(.invalidRequest, "\(id.set) is not a set of media entities (its type has no HasStream)")
        }
        let headers = queuedHeaders()
        let written = try await store.write { changes in
            guard let record = try changes.current(set: id.set, key: id.key), record.isVisible else {
                throw OfflineODataError(.entityNotFound, "the store holds no entity \(id.reference)")
            }
            let etag = try changes.currentMedia(set: id.set, key: id.key, property: name)?.etag
            var queued = headers
            if let etag { queued[.ifMatch] = etag }
            try changes.putMedia(set: id.set, key: id.key, property: name, etag: etag, contentType: contentType, isLocal: true, chunks: EntityStore.fileChunks(file.path))
            var counters = try changes.currentCounters()
            let request = QueuedRequest(id: counters.nextRequestID, method: "PUT", url: id.reference + "/" + (property ?? "$value"), body: nil,
                                        customTag: customTag, headers: queued, entity: id.reference, createdAt: Self.timestamp(),
                                        mediaContentType: contentType, mediaProperty: property)
            counters.nextRequestID += 1
            try changes.enqueue(request)
            try changes.putCounters(counters)
            return counters
        }
        noteCounters(written)
    }

    /// Creates a media entity locally from its media and queues its upload: `POST Set` with the file's bytes as the
    /// body and `contentType` as `Content-Type`, as the back end creates a media entity. The entity gets a temporary
    /// key (like any local create: negative integers, `LOCAL-n`, a new UUID) and no other property values; the media is
    /// copied into the encrypted store a chunk at a time and local reads give it at once. Later local changes may use
    /// the temporary key (``replaceMedia(of:property:from:contentType:customTag:)``, an update through
    /// ``execute(_:)``): when the create is uploaded, the entity the back end answers with replaces the local one,
    /// and its key replaces the temporary key in the store, its media and every later queued request. A refused create
    /// is archived like any request.
    ///
    /// - Parameters:
    ///   - set: The entity set, of a media entity type (`HasStream`).
    ///   - file: The media's bytes.
    ///   - contentType: Their content type, sent as `Content-Type`.
    ///   - customTag: A tag kept with the queued request and its ErrorArchive entry.
    /// - Returns: The new entity, `Set(key)` with its temporary key (`Photos(-1)`).
    /// - Throws: `OfflineODataError` — `.notOpen`, `.invalidRequest` for a set that is not one of media entities (or
    ///   whose key no temporary value can be made for), `.storage` (also when the file cannot be read).
    @discardableResult
    public func createMediaEntity(in set: String, from file: URL, contentType: String, customTag: String? = nil) async throws -> String {
        let store = try openStore()
        guard let type = model.entityType(ofSet: set), type.hasStream else {
            throw OfflineODataError(.invalidRequest, "\(set) is not a set of media entities (its type has no HasStream)")
        }
        let headers = queuedHeaders()
        let (reference, written) = try await store.write { changes in
            var counters = try changes.currentCounters()
            var properties = JSONObject()
            try Self.fillTemporaryKey(&properties, type: type, set: set, counters: &counters)
            let key = try CanonicalKey.render(properties, type: type)
            let record = EntityRecord(set: set, key: key, order: counters.nextOrder, state: .created, entity: properties, original: nil,
                                      links: JSONObject())
            counters.nextOrder += 1
            try changes.put(record)
            try changes.putMedia(set: set, key: key, property: "", etag: nil, contentType: contentType, isLocal: true, chunks: EntityStore.fileChunks(file.path))
            let request = QueuedRequest(id: counters.nextRequestID, method: "POST", url: PercentEncoding.encodePath(set), body: nil,
                                        customTag: customTag, headers: headers, entity: record.reference, createdAt: Self.timestamp(),
                                        mediaContentType: contentType)
            counters.nextRequestID += 1
            try changes.enqueue(request)
            try changes.putCounters(counters)
            return (record.reference, counters)
        }
        noteCounters(written)
        return reference
    }

    /// Hands the stored media bytes of an entity's `$value` or stream property to `body` chunk by chunk.
    private func streamMedia(of entity: String, property: String?, _ body: ([UInt8]) throws -> Void) throws {
        let store = try openStore()
        let (id, name) = try mediaTarget(entity, property: property)
        guard try store.mediaRecord(set: id.set, key: id.key, property: name) != nil else {
            throw OfflineODataError(.entityNotFound, "the store holds no media resource for \(id.reference)\(property.map { "/" + $0 } ?? "")")
        }
        try store.readMedia(set: id.set, key: id.key, property: name, body)
    }

    /// The set and key of a media entity's path (`Photos(1)`, `Photos(1)/$value`), and the media's property in the
    /// media tables (`''` for `$value`; a `property` must be a stream property of the entity's type).
    private func mediaTarget(_ path: String, property: String?) throws(OfflineODataError) -> (EntityID, String) {
        let id = try Self.mediaEntity(path, serviceRoot: serviceRoot, model: model)
        guard let property else { return (id, "") }
        guard model.entityType(ofSet: id.set)?.streamProperties.contains(property) == true else {
            throw OfflineODataError(.invalidRequest, "\(property) is not a stream property (Edm.Stream) of the type of \(id.set)")
        }
        return (id, property)
    }

    private nonisolated static func mediaEntity(_ path: String, serviceRoot: String, model: ServiceModel) throws(OfflineODataError) -> EntityID {
        let trimmed = path.hasSuffix("/$value") ? String(path.dropLast("/$value".count)) : path
        do {
            return try EntityID.resolve(trimmed, serviceRoot: serviceRoot, model: model)
        } catch {
            throw OfflineODataError(.invalidRequest, "'\(path)' names no entity of the service: \(error.message)")
        }
    }

    /// A local `GET Set(key)/$value` of a media entity, or `GET Set(key)/Name` of a stream property: the media bytes
    /// with their `Content-Type` and `ETag` (whole in the response; ``writeMedia(of:property:to:)`` writes one of any
    /// size to a file). `nil` for any other request.
    ///
    /// - Throws: `OfflineODataError.entityNotFound` when the store holds no media resource for the entity, `.storage`.
    nonisolated func mediaRead(_ request: ODataRequest, store: EntityStore, model: ServiceModel) throws -> ODataResponse? {
        let path = request.resourcePath
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let last = path[path.index(after: slash)...]
        let property: String
        if last == "$value" {
            property = ""
        } else {
            // Only a name the first segment's type declares as a stream: the query engine answers everything else.
            let first = path.prefix { $0 != "(" && $0 != "/" }
            guard model.entityType(ofSet: String(first))?.streamProperties.contains(String(last)) == true else { return nil }
            property = String(last)
        }
        guard let id = try? Self.mediaEntity(String(path[..<slash]), serviceRoot: serviceRoot, model: model),
              property.isEmpty ? model.entityType(ofSet: id.set)?.hasStream == true : model.entityType(ofSet: id.set)?.streamProperties.contains(property) == true
        else { return nil }  // not a media entity's `$value` or a stream property: the query engine answers (or refuses) it
        guard let record = try store.mediaRecord(set: id.set, key: id.key, property: property) else {
            throw OfflineODataError(.entityNotFound, "the store holds no media resource for \(path)")
        }
        var bytes = Data()
        try store.readMedia(set: id.set, key: id.key, property: property) { bytes.append(contentsOf: $0) }
        var fields = HTTPFields()
        fields[.contentType] = record.contentType
        if let etag = record.etag { fields[.eTag] = etag }
        return ODataResponse(statusCode: 200, headerFields: fields, payload: bytes)
    }
}
