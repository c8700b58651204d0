public import Foundation
public import HTTPTypes

/// An HTTP request as a transport sends it: method, absolute URL, header fields and an optional body.
///
/// The transport sends the header fields in the order they are stored, repeated fields included.
public struct TransportRequest: Sendable, Hashable {
    /// The request method, such as `"GET"`, `"POST"` or the OData V2 `"MERGE"`; any HTTP token is accepted.
    public var method: String
    /// The absolute `http://` or `https://` URL to send the request to.
    public var url: String
    /// The request's header fields, sent in order; repeated names are sent repeatedly.
    public var headerFields: HTTPFields
    /// The request body, or `nil` for a request without one.
    public var body: Data?
    /// Whether the transport may send the request a second time on its own. libcurl re-sends a request by itself
    /// when a reused connection closes before any byte of the answer arrived — and the back end may have executed
    /// it by then. Set this to `false` for a request that must not be executed twice: `CurlTransport` then hands
    /// the body to libcurl in a form it cannot rewind, so a request whose body went out is never sent again (the
    /// send fails with `CurlError.connectionClosed` instead), reuses only a connection idle for less than a second,
    /// and sends a request without a body on a new connection. The default is `true`.
    public var allowsAutomaticResend = true
    /// A file whose contents are sent as the body instead of ``body``, read in small pieces as the transfer goes, so a
    /// body of any size (a media resource) is never held whole in memory. `nil` (the default) sends ``body``. The
    /// file must not change while the request runs. Such a body cannot be rewound: once bytes of it went out, the
    /// transport never sends it again by itself, whatever ``allowsAutomaticResend`` says.
    public var bodyFile: String?
    /// A file a successful (2xx) answer's body is written to as it arrives instead of into
    /// ``TransportResponse/body``, which stays empty: a body of any size (a media resource) is never held whole in
    /// memory, and the transport's response size limit does not apply to it. The file is created (mode 0600) or
    /// emptied when the body begins. Other answers' bodies (an error's JSON) stay in the response. `nil` (the
    /// default) keeps every body in the response.
    public var responseBodyFile: String?
    /// A source the body is read from piece by piece as the transfer goes, instead of ``body`` or ``bodyFile``
    /// (it wins over both): the body's bytes can come from anywhere (the offline store reads its media through one,
    /// sealed in a file only it can open). It cannot be rewound either. `nil` (the default) sends ``bodyFile`` or
    /// ``body``.
    public var bodySource: (any RequestBodySource)?
    /// A sink a successful (2xx) answer's body goes to piece by piece as it arrives, instead of into
    /// ``TransportResponse/body`` (which stays empty) or ``responseBodyFile`` (it wins over it); the transport's
    /// response size limit does not apply to it. Other answers' bodies stay in the response. `nil` (the default) uses
    /// ``responseBodyFile``, or keeps the body in the response.
    public var responseBodySink: (any ResponseBodySink)?

    /// Creates a request.
    ///
    /// - Parameters:
    ///   - method: The request method; the default is `"GET"`.
    ///   - url: The absolute `http://` or `https://` URL.
    ///   - headerFields: The header fields to send; the default is none.
    ///   - body: The body to send; the default is `nil` (no body).
    public init(method: String = "GET", url: String, headerFields: HTTPFields = [:], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headerFields = headerFields
        self.body = body
    }

    /// Whether two requests are the same: every field equal, and the same ``bodySource`` and ``responseBodySink``
    /// objects (or neither).
    public static func == (lhs: TransportRequest, rhs: TransportRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.headerFields == rhs.headerFields && lhs.body == rhs.body
            && lhs.allowsAutomaticResend == rhs.allowsAutomaticResend && lhs.bodyFile == rhs.bodyFile
            && lhs.responseBodyFile == rhs.responseBodyFile
            && lhs.bodySource.map(ObjectIdentifier.init) == rhs.bodySource.map(ObjectIdentifier.init)
            && lhs.responseBodySink.map(ObjectIdentifier.init) == rhs.responseBodySink.map(ObjectIdentifier.init)
    }

    /// Hashes the method, the URL, the header fields and the body.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(url)
        hasher.combine(headerFields)
        hasher.combine(body)
    }
}

/// Facts about one completed transfer, as libcurl measured them.
public struct TransferMetrics: Sendable, Hashable {
    /// The HTTP version a response arrived with.
    public enum HTTPVersion: Sendable, Hashable, CustomStringConvertible {
        /// HTTP/1.0.
        case http1_0
        /// HTTP/1.1.
        case http1_1
        /// HTTP/2.
        case http2
        /// HTTP/3.
        case http3
        /// A version libcurl did not report.
        case unknown

        /// The version as it appears on a status line, such as `"HTTP/1.1"`.
        public var description: String {
            switch self {
            case .http1_0: "HTTP/1.0"
            case .http1_1: "HTTP/1.1"
            case .http2: "HTTP/2"
            case .http3: "HTTP/3"
            case .unknown: "unknown"
            }
        }
    }

    /// The bytes of all response header blocks received, including `100 Continue` and redirect responses
    /// (`CURLINFO_HEADER_SIZE`).
    public var headerBytes: Int
    /// The body bytes received on the wire for the last response, before any decompression
    /// (`CURLINFO_SIZE_DOWNLOAD_T`).
    public var bodyBytes: Int
    /// The time from the start of the transfer until it completed, redirects included (`CURLINFO_TOTAL_TIME_T`).
    public var totalTime: Duration
    /// Whether the transfer ran entirely over connections that were already open (no new connection was made).
    public var connectionReused: Bool
    /// The number of new connections this transfer had to open (`CURLINFO_NUM_CONNECTS`); 0 when reused.
    public var newConnections: Int
    /// The HTTP version of the final response.
    public var httpVersion: HTTPVersion
    /// The number of redirects that were followed (`CURLINFO_REDIRECT_COUNT`).
    public var redirectCount: Int

    /// Creates transfer metrics.
    ///
    /// - Parameters:
    ///   - headerBytes: Header bytes received.
    ///   - bodyBytes: Body bytes received on the wire.
    ///   - totalTime: Total transfer time.
    ///   - connectionReused: Whether no new connection was opened.
    ///   - newConnections: The number of new connections opened.
    ///   - httpVersion: The HTTP version of the final response.
    ///   - redirectCount: The number of redirects followed; the default is 0.
    public init(
        headerBytes: Int, bodyBytes: Int, totalTime: Duration, connectionReused: Bool, newConnections: Int,
        httpVersion: HTTPVersion, redirectCount: Int = 0
    ) {
        self.headerBytes = headerBytes
        self.bodyBytes = bodyBytes
        self.totalTime = totalTime
        self.connectionReused = connectionReused
        self.newConnections = newConnections
        self.httpVersion = httpVersion
        self.redirectCount = redirectCount
    }
}

/// A complete HTTP response: the final status, its header fields in order, the (decoded) body and transfer metrics.
public struct TransportResponse: Sendable, Hashable {
    /// The status code of the final response (after any `100 Continue` or followed redirect).
    public var status: Int
    /// The final response's header fields in the order received; repeated names are kept.
    public var headerFields: HTTPFields
    /// The response body, decompressed when the transport asked for a content encoding.
    public var body: Data
    /// What the transfer cost on the wire and how long it took.
    public var metrics: TransferMetrics

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - status: The status code.
    ///   - headerFields: The header fields.
    ///   - body: The body.
    ///   - metrics: The transfer metrics.
    public init(status: Int, headerFields: HTTPFields, body: Data, metrics: TransferMetrics) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
        self.metrics = metrics
    }
}

/// Something that sends an HTTP request and returns the complete response.
///
/// `CurlTransport` is the production implementation; tests and caches can wrap or replace it.
public protocol HTTPTransport: Sendable {
    /// Sends a request and waits for its complete response.
    ///
    /// - Parameter request: The request to send.
    /// - Returns: The final response, whatever its status code.
    /// - Throws: A transport error (for `CurlTransport`, a `CurlError`) or `CancellationError` when the calling
    ///   task is cancelled. HTTP error statuses are responses, not errors.
    func send(_ request: TransportRequest) async throws -> TransportResponse
}
