import Foundation

/// Reads OData JSON payloads (V4 and V2) into ``ODataEntity`` / ``ODataEntitySet`` and writes V4.
public enum ODataPayload {
    /// Control names that OData 4.01 allows without the `odata.` prefix.
    private static let shortControlNames: Set<String> = [
        "context", "etag", "id", "type", "nextLink", "deltaLink", "count", "editLink", "readLink",
        "navigationLink", "associationLink", "mediaEditLink", "mediaReadLink", "mediaContentType", "mediaEtag", "metadataEtag",
        "delta",
    ]

    /// Reads a collection payload: V4 `{"value": [...]}` or V2 `{"d": {"results": [...]}}` / `{"d": [...]}`.
    /// - Parameter bytes: the payload.
    /// - Returns: the collection.
    /// - Throws: ``ODataError`` `.malformedJSON`, or `.malformedPayload` naming what was missing.
    public static func decodeEntitySet<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(ODataError) -> ODataEntitySet {
        try decodeEntitySet(parsed: try JSON.parse(bytes))
    }

    /// Reads a collection payload as ``decodeEntitySet(_:)`` does and gives its entities as V4 JSON, each the
    /// ``ODataEntity/jsonV4`` of the entity ``decodeEntitySet(_:)`` reads. A V4 collection of plain entities — no
    /// control information but a leading `@odata.etag`, no property annotation — is read once: its objects are those
    /// parsed, with no ``ODataEntity`` made and taken apart again.
    /// - Parameter bytes: the payload.
    /// - Returns: the entities, the next link, the delta link and the count (`@odata.count` / V2 `__count`, when
    ///   the request asked for it).
    /// - Throws: ``ODataError`` `.malformedJSON`, or `.malformedPayload` naming what was missing.
    public static func decodeEntitySetAsV4<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(ODataError)
        -> (entities: [JSONObject], nextLink: String?, deltaLink: String?, count: Int?) {
        let parsed = try JSON.parse(bytes)
        if case .object(let root) = parsed, root["d"] == nil, case .array(let results)? = root["value"] {
            var entities: [JSONObject] = []
            entities.reserveCapacity(results.count)
            for item in results {
                guard case .object(let object) = item, isPlainV4(object) else { break }
                entities.append(object)
            }
            if entities.count == results.count {
                var (nextLink, deltaLink, count): (String?, String?, Int?) = (nil, nil, nil)
                for (name, member) in root {
                    switch controlName(name) ?? "" {
                    case "odata.nextLink": nextLink = try link(member, name: name)
                    case "odata.deltaLink": deltaLink = member.stringValue
                    case "odata.count": count = countValue(member)
                    default: break
                    }
                }
                return (entities, nextLink, deltaLink, count)
            }
        }
        let set = try decodeEntitySet(parsed: parsed)
        return (set.entities.map(\.jsonV4), set.nextLink, set.deltaLink, set.count)
    }

    /// An `@odata.count` as a number or, as some producers write it, a string of digits.
    private static func countValue(_ member: JSONValue) -> Int? {
        member.intValue.map { Int($0) } ?? member.stringValue.flatMap { Int($0) }
    }

    /// Whether an entity object is its own ``ODataEntity/jsonV4``: no member name holds `@` but a first `@odata.etag`.
    private static func isPlainV4(_ object: JSONObject) -> Bool {
        for (position, name) in object.keys.enumerated() where name.utf8.contains(UInt8(ascii: "@")) {
            guard position == 0, name == "@odata.etag" else { return false }
        }
        return true
    }

    private static func decodeEntitySet(parsed: JSONValue) throws(ODataError) -> ODataEntitySet {
        guard case .object(let root) = parsed else {
            throw ODataError(.malformedPayload, "a collection payload must be a JSON object")
        }
        if let d = root["d"] {
            // OData V2 (and V1): {"d": {"results": [...], "__next": ..., "__count": "..."}} or {"d": [...]}; the next
            // link is read wherever a producer puts it: in 'd', in a 'd.results' object wrapping the array once more,
            // or beside 'd'.
            let results: [JSONValue]
            var set = ODataEntitySet(entities: [])
            if let next = root["__next"] { set.nextLink = try link(next, name: "__next") }
            switch d {
            case .array(let array):
                results = array
            case .object(var object):
                if case .object(let wrapper)? = object["results"], case .array? = wrapper["results"] {
                    if let next = wrapper["__next"] { set.nextLink = try link(next, name: "d.results.__next") }
                    object["results"] = wrapper["results"]
                }
                guard let array = object["results"]?.arrayValue else {
                    throw ODataError(.malformedPayload, "a V2 collection needs 'd.results' to be an array")
                }
                results = array
                if let next = object["__next"] { set.nextLink = try link(next, name: "d.__next") }
                set.deltaLink = object["__delta"]?.stringValue
                set.count = object["__count"].flatMap { $0.stringValue.flatMap { Int($0) } ?? $0.intValue.map { Int($0) } }
            default:
                throw ODataError(.malformedPayload, "a V2 payload needs 'd' to be an object or an array")
            }
            set.entities = try results.enumerated().map { (index, value) throws(ODataError) in
                guard case .object(let object) = value else {
                    throw ODataError(.malformedPayload, "entity \(index) of the collection is not a JSON object")
                }
                return entityV2(object)
            }
            return set
        }
        guard let value = root["value"] else {
            throw ODataError(.malformedPayload, "a V4 collection needs a 'value' member")
        }
        guard case .array(let results) = value else {
            throw ODataError(.malformedPayload, "a V4 collection needs 'value' to be an array")
        }
        var set = ODataEntitySet(entities: [])
        for (name, member) in root {
            switch controlName(name) ?? "" {
            case "odata.nextLink": set.nextLink = try link(member, name: name)
            case "odata.deltaLink": set.deltaLink = member.stringValue
            case "odata.count": set.count = countValue(member)
            case "odata.context": set.context = member.stringValue
            default: break
            }
        }
        for (index, value) in results.enumerated() {
            guard case .object(let object) = value else {
                throw ODataError(.malformedPayload, "entity \(index) of the collection is not a JSON object")
            }
            switch try deltaItem(object, index: index) {
            case .entity(let entity): set.entities.append(entity)
            case .link(let link): set.links.append(link)
            }
        }
        return set
    }

    private enum DeltaItem {
        case entity(ODataEntity)
        case link(ODataDeltaLink)
    }

    /// One member of a (delta) collection: an entity, a deleted entity (4.01 `@removed`, or the 4.0 form with
    /// the context `#Set/$deletedEntity` and `id`/`reason` as properties, §15.4), or a 4.0 added or deleted
    /// link (`#Set/$link`, `#Set/$deletedLink`, §15.5.2).
    private static func deltaItem(_ object: JSONObject, index: Int) throws(ODataError) -> DeltaItem {
        let context = (object["@odata.context"] ?? object["@context"])?.stringValue ?? ""
        if context.hasSuffix("/$link") || context.hasSuffix("/$deletedLink") {
            guard let source = object["source"]?.stringValue, let relationship = object["relationship"]?.stringValue else {
                throw ODataError(.malformedPayload, "link \(index) of the delta collection needs 'source' and 'relationship'")
            }
            let removed = context.hasSuffix("/$deletedLink")
            let target = object["target"]?.stringValue
            guard removed || target != nil else {
                throw ODataError(.malformedPayload, "added link \(index) of the delta collection needs a 'target'")
            }
            return .link(ODataDeltaLink(source: source, relationship: relationship, target: target, isRemoved: removed))
        }
        var entity = entityV4(object)
        if context.hasSuffix("/$deletedEntity") {
            // 4.0: `id` and `reason` are properties of the deleted-entity object, not control information.
            entity.isRemoved = true
            if let id = entity.properties["id"]?.stringValue, entity.id == nil {
                entity.annotations.append(.string(id), forKey: "odata.id")
            }
            if entity.removedReason == nil { entity.removedReason = entity.properties["reason"]?.stringValue }
            entity.properties["id"] = nil
            entity.properties["reason"] = nil
        }
        return .entity(entity)
    }

    /// Reads a single-entity payload: a V4 entity object or V2 `{"d": {...}}`.
    /// - Parameter bytes: the payload.
    /// - Returns: the entity.
    /// - Throws: ``ODataError`` `.malformedJSON` or `.malformedPayload`.
    public static func decodeEntity<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(ODataError) -> ODataEntity {
        guard case .object(let root) = try JSON.parse(bytes) else {
            throw ODataError(.malformedPayload, "an entity payload must be a JSON object")
        }
        if root.count == 1, case .object(let d)? = root["d"] {
            if let results = d["results"], case .object(let entity)? = results.arrayValue?.first, results.arrayValue?.count == 1 {
                return entityV2(entity)
            }
            return entityV2(d)
        }
        if root["value"]?.arrayValue != nil, root.keys.allSatisfy({ $0 == "value" || $0.hasPrefix("@") }) {
            throw ODataError(.malformedPayload, "expected a single entity, got a collection")
        }
        return entityV4(root)
    }

    /// Reads one V4 entity object (control information by `@` name).
    /// - Parameter object: the JSON object.
    /// - Returns: the entity.
    public static func entityV4(_ object: JSONObject) -> ODataEntity {
        var entity = ODataEntity(properties: JSONObject())
        for (name, value) in object {
            if name.hasPrefix("@") {
                let annotation = normalizedAnnotation(String(name.dropFirst()))
                if annotation == "removed" || annotation == "odata.removed" {
                    entity.isRemoved = true
                    entity.removedReason = value["reason"]?.stringValue
                } else {
                    entity.annotations.append(value, forKey: annotation)
                }
            } else if let at = name.firstIndex(of: "@") {
                let property = name[..<at]
                let annotation = normalizedAnnotation(String(name[name.index(after: at)...]))
                entity.annotations.append(value, forKey: property + "@" + annotation)
            } else {
                entity.properties.append(value, forKey: name)
            }
        }
        return entity
    }

    /// Reads one V2 entity object (`__metadata`, `__deferred`, nested `results`).
    /// - Parameter object: the JSON object.
    /// - Returns: the entity.
    public static func entityV2(_ object: JSONObject) -> ODataEntity {
        var entity = ODataEntity(properties: JSONObject())
        for (name, value) in object {
            if name == "__metadata", case .object(let metadata) = value {
                if let uri = metadata["uri"] {
                    entity.annotations.append(metadata["id"] ?? uri, forKey: "odata.id")
                    entity.annotations.append(uri, forKey: "odata.editLink")
                }
                if let etag = metadata["etag"] { entity.annotations.append(etag, forKey: "odata.etag") }
                // A media entity's media resource (V2 JSON: `media_src`, `edit_media`, `content_type`, `media_etag`).
                for (v2, v4) in [("media_src", "odata.mediaReadLink"), ("edit_media", "odata.mediaEditLink"),
                                 ("content_type", "odata.mediaContentType"), ("media_etag", "odata.mediaEtag")] {
                    if let value = metadata[v2] { entity.annotations.append(value, forKey: v4) }
                }
                if let type = metadata["type"] { entity.annotations.append(type, forKey: "odata.type") }
                // SAP Gateway's V2 delta marks a deleted entity in its metadata.
                if metadata["deleted"]?.boolValue == true { entity.isRemoved = true }
                continue
            }
            if name == "__deleted" {
                entity.isRemoved = true
                continue
            }
            switch value {
            case .object(let nested) where nested["__deferred"] != nil:
                // A navigation property that was not expanded: keep its link, not a value.
                if let uri = nested["__deferred"]?["uri"] { entity.annotations.append(uri, forKey: name + "@odata.navigationLink") }
            case .object(let nested) where nested["results"]?.arrayValue != nil:
                let results = nested["results"]?.arrayValue ?? []
                entity.properties.append(.array(results.map { element in
                    guard case .object(let child) = element else { return element }
                    return .object(entityV2(child).jsonV4)
                }), forKey: name)
            case .object(let nested) where nested["__metadata"] != nil:
                entity.properties.append(.object(entityV2(nested).jsonV4), forKey: name)
            default:
                entity.properties.append(value, forKey: name)
            }
        }
        return entity
    }

    /// Writes a V4 collection payload.
    /// - Parameters:
    ///   - set: the collection.
    /// - Returns: UTF-8 JSON.
    public static func encodeEntitySet(_ set: ODataEntitySet) -> [UInt8] {
        var root = JSONObject()
        if let context = set.context { root.append(.string(context), forKey: "@odata.context") }
        if let count = set.count { root.append(.int(Int64(count)), forKey: "@odata.count") }
        root.append(.array(set.entities.map { .object($0.jsonV4) }), forKey: "value")
        if let nextLink = set.nextLink { root.append(.string(nextLink), forKey: "@odata.nextLink") }
        if let deltaLink = set.deltaLink { root.append(.string(deltaLink), forKey: "@odata.deltaLink") }
        return JSON.serialize(.object(root))
    }

    /// Writes a V4 single-entity payload.
    /// - Parameters:
    ///   - entity: the entity.
    ///   - context: the `@odata.context`, if any.
    /// - Returns: UTF-8 JSON.
    public static func encodeEntity(_ entity: ODataEntity, context: String? = nil) -> [UInt8] {
        var object = JSONObject()
        if let context { object.append(.string(context), forKey: "@odata.context") }
        for (name, value) in entity.jsonV4 { object.append(value, forKey: name) }
        return JSON.serialize(.object(object))
    }

    /// The control name of a member of a V4 collection object: `@odata.nextLink`, 4.01's `@nextLink` and the
    /// unprefixed `odata.nextLink` of JSON Light (OData V3, early V4 producers) all read `odata.nextLink`; nil for a
    /// member that is no control information.
    private static func controlName(_ name: String) -> String? {
        if name.utf8.first == UInt8(ascii: "@") { return normalizedAnnotation(String(name.dropFirst())) }
        if name == "odata.nextLink" || name == "odata.deltaLink" { return name }
        return nil
    }

    /// Reads a next link in any form a producer writes it: a URL string (V4 `@odata.nextLink`, V2 `__next`), or
    /// an object with a `uri` string (a V2 `__next` written as `__deferred` and `__metadata` are, `{"uri": "…"}`).
    /// `null` is no next link. Anything else fails: a next link that cannot be read must not end a paged read
    /// as if it were the last page.
    ///
    /// - Parameters:
    ///   - member: the member's value.
    ///   - name: the member's name, for the error.
    /// - Returns: the link, or nil for `null`.
    /// - Throws: ``ODataError`` `.malformedNextLink` naming the member and what it held.
    static func link(_ member: JSONValue, name: String) throws(ODataError) -> String? {
        switch member {
        case .null:
            return nil
        case .string(let text) where !text.isEmpty:
            return text
        case .object(let object):
            if case .string(let uri)? = object["uri"], !uri.isEmpty { return uri }
            throw ODataError(.malformedNextLink, "the next link '\(name)' is an object without a 'uri' string: \(String(decoding: JSON.serialize(member), as: UTF8.self).prefix(200))")
        default:
            throw ODataError(.malformedNextLink, "the next link '\(name)' is neither a URL string nor an object with a 'uri' string: \(String(decoding: JSON.serialize(member), as: UTF8.self).prefix(200))")
        }
    }

    private static func normalizedAnnotation(_ name: String) -> String {
        shortControlNames.contains(name) ? "odata." + name : name
    }
}
