import ODataCore

/// An error of a ``ServiceSession``: a request it did not send, or one the back end refused for a reason
/// of the session. It names no token, cookie or credential.
///
/// Match a kind with its static member, as with an enum case:
///
/// ```swift
/// do { _ = try await session.send(request) }
/// catch SessionError.csrfTokenRejected { … }
/// ```
///
/// (`error == .csrfTokenRejected` and a `case SessionError.csrfTokenRejected:` in a `switch` work too.) Errors
/// are equal when they are of the same kind; ``underlying`` is the error that caused this one, when there is one.
public struct SessionError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: String, Hashable, Sendable {
        case csrfTokenRejected, csrfTokenFetchFailed
    }

    private let kind: Kind
    /// The HTTP status of the back end's answer, when there was one.
    public let statusCode: Int?
    /// What went wrong, for a person.
    public let message: String
    /// The error that caused this one (the transport's failure while fetching a token), when there is one.
    public let underlying: (any Error & Sendable)?

    private init(kind: Kind, _ message: String) {
        self.kind = kind
        self.statusCode = nil
        self.message = message
        self.underlying = nil
    }

    /// Creates an error of the same kind as `kind`.
    ///
    /// - Parameters:
    ///   - kind: The kind, one of the static members (`.csrfTokenRejected`).
    ///   - statusCode: The back end's status, if any.
    ///   - message: What went wrong.
    ///   - underlying: The error that caused this one, when there is one.
    public init(_ kind: SessionError, statusCode: Int? = nil, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind.kind
        self.statusCode = statusCode
        self.message = message
        self.underlying = underlying
    }

    /// The back end answered `403` with `X-CSRF-Token: Required` again after a new token was fetched: it
    /// does not accept the tokens it issues to this session. The request was not executed.
    public static let csrfTokenRejected = SessionError(kind: .csrfTokenRejected, "the back end rejected the CSRF token")
    /// Fetching a CSRF token failed (the back end answered an error status without a token, or the
    /// transport failed). The request was not sent.
    public static let csrfTokenFetchFailed = SessionError(kind: .csrfTokenFetchFailed, "fetching a CSRF token failed")

    /// Whether sending the request again later may succeed: `true` for a failed token fetch, `false` for a
    /// rejected token (the back end will refuse it the same way).
    public var isRetryable: Bool { kind == .csrfTokenFetchFailed }

    /// The kind alone, such as `csrfTokenRejected`: safe for logs and metric labels.
    public var shortDescription: String { kind.rawValue }

    /// The kind, the status and the message.
    public var description: String {
        kind.rawValue + (statusCode.map { " (HTTP \($0))" } ?? "") + ": " + message
    }

    /// Errors are equal when they are of the same kind.
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both are of the same kind, whatever their status and message.
    public static func == (lhs: SessionError, rhs: SessionError) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// Matches an arbitrary error against this kind, so `catch SessionError.csrfTokenRejected` works.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is a `SessionError` of the same kind.
    public static func ~= (pattern: SessionError, error: any Error) -> Bool {
        (error as? SessionError) == pattern
    }
}

extension SessionError: NoAnswerError {
    /// A CSRF token fetch that got no answer (its ``underlying`` error says so) never sent the request itself:
    /// ``NoAnswer/requestNotSent``. Every other session error came from an answer (`nil`).
    public var noAnswer: NoAnswer? {
        guard kind == .csrfTokenFetchFailed, let underlying, NoAnswer.of(underlying) != nil else { return nil }
        return .requestNotSent
    }
}
