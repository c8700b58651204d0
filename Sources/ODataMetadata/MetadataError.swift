/// Why a `$metadata` document could not be read: what was wrong, the element, and its line.
///
/// The ``description`` reads `line 12: <Property Name="City">: …` so that the place in the document is found at once.
public struct MetadataError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The kinds of problems a document can have.
    public enum Kind: String, Sendable, Equatable {
        /// The document is not well-formed XML (or not UTF-8, or truncated).
        case malformedXML = "malformed XML"
        /// The root element is not `edmx:Edmx`.
        case notEDMX = "not an EDMX document"
        /// The EDMX version (or the V2 data service version) is not one this reader reads.
        case unsupportedVersion = "unsupported EDMX version"
        /// An entity type has no key, and no base type that has one.
        case missingKey = "entity type without a key"
        /// A type reference (property, navigation property, base type) names nothing in the document.
        case unknownType = "unknown type"
        /// An entity set names an entity type that is not in the document.
        case unknownEntitySetType = "entity set of a missing entity type"
        /// A V2 navigation property's `Relationship`, `FromRole` or `ToRole` does not resolve to an association end.
        case unresolvedAssociation = "unresolved association"
        /// A required attribute (such as `Name` or `Type`) is missing or empty.
        case missingAttribute = "missing attribute"
        /// Two definitions share a name where names must be unique, a key names no property, or base types form a
        /// cycle.
        case invalidDefinition = "invalid definition"
    }

    /// What was wrong.
    public let kind: Kind
    /// The element where it was found, as it reads in the document (`<Property Name="City">`), or `document`.
    public let element: String
    /// The line in the document where that element starts (1-based).
    public let line: Int
    /// The details, in words.
    public let message: String

    /// Creates an error.
    /// - Parameters:
    ///   - kind: what was wrong.
    ///   - element: the element, as it reads in the document.
    ///   - line: the element's line in the document.
    ///   - message: the details.
    public init(_ kind: Kind, element: String, line: Int, _ message: String) {
        self.kind = kind
        self.element = element
        self.line = line
        self.message = message
    }

    /// An error at a located element.
    init(_ kind: Kind, at location: CSDLLocation, _ message: String) {
        self.init(kind, element: location.element, line: location.line, message)
    }

    /// `line N: <Element …>: kind: message`.
    public var description: String {
        "line \(line): \(element): \(kind.rawValue): \(message)"
    }
}
