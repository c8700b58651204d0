import Foundation

/// The options of a `CurlTransport`; every property documents its default.
///
/// The configuration is fixed when the transport is created. Durations are rounded to milliseconds;
/// `nil` means "no limit" where a property says so.
public struct CurlConfiguration: Sendable, Hashable {
    /// When the transport follows redirects (3xx responses with a `Location`).
    public enum RedirectPolicy: Sendable, Hashable {
        /// Never follow redirects; the 3xx response is returned as it is.
        case never
        /// Follow up to `max` redirects for `GET` and `HEAD` requests only; other methods get the 3xx response.
        case safeMethods(max: Int)
        /// Follow up to `max` redirects for every method (libcurl turns a `POST` into a `GET` on 301/302/303).
        case always(max: Int)
    }

    /// Which proxy the transport uses.
    public enum Proxy: Sendable, Hashable {
        /// Honour the usual environment variables: `http_proxy`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY`
        /// (libcurl's own rules; `http_proxy` is read in lower case only).
        case environment
        /// Connect directly and ignore the environment.
        case none
        /// Use this proxy URL (such as `http://proxy.local:3128`); `noProxy` lists hosts reached directly
        /// (comma-separated, `*` for all), or `nil` for none.
        case url(String, noProxy: String?)
    }

    /// The client certificate for TLS client authentication (mutual TLS). Its ``description``, `debugDescription` and
    /// mirror show the paths and types, never the key's pass phrase.
    public struct ClientCertificate: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The path of the certificate file.
        public var certificatePath: String
        /// The file type of the certificate: `"PEM"`, `"DER"` or `"P12"`. The default is `"PEM"`.
        public var certificateType: String
        /// The path of the private key file, or `nil` when the certificate file contains the key. The default is `nil`.
        public var keyPath: String?
        /// The file type of the key: `"PEM"` or `"DER"`. The default is `"PEM"`.
        public var keyType: String
        /// The pass phrase of the private key, or `nil` for an unencrypted key. The default is `nil`.
        public var keyPassword: String?

        /// Creates a client certificate description.
        ///
        /// - Parameters:
        ///   - certificatePath: The path of the certificate file.
        ///   - certificateType: The certificate's file type; the default is `"PEM"`.
        ///   - keyPath: The path of the private key file; the default is `nil` (key inside the certificate file).
        ///   - keyType: The key's file type; the default is `"PEM"`.
        ///   - keyPassword: The key's pass phrase; the default is `nil`.
        public init(
            certificatePath: String, certificateType: String = "PEM", keyPath: String? = nil,
            keyType: String = "PEM", keyPassword: String? = nil
        ) {
            self.certificatePath = certificatePath
            self.certificateType = certificateType
            self.keyPath = keyPath
            self.keyType = keyType
            self.keyPassword = keyPassword
        }

        /// The paths and types, with the pass phrase shown as `<redacted>` when there is one.
        public var description: String {
            "ClientCertificate(certificatePath: \(certificatePath), certificateType: \(certificateType), "
                + "keyPath: \(keyPath ?? "nil"), keyType: \(keyType), keyPassword: \(keyPassword == nil ? "nil" : "<redacted>"))"
        }

        /// The same as ``description``: the pass phrase never appears.
        public var debugDescription: String { description }

        /// The properties for `dump` and debuggers, with the pass phrase redacted.
        public var customMirror: Mirror {
            Mirror(self, children: [
                "certificatePath": certificatePath, "certificateType": certificateType, "keyPath": keyPath as Any,
                "keyType": keyType, "keyPassword": keyPassword == nil ? "nil" : "<redacted>",
            ], displayStyle: .struct)
        }
    }

    /// The longest time to wait for a connection (TCP and TLS handshakes) to be established.
    /// The default is 10 seconds; `nil` uses libcurl's own default of 300 seconds.
    public var connectTimeout: Duration?
    /// The longest time a whole transfer may take, from start to the last body byte.
    /// The default is 60 seconds; `nil` means no limit.
    public var totalTimeout: Duration?
    /// The low-speed abort: a transfer slower than `bytesPerSecond` for `duration` fails with `.timedOut`.
    /// The default is 1 byte per second for 30 seconds (a stalled server); `nil` turns it off.
    public var lowSpeedLimit: (bytesPerSecond: Int, duration: Duration)? {
        get { lowSpeed.map { ($0.bytesPerSecond, $0.duration) } }
        set { lowSpeed = newValue.map { LowSpeed(bytesPerSecond: $0.bytesPerSecond, duration: $0.duration) } }
    }
    /// The largest response body accepted, in bytes after decompression. A larger body aborts the transfer
    /// with `.tooLarge`, so memory stays bounded. The default is 64 MiB; `nil` means no limit.
    public var maxResponseBodySize: Int?
    /// The most connections kept open to one host (`CURLMOPT_MAX_HOST_CONNECTIONS`); further transfers
    /// wait for a free connection. The default is 8.
    public var maxConnectionsPerHost: Int
    /// The most connections open at once over all hosts (`CURLMOPT_MAX_TOTAL_CONNECTIONS`).
    /// The default is 0 (no limit beyond the per-host one).
    public var maxTotalConnections: Int
    /// The size of the idle-connection cache (`CURLMOPT_MAXCONNECTS`). The default is 64.
    public var maxCachedConnections: Int
    /// When redirects are followed. The default is `.safeMethods(max: 5)`: `GET` and `HEAD` follow up to five
    /// redirects, other methods never do.
    public var redirects: RedirectPolicy
    /// The proxy to use. The default is `.environment`.
    public var proxy: Proxy
    /// Whether the server's TLS certificate and host name are verified. The default is `true`;
    /// turn it off only for tests against self-signed servers.
    public var verifyPeer: Bool
    /// A PEM file of CA certificates to trust instead of the system's bundle. The default is `nil` (the system's).
    public var caFile: String?
    /// A directory of hashed CA certificates to trust. The default is `nil` (the system's).
    public var caPath: String?
    /// The client certificate and key for TLS client authentication. The default is `nil` (none).
    public var clientCertificate: ClientCertificate?
    /// The `Accept-Encoding` the transport asks for and decodes automatically: `""` offers every encoding
    /// libcurl supports (gzip, deflate, brotli or zstd as built in), `nil` sends none and decodes nothing.
    /// A request's own `Accept-Encoding` field replaces the value sent, and responses are still decoded.
    /// The default is `""`.
    public var acceptEncoding: String?
    /// Whether HTTP/2 is negotiated (ALPN) over TLS, with multiplexing when the server offers it.
    /// Cleartext `http://` always uses HTTP/1.1. The default is `true`.
    public var http2OverTLS: Bool
    /// The most idle easy handles kept for reuse. The default is 64.
    public var maxPooledHandles: Int
    /// The number of event threads, each with its own libcurl multi handle and connection cache; a request goes
    /// to the one with the fewest transfers in flight. The connection limits are divided among them (each gets
    /// at least one connection per host), so the totals stay as configured. The default is the number of
    /// active processors, at most 4; `1` gives one thread and one shared connection cache.
    public var eventLoopCount: Int
    /// The `User-Agent` sent when a request has none, or `nil` to send none. The default is `"ODataStores-CurlHTTP"`.
    public var userAgent: String?

    struct LowSpeed: Sendable, Hashable {
        var bytesPerSecond: Int
        var duration: Duration
    }
    var lowSpeed: LowSpeed?

    /// Creates a configuration with every default.
    public init() {
        connectTimeout = .seconds(10)
        totalTimeout = .seconds(60)
        lowSpeed = LowSpeed(bytesPerSecond: 1, duration: .seconds(30))
        maxResponseBodySize = 64 * 1024 * 1024
        maxConnectionsPerHost = 8
        maxTotalConnections = 0
        maxCachedConnections = 64
        redirects = .safeMethods(max: 5)
        proxy = .environment
        verifyPeer = true
        caFile = nil
        caPath = nil
        clientCertificate = nil
        acceptEncoding = ""
        http2OverTLS = true
        maxPooledHandles = 64
        eventLoopCount = Swift.min(4, Swift.max(1, ProcessInfo.processInfo.activeProcessorCount))
        userAgent = "ODataStores-CurlHTTP"
    }

    /// Checks the values that libcurl would reject or misread.
    ///
    /// - Throws: `CurlError` of kind `.invalidConfiguration` naming the first bad property.
    func validate() throws(CurlError) {
        func positive(_ d: Duration?, _ name: String) throws(CurlError) {
            if let d, d <= .zero {
                throw CurlError(kind: .invalidConfiguration, message: "\(name) must be positive, got \(d)")
            }
        }
        try positive(connectTimeout, "connectTimeout")
        try positive(totalTimeout, "totalTimeout")
        if let lowSpeed {
            if lowSpeed.bytesPerSecond < 1 {
                throw CurlError(kind: .invalidConfiguration, message: "lowSpeedLimit.bytesPerSecond must be at least 1")
            }
            if lowSpeed.duration < .seconds(1) {
                throw CurlError(kind: .invalidConfiguration, message: "lowSpeedLimit.duration must be at least 1 second")
            }
        }
        if let max = maxResponseBodySize, max < 0 {
            throw CurlError(kind: .invalidConfiguration, message: "maxResponseBodySize must not be negative")
        }
        if maxConnectionsPerHost < 1 {
            throw CurlError(kind: .invalidConfiguration, message: "maxConnectionsPerHost must be at least 1")
        }
        if maxTotalConnections < 0 {
            throw CurlError(kind: .invalidConfiguration, message: "maxTotalConnections must not be negative")
        }
        if maxCachedConnections < 1 {
            throw CurlError(kind: .invalidConfiguration, message: "maxCachedConnections must be at least 1")
        }
        if eventLoopCount < 1 {
            throw CurlError(kind: .invalidConfiguration, message: "eventLoopCount must be at least 1")
        }
        if maxPooledHandles < 0 {
            throw CurlError(kind: .invalidConfiguration, message: "maxPooledHandles must not be negative")
        }
        switch redirects {
        case .never: break
        case .safeMethods(let max), .always(let max):
            if max < 0 { throw CurlError(kind: .invalidConfiguration, message: "redirect maximum must not be negative") }
        }
        for (value, name) in [(caFile, "caFile"), (caPath, "caPath"), (userAgent, "userAgent"), (acceptEncoding, "acceptEncoding")] {
            if let value, value.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) {
                throw CurlError(kind: .invalidConfiguration, message: "\(name) contains a NUL, CR or LF character")
            }
        }
    }
}

extension CurlConfiguration {
    /// The number of loops actually started: never more than there are connections per host to share out.
    var effectiveEventLoopCount: Int {
        Swift.max(1, Swift.min(eventLoopCount, maxConnectionsPerHost))
    }

    /// The configuration of loop `index` of `count`: the connection limits divided among the loops, the
    /// remainder going to the first ones.
    func shard(_ index: Int, of count: Int) -> CurlConfiguration {
        guard count > 1 else { return self }
        func share(_ total: Int) -> Int {
            total / count + (index < total % count ? 1 : 0)
        }
        var copy = self
        copy.maxConnectionsPerHost = Swift.max(1, share(maxConnectionsPerHost))
        if maxTotalConnections > 0 { copy.maxTotalConnections = Swift.max(1, share(maxTotalConnections)) }
        copy.maxCachedConnections = Swift.max(1, share(maxCachedConnections))
        copy.maxPooledHandles = share(maxPooledHandles)
        return copy
    }
}

extension Duration {
    /// The duration in whole milliseconds, at least 1 for a positive duration, clamped to `Int`.
    var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        let ms = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        if ms >= Double(Int.max) { return Int.max }
        return Swift.max(1, Int(ms.rounded(.up)))
    }
}
