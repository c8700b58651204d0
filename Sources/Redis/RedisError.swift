/// A failure of a ``RedisClient`` call: the server could not be reached or answered with an error.
///
/// Match a kind with its static member, as with an enum case (`catch RedisError.timeout`, `error == .timeout`,
/// or `case RedisError.timeout:` in a `switch`); errors are equal when they are of the same kind. ``description``
/// adds what was wrong. No error carries a key, a value or the password.
public struct RedisError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Kind: String, Sendable, Hashable {
        /// The connection could not be made (refused, unreachable host, connect timeout).
        case connectionFailed
        /// The server did not answer within the command timeout.
        case timeout
        /// Reading from or writing to the connection failed, or the server closed it.
        case connectionLost
        /// The server's bytes were not valid RESP.
        case protocolError
        /// The server answered with an error reply (`-ERR …`, `-NOAUTH …`, `-OOM …`).
        case serverError
        /// The client is backing off after a failure and did not try the server.
        case unavailable
        /// The reply had another type than the command's.
        case unexpectedReply
        /// An argument or a configuration value is out of range.
        case invalidArgument
    }

    private let kind: Kind
    /// What was wrong, in words (no keys, values or secrets).
    public let detail: String?

    private init(kind: Kind) {
        self.kind = kind
        self.detail = nil
    }

    /// An error of the same kind as `kind`, with what was wrong.
    init(_ kind: RedisError, _ detail: String? = nil) {
        self.kind = kind.kind
        self.detail = detail
    }

    /// The connection could not be made.
    public static let connectionFailed = RedisError(kind: .connectionFailed)
    /// The server did not answer within the command timeout.
    public static let timeout = RedisError(kind: .timeout)
    /// The connection broke while a command ran.
    public static let connectionLost = RedisError(kind: .connectionLost)
    /// The server's reply was not valid RESP.
    public static let protocolError = RedisError(kind: .protocolError)
    /// The server answered with an error reply.
    public static let serverError = RedisError(kind: .serverError)
    /// The client is backing off after a failure.
    public static let unavailable = RedisError(kind: .unavailable)
    /// The reply had an unexpected type.
    public static let unexpectedReply = RedisError(kind: .unexpectedReply)
    /// An argument or a configuration value is out of range.
    public static let invalidArgument = RedisError(kind: .invalidArgument)

    /// Errors are equal when their kinds are; the detail is for people.
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both are of the same kind, whatever their detail.
    public static func == (lhs: RedisError, rhs: RedisError) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// Lets `catch RedisError.timeout` match any timeout, whatever its detail.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is a `RedisError` of the same kind.
    public static func ~= (pattern: RedisError, error: any Error) -> Bool {
        (error as? RedisError) == pattern
    }

    /// Whether the failure is the connection's (the server is down or slow), not the command's: such a
    /// failure starts the client's back-off.
    public var isConnectionFailure: Bool {
        switch kind {
        case .connectionFailed, .timeout, .connectionLost, .protocolError, .unavailable: return true
        case .serverError, .unexpectedReply, .invalidArgument: return false
        }
    }

    /// The kind without detail (for metric labels), for example `timeout`.
    public var shortDescription: String { kind.rawValue }

    /// The kind and, when known, what was wrong.
    public var description: String {
        detail.map { "Redis \(kind.rawValue): \($0)" } ?? "Redis \(kind.rawValue)"
    }
}
