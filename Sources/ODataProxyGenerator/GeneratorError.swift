import ODataMetadata

/// Why a `$metadata` document could not be turned into Swift source: what was wrong, the element, and its line.
///
/// The ``description`` reads `line 12: <Property Name="City">: …` so that the place in the document is found at once.
public struct GeneratorError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The kinds of problems the generator reports.
    public enum Kind: String, Sendable, Equatable {
        /// The document is not well-formed XML.
        case malformedXML = "malformed XML"
        /// The root element is not `edmx:Edmx`.
        case notEDMX = "not an EDMX document"
        /// The EDMX version (or the V2 data service version) is not one the generator reads.
        case unsupportedVersion = "unsupported EDMX version"
        /// An entity type has no key, and no base type that has one.
        case missingKey = "entity type without a key"
        /// A type reference (property, navigation property, base type, key) names nothing in the document.
        case unknownType = "unknown type"
        /// An entity set names an entity type that is not in the document.
        case unknownEntitySetType = "entity set of a missing entity type"
        /// A V2 navigation property's `Relationship`, `FromRole` or `ToRole` does not resolve to an association end.
        case unresolvedAssociation = "unresolved association"
        /// A required attribute (such as `Name` or `Type`) is missing or empty.
        case missingAttribute = "missing attribute"
        /// Two definitions share a name where names must be unique, or base types form a cycle.
        case invalidDefinition = "invalid definition"
        /// An option given to the generator (such as the service name) is not usable.
        case invalidOption = "invalid option"
    }

    /// What was wrong.
    public let kind: Kind
    /// The element where it was found, as it reads in the document (`<Property Name="City">`), or the option's name.
    public let element: String
    /// The line in the document where that element starts (0 for options and whole-document problems).
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

    /// The generator's error for a document `ODataMetadata` could not read: the same kind, element, line and message.
    /// - Parameter error: the reader's error.
    public init(_ error: MetadataError) {
        let kinds: [(MetadataError.Kind, Kind)] = [
            (.malformedXML, .malformedXML), (.notEDMX, .notEDMX), (.unsupportedVersion, .unsupportedVersion),
            (.missingKey, .missingKey), (.unknownType, .unknownType), (.unknownEntitySetType, .unknownEntitySetType),
            (.unresolvedAssociation, .unresolvedAssociation), (.missingAttribute, .missingAttribute),
            (.invalidDefinition, .invalidDefinition),
        ]
        // Every reader kind has its generator kind (GeneratorErrorTests checks each); a new one reads as invalid.
        let kind = kinds.first { $0.0 == error.kind }?.1 ?? .invalidDefinition
        self.init(kind, element: error.element, line: error.line, error.message)
    }

    /// `line N: <Element …>: kind: message`.
    public var description: String {
        "line \(line): \(element): \(kind.rawValue): \(message)"
    }
}
