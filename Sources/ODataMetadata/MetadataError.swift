/// Why a `$metadata` document could not be read: what was wrong, the element, and its line.
///
/// Match a kind with its static member, as with an enum case:
///
/// ```swift
/// do { document = try CSDLDocument(parsing: data) }
/// catch MetadataError.missingKey { … }
/// ```
///
/// (`error == .missingKey` and a `case MetadataError.missingKey:` in a `switch` work too; errors are equal when
/// they are of the same kind.) The ``description`` reads `line 12: <Property Name="City">: unknown type: …` so
/// that the place in the document is found at once.
public struct MetadataError: Error, CustomStringConvertible, Hashable, Sendable {
    private enum Kind: String, Hashable, Sendable {
        case malformedXML, notEDMX, unsupportedVersion, missingKey, unknownType, unknownEntitySetType
        case unresolvedAssociation, missingAttribute, invalidDefinition

        /// The kind in words, as the description shows it.
        var words: String {
            switch self {
            case .malformedXML: return "malformed XML"
            case .notEDMX: return "not an EDMX document"
            case .unsupportedVersion: return "unsupported EDMX version"
            case .missingKey: return "entity type without a key"
            case .unknownType: return "unknown type"
            case .unknownEntitySetType: return "entity set of a missing entity type"
            case .unresolvedAssociation: return "unresolved association"
            case .missingAttribute: return "missing attribute"
            case .invalidDefinition: return "invalid definition"
            }
        }
    }

    private let kind: Kind
    /// The element where it was found, as it reads in the document (`<Property Name="City">`), or `document`.
    public let element: String
    /// The line in the document where that element starts (1-based; 0 for a kind's static member).
    public let line: Int
    /// The details, in words.
    public let message: String

    private init(_ kind: Kind) {
        self.kind = kind
        self.element = "document"
        self.line = 0
        self.message = kind.words
    }

    /// Creates an error of the same kind as `kind`.
    /// - Parameters:
    ///   - kind: The kind, one of the static members (`.missingKey`).
    ///   - element: The element, as it reads in the document.
    ///   - line: The element's line in the document.
    ///   - message: The details.
    public init(_ kind: MetadataError, element: String, line: Int, _ message: String) {
        self.kind = kind.kind
        self.element = element
        self.line = line
        self.message = message
    }

    /// An error at a located element.
    init(_ kind: MetadataError, at location: CSDLLocation, _ message: String) {
        self.init(kind, element: location.element, line: location.line, message)
    }

    /// The document is not well-formed XML (or not UTF-8, or truncated).
    public static let malformedXML = MetadataError(.malformedXML)
    /// The root element is not `edmx:Edmx`.
    public static let notEDMX = MetadataError(.notEDMX)
    /// The EDMX version (or the V2 data service version) is not one this reader reads.
    public static let unsupportedVersion = MetadataError(.unsupportedVersion)
    /// A collection-valued containment navigation property leads to an entity type that has no key, and no base
    /// type that has one (an entity set of such a type is read with a warning: ``CSDLDocument/warnings``).
    public static let missingKey = MetadataError(.missingKey)
    /// A type reference (property, navigation property, base type) names nothing in the document.
    public static let unknownType = MetadataError(.unknownType)
    /// An entity set names an entity type that is not in the document.
    public static let unknownEntitySetType = MetadataError(.unknownEntitySetType)
    /// A V2 navigation property's `Relationship`, `FromRole` or `ToRole` does not resolve to an association end.
    public static let unresolvedAssociation = MetadataError(.unresolvedAssociation)
    /// A required attribute (such as `Name` or `Type`) is missing or empty.
    public static let missingAttribute = MetadataError(.missingAttribute)
    /// Two definitions share a name where names must be unique, a key names no property, or base types form a
    /// cycle.
    public static let invalidDefinition = MetadataError(.invalidDefinition)

    /// The kind alone, such as `missingKey`: safe for logs.
    public var shortDescription: String { kind.rawValue }

    /// `line N: <Element …>: kind in words: message`.
    public var description: String {
        "line \(line): \(element): \(kind.words): \(message)"
    }

    /// Errors are equal when they are of the same kind.
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both are of the same kind, wherever they were found.
    public static func == (lhs: MetadataError, rhs: MetadataError) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// Matches an arbitrary error against this kind, so `catch MetadataError.missingKey` works.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is a `MetadataError` of the same kind.
    public static func ~= (pattern: MetadataError, error: any Error) -> Bool {
        (error as? MetadataError) == pattern
    }
}
