/// An error raised by this library about input it could not use: a URL, a query option, a JSON payload, a
/// batch body, an error body, a payload that does not fit a generated type — or a state the call is not
/// allowed in.
///
/// Match a kind with its static member, as with an enum case; ``message`` says what exactly was wrong, and
/// ``offset`` where, when known:
///
/// ```swift
/// do { _ = try ODataPayload.decodeEntity(bytes) }
/// catch ODataError.malformedJSON { … }
/// ```
///
/// `error == .malformedJSON` and `switch error { case ODataError.malformedJSON: … }` work too. Errors are
/// equal when they are of the same kind, whatever their message. The set of kinds is the library's: new
/// ones can be added without breaking a caller's `switch`.
public struct ODataError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: String, Hashable, Sendable {
        case invalidURL, invalidQueryOption, malformedJSON, malformedPayload, malformedNextLink, malformedBatch
        case malformedHTTPMessage, invalidState, invalidKey, invalidConfiguration
        case typeMismatch, invalidQuery, noData, invalidEntity
    }

    private let kind: Kind
    /// What was wrong, for a person.
    public let message: String
    /// The byte or character offset in the input where the problem was found, when known.
    public let offset: Int?

    private init(kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
        self.offset = nil
    }

    /// Creates an error of the same kind as `kind`, with a message.
    ///
    /// - Parameters:
    ///   - kind: The kind, one of the static members (`.malformedJSON`).
    ///   - message: What was wrong.
    ///   - offset: Where in the input, when known.
    public init(_ kind: ODataError, _ message: String, offset: Int? = nil) {
        self.kind = kind.kind
        self.message = message
        self.offset = offset
    }

    /// A URL or resource path that cannot be used.
    public static let invalidURL = ODataError(kind: .invalidURL, "invalid URL")
    /// A system or custom query option that cannot be rendered or parsed.
    public static let invalidQueryOption = ODataError(kind: .invalidQueryOption, "invalid query option")
    /// Bytes that are not well-formed JSON.
    public static let malformedJSON = ODataError(kind: .malformedJSON, "malformed JSON")
    /// Well-formed JSON that is not an OData payload of the expected shape (or a payload the typed layer cannot
    /// read as the type asked for).
    public static let malformedPayload = ODataError(kind: .malformedPayload, "malformed payload")
    /// A collection payload whose next link (`@odata.nextLink`, V2 `__next`) is there but cannot be read: the
    /// pages after it cannot be either. A kind of its own so that a reader never takes it for the last page.
    public static let malformedNextLink = ODataError(kind: .malformedNextLink, "malformed next link")
    /// A `$batch` body (multipart or JSON) that cannot be decoded.
    public static let malformedBatch = ODataError(kind: .malformedBatch, "malformed batch")
    /// An HTTP message inside a batch part that cannot be parsed.
    public static let malformedHTTPMessage = ODataError(kind: .malformedHTTPMessage, "malformed HTTP message")
    /// A call made in a state that does not allow it (a closed store, a reset of an open cache…).
    public static let invalidState = ODataError(kind: .invalidState, "invalid state")
    /// An entity key that cannot be used.
    public static let invalidKey = ODataError(kind: .invalidKey, "invalid key")
    /// Options that contradict each other (encryption switched off while a key is given…).
    public static let invalidConfiguration = ODataError(kind: .invalidConfiguration, "invalid configuration")
    /// A property's value does not fit its declared type (a string where a number belongs, a null in a
    /// non-nullable property, an unknown enum member, a number out of range).
    public static let typeMismatch = ODataError(kind: .typeMismatch, "type mismatch")
    /// A query that cannot be written for the service (a lambda for a V2 service, a query without an
    /// entity set).
    public static let invalidQuery = ODataError(kind: .invalidQuery, "invalid query")
    /// A read answered with no data: passive mode with nothing cached, or no count where one was asked.
    public static let noData = ODataError(kind: .noData, "no data")
    /// An entity that cannot be addressed: no key values, or an entity set the service does not know.
    public static let invalidEntity = ODataError(kind: .invalidEntity, "invalid entity")

    /// The kind alone, without payload, such as `malformedJSON`: safe for logs and metric labels.
    public var shortDescription: String { kind.rawValue }

    /// The kind, the message and the offset.
    public var description: String {
        if let offset { return "\(kind.rawValue): \(message) at \(offset)" }
        return "\(kind.rawValue): \(message)"
    }

    /// Errors are equal when they are of the same kind.
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both are of the same kind, whatever their message and offset.
    public static func == (lhs: ODataError, rhs: ODataError) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// Matches an arbitrary error against this kind, so `catch ODataError.malformedJSON` works.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is an `ODataError` of the same kind.
    public static func ~= (pattern: ODataError, error: any Error) -> Bool {
        (error as? ODataError) == pattern
    }
}
