import Foundation
import ODataFixtures

/// `odata-fixture-server [--port N] [--data DIR] [--root /path/] [--page-size N]`: serves the
/// fixture producer on 127.0.0.1 until interrupted.
let usage = """
    usage: odata-fixture-server [--port N] [--data DIR] [--root /path/] [--page-size N|none] [--delta-ids FORM]
      --port N         TCP port on 127.0.0.1 (default 8080; 0 picks a free one)
      --data DIR       a directory with a CSDL document (*.xml) and <EntitySet>.json files
                       (default: the bundled Northwind data with Events)
      --root /path/    the service root path (default /)
      --page-size N    server-driven page size, or 'none' (default 100)
      --delta-ids FORM how delta answers identify members: keyProperties (default), relativeID,
                       absoluteID or odata40
    Control endpoint: /$fixture/faults, /$fixture/counters, /$fixture/reset (see NOTES-fixture.md).
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("odata-fixture-server: \(message)\n\(usage)\n".utf8))
    exit(2)
}

var configuration = FixtureConfiguration(port: 8080)
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    func value() -> String {
        guard let value = arguments.popFirst() else { fail("\(argument) needs a value") }
        return value
    }
    switch argument {
    case "--port":
        let text = value()
        guard let port = Int(text), (0...65_535).contains(port) else { fail("--port needs a number within 0...65535, got '\(text)'") }
        configuration.port = port
    case "--data":
        configuration.dataDirectory = URL(fileURLWithPath: value(), isDirectory: true)
    case "--root":
        configuration.serviceRootPath = value()
    case "--page-size":
        let text = value()
        if text == "none" {
            configuration.defaultPageSize = nil
        } else {
            guard let size = Int(text), size >= 1 else { fail("--page-size needs a positive number or 'none', got '\(text)'") }
            configuration.defaultPageSize = size
        }
    case "--delta-ids":
        let text = value()
        guard let form = FixtureConfiguration.DeltaIdentification(rawValue: text) else {
            fail("--delta-ids needs one of \(FixtureConfiguration.DeltaIdentification.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        configuration.deltaIdentification = form
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        fail("unknown argument '\(argument)'")
    }
}

let server: FixtureServer
do {
    server = try await FixtureServer.start(configuration)
} catch {
    fail("\(error)")
}
FileHandle.standardOutput.write(Data("odata-fixture-server: serving \(server.serviceRoot) (Ctrl-C to stop)\n".utf8))
// Runs until the process is interrupted or terminated.
while true {
    try? await Task.sleep(for: .seconds(3600))
}
