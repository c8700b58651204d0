import Foundation
@testable import CurlHTTP
import Testing
import ODataFixtures

/// An nginx started by the tests from a config they write into a temporary directory, serving static files
/// on 127.0.0.1 with gzip and ETags; started and stopped by ODataFixtures' `Nginx`.
final class NginxServer: Sendable {
    let port: Int
    /// The port of the TLS server block (HTTP/2 offered through ALPN, a certificate of a private CA).
    let tlsPort: Int
    let directory: URL
    private let nginx: Nginx
    private let certificates: TestCertificates

    /// The static files every nginx test can read, by path.
    static let files: [String: Data] = [
        "small.json": jsonFile(bytes: 1024),
        "medium.json": jsonFile(bytes: 64 * 1024),
        "large.json": jsonFile(bytes: 1_536 * 1024),
    ]

    /// A JSON document of exactly `bytes` bytes: an OData-like `value` array of entities.
    static func jsonFile(bytes: Int) -> Data {
        var text = "{\"value\":["
        var index = 0
        while text.utf8.count < bytes - 64 {
            if index > 0 { text += "," }
            text += "{\"ID\":\(index),\"Name\":\"Product \(index)\",\"Price\":\(Double(index) * 1.25)}"
            index += 1
        }
        text += "],\"pad\":\""
        text += String(repeating: "x", count: max(0, bytes - text.utf8.count - 2))
        text += "\"}"
        return Data(text.utf8)
    }

    private init(nginx: Nginx, certificates: TestCertificates) {
        self.nginx = nginx
        self.certificates = certificates
        self.port = nginx.ports[0]
        self.tlsPort = nginx.ports[1]
        self.directory = nginx.directory
    }

    /// Writes config and files, starts nginx on two free ports and waits until it accepts connections.
    static func start() throws -> NginxServer {
        var made: TestCertificates?
        let nginx = try Nginx.start(ports: 2, prepare: { directory in
            let www = directory.appendingPathComponent("www")
            try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
            for (name, data) in files {
                try data.write(to: www.appendingPathComponent(name))
            }
            made = try TestCertificates.make(in: directory.appendingPathComponent("certificates"))
        }) { d, ports in
            """
                types { application/json json; }
                default_type application/octet-stream;
                log_format conn '$connection $connection_requests "$request" $status $bytes_sent';
                keepalive_requests 100000;
                keepalive_timeout 60s;
                gzip on;
                gzip_types application/json;
                gzip_min_length 256;
                etag on;
                server {
                    listen 127.0.0.1:\(ports[0]);
                    access_log \(d)/access.log conn;
                    root \(d)/www;
                    location / { }
                }
                server {
                    listen 127.0.0.1:\(ports[1]) ssl http2;
                    access_log \(d)/access.log conn;
                    ssl_certificate \(d)/certificates/server.pem;
                    ssl_certificate_key \(d)/certificates/server.key;
                    root \(d)/www;
                    location / { }
                }
            """
        }
        return NginxServer(nginx: nginx, certificates: try #require(made))
    }

    /// `http://127.0.0.1:PORT/path`.
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// `https://127.0.0.1:TLSPORT/path`.
    func tlsURL(_ path: String) -> String { "https://127.0.0.1:\(tlsPort)/\(path)" }

    /// The private CA that signed the certificate nginx presents (valid for 127.0.0.1 and localhost).
    var certificatePath: String { certificates.caCertificate }

    /// The access log's lines, parsed: nginx's connection serial number and the request line.
    func accessLog() -> [(connection: Int, request: String, status: Int)] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: "\"")
            guard parts.count >= 3, let connection = Int(parts[0].split(separator: " ")[0]) else { return nil }
            let status = Int(parts[2].split(separator: " ").first ?? "") ?? 0
            return (connection, String(parts[1]), status)
        }
    }

    /// The access log's lines whose request contains `marker`, waiting (up to two seconds) until there are at
    /// least `count`: nginx writes a line after it has sent the response.
    func accessLog(containing marker: String, atLeast count: Int) async -> [(connection: Int, request: String, status: Int)] {
        var lines = accessLog().filter { $0.request.contains(marker) }
        for _ in 0..<200 where lines.count < count {
            try? await Task.sleep(for: .milliseconds(10))
            lines = accessLog().filter { $0.request.contains(marker) }
        }
        return lines
    }

    /// Stops nginx by its PID and removes the directory.
    func stop() { nginx.stop() }
}

/// A suite trait that starts one nginx for the whole suite and stops it when the suite ends.
struct NginxTrait: SuiteTrait, TestScoping {
    @TaskLocal static var current: NginxServer?

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let server = try NginxServer.start()
        defer { server.stop() }
        try await NginxTrait.$current.withValue(server) {
            try await function()
        }
    }
}

extension Trait where Self == NginxTrait {
    /// Runs the suite against one nginx on loopback.
    static var nginx: NginxTrait { NginxTrait() }
}

/// The suite's nginx.
func nginx() throws -> NginxServer {
    try #require(NginxTrait.current, "the suite needs the .nginx trait")
}
