import Foundation
import ODataCore
#if canImport(Glibc)
import Glibc
#endif

/// A running nginx (Debian `nginx`) for tests, started from a configuration the caller writes: it listens on
/// free ports of 127.0.0.1 (or of another address of this machine: a ``NetworkHosts`` bridge), keeps its PID file, logs and temporary files inside its own temporary directory, and
/// is stopped by its PID.
///
/// `make deps` installs it; the `NGINX` environment variable names another executable.
///
/// ```swift
/// let nginx = try Nginx.start(ports: 1) { directory, ports in
///     "server { listen 127.0.0.1:\(ports[0]); root \(directory)/www; location / { } }"
/// }
/// defer { nginx.stop() }
/// ```
public final class Nginx: Sendable {
    /// The ports it listens on, in the order the configuration was given them.
    public let ports: [Int]
    /// The address the configuration listens on (127.0.0.1 unless the start named another).
    public let address: String
    /// Its directory: `nginx.conf`, `error.log`, `access.log`, `tmp/` and whatever the caller put there.
    public let directory: URL
    private let process: LockedValue<Process?>

    private init(ports: [Int], address: String, directory: URL, process: Process) {
        self.ports = ports
        self.address = address
        self.directory = directory
        self.process = LockedValue(process)
    }

    deinit { stop() }

    /// The executable tests start: `$NGINX`, else `/usr/sbin/nginx`.
    public static var executable: String {
        if let path = ProcessInfo.processInfo.environment["NGINX"], !path.isEmpty { return path }
        return "/usr/sbin/nginx"
    }

    /// Starts nginx and waits until every port accepts connections.
    ///
    /// - Parameters:
    ///   - ports: How many free ports of 127.0.0.1 to give the configuration.
    ///   - address: The address the configuration's `listen` lines name (the readiness check connects there);
    ///     127.0.0.1 by default. Never `0.0.0.0`: a test server listens on this machine only.
    ///   - prepare: Called with the new directory before the configuration is written, to put files there
    ///     (certificates, static files); the default does nothing.
    ///   - http: The body of the configuration's `http { }` block for the directory's path and the ports: its
    ///     `server` blocks. The block around it sets the PID file, the logs (`access.log` and `error.log`) and the
    ///     temporary paths inside the directory, one worker, and the foreground.
    /// - Returns: The running nginx.
    /// - Throws: ``FixtureError`` `.serverFailure` when nginx is not installed (run `make deps`), `prepare`
    ///   throws, or nginx does not listen within 5 seconds (with its error log); a port another process took
    ///   first is retried on new ports.
    public static func start(
        ports count: Int, address: String = "127.0.0.1", prepare: (URL) throws -> Void = { _ in },
        http: (_ directory: String, _ ports: [Int]) -> String
    ) throws(FixtureError) -> Nginx {
        guard address != "0.0.0.0" else { throw FixtureError(.invalidArgument, "a test nginx listens on one address of this machine, not 0.0.0.0") }
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw FixtureError(.serverFailure, "nginx is not installed at \(executable): run `make deps`")
        }
        var lastError = FixtureError(.serverFailure, "nginx did not start")
        for _ in 0..<5 {
            do { return try startOnce(count: count, address: address, prepare: prepare, http: http) } catch { lastError = error }
        }
        throw lastError
    }

    private static func startOnce(
        count: Int, address: String, prepare: (URL) throws -> Void, http: (String, [Int]) -> String
    ) throws(FixtureError) -> Nginx {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
        var ports: [Int] = []
        while ports.count < count {
            let port = RedisServer.freePort()
            if port > 0, !ports.contains(port) { ports.append(port) }
        }
        let d = directory.path
        let configuration = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(d)/nginx.pid;
            error_log \(d)/error.log warn;
            events { worker_connections 4096; }
            http {
                access_log \(d)/access.log;
                client_body_temp_path \(d)/tmp/body;
                proxy_temp_path \(d)/tmp/proxy;
                fastcgi_temp_path \(d)/tmp/fastcgi;
                uwsgi_temp_path \(d)/tmp/uwsgi;
                scgi_temp_path \(d)/tmp/scgi;
            \(http(d, ports))
            }
            """
        let process = Process()
        do {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("tmp"), withIntermediateDirectories: true)
            try prepare(directory)
            try Data(configuration.utf8).write(to: directory.appendingPathComponent("nginx.conf"))
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["-p", d, "-c", "\(d)/nginx.conf", "-e", "\(d)/error.log"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        } catch let error as FixtureError {
            try? FileManager.default.removeItem(at: directory)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw FixtureError(.serverFailure, "nginx did not start: \(error)")
        }
        let server = Nginx(ports: ports, address: address, directory: directory, process: process)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, process.isRunning {
            if ports.allSatisfy({ RedisServer.accepts(port: $0, address: address) }) { return server }
            usleep(10_000)
        }
        let log = server.errorLog
        server.stop()
        throw FixtureError(.serverFailure, "nginx did not listen on \(address):\(ports): \(log)")
    }

    /// Starts nginx serving static files (keep-alive, ETags, no gzip) on one free port of `address`: a back end for
    /// fleet tests and benchmarks, reachable from every host of ``NetworkHosts`` when `address` is their bridge's.
    /// - Parameters:
    ///   - files: File name → contents, served at `/<name>` (`.json` as `application/json`).
    ///   - address: The address to listen on (127.0.0.1 by default).
    /// - Returns: The running nginx; its root is `http://<address>:<ports[0]>/`.
    /// - Throws: ``FixtureError`` as ``start(ports:address:prepare:http:)``, or when a file cannot be written.
    public static func serving(files: [String: Data], address: String = "127.0.0.1") throws(FixtureError) -> Nginx {
        try start(ports: 1, address: address, prepare: { directory in
            let www = directory.appendingPathComponent("www")
            try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
            for (name, data) in files { try data.write(to: www.appendingPathComponent(name)) }
        }) { directory, ports in
            """
            types { application/json json; }
            keepalive_requests 1000000; keepalive_timeout 120s;
            gzip off; etag on;
            server { listen \(address):\(ports[0]); root \(directory)/www; location / { } }
            """
        }
    }

    /// The text of its `error.log` (empty when there is none yet).
    public var errorLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    /// Stops nginx by its PID (SIGTERM, SIGKILL when that is not delivered within half a second, then waits for
    /// it) and removes its directory; harmless when already stopped.
    public func stop() {
        guard let process = process.withLock({ value -> Process? in defer { value = nil }; return value }) else { return }
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
