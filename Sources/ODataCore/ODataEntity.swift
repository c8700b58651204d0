/// One entity read from an OData payload, V4 or V2, in one representation.
///
/// ``properties`` holds the structural and expanded navigation properties (nested values as JSON);
/// control information (`@odata.etag`, V2 `__metadata`, …) is lifted into ``annotations`` and the
/// typed accessors.
public struct ODataEntity: Sendable, Hashable {
    /// The properties, in payload order, without control information.
    public var properties: JSONObject
    /// Instance and property annotations, by normalized name (`odata.etag`, `Name@odata.type`).
    public var annotations: JSONObject
    /// Whether this is a delta tombstone (`@removed`, `@odata.removed`, V2 `__deleted`… ).
    public var isRemoved: Bool
    /// The reason of a tombstone (`deleted`, `changed`), if given.
    public var removedReason: String?

    /// Creates an entity.
    /// - Parameters:
    ///   - properties: the properties.
    ///   - annotations: the annotations, by normalized name.
    ///   - isRemoved: whether it is a tombstone.
    ///   - removedReason: the tombstone's reason.
    public init(properties: JSONObject, annotations: JSONObject = JSONObject(), isRemoved: Bool = false, removedReason: String? = nil) {
        self.properties = properties
        self.annotations = annotations
        self.isRemoved = isRemoved
        self.removedReason = removedReason
    }

    /// The entity's ETag (`@odata.etag`, V2 `__metadata.etag`).
    public var etag: String? { annotations["odata.etag"]?.stringValue }
    /// The entity's id (`@odata.id`, V2 `__metadata.id`/`uri`).
    public var id: String? { annotations["odata.id"]?.stringValue }
    /// The entity's type (`@odata.type`, V2 `__metadata.type`), without a leading `#`.
    public var type: String? { annotations["odata.type"]?.stringValue.map { $0.hasPrefix("#") ? String($0.dropFirst()) : $0 } }
    /// The edit link (`@odata.editLink`, V2 `__metadata.uri`).
    public var editLink: String? { annotations["odata.editLink"]?.stringValue }
    /// The entity set named by the entity's own context URL (`#Orders/$entity`, `#Customers/$deletedEntity`,
    /// `…/$metadata#Orders(…)/$entity`): in an OData 4.0 delta payload, a member of another set than the
    /// collection's (§15.5.2); `nil` without one.
    public var contextEntitySet: String? {
        guard let context = annotations["odata.context"]?.stringValue, let hash = context.firstIndex(of: "#") else { return nil }
        let fragment = context[context.index(after: hash)...]
        let name = fragment.prefix { $0 != "/" && $0 != "(" }
        return name.isEmpty ? nil : String(name)
    }

    /// The entity as V4 JSON: `@odata.*` control information first, then the properties.
    public var jsonV4: JSONObject {
        var object = JSONObject()
        for (name, value) in annotations where !name.utf8.contains(UInt8(ascii: "@")) { object.append(value, forKey: "@" + name) }
        if isRemoved {
            object.append(.object(removedReason.map { ["reason": .string($0)] } ?? [:]), forKey: "@removed")
        }
        for (name, value) in properties {
            object.append(value, forKey: name)
        }
        for (name, value) in annotations where name.utf8.contains(UInt8(ascii: "@")) { object.append(value, forKey: name) }
        return object
    }
}

/// An added or deleted link of an OData 4.0 delta payload (OData JSON Format 4.01 §15.5.2.1 Added Link and
/// §15.5.2.2 Deleted Link): `source`'s navigation property `relationship` gained or lost `target`.
public struct ODataDeltaLink: Sendable, Hashable {
    /// The id of the entity the relationship is defined on (absolute or relative).
    public var source: String
    /// The navigation property (path) of the source.
    public var relationship: String
    /// The id of the related entity; a deleted link of a single-valued navigation may omit it.
    public var target: String?
    /// Whether the link was deleted (`$deletedLink`) rather than added (`$link`).
    public var isRemoved: Bool

    /// Creates a link change.
    /// - Parameters:
    ///   - source: the source entity's id.
    ///   - relationship: the navigation property.
    ///   - target: the target entity's id.
    ///   - isRemoved: whether the link was deleted.
    public init(source: String, relationship: String, target: String?, isRemoved: Bool) {
        self.source = source
        self.relationship = relationship
        self.target = target
        self.isRemoved = isRemoved
    }
}

/// A collection read from an OData payload, with the paging and delta links that came with it.
public struct ODataEntitySet: Sendable, Hashable {
    /// The entities (and tombstones, in a delta response), in payload order.
    public var entities: [ODataEntity]
    /// The added and deleted links of an OData 4.0 delta response, in payload order.
    public var links: [ODataDeltaLink] = []
    /// `@odata.nextLink` / V2 `__next`: the next page, when the server pages.
    public var nextLink: String?
    /// `@odata.deltaLink` / V2 `__delta`: where to ask for changes later.
    public var deltaLink: String?
    /// `@odata.count` / V2 `__count`, when asked for.
    public var count: Int?
    /// `@odata.context`, if given.
    public var context: String?

    /// Creates a collection.
    /// - Parameters:
    ///   - entities: the entities.
    ///   - nextLink: the next link.
    ///   - deltaLink: the delta link.
    ///   - count: the count.
    ///   - context: the context URL.
    public init(entities: [ODataEntity], nextLink: String? = nil, deltaLink: String? = nil, count: Int? = nil, context: String? = nil) {
        self.entities = entities
        self.nextLink = nextLink
        self.deltaLink = deltaLink
        self.count = count
        self.context = context
    }
}
