import Foundation
import HTTPTypes
import ODataCore

/// The media resource of a media entity (an entity of a type with `HasStream="true"`): its bytes, content type and
/// version (the media ETag, which changes with every replace of the media and not with a change of the entity's
/// properties).
public struct FixtureMedia: Sendable, Hashable {
    /// The media's bytes, as `GET …/$value` returns them.
    public var bytes: [UInt8]
    /// The media's content type, as the last `PUT`/`POST` gave it.
    public var contentType: String
    /// The data's change sequence at the media's last replace.
    var version: Int64

    /// The media's ETag (`@odata.mediaEtag`, the `ETag` of `$value`).
    public var etag: String { "W/\"m\(version)\"" }

    /// The media the producer gives a loaded entity: a few KiB that depend on the entity (its set and key), so
    /// each entity's media differs from every other's.
    static func generated(for identity: String, contentType: String = "image/png") -> FixtureMedia {
        var state = UInt64(truncatingIfNeeded: identity.utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 })
        let count = 2048 + Int(state % 4096)
        var bytes = [UInt8]()
        bytes.reserveCapacity(count)
        for _ in 0..<count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes.append(UInt8(truncatingIfNeeded: state >> 56))
        }
        return FixtureMedia(bytes: bytes, contentType: contentType, version: 0)
    }
}

extension FixtureData {
    /// The media resource of a media entity, or one of an entity's stream properties.
    /// - Parameters:
    ///   - set: the entity set's name.
    ///   - key: the key properties.
    ///   - property: a stream property's name; `nil` for the media resource (`$value`).
    /// - Returns: the media, or `nil` when the entity's type has no stream (or no stream property of that name).
    /// - Throws: ``FixtureError`` `.notFound` when the set or entity does not exist.
    public func media(in set: String, key: JSONObject, property: String? = nil) throws(FixtureError) -> FixtureMedia? {
        let predicate = try self.predicate(for: key, in: set)
        guard let stored = sets[set]?.entities[predicate] else { throw FixtureError(.notFound, "no entity \(set)\(predicate)") }
        return property.map { stored.streams[$0] } ?? stored.media
    }

    /// Replaces the media resource of a media entity (what `PUT …/$value` does), or one of its stream properties
    /// (`PUT …/Name`); the media ETag changes, the entity's properties and ETag do not. A delta link reports the
    /// entity as changed (its `@odata.mediaEtag`, or `Name@odata.mediaEtag`, is).
    /// - Parameters:
    ///   - set: the entity set's name.
    ///   - key: the key properties.
    ///   - property: a stream property's name; `nil` for the media resource (`$value`).
    ///   - bytes: the new media.
    ///   - contentType: its content type.
    /// - Returns: the media as stored, with its new ETag.
    /// - Throws: ``FixtureError`` `.notFound` when the set or entity does not exist, `.invalidEntity` when the
    ///   entity's type has no stream (or no stream property of that name).
    @discardableResult
    public mutating func replaceMedia(
        in set: String, key: JSONObject, property: String? = nil, bytes: [UInt8], contentType: String
    ) throws(FixtureError) -> FixtureMedia {
        let predicate = try self.predicate(for: key, in: set)
        guard sets[set]?.entities[predicate] != nil else { throw FixtureError(.notFound, "no entity \(set)\(predicate)") }
        return try replaceMedia(in: set, predicate: predicate, property: property, bytes: bytes, contentType: contentType)
    }

    mutating func replaceMedia(
        in set: String, predicate: String, property: String?, bytes: [UInt8], contentType: String
    ) throws(FixtureError) -> FixtureMedia {
        let type = try entityType(of: set)
        if let property {
            guard type.streamProperties.contains(property) else {
                throw FixtureError(.invalidEntity, "\(set) has no stream property named \(property)")
            }
        } else if !type.hasStream {
            throw FixtureError(.invalidEntity, "\(set) is not a set of media entities (its type has no HasStream)")
        }
        sequence += 1
        let media = FixtureMedia(bytes: bytes, contentType: contentType, version: sequence)
        let stored = sets[set]!.entities[predicate]!
        if let property { sets[set]!.entities[predicate]!.streams[property] = media } else { sets[set]!.entities[predicate]!.media = media }
        sets[set]!.modified = Self.changeTime(after: sets[set]!.modified)
        // The entity's representation changed (its `@odata.mediaEtag`): a delta reports it; its own ETag stays.
        record(set: set, predicate: predicate, entity: stored.value, previous: stored.value, type: type)
        return media
    }
}

extension FixtureService {
    /// The `@odata.media…` annotations of a media entity (V2 writes them into `__metadata`), or a stream property's
    /// `Name@odata.media…` (V4 only; V2 has no stream properties).
    func mediaAnnotations(_ media: FixtureMedia, set: String, predicate: String, property: String? = nil) -> [(String, JSONValue)] {
        let link = serviceRoot + PercentEncoding.encodePath(set + predicate).replacingOccurrences(of: "'", with: "%27") + "/" + (property ?? "$value")
        let prefix = property ?? ""
        return [
            (prefix + "@odata.mediaReadLink", .string(link)), (prefix + "@odata.mediaEditLink", .string(link)),
            (prefix + "@odata.mediaContentType", .string(media.contentType)), (prefix + "@odata.mediaEtag", .string(media.etag)),
        ]
    }

    /// The stored media of a media entity (`property` `nil`) or a stream property.
    private func stream(_ data: FixtureData, set: String, predicate: String, property: String?) throws -> FixtureMedia {
        guard let stored = data.stored(in: set, predicate: predicate), let media = property.map({ stored.streams[$0] }) ?? stored.media else {
            throw ServiceFailure.notFound("\(set)\(predicate) has no \(property.map { "stream property \($0)" } ?? "media resource")")
        }
        return media
    }

    /// `GET …/$value` of a media entity, or `GET …/Name` of a stream property: the bytes with their content type and
    /// the media ETag (304 on a matching `If-None-Match`).
    func readMedia(set: String, predicate: String, property: String?, request: IncomingRequest, data: FixtureData) throws -> OutgoingResponse {
        let media = try stream(data, set: set, predicate: predicate, property: property)
        var headers = HTTPFields()
        headers[.eTag] = media.etag
        if let ifNoneMatch = request.headers[.ifNoneMatch], ETag.list(ifNoneMatch, contains: media.etag) {
            return OutgoingResponse(status: 304, headers: headers)
        }
        headers[.contentType] = media.contentType
        return OutgoingResponse(status: 200, headers: headers, body: media.bytes)
    }

    /// `PUT …/$value` of a media entity, or `PUT …/Name` of a stream property: replaces the bytes; an `If-Match` must
    /// name the current media ETag (412 otherwise). Answers 204 with the new media ETag.
    func replaceMedia(set: String, predicate: String, property: String?, request: IncomingRequest, state: inout State) throws -> OutgoingResponse {
        let current = try stream(state.data, set: set, predicate: predicate, property: property)
        if let ifMatch = request.headers[.ifMatch], !ETag.list(ifMatch, contains: current.etag) {
            throw ServiceFailure(412, "PreconditionFailed", "If-Match \(ifMatch) does not match the media ETag \(current.etag) of \(set)\(predicate)")
        }
        let media = try state.data.replaceMedia(
            in: set, predicate: predicate, property: property, bytes: request.body,
            contentType: request.headers[.contentType] ?? "application/octet-stream")
        var headers = HTTPFields()
        headers[.eTag] = media.etag
        return OutgoingResponse(status: 204, headers: headers)
    }

    /// Whether a `POST` to a set creates a media entity from its body: the set's type has a stream and the body is
    /// not JSON.
    func createsMediaEntity(set: String, request: IncomingRequest, data: FixtureData) -> Bool {
        guard let entitySet = model.entitySet(set), model.type(of: entitySet).hasStream else { return false }
        return !(request.headers[.contentType] ?? "").lowercased().hasPrefix("application/json")
    }
}
