// odata-proxygen: reads an OData $metadata document (a file or an http(s) URL) and writes typed Swift proxies
// for the ODataTyped runtime. The file is written only when its content changes.

import ArgumentParser
import Foundation
import ODataProxyGenerator

/// The `odata-proxygen` command.
@main
struct ODataProxygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "odata-proxygen",
        abstract: "Generates typed Swift proxies (for ODataTyped) from an OData V4 or V2 $metadata document."
    )

    @Option(name: .long, help: "The $metadata document: a file path or an http(s) URL (fetched with curl).")
    var metadata: String

    @Option(name: .long, help: "The Swift file to write (written only if its content changes).")
    var output: String

    @Option(name: .long, help: "The service type's name (default: the entity container's name + Service).")
    var serviceName: String?

    func run() throws {
        do {
            let (data, sourceName) = try load(metadata)
            let generator = ProxyGenerator(serviceName: serviceName, sourceName: sourceName)
            let source: String
            do {
                source = try generator.generate(metadata: data)
            } catch {
                throw Failure("\(sourceName): \(error)")
            }
            let url = URL(fileURLWithPath: output)
            let bytes = Data(source.utf8)
            if let existing = try? Data(contentsOf: url), existing == bytes {
                print("\(output) is up to date (unchanged, \(bytes.count) bytes from \(sourceName))")
                return
            }
            do {
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try bytes.write(to: url, options: .atomic)
            } catch {
                throw Failure("cannot write \(output): \(error.localizedDescription)")
            }
            print("Wrote \(output) (\(bytes.count) bytes from \(sourceName))")
        } catch let failure as Failure {
            FileHandle.standardError.write(Data("odata-proxygen: \(failure.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// The document's bytes and its name (the last path component).
    private func load(_ location: String) throws -> (Data, String) {
        let lowered = location.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            let name = URL(string: location)?.lastPathComponent ?? location
            return (try fetch(location), name.isEmpty ? location : name)
        }
        let url = URL(fileURLWithPath: location)
        do {
            return (try Data(contentsOf: url), url.lastPathComponent)
        } catch {
            throw Failure("cannot read \(location): \(error.localizedDescription)")
        }
    }

    /// Fetches a URL with `curl -sS --fail` (its errors go to standard error).
    private func fetch(_ location: String) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-sS", "--fail", "--location", location]
        let pipe = Pipe()
        process.standardOutput = pipe
        do {
            try process.run()
        } catch {
            throw Failure("cannot run curl: \(error.localizedDescription)")
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure("curl could not fetch \(location) (exit code \(process.terminationStatus))")
        }
        return data
    }
}

/// A failure reported on standard error with exit code 1.
struct Failure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
