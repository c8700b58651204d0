import ODataCore

/// An error of the typed layer: a payload that does not fit a generated type (naming the type, the
/// property and what was found), a query that cannot be written for the service's OData version, or a
/// read that had nothing to answer with. Errors of the store underneath (``ODataServiceError``, the
/// offline store's errors, transport errors) pass through unchanged.
public struct DataServiceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of a ``DataServiceError``; new kinds can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The payload is not JSON, or not an OData payload of the expected shape.
        public static let malformedPayload = Code("malformedPayload")
        /// A property's value does not fit its declared type (a string where a number belongs, a null in a
        /// non-nullable property, an unknown enum member, a number out of range).
        public static let typeMismatch = Code("typeMismatch")
        /// A query that cannot be written for the service (a lambda for a V2 service, a query without an
        /// entity set).
        public static let invalidQuery = Code("invalidQuery")
        /// A read answered with no data: passive mode with nothing cached, or no count where one was asked.
        public static let noData = Code("noData")
        /// An entity that cannot be addressed: no key values, or an entity set the service does not know.
        public static let invalidEntity = Code("invalidEntity")

        /// The kind's name, for logs and metric labels.
        public var description: String { name }
    }

    /// The kind of error.
    public let code: Code
    /// What was wrong: the type, the property and what was found.
    public let message: String
    /// The byte offset in the payload where the problem was found, when known.
    public let offset: Int?

    /// Creates an error.
    /// - Parameters:
    ///   - code: the kind.
    ///   - message: what was wrong.
    ///   - offset: where in the payload, when known.
    public init(_ code: Code, _ message: String, offset: Int? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// The kind alone, without payload: safe for metric labels.
    public var shortDescription: String { code.description }

    /// The kind, the message and the offset.
    public var description: String {
        if let offset { return "\(code): \(message) (at byte \(offset))" }
        return "\(code): \(message)"
    }
}
