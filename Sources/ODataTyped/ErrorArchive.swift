import ODataCore

/// An entry of the offline store's `ErrorArchive`: one failed request of an upload, with the back end's
/// error and a navigation `AffectedEntity` to the entity the request touched.
///
/// ```swift
/// var entry = try await service.fetch(ErrorArchiveEntry.entitySet, matching: DataQuery().orderBy(ErrorArchiveEntry.requestID))[0]
/// try await service.loadProperty(ErrorArchiveEntry.affectedEntity, into: &entry)
/// if let event = ErrorArchiveEntry.affectedEntity.entityValue(from: entry) as? Event { … }
/// ```
public struct ErrorArchiveEntry: EntityValue {
    /// The type name the offline store gives its entries.
    public static let odataTypeName = "Offline.ErrorArchive"
    /// The key: `RequestID`.
    public static let keyPropertyNames = ["RequestID"]
    /// The offline store's `ErrorArchive` set.
    public static let entitySet = EntitySet<ErrorArchiveEntry>("ErrorArchive")

    /// The id of the failed request (its place in the request queue).
    public var requestID: Int64 = 0
    /// The path of `RequestID`.
    public static let requestID = Property<ErrorArchiveEntry, Int64>("RequestID")
    /// The HTTP method (`POST`, `PATCH`, `DELETE`…).
    public var requestMethod = ""
    /// The path of `RequestMethod`.
    public static let requestMethod = Property<ErrorArchiveEntry, String>("RequestMethod")
    /// The request URL, relative to the service root.
    public var requestURL = ""
    /// The path of `RequestURL`.
    public static let requestURL = Property<ErrorArchiveEntry, String>("RequestURL")
    /// The request body, if it had one.
    public var requestBody: String?
    /// The path of `RequestBody`.
    public static let requestBody = Property<ErrorArchiveEntry, String?>("RequestBody")
    /// The HTTP status the back end answered with (nil for a transport failure).
    public var httpStatusCode: Int32?
    /// The path of `HTTPStatusCode`.
    public static let httpStatusCode = Property<ErrorArchiveEntry, Int32?>("HTTPStatusCode")
    /// The back end's error code.
    public var code: String?
    /// The path of `Code`.
    public static let code = Property<ErrorArchiveEntry, String?>("Code")
    /// The error message.
    public var message = ""
    /// The path of `Message`.
    public static let message = Property<ErrorArchiveEntry, String>("Message")
    /// The back end's inner error, as JSON text.
    public var innerError: String?
    /// The path of `InnerError`.
    public static let innerError = Property<ErrorArchiveEntry, String?>("InnerError")
    /// Where the failure came from (the back end, or the transport).
    public var domain: String?
    /// The path of `Domain`.
    public static let domain = Property<ErrorArchiveEntry, String?>("Domain")
    /// The custom tag the request was made with.
    public var customTag: String?
    /// The path of `CustomTag`.
    public static let customTag = Property<ErrorArchiveEntry, String?>("CustomTag")
    /// The affected entity as `Set(key)`.
    public var affectedEntityReference = ""
    /// The path of `AffectedEntityReference`.
    public static let affectedEntityReference = Property<ErrorArchiveEntry, String>("AffectedEntityReference")
    /// The navigation `AffectedEntity`: load it with `DataService.loadProperty(_:into:)`.
    public static let affectedEntity = AffectedEntityProperty()
    /// Control information and properties this type does not declare.
    public var odata = ODataMetadata()

    /// The entity `loadProperty` loaded.
    var loadedAffectedEntity: AnyEntity?

    /// An empty entry.
    public init() {}

    /// Reads an entry.
    /// - Parameter reader: the reader.
    /// - Throws: ``DataServiceError`` naming the property that did not fit.
    public init(from reader: inout EntityReader) throws(DataServiceError) {
        self.init()
        try reader.beginObject(Self.odataTypeName)
        while let name = try reader.nextMember() {
            switch name {
            case "RequestID": requestID = try reader.read(Int64.self)
            case "RequestMethod": requestMethod = try reader.read(String.self)
            case "RequestURL": requestURL = try reader.read(String.self)
            case "RequestBody": requestBody = try reader.read(String?.self)
            case "HTTPStatusCode": httpStatusCode = try reader.read(Int32?.self)
            case "Code": code = try reader.read(String?.self)
            case "Message": message = try reader.read(String.self)
            case "InnerError": innerError = try reader.read(String?.self)
            case "Domain": domain = try reader.read(String?.self)
            case "CustomTag": customTag = try reader.read(String?.self)
            case "AffectedEntityReference": affectedEntityReference = try reader.read(String.self)
            default: try reader.readOther(name, into: &odata)
            }
        }
    }

    /// Writes the entry's properties.
    /// - Parameter writer: the writer.
    public func write(to writer: inout EntityWriter) {
        writer.write("RequestID", requestID)
        writer.write("RequestMethod", requestMethod)
        writer.write("RequestURL", requestURL)
        writer.write("RequestBody", requestBody)
        writer.write("HTTPStatusCode", httpStatusCode)
        writer.write("Code", code)
        writer.write("Message", message)
        writer.write("InnerError", innerError)
        writer.write("Domain", domain)
        writer.write("CustomTag", customTag)
        writer.write("AffectedEntityReference", affectedEntityReference)
        writer.writeOther(odata)
    }

    /// The key, `ErrorArchive(RequestID)`.
    public var entityKey: EntityKey { EntityKey(("RequestID", requestID)) }

    private enum CodingKeys: String, CodingKey {
        case requestID = "RequestID", requestMethod = "RequestMethod", requestURL = "RequestURL", requestBody = "RequestBody"
        case httpStatusCode = "HTTPStatusCode", code = "Code", message = "Message", innerError = "InnerError", domain = "Domain"
        case customTag = "CustomTag", affectedEntityReference = "AffectedEntityReference"
    }
}

/// ErrorArchive's navigation `AffectedEntity`, whose type depends on the entry.
public struct AffectedEntityProperty: Sendable {
    /// The navigation property's name.
    public let name = "AffectedEntity"

    /// The entity `loadProperty` loaded into `entry`, typed as its set's generated type (`as? Event`).
    /// - Parameter entry: the entry.
    /// - Returns: the entity, or nil before loading or when the entity no longer exists.
    public func entityValue(from entry: ErrorArchiveEntry) -> (any EntityValue)? { entry.loadedAffectedEntity?.entity }
}

/// An entity of any generated type, compared by its type and properties.
struct AnyEntity: Sendable, Hashable {
    let entity: any EntityValue

    init(_ entity: any EntityValue) { self.entity = entity }

    static func == (lhs: AnyEntity, rhs: AnyEntity) -> Bool {
        type(of: lhs.entity) == type(of: rhs.entity) && lhs.entity.jsonValue(for: .v4) == rhs.entity.jsonValue(for: .v4)
    }

    func hash(into hasher: inout Hasher) { hasher.combine(entity.jsonValue(for: .v4)) }
}
