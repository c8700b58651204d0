import Foundation
import ODataCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A running `mock-sap` (PyPI `mock-sap==0.22.0`): an SAP-shaped OData producer that nobody here wrote, with
/// SAP Gateway's conventions on (CSRF tokens, session cookies, `sap-client`, the SAP error envelope), for
/// tests that must not be passable by our own producer alone.
///
/// `make deps` installs it into a virtual environment at `.build/mock-sap`; the `MOCK_SAP` environment variable
/// names another executable. Each instance listens on a free port of 127.0.0.1 with its own in-memory data,
/// and is stopped by its PID.
///
/// ```swift
/// let sap = try MockSAP.start()                        // CSRF on, as Gateway ships
/// let root = sap.serviceRoot(MockSAP.gwsampleBasic)     // "http://127.0.0.1:PORT/sap/opu/odata/IWBEP/GWSAMPLE_BASIC/"
/// defer { sap.stop() }
/// ```
public final class MockSAP: Sendable {
    /// The V2 `GWSAMPLE_BASIC` demo service, relative to the server root.
    public static let gwsampleBasic = "sap/opu/odata/IWBEP/GWSAMPLE_BASIC/"
    /// The V2 `API_SALES_ORDER_SRV` service, relative to the server root.
    public static let salesOrderV2 = "sap/opu/odata/sap/API_SALES_ORDER_SRV/"
    /// The V4 sales order service, relative to the server root.
    public static let salesOrderV4 = "sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/api_salesorder/0001/"
    /// The V4 product service, relative to the server root.
    public static let productV4 = "sap/opu/odata4/sap/api_product/srvd_a2x/sap/api_product/0001/"

    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The server root, `http://127.0.0.1:PORT/`.
    public let baseURL: String
    private let process: LockedValue<Process?>

    private init(port: Int, process: Process) {
        self.port = port
        self.baseURL = "http://127.0.0.1:\(port)/"
        self.process = LockedValue(process)
    }

    deinit { stop() }

    /// The executable tests start: `$MOCK_SAP`, else `.build/mock-sap/bin/mock-sap` under the package root.
    public static var executable: String {
        if let path = ProcessInfo.processInfo.environment["MOCK_SAP"], !path.isEmpty { return path }
        // #filePath is …/Fixtures/Sources/ODataFixtures/MockSAP.swift.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/mock-sap/bin/mock-sap").path
    }

    /// Starts a mock-sap on a free port of 127.0.0.1 and waits until it listens.
    ///
    /// - Parameter arguments: extra command-line options, such as `["--no-csrf"]` or
    ///   `["--oauth", "CLIENT:SECRET", "--token-ttl", "60"]`; CSRF protection is on unless they switch it off.
    /// - Returns: the running server.
    /// - Throws: ``FixtureError`` `.serverFailure` when the executable is missing (run `make deps`) or the
    ///   server does not come up within 20 seconds.
    public static func start(arguments: [String] = []) throws(FixtureError) -> MockSAP {
        let path = executable
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FixtureError(.serverFailure, "mock-sap is not installed at \(path): run `make deps`")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--host", "127.0.0.1", "--port", "0", "--quiet"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            throw FixtureError(.serverFailure, "mock-sap did not start: \(error)")
        }
        // The first line says "mock-sap 0.22.0 listening on http://127.0.0.1:PORT …".
        let port = LockedValue<Int?>(nil)
        let reader = Thread {
            var text = ""
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
                if let range = text.range(of: "http://127.0.0.1:") {
                    let digits = text[range.upperBound...].prefix { $0.isNumber }
                    if let value = Int(digits), text[range.upperBound...].count > digits.count {
                        port.withLock { $0 = value }
                        break
                    }
                }
            }
            // Keep draining so the child never blocks on a full pipe.
            while !output.fileHandleForReading.availableData.isEmpty {}
        }
        reader.start()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let value = port.withLock({ $0 }) {
                let server = MockSAP(port: value, process: process)
                if (try? server.admin("GET", "health").status) == 200 { return server }
            }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        throw FixtureError(.serverFailure, "mock-sap did not listen within 20 s")
    }

    /// The absolute root of one of its services, such as ``gwsampleBasic``.
    public func serviceRoot(_ service: String) -> String { baseURL + service }

    /// Calls its control plane, `/_mock/<path>` (for example `faults`, `reset`, `state`), synchronously.
    ///
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - path: the part after `/_mock/`.
    ///   - json: a JSON body, or `nil`.
    /// - Returns: the status and the body.
    /// - Throws: ``FixtureError`` `.serverFailure` when the server cannot be reached.
    @discardableResult
    public func admin(_ method: String, _ path: String, json: String? = nil) throws(FixtureError) -> (status: Int, body: Data) {
        var request = URLRequest(url: URL(string: baseURL + "_mock/" + path)!, timeoutInterval: 10)
        request.httpMethod = method
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let result = LockedValue<Result<(Int, Data), any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, error in
            if let error {
                result.withLock { $0 = .failure(error) }
            } else {
                result.withLock { $0 = .success(((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data())) }
            }
            done.signal()
        }.resume()
        done.wait()
        switch result.withLock({ $0 }) {
        case .success(let value)?: return (value.0, value.1)
        case .failure(let error)?: throw FixtureError(.serverFailure, "mock-sap control plane: \(error)")
        case nil: throw FixtureError(.serverFailure, "mock-sap control plane: no answer")
        }
    }

    /// The requests it logged (its `/_mock/requests`, the last 500) with this method on a path containing `path`,
    /// the latest first: what reached the back end.
    ///
    /// - Throws: ``FixtureError`` `.serverFailure` when the server cannot be reached or answers no log.
    public func logged(method: String, path: String) throws(FixtureError) -> [(path: String, status: Int, query: String)] {
        let (_, body) = try admin("GET", "requests?limit=500")
        guard case .object(let root)? = try? JSON.parse(body), let results = root["results"]?.arrayValue else {
            throw FixtureError(.serverFailure, "mock-sap control plane: no request log")
        }
        return results.compactMap { entry in
            guard entry["method"]?.stringValue == method, let logged = entry["path"]?.stringValue, logged.contains(path) else { return nil }
            return (logged, Int(entry["status"]?.intValue ?? 0), entry["query"]?.stringValue ?? "")
        }
    }

    /// Stops the server by its PID (SIGTERM, then SIGKILL after a second); harmless when already stopped.
    public func stop() {
        guard let process = process.withLock({ value -> Process? in defer { value = nil }; return value }) else { return }
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(1)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
