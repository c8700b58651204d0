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
    public static let keyPropertyNames = [CodingKeys.requestID.stringValue]
    /// The offline store's `ErrorArchive` set.
    public static let entitySet = EntitySet<ErrorArchiveEntry>("ErrorArchive")

    /// The id of the failed request (its place in the request queue).
    public var requestID: Int64 = 0
    /// The path of `RequestID`.
    public static let requestID = Property<ErrorArchiveEntry, Int64>(CodingKeys.requestID.stringValue)
    /// The HTTP method (`POST`, `PATCH`, `DELETE`…).
    public var requestMethod = ""
    /// The path of `RequestMethod`.
    public static let requestMethod = Property<ErrorArchiveEntry, String>(CodingKeys.requestMethod.stringValue)
    /// The request URL, relative to the service root.
    public var requestURL = ""
    /// The path of `RequestURL`.
    public static let requestURL = Property<ErrorArchiveEntry, String>(CodingKeys.requestURL.stringValue)
    /// The request body, if it had one.
    public var requestBody: String?
    /// The path of `RequestBody`.
    public static let requestBody = Property<ErrorArchiveEntry, String?>(CodingKeys.requestBody.stringValue)
    /// The HTTP status the back end answered with (nil for a transport failure).
    public var httpStatusCode: Int32?
    /// The path of `HTTPStatusCode`.
    public static let httpStatusCode = Property<ErrorArchiveEntry, Int32?>(CodingKeys.httpStatusCode.stringValue)
    /// The back end's error code.
    public var code: String?
    /// The path of `Code`.
    public static let code = Property<ErrorArchiveEntry, String?>(CodingKeys.code.stringValue)
    /// The error message.
    public var message = ""
    /// The path of `Message`.
    public static let message = Property<ErrorArchiveEntry, String>(CodingKeys.message.stringValue)
    /// The back end's inner error, as JSON text.
    public var innerError: String?
    /// The path of `InnerError`.
    public static let innerError = Property<ErrorArchiveEntry, String?>(CodingKeys.innerError.stringValue)
    /// Where the failure came from: `OData` (the back end answered with an error), `Transport`, `Session`
    /// (refused by the session's rules) or `Dependency` (not sent: the create it depends on failed).
    public var domain: String?
    /// The path of `Domain`.
    public static let domain = Property<ErrorArchiveEntry, String?>(CodingKeys.domain.stringValue)
    /// The custom tag the request was made with.
    public var customTag: String?
    /// The path of `CustomTag`.
    public static let customTag = Property<ErrorArchiveEntry, String?>(CodingKeys.customTag.stringValue)
    /// The affected entity as `Set(key)`.
    public var affectedEntityReference = ""
    /// The path of `AffectedEntityReference`.
    public static let affectedEntityReference = Property<ErrorArchiveEntry, String>(CodingKeys.affectedEntityReference.stringValue)
    /// The navigation `AffectedEntity`: load it with `DataService.loadProperty(_:into:)`.
    public static let affectedEntity = AffectedEntityProperty()
    /// Control information and properties this type does not declare.
    public var odata = ODataMetadata()

    /// The entity `loadProperty` loaded.
    var loadedAffectedEntity: AnyEntity?

    /// An empty entry.
    public init() {}

    /// An entry with every property given (the offline store writes its entries with this).
    ///
    /// - Parameters:
    ///   - requestID: The failed request's ID.
    ///   - requestMethod: Its HTTP method.
    ///   - requestURL: Its URL, relative to the service root.
    ///   - requestBody: Its body, if any.
    ///   - httpStatusCode: The back end's status, nil when no answer came.
    ///   - code: The back end's error code.
    ///   - message: What went wrong.
    ///   - innerError: The back end's inner error, as JSON text.
    ///   - domain: Where the failure came from (see ``domain``).
    ///   - customTag: The request's custom tag.
    ///   - affectedEntityReference: The entity the request touched, as `Set(key)`.
    public init(requestID: Int64, requestMethod: String, requestURL: String, requestBody: String?, httpStatusCode: Int32?,
                code: String?, message: String, innerError: String?, domain: String?, customTag: String?,
                affectedEntityReference: String) {
        self.requestID = requestID
        self.requestMethod = requestMethod
        self.requestURL = requestURL
        self.requestBody = requestBody
        self.httpStatusCode = httpStatusCode
        self.code = code
        self.message = message
        self.innerError = innerError
        self.domain = domain
        self.customTag = customTag
        self.affectedEntityReference = affectedEntityReference
    }

    /// Reads an entry.
    /// - Parameter reader: the reader.
    /// - Throws: ``DataServiceError`` naming the property that did not fit.
    public init(from reader: inout EntityReader) throws(DataServiceError) {
        self.init()
        try reader.beginObject(Self.odataTypeName)
        while let name = try reader.nextMember() {
            switch CodingKeys(stringValue: name) {
            case .requestID: requestID = try reader.read(Int64.self)
            case .requestMethod: requestMethod = try reader.read(String.self)
            case .requestURL: requestURL = try reader.read(String.self)
            case .requestBody: requestBody = try reader.read(String?.self)
            case .httpStatusCode: httpStatusCode = try reader.read(Int32?.self)
            case .code: code = try reader.read(String?.self)
            case .message: message = try reader.read(String.self)
            case .innerError: innerError = try reader.read(String?.self)
            case .domain: domain = try reader.read(String?.self)
            case .customTag: customTag = try reader.read(String?.self)
            case .affectedEntityReference: affectedEntityReference = try reader.read(String.self)
            case nil: try reader.readOther(name, into: &odata)
            }
        }
    }

    /// Writes the entry's properties, in the order of ``CodingKeys``.
    /// - Parameter writer: the writer.
    public func write(to writer: inout EntityWriter) {
        for column in CodingKeys.allCases {
            switch column {
            case .requestID: writer.write(column.stringValue, requestID)
            case .requestMethod: writer.write(column.stringValue, requestMethod)
            case .requestURL: writer.write(column.stringValue, requestURL)
            case .requestBody: writer.write(column.stringValue, requestBody)
            case .httpStatusCode: writer.write(column.stringValue, httpStatusCode)
            case .code: writer.write(column.stringValue, code)
            case .message: writer.write(column.stringValue, message)
            case .innerError: writer.write(column.stringValue, innerError)
            case .domain: writer.write(column.stringValue, domain)
            case .customTag: writer.write(column.stringValue, customTag)
            case .affectedEntityReference: writer.write(column.stringValue, affectedEntityReference)
            }
        }
        writer.writeOther(odata)
    }

    /// The key, `ErrorArchive(RequestID)`.
    public var entityKey: EntityKey { EntityKey((CodingKeys.requestID.stringValue, requestID)) }

    /// The archive's column names: the one place that spells them (the offline store writes and reads its
    /// entries through this type, `Codable` uses them, and so do the property paths above).
    public enum CodingKeys: String, CodingKey, CaseIterable, Sendable {
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
