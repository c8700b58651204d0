/// Why a request got no answer from the back end, as far as the failure can tell: the one classification of
/// "the back end could not be reached" that the retry policy, both stores and the offline synchronizer use.
///
/// A transport's errors say it by conforming to ``NoAnswerError`` (`CurlError` does, and so does the session's
/// `SessionError` for a session step that got no answer). ``of(_:)`` reads it from any error.
public enum NoAnswer: Sendable, Hashable, CustomStringConvertible {
    /// The request never reached the back end: the connection was refused, the name did not resolve, the TLS
    /// handshake failed, a connect timed out, or a session step before it (a CSRF token) got no answer.
    case requestNotSent
    /// No answer came, but the request went out, so the back end may have received and executed it: the
    /// connection was reset or closed before a status line, or the wait for the answer timed out.
    case requestMayHaveArrived

    /// The classification of `error`: `nil` when it is not a failure to reach the back end (an answer that could
    /// not be read, a request that was unusable, a cancellation).
    ///
    /// - Parameter error: Any error a transport or session threw.
    /// - Returns: How the request failed to get an answer, or `nil`.
    public static func of(_ error: any Error) -> NoAnswer? {
        (error as? any NoAnswerError)?.noAnswer
    }

    /// `request not sent` or `request may have arrived`.
    public var description: String {
        switch self {
        case .requestNotSent: return "request not sent"
        case .requestMayHaveArrived: return "request may have arrived"
        }
    }
}

/// An error that can say whether it means the back end gave no answer (``NoAnswer``).
public protocol NoAnswerError: Error {
    /// How the request failed to get an answer, or `nil` when the failure is of another kind.
    var noAnswer: NoAnswer? { get }
}
