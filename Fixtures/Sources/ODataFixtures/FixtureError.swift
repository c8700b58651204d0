/// An error of the fixture producer: bad data files, a server that cannot start, or a
/// data change through ``FixtureServer/mutate(_:)`` that the model does not allow.
///
/// Compare ``code`` against the static members to tell kinds apart; ``message`` says what was
/// wrong. Requests over HTTP never throw this: they get an OData error response instead.
public struct FixtureError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of a ``FixtureError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A data directory, data file or CSDL document that cannot be used.
        public static let invalidData = Code("invalidData")
        /// The server could not bind, start or answer.
        public static let serverFailure = Code("serverFailure")
        /// An entity set or entity that does not exist.
        public static let notFound = Code("notFound")
        /// An entity whose key already exists, or a delete of an entity others still reference.
        public static let conflict = Code("conflict")
        /// An entity that does not fit its type: unknown property, wrong type, missing value.
        public static let invalidEntity = Code("invalidEntity")
        /// A configuration or argument that cannot be used.
        public static let invalidArgument = Code("invalidArgument")

        /// The kind's name.
        public var description: String { name }
    }

    /// The kind of error.
    public let code: Code
    /// What was wrong, for a person.
    public let message: String

    /// Creates an error.
    /// - Parameters:
    ///   - code: the kind of error.
    ///   - message: what was wrong.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The kind and the message.
    public var description: String { "\(code): \(message)" }
}
