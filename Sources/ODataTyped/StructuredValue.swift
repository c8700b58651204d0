public import ODataCore
public import ODataQuery

/// A complex type generated from `$metadata`: a `Sendable`, `Codable` struct with typed properties that
/// reads itself from OData JSON member by member and keeps what it does not declare.
public protocol StructuredValue: ODataValue, Codable, Hashable {
    /// The qualified type name (`NorthwindModel.Customer`).
    static var odataTypeName: String { get }
    /// OData control information, annotations and properties the type does not declare.
    var odata: ODataMetadata { get set }
    /// A value with every property at its default.
    init()
    /// Reads a value from OData JSON (V4 or V2).
    /// - Parameter reader: the reader, before the value's `{`.
    /// - Throws: ``DataServiceError`` naming the property that did not fit.
    init(from reader: inout EntityReader) throws(DataServiceError)
    /// Writes the structural properties (not navigation properties), then the kept unknown ones.
    /// - Parameter writer: the writer.
    func write(to writer: inout EntityWriter)
}

extension StructuredValue {
    /// Reads a value with ``init(from:)``.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Self { try Self(from: &reader) }

    /// The properties ``write(to:)`` writes, as a JSON object.
    public func jsonValue(for version: ODataVersion) -> JSONValue { .object(properties(for: version)) }

    /// A JSON object literal.
    public var literal: Literal { .json(jsonValue(for: .v4)) }

    /// The properties ``write(to:)`` writes.
    /// - Parameter version: the service's version.
    /// - Returns: the JSON object.
    public func properties(for version: ODataVersion) -> JSONObject {
        var writer = EntityWriter(version: version)
        write(to: &writer)
        return writer.object
    }

    /// Reads a value from a whole payload: the value itself, V2's `{"d": …}` or a one-entity V2 `results`.
    /// - Parameter bytes: the payload.
    /// - Returns: the value.
    /// - Throws: ``DataServiceError``.
    public static func decode<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(DataServiceError) -> Self {
        try EntityReader.read(bytes) { (reader: inout EntityReader) throws(DataServiceError) in
            guard try reader.nextObjectStarts(with: "d") else { return try Self(from: &reader) }
            var value: Self?
            try reader.beginObject("response")
            while let name = try reader.nextMember() {
                guard name == "d" else { try reader.skipValue(); continue }
                if try reader.nextObjectStarts(with: "results") {
                    let all = try [Self].read(from: &reader)
                    guard all.count == 1 else { throw reader.mismatch("expected one \(odataTypeName), found \(all.count)") }
                    value = all[0]
                } else {
                    value = try Self(from: &reader)
                }
            }
            guard let value else { throw reader.mismatch("expected a \(odataTypeName) in 'd'") }
            return value
        }
    }
}

/// An entity type generated from `$metadata`.
public protocol EntityValue: StructuredValue {
    /// The key properties, as OData names them, in key order.
    static var keyPropertyNames: [String] { get }
    /// The key, for URLs (`Customers('ALFKI')`).
    var entityKey: EntityKey { get }
}

/// OData control information of a typed value, and what its type does not declare.
public struct ODataMetadata: Sendable, Hashable {
    /// The entity tag (`@odata.etag`, V2 `__metadata.etag`): sent as `If-Match` by updates and deletes.
    public var etag: String?
    /// The entity id (`@odata.id`, V2 `__metadata.uri`).
    public var id: String?
    /// The edit link (`@odata.editLink`, V2 `__metadata.uri`).
    public var editLink: String?
    /// The read link (`@odata.readLink`).
    public var readLink: String?
    /// The type the payload named (`@odata.type`), when it named one.
    public var type: String?
    /// The entity set the value was read from or written to, when known.
    public var entitySet: String?
    /// Other annotations, by the name they had in the payload (`@com.sap.vocabularies.Offline.v1.inErrorState`,
    /// `Orders@odata.navigationLink`).
    public var annotations = JSONObject()
    /// Properties the generated type does not declare (a newer service's), kept as read and written back
    /// by a full update; a partial update leaves them alone on the server.
    public var unknownProperties = JSONObject()

    /// Empty metadata.
    public init() {}

    /// Whether the offline store marked the entity as in error state (its uploaded request failed).
    public var inErrorState: Bool { annotations["@com.sap.vocabularies.Offline.v1.inErrorState"]?.boolValue == true }
    /// Whether the offline store marked the entity as a failed delete (it reappeared).
    public var isDeleteError: Bool { annotations["@com.sap.vocabularies.Offline.v1.isDeleteError"]?.boolValue == true }
}

/// The key of an entity: its key properties' names and values, in key order.
public struct EntityKey: Sendable, Hashable {
    /// One key property.
    public struct Part: Sendable, Hashable {
        /// The property's OData name.
        public var name: String
        /// Its value as a literal.
        public var value: Literal
    }

    /// The key properties, in key order.
    public var parts: [Part]

    /// A key from name/value pairs: `EntityKey(("OrderID", 10248), ("ProductID", 11))`.
    /// - Parameter parts: the key properties in key order.
    public init(_ parts: (String, any ODataValue)...) {
        self.parts = parts.map { Part(name: $0.0, value: $0.1.literal) }
    }

    /// The key predicate for a URL: `('ALFKI')` for a single key, `(OrderID=10248,ProductID=11)` for a
    /// composite one, with V2 literal forms for a V2 service.
    /// - Parameter version: the service's version.
    /// - Returns: the predicate (not percent-encoded).
    /// - Throws: ``DataServiceError`` `.invalidEntity` for an empty key or a value with no literal form.
    public func predicate(for version: ODataVersion) throws(DataServiceError) -> String {
        guard !parts.isEmpty else { throw DataServiceError(.invalidEntity, "the entity has no key values") }
        do {
            if parts.count == 1 { return "(" + (try FilterExpression.literal(parts[0].value).text(for: version)) + ")" }
            var pieces: [String] = []
            for part in parts { pieces.append(part.name + "=" + (try FilterExpression.literal(part.value).text(for: version))) }
            return "(" + pieces.joined(separator: ",") + ")"
        } catch {
            throw DataServiceError(.invalidEntity, "the key cannot be written: \(error.message)")
        }
    }
}

/// A box that lets a struct hold a value of its own type (a to-one navigation property such as
/// `Employee.manager`), with value semantics.
public enum Indirect<Wrapped> {
    /// The boxed value.
    indirect case wrapped(Wrapped)

    /// Boxes a value.
    /// - Parameter value: the value.
    public init(_ value: Wrapped) { self = .wrapped(value) }

    /// The boxed value.
    public var value: Wrapped {
        switch self { case .wrapped(let value): value }
    }
}

extension Indirect: Sendable where Wrapped: Sendable {}
extension Indirect: Equatable where Wrapped: Equatable {}
extension Indirect: Hashable where Wrapped: Hashable {}
extension Indirect: Codable where Wrapped: Codable {
    /// Reads the boxed value itself.
    /// - Parameter decoder: the decoder.
    public init(from decoder: any Decoder) throws { self = .wrapped(try Wrapped(from: decoder)) }
    /// Writes the boxed value itself.
    /// - Parameter encoder: the encoder.
    public func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// Collects a typed value's properties as OData JSON for a service's version.
public struct EntityWriter {
    /// The service's version: it decides the JSON forms of Int64, decimals, dates and times.
    public let version: ODataVersion
    /// The properties written so far.
    public private(set) var object = JSONObject()

    /// A writer for a service of `version`.
    /// - Parameter version: the version.
    public init(version: ODataVersion) { self.version = version }

    /// Writes one property.
    /// - Parameters:
    ///   - name: the OData name.
    ///   - value: the value.
    public mutating func write<T: ODataValue>(_ name: String, _ value: T) {
        object.append(value.jsonValue(for: version), forKey: name)
    }

    /// Writes the properties the type does not declare that were kept when it was read.
    /// - Parameter metadata: the value's metadata.
    public mutating func writeOther(_ metadata: ODataMetadata) {
        for (name, value) in metadata.unknownProperties where object[name] == nil { object.append(value, forKey: name) }
    }
}
