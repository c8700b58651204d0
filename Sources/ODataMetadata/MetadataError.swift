/// Why a `$metadata` document could not be read: what was wrong, the element, and its line.
///
/// The ``description`` reads `line 12: <Property Name="City">: …` so that the place in the document is found at once.
public struct MetadataError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The kind of a ``MetadataError``: compare with `==` against the static members, or match an error with
    /// `catch MetadataError.Kind.missingKey` (the set of kinds may grow; there is no exhaustive `switch`).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The document is not well-formed XML (or not UTF-8, or truncated).
        public static let malformedXML = Kind("malformed XML")
        /// The root element is not `edmx:Edmx`.
        public static let notEDMX = Kind("not an EDMX document")
        /// The EDMX version (or the V2 data service version) is not one this reader reads.
        public static let unsupportedVersion = Kind("unsupported EDMX version")
        /// An entity type has no key, and no base type that has one.
        public static let missingKey = Kind("entity type without a key")
        /// A type reference (property, navigation property, base type) names nothing in the document.
        public static let unknownType = Kind("unknown type")
        /// An entity set names an entity type that is not in the document.
        public static let unknownEntitySetType = Kind("entity set of a missing entity type")
        /// A V2 navigation property's `Relationship`, `FromRole` or `ToRole` does not resolve to an association end.
        public static let unresolvedAssociation = Kind("unresolved association")
        /// A required attribute (such as `Name` or `Type`) is missing or empty.
        public static let missingAttribute = Kind("missing attribute")
        /// Two definitions share a name where names must be unique, a key names no property, or base types form a cycle.
        public static let invalidDefinition = Kind("invalid definition")

        /// The kind in words (`missing attribute`).
        public var description: String { name }

        /// Whether `error` is a ``MetadataError`` of this kind: `catch MetadataError.Kind.missingKey`.
        /// - Parameters:
        ///   - kind: the kind to match.
        ///   - error: any error.
        /// - Returns: true when `error` is a ``MetadataError`` of `kind`.
        public static func ~= (kind: Kind, error: any Error) -> Bool {
            (error as? MetadataError)?.kind == kind
        }
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
        "line \(line): \(element): \(kind): \(message)"
    }
}
