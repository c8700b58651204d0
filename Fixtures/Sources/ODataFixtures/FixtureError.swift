/// An error of the fixture producer: bad data files, a server that cannot start, or a
/// data change through ``FixtureServer/mutate(_:)`` that the model does not allow.
///
/// Match a kind with its static member, as with an enum case (`catch FixtureError.notFound`,
/// `error == .notFound`); ``message`` says what was wrong. Requests over HTTP never throw this: they get an
/// OData error response instead.
public struct FixtureError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: String, Hashable, Sendable {
        case invalidData, serverFailure, notFound, conflict, invalidEntity, invalidArgument
    }

    private let kind: Kind
    /// What was wrong, for a person.
    public let message: String

    private init(kind: Kind) {
        self.kind = kind
        self.message = kind.rawValue
    }

    /// Creates an error of the same kind as `kind`.
    /// - Parameters:
    ///   - kind: The kind, one of the static members (`.invalidData`).
    ///   - message: What was wrong.
    public init(_ kind: FixtureError, _ message: String) {
        self.kind = kind.kind
        self.message = message
    }

    /// A data directory, data file or CSDL document that cannot be used.
    public static let invalidData = FixtureError(kind: .invalidData)
    /// The server could not bind, start or answer.
    public static let serverFailure = FixtureError(kind: .serverFailure)
    /// An entity set or entity that does not exist.
    public static let notFound = FixtureError(kind: .notFound)
    /// An entity whose key already exists, or a delete of an entity others still reference.
    public static let conflict = FixtureError(kind: .conflict)
    /// An entity that does not fit its type: unknown property, wrong type, missing value.
    public static let invalidEntity = FixtureError(kind: .invalidEntity)
    /// A configuration or argument that cannot be used.
    public static let invalidArgument = FixtureError(kind: .invalidArgument)

    /// The kind and the message.
    public var description: String { "\(kind.rawValue): \(message)" }

    /// Errors are equal when they are of the same kind.
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both are of the same kind, whatever their message.
    public static func == (lhs: FixtureError, rhs: FixtureError) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// Matches an arbitrary error against this kind, so `catch FixtureError.notFound` works.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is a `FixtureError` of the same kind.
    public static func ~= (pattern: FixtureError, error: any Error) -> Bool {
        (error as? FixtureError) == pattern
    }
}
