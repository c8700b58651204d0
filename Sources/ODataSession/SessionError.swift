/// An error of a ``ServiceSession``: a request it did not send, or one the back end refused for a reason
/// of the session. It names no token, cookie or credential.
///
/// Compare ``code`` with the static members.
public struct SessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of a ``SessionError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The back end answered `403` with `X-CSRF-Token: Required` again after a new token was fetched: it
        /// does not accept the tokens it issues to this session. The request was not executed.
        public static let csrfTokenRejected = Code("csrfTokenRejected")
        /// Fetching a CSRF token failed (the back end answered an error status without a token, or the
        /// transport failed). The request was not sent.
        public static let csrfTokenFetchFailed = Code("csrfTokenFetchFailed")

        /// The kind's name.
        public var description: String { name }
    }

    /// The kind of error.
    public let code: Code
    /// The HTTP status of the back end's answer, when there was one.
    public let statusCode: Int?
    /// What went wrong, for a person.
    public let message: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The kind.
    ///   - statusCode: The back end's status, if any.
    ///   - message: What went wrong.
    public init(_ code: Code, statusCode: Int? = nil, _ message: String) {
        self.code = code
        self.statusCode = statusCode
        self.message = message
    }

    /// Whether sending the request again later may succeed: `true` for a failed token fetch, `false` for a
    /// rejected token (the back end will refuse it the same way).
    public var isRetryable: Bool { code == .csrfTokenFetchFailed }

    /// The kind, the status and the message.
    public var description: String {
        "\(code)" + (statusCode.map { " (HTTP \($0))" } ?? "") + ": " + message
    }
}
