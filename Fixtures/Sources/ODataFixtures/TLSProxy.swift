import Foundation

/// nginx as a TLS reverse proxy in front of a producer on 127.0.0.1 (a ``FixtureServer``, ``MockSAP``), with
/// certificates of a private CA made for the test (``TestCertificates``): one HTTPS port per case a client must
/// tell apart. Responses have the producer's `http://127.0.0.1:PORT/` rewritten to the proxy's `https://` origin
/// (`@odata.context`, next links, `Location`), so a client never leaves TLS.
///
/// ```swift
/// let server = try await FixtureServer.start()
/// let proxy = try TLSProxy.start(backendPort: server.port)
/// defer { proxy.stop() }
/// var transport = CurlConfiguration()
/// transport.caFile = proxy.certificates.caCertificate
/// let root = proxy.serviceRoot(.verified, path: "/")
/// ```
public final class TLSProxy: Sendable {
    /// What a port of the proxy presents and asks.
    public enum Endpoint: Int, Sendable, CaseIterable {
        /// The server certificate for 127.0.0.1 signed by the CA; no client certificate asked.
        case verified
        /// A certificate signed by the CA for `wrong.example` only.
        case wrongHost
        /// The server certificate for 127.0.0.1 signed by the CA, expired.
        case expired
        /// The valid server certificate, and a client certificate required (mutual TLS): a client without one is
        /// refused in the handshake (`ssl_verify_client on` with OpenSSL's `VerifyMode Require`). nginx accepts a
        /// certificate of an unknown CA in the handshake and answers each request on that connection with
        /// `400 The SSL certificate error` instead: it checks the chain per request, not in the handshake.
        case mutual
    }

    /// The CA and certificates the proxy uses and a client needs.
    public let certificates: TestCertificates
    /// The producer's port.
    public let backendPort: Int
    private let nginx: Nginx

    private init(certificates: TestCertificates, backendPort: Int, nginx: Nginx) {
        self.certificates = certificates
        self.backendPort = backendPort
        self.nginx = nginx
    }

    /// Makes the certificates and starts nginx in front of `backendPort`.
    ///
    /// - Parameter backendPort: The producer's port on 127.0.0.1 (plain HTTP).
    /// - Returns: The running proxy.
    /// - Throws: ``FixtureError`` `.serverFailure` when `openssl` or nginx is missing or fails.
    public static func start(backendPort: Int) throws(FixtureError) -> TLSProxy {
        var made: TestCertificates?
        let nginx = try Nginx.start(ports: Endpoint.allCases.count, prepare: { directory in
            made = try TestCertificates.make(in: directory.appendingPathComponent("certificates"))
        }) { directory, ports in
            let c = "\(directory)/certificates"
            let backend = "http://127.0.0.1:\(backendPort)/"
            func server(_ endpoint: Endpoint, certificate: String, key: String, extra: String = "") -> String {
                """
                    server {
                        listen 127.0.0.1:\(ports[endpoint.rawValue]) ssl http2;
                        ssl_certificate \(c)/\(certificate);
                        ssl_certificate_key \(c)/\(key);
                        \(extra)
                        location / {
                            proxy_pass \(backend);
                            proxy_set_header Host 127.0.0.1:\(backendPort);
                            proxy_set_header Accept-Encoding "";
                            proxy_redirect \(backend) https://127.0.0.1:$server_port/;
                            sub_filter '\(backend)' 'https://127.0.0.1:$server_port/';
                            sub_filter_once off;
                            sub_filter_types application/json application/xml text/plain multipart/mixed;
                        }
                    }
                """
            }
            let mutual = "ssl_client_certificate \(c)/ca.pem; ssl_verify_client on; ssl_conf_command VerifyMode Peer,Require;"
            return [
                "    client_max_body_size 64m;",
                server(.verified, certificate: "server.pem", key: "server.key"),
                server(.wrongHost, certificate: "wrong-host.pem", key: "wrong-host.key"),
                server(.expired, certificate: "expired.pem", key: "server.key"),
                server(.mutual, certificate: "server.pem", key: "server.key", extra: mutual),
            ].joined(separator: "\n")
        }
        guard let made else { throw FixtureError(.serverFailure, "the certificates were not made") }
        return TLSProxy(certificates: made, backendPort: backendPort, nginx: nginx)
    }

    /// The proxy's port for `endpoint`.
    public func port(_ endpoint: Endpoint) -> Int { nginx.ports[endpoint.rawValue] }

    /// `https://127.0.0.1:PORT` plus `path` for `endpoint`: the producer's service root behind the proxy when
    /// `path` is the producer's service root path.
    public func serviceRoot(_ endpoint: Endpoint, path: String = "/") -> String {
        "https://127.0.0.1:\(port(endpoint))" + path
    }

    /// nginx's error log: why it refused a client.
    public var errorLog: String { nginx.errorLog }

    /// Stops nginx and removes its directory with the certificates.
    public func stop() { nginx.stop() }
}
