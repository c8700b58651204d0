import Foundation
import ODataCore
import Testing

@testable import ODataFixtures

/// What curl's command line got back.
struct CurlResult: Sendable {
    /// curl's exit code: 0, or 52 (empty reply), 18 (partial body), 56 (receive failure)…
    var exitCode: Int32
    var status: Int
    /// Header names lower-cased; a repeated header keeps its last value.
    var headers: [String: String]
    var body: [UInt8]
    var seconds: Double

    var text: String { String(decoding: body, as: UTF8.self) }

    func json() throws -> JSONValue { try JSON.parse(body) }

    /// The `value` array of a collection payload.
    func values() throws -> [JSONValue] {
        try #require(try json()["value"]?.arrayValue)
    }

    /// The OData error code of an error body.
    func errorCode() throws -> String? { try json()["error"]?["code"]?.stringValue }
}

/// Runs curl's command line against a fixture server, over real HTTP.
enum Curl {
    static func run(_ url: String, headers: [String: String] = [:]) async throws -> CurlResult {
        try await run("GET", url, headers: headers)
    }

    static func run(
        _ method: String = "GET", _ url: String, headers: [String: String] = [:], body: String? = nil,
        maxTime: Int = 20
    ) async throws -> CurlResult {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-curl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let headerFile = directory.appendingPathComponent("headers")
        let bodyFile = directory.appendingPathComponent("body")
        var arguments = [
            "-s", "-g", "--max-time", String(maxTime), "-X", method, "-D", headerFile.path, "-o", bodyFile.path,
            "-w", "%{http_code}",
        ]
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        if let body {
            let requestFile = directory.appendingPathComponent("request")
            try Data(body.utf8).write(to: requestFile)
            arguments += ["--data-binary", "@" + requestFile.path]
        }
        arguments.append(url)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        let started = ContinuousClock.now
        let exitCode: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { finished in continuation.resume(returning: finished.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        let elapsed = ContinuousClock.now - started
        let statusText = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        var headerFields: [String: String] = [:]
        if let raw = try? String(contentsOf: headerFile, encoding: .utf8) {
            for line in raw.split(separator: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headerFields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        let bytes = (try? Data(contentsOf: bodyFile)).map { [UInt8]($0) } ?? []
        let (seconds, attoseconds) = elapsed.components
        return CurlResult(
            exitCode: exitCode, status: Int(statusText) ?? 0, headers: headerFields, body: bytes,
            seconds: Double(seconds) + Double(attoseconds) / 1e18)
    }
}

/// Starts a server for one test and always stops it.
func withServer<Result>(
    _ configuration: FixtureConfiguration = FixtureConfiguration(),
    _ body: (FixtureServer) async throws -> Result
) async throws -> Result {
    let server = try await FixtureServer.start(configuration)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
