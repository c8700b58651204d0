public import ODataCore

/// An error of `CurlTransport`: what kind of failure it was, libcurl's `CURLcode` and its error-buffer text.
///
/// Match a kind with its static member, as with an enum case:
///
/// ```swift
/// do { _ = try await transport.send(request) }
/// catch CurlError.timedOut { … }
/// ```
///
/// (`error == .timedOut` and a `case CurlError.timedOut:` in a `switch` work too.) Errors are equal when they are
/// of the same kind; ``curlCode`` keeps libcurl's own code as data.
public struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Kind: String, Hashable, Sendable {
        case connectFailed, couldNotResolveHost, timedOut, tls, tooLarge, cancelled, malformedResponse
        case connectionClosed, tooManyRedirects, invalidRequest, invalidConfiguration, shutdown, other
    }

    private let kind: Kind
    /// libcurl's `CURLcode` as an integer, or 0 when the error did not come from libcurl.
    public let curlCode: Int
    /// libcurl's error-buffer text (`CURLOPT_ERRORBUFFER`), or this module's explanation of what was wrong.
    public let message: String
    /// Whether any byte of the request went out before the failure (libcurl's `CURLINFO_REQUEST_SIZE`): `false`
    /// proves the back end never got it, even for a timeout or a closed connection. `true` when unknown.
    public let requestSent: Bool

    private init(_ kind: Kind) {
        self.kind = kind
        self.curlCode = 0
        self.message = ""
        self.requestSent = true
    }

    /// Creates an error of the same kind as `kind`.
    ///
    /// - Parameters:
    ///   - kind: The kind, one of the static members (`.timedOut`).
    ///   - curlCode: The `CURLcode`, or 0 when the error did not come from libcurl; the default is 0.
    ///   - message: The error-buffer text or an explanation.
    ///   - requestSent: Whether any byte of the request went out; the default `true` is what an unknown is taken as.
    public init(kind: CurlError, curlCode: Int = 0, message: String, requestSent: Bool = true) {
        self.kind = kind.kind
        self.curlCode = curlCode
        self.message = message
        self.requestSent = requestSent
    }

    /// The connection could not be made (refused, unreachable, proxy failed).
    public static let connectFailed = CurlError(.connectFailed)
    /// The host (or proxy) name could not be resolved.
    public static let couldNotResolveHost = CurlError(.couldNotResolveHost)
    /// A connect, total or low-speed timeout fired.
    public static let timedOut = CurlError(.timedOut)
    /// The TLS handshake or certificate verification failed, or a TLS file could not be used.
    public static let tls = CurlError(.tls)
    /// The response body was larger than `CurlConfiguration.maxResponseBodySize`.
    public static let tooLarge = CurlError(.tooLarge)
    /// The transfer was aborted before it completed (not by task cancellation, which throws `CancellationError`).
    public static let cancelled = CurlError(.cancelled)
    /// The server's response could not be parsed or decoded.
    public static let malformedResponse = CurlError(.malformedResponse)
    /// The connection broke or was closed before the response was complete.
    public static let connectionClosed = CurlError(.connectionClosed)
    /// More redirects than the configured maximum.
    public static let tooManyRedirects = CurlError(.tooManyRedirects)
    /// The request itself was unusable (bad URL, scheme or method).
    public static let invalidRequest = CurlError(.invalidRequest)
    /// A configuration value was unusable.
    public static let invalidConfiguration = CurlError(.invalidConfiguration)
    /// The transport was shut down before or while the request ran.
    public static let shutdown = CurlError(.shutdown)
    /// Any other libcurl failure; see `curlCode`.
    public static let other = CurlError(.other)

    /// A short, payload-free description: the kind and the `CURLcode`, without URLs or server text.
    public var shortDescription: String {
        curlCode == 0 ? "CurlError.\(kind.rawValue)" : "CurlError.\(kind.rawValue) (CURLcode \(curlCode))"
    }

    /// The kind, the `CURLcode` and the message.
    public var description: String {
        message.isEmpty ? shortDescription : "\(shortDescription): \(message)"
    }

    /// Errors are equal when they are of the same kind.
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both are of the same kind, whatever their `CURLcode` and message.
    public static func == (lhs: CurlError, rhs: CurlError) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// Matches an error against a kind, so that `catch CurlError.timedOut` works.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error thrown.
    /// - Returns: Whether `error` is a `CurlError` of that kind.
    public static func ~= (pattern: CurlError, error: any Error) -> Bool {
        (error as? CurlError) == pattern
    }
}

extension CurlError: NoAnswerError {
    /// ``connectFailed``, ``couldNotResolveHost`` and ``tls`` never reached the back end; ``timedOut`` and
    /// ``connectionClosed`` got no answer and reached it only if ``requestSent``; every other kind is not about
    /// reaching the back end (`nil`).
    public var noAnswer: NoAnswer? {
        switch kind {
        case .connectFailed, .couldNotResolveHost, .tls: return .requestNotSent
        case .timedOut, .connectionClosed: return requestSent ? .requestMayHaveArrived : .requestNotSent
        default: return nil
        }
    }
}
