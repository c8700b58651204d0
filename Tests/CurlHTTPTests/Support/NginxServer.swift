import Foundation
import Synchronization
@testable import CurlHTTP
import Testing
#if canImport(Glibc)
import Glibc
import ODataCore
#endif

/// An nginx started by the tests from a config they write into a temporary directory, serving static files
/// on 127.0.0.1 with gzip and ETags; stopped by PID.
final class NginxServer: Sendable {
    let port: Int
    /// The port of the TLS server block (HTTP/2 offered through ALPN, self-signed certificate).
    let tlsPort: Int
    let directory: URL
    private let process: LockedValue<Process?>

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

    private init(port: Int, tlsPort: Int, directory: URL, process: Process) {
        self.port = port
        self.tlsPort = tlsPort
        self.directory = directory
        self.process = LockedValue(process)
    }

    /// Writes config and files, starts nginx on a free port and waits until it accepts connections.
    static func start() throws -> NginxServer {
        var lastError: (any Error)?
        for _ in 0..<5 {
            do { return try startOnce() } catch { lastError = error }
        }
        throw lastError ?? Sockets.Failure(description: "nginx did not start")
    }

    private static func startOnce() throws -> NginxServer {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("curlhttp-nginx-\(UUID().uuidString)")
        let www = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        for (name, data) in files {
            try data.write(to: www.appendingPathComponent(name))
        }
        let port = try Sockets.freePort()
        var tlsPort = try Sockets.freePort()
        while tlsPort == port { tlsPort = try Sockets.freePort() }
        let d = directory.path
        try makeCertificate(in: directory)
        let config = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(d)/nginx.pid;
            error_log \(d)/error.log warn;
            events { worker_connections 4096; }
            http {
                types { application/json json; }
                default_type application/octet-stream;
                log_format conn '$connection $connection_requests "$request" $status $bytes_sent';
                access_log \(d)/access.log conn;
                client_body_temp_path \(d)/tmp/body;
                proxy_temp_path \(d)/tmp/proxy;
                fastcgi_temp_path \(d)/tmp/fastcgi;
                uwsgi_temp_path \(d)/tmp/uwsgi;
                scgi_temp_path \(d)/tmp/scgi;
                keepalive_requests 100000;
                keepalive_timeout 60s;
                gzip on;
                gzip_types application/json;
                gzip_min_length 256;
                etag on;
                server {
                    listen 127.0.0.1:\(port);
                    root \(d)/www;
                    location / { }
                }
                server {
                    listen 127.0.0.1:\(tlsPort) ssl http2;
                    ssl_certificate \(d)/cert.pem;
                    ssl_certificate_key \(d)/key.pem;
                    root \(d)/www;
                    location / { }
                }
            }
            """
        try Data(config.utf8).write(to: directory.appendingPathComponent("nginx.conf"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", d, "-c", "\(d)/nginx.conf", "-e", "\(d)/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = NginxServer(port: port, tlsPort: tlsPort, directory: directory, process: process)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if Sockets.accepts(port: port) && Sockets.accepts(port: tlsPort) { return server }
            if !process.isRunning { break }
            usleep(10_000)
        }
        server.stop()
        let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        throw Sockets.Failure(description: "nginx did not accept on port \(port): \(log)")
    }

    /// `http://127.0.0.1:PORT/path`.
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// `https://127.0.0.1:TLSPORT/path`.
    func tlsURL(_ path: String) -> String { "https://127.0.0.1:\(tlsPort)/\(path)" }

    /// The self-signed certificate nginx presents (valid for 127.0.0.1 and localhost).
    var certificatePath: String { directory.appendingPathComponent("cert.pem").path }

    /// Writes a self-signed P-256 certificate and key with `openssl req`.
    private static func makeCertificate(in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", directory.appendingPathComponent("key.pem").path,
            "-out", directory.appendingPathComponent("cert.pem").path,
            "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Sockets.Failure(description: "openssl req failed with status \(process.terminationStatus)")
        }
    }

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

    /// Stops nginx by its PID (SIGTERM, SIGKILL if that is blocked, then waits for it) and removes the directory.
    func stop() {
        let process = self.process.withLock { process in
            defer { process = nil }
            return process
        }
        guard let process else { return }
        if process.isRunning {
            // nginx inherits the signal mask of the thread that spawned it, and Swift's worker threads block
            // SIGTERM, so `terminate()` may never arrive; SIGKILL cannot be blocked.
            process.terminate()
            let deadline = Date().addingTimeInterval(0.5)
            while process.isRunning, Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
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
