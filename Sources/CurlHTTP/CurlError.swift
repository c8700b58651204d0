/// An error of `CurlTransport`: what kind of failure it was, libcurl's `CURLcode` and its error-buffer text.
///
/// Catch a kind with a pattern: `catch CurlError.Kind.timedOut { … }`, or inspect `kind`.
public struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The classification of a transport failure.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: Hashable {
            case connectFailed, couldNotResolveHost, timedOut, tls, tooLarge, cancelled, malformedResponse
            case connectionClosed, tooManyRedirects, invalidRequest, invalidConfiguration, shutdown, other
        }
        private let base: Base

        /// The connection could not be made (refused, unreachable, proxy failed).
        public static let connectFailed = Kind(base: .connectFailed)
        /// The host (or proxy) name could not be resolved.
        public static let couldNotResolveHost = Kind(base: .couldNotResolveHost)
        /// A connect, total or low-speed timeout fired.
        public static let timedOut = Kind(base: .timedOut)
        /// The TLS handshake or certificate verification failed, or a TLS file could not be used.
        public static let tls = Kind(base: .tls)
        /// The response body was larger than `CurlConfiguration.maxResponseBodySize`.
        public static let tooLarge = Kind(base: .tooLarge)
        /// The transfer was aborted before it completed (not by task cancellation, which throws `CancellationError`).
        public static let cancelled = Kind(base: .cancelled)
        /// The server's response could not be parsed or decoded.
        public static let malformedResponse = Kind(base: .malformedResponse)
        /// The connection broke or was closed before the response was complete.
        public static let connectionClosed = Kind(base: .connectionClosed)
        /// More redirects than the configured maximum.
        public static let tooManyRedirects = Kind(base: .tooManyRedirects)
        /// The request itself was unusable (bad URL, scheme or method).
        public static let invalidRequest = Kind(base: .invalidRequest)
        /// A configuration value was unusable.
        public static let invalidConfiguration = Kind(base: .invalidConfiguration)
        /// The transport was shut down before or while the request ran.
        public static let shutdown = Kind(base: .shutdown)
        /// Any other libcurl failure; see `curlCode`.
        public static let other = Kind(base: .other)

        /// The kind's name, such as `"timedOut"`.
        public var description: String { "\(base)" }
    }

    /// The classification of the failure.
    public let kind: Kind
    /// libcurl's `CURLcode` as an integer, or 0 when the error did not come from libcurl.
    public let curlCode: Int
    /// libcurl's error-buffer text (`CURLOPT_ERRORBUFFER`), or this module's explanation of what was wrong.
    public let message: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - kind: The classification.
    ///   - curlCode: The `CURLcode`, or 0 when the error did not come from libcurl; the default is 0.
    ///   - message: The error-buffer text or an explanation.
    public init(kind: Kind, curlCode: Int = 0, message: String) {
        self.kind = kind
        self.curlCode = curlCode
        self.message = message
    }

    /// A short, payload-free description: the kind and the `CURLcode`, without URLs or server text.
    public var shortDescription: String {
        curlCode == 0 ? "CurlError.\(kind)" : "CurlError.\(kind) (CURLcode \(curlCode))"
    }

    /// The kind, the `CURLcode` and the message.
    public var description: String {
        message.isEmpty ? shortDescription : "\(shortDescription): \(message)"
    }
}

extension CurlError.Kind {
    /// Matches an error against a kind, so that `catch CurlError.Kind.timedOut` works.
    ///
    /// - Parameters:
    ///   - kind: The kind to match.
    ///   - error: The error thrown.
    /// - Returns: Whether `error` is a `CurlError` of that kind.
    public static func ~= (kind: CurlError.Kind, error: any Error) -> Bool {
        (error as? CurlError)?.kind == kind
    }
}
