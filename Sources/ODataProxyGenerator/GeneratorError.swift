import ODataMetadata

/// Why a `$metadata` document could not be turned into Swift source: what was wrong, the element, and its line.
///
/// Match a kind with its static member, as with an enum case:
///
/// ```swift
/// do { source = try generator.generate(metadata: data) }
/// catch GeneratorError.missingKey { … }
/// ```
///
/// (`error == .missingKey` and a `case GeneratorError.missingKey:` in a `switch` work too; errors are equal when
/// they are of the same kind.) The ``description`` reads `line 12: <Property Name="City">: unknown type: …` so
/// that the place in the document is found at once.
public struct GeneratorError: Error, CustomStringConvertible, Hashable, Sendable {
    private enum Kind: String, Hashable, Sendable {
        case malformedXML, notEDMX, unsupportedVersion, missingKey, unknownType, unknownEntitySetType
        case unresolvedAssociation, missingAttribute, invalidDefinition, invalidOption

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
            case .invalidOption: return "invalid option"
            }
        }
    }

    private let kind: Kind
    /// The element where it was found, as it reads in the document (`<Property Name="City">`), or the option's name.
    public let element: String
    /// The line in the document where that element starts (0 for options and whole-document problems).
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
    public init(_ kind: GeneratorError, element: String, line: Int, _ message: String) {
        self.kind = kind.kind
        self.element = element
        self.line = line
        self.message = message
    }

    /// The generator's error for a document `ODataMetadata` could not read: the same kind, element, line and message.
    /// - Parameter error: the reader's error.
    public init(metadata error: MetadataError) {
        let kinds: [(MetadataError, GeneratorError)] = [
            (.malformedXML, .malformedXML), (.notEDMX, .notEDMX), (.unsupportedVersion, .unsupportedVersion),
            (.missingKey, .missingKey), (.unknownType, .unknownType), (.unknownEntitySetType, .unknownEntitySetType),
            (.unresolvedAssociation, .unresolvedAssociation), (.missingAttribute, .missingAttribute),
            (.invalidDefinition, .invalidDefinition),
        ]
        // Every reader kind has its generator kind (ErrorTests checks each); a new one reads as an invalid definition.
        let kind = kinds.first(where: { $0.0 == error })?.1 ?? .invalidDefinition
        self.init(kind, element: error.element, line: error.line, error.message)
    }

    /// The document is not well-formed XML.
    public static let malformedXML = GeneratorError(.malformedXML)
    /// The root element is not `edmx:Edmx`.
    public static let notEDMX = GeneratorError(.notEDMX)
    /// The EDMX version (or the V2 data service version) is not one the generator reads.
    public static let unsupportedVersion = GeneratorError(.unsupportedVersion)
    /// An entity type has no key, and no base type that has one.
    public static let missingKey = GeneratorError(.missingKey)
    /// A type reference (property, navigation property, base type, key) names nothing in the document.
    public static let unknownType = GeneratorError(.unknownType)
    /// An entity set names an entity type that is not in the document.
    public static let unknownEntitySetType = GeneratorError(.unknownEntitySetType)
    /// A V2 navigation property's `Relationship`, `FromRole` or `ToRole` does not resolve to an association end.
    public static let unresolvedAssociation = GeneratorError(.unresolvedAssociation)
    /// A required attribute (such as `Name` or `Type`) is missing or empty.
    public static let missingAttribute = GeneratorError(.missingAttribute)
    /// Two definitions share a name where names must be unique, or base types form a cycle.
    public static let invalidDefinition = GeneratorError(.invalidDefinition)
    /// An option given to the generator (such as the service name) is not usable.
    public static let invalidOption = GeneratorError(.invalidOption)

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
    public static func == (lhs: GeneratorError, rhs: GeneratorError) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// Matches an arbitrary error against this kind, so `catch GeneratorError.missingKey` works.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is a `GeneratorError` of the same kind.
    public static func ~= (pattern: GeneratorError, error: any Error) -> Bool {
        (error as? GeneratorError) == pattern
    }
}
