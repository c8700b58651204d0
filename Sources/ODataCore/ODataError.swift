/// An error raised by this library about input it could not use: a URL, a query option,
/// a JSON payload, a batch body, an error body — or a state the call is not allowed in.
///
/// Compare ``code`` against the static members (`error.code == .malformedJSON`) to tell kinds
/// apart; ``message`` says what exactly was wrong, and ``offset`` where, when known.
public struct ODataError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of an ``ODataError``; new kinds can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A URL or resource path that cannot be used.
        public static let invalidURL = Code("invalidURL")
        /// A system or custom query option that cannot be rendered or parsed.
        public static let invalidQueryOption = Code("invalidQueryOption")
        /// Bytes that are not well-formed JSON.
        public static let malformedJSON = Code("malformedJSON")
        /// Well-formed JSON that is not an OData payload of the expected shape.
        public static let malformedPayload = Code("malformedPayload")
        /// A collection payload whose next link (`@odata.nextLink`, V2 `__next`) is there but cannot be read: the
        /// pages after it cannot be either. A kind of its own so that a reader never takes it for the last page.
        public static let malformedNextLink = Code("malformedNextLink")
        /// A `$batch` body (multipart or JSON) that cannot be decoded.
        public static let malformedBatch = Code("malformedBatch")
        /// An HTTP message inside a batch part that cannot be parsed.
        public static let malformedHTTPMessage = Code("malformedHTTPMessage")
        /// A call made in a state that does not allow it (a closed store, a reset of an open cache…).
        public static let invalidState = Code("invalidState")
        /// An entity key that cannot be used.
        public static let invalidKey = Code("invalidKey")
        /// Options that contradict each other (encryption switched off while a key is given…).
        public static let invalidConfiguration = Code("invalidConfiguration")

        /// The kind's name, for logs and metric labels.
        public var description: String { name }
    }

    /// The kind of error.
    public let code: Code
    /// What was wrong, for a person.
    public let message: String
    /// The byte or character offset in the input where the problem was found, when known.
    public let offset: Int?

    /// Creates an error.
    /// - Parameters:
    ///   - code: the kind of error.
    ///   - message: what was wrong.
    ///   - offset: where, when known.
    public init(_ code: Code, _ message: String, offset: Int? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// The kind alone, without payload: safe for metric labels.
    public var shortDescription: String { code.description }

    /// The kind, the message and the offset.
    public var description: String {
        if let offset { return "\(code): \(message) at \(offset)" }
        return "\(code): \(message)"
    }
}
