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

    @Option(
        name: .long,
        help: "A document the $metadata includes with edmx:Reference (a vocabulary, another service), so that its types are typed; repeatable.")
    var reference: [String] = []

    @Option(
        name: .long,
        help: "Only these entity sets and singletons (comma-separated), with the types they need.")
    var only: String?

    @Option(
        name: .long,
        help: "Split the output into files of about this many bytes (X.swift, X.2.swift, …; default 1048576).")
    var maxFileBytes: Int = 1 << 20

    @Flag(name: .long, help: "Print how long reading and generating took, and what was generated (standard error).")
    var timings = false

    func run() throws {
        do {
            let (data, sourceName) = try load(metadata)
            let references = try reference.map { try load($0).0 }
            let names = only.map { $0.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } }
            let generator = ProxyGenerator(serviceName: serviceName, sourceName: sourceName, only: names)
            let generated: GeneratedProxies
            let clock = ContinuousClock()
            let started = clock.now
            do {
                generated = try generator.generate(metadata: data, references: references)
            } catch {
                throw Failure("\(sourceName): \(error)")
            }
            if timings {
                let read = generated.readTime
                let total = clock.now - started
                FileHandle.standardError.write(Data(
                    "odata-proxygen: timings: read \(Self.seconds(read)) s, generated \(Self.seconds(total - read)) s, \(generated.typeCount) types\n".utf8))
            }
            for warning in generated.warnings {
                FileHandle.standardError.write(Data("odata-proxygen: \(sourceName): \(warning)\n".utf8))
            }
            guard maxFileBytes > 0 else { throw Failure("--max-file-bytes must be positive") }
            let files = generated.files(maxBytes: maxFileBytes)
            let url = URL(fileURLWithPath: output)
            let stem = url.deletingPathExtension().lastPathComponent
            let directory = url.deletingLastPathComponent()
            func part(_ index: Int) -> URL {
                index == 0 ? url : directory.appendingPathComponent("\(stem).\(index + 1).swift")
            }
            var written = 0
            for (index, text) in files.enumerated() {
                let target = part(index)
                let bytes = Data(text.utf8)
                if let existing = try? Data(contentsOf: target), existing == bytes { continue }
                do {
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    try bytes.write(to: target, options: .atomic)
                } catch {
                    throw Failure("cannot write \(target.path): \(error.localizedDescription)")
                }
                written += 1
            }
            // The parts a previous, larger output left behind.
            var index = files.count
            while FileManager.default.fileExists(atPath: part(index).path) {
                do {
                    try FileManager.default.removeItem(at: part(index))
                } catch {
                    throw Failure("cannot remove \(part(index).path): \(error.localizedDescription)")
                }
                written += 1
                index += 1
            }
            let total = files.reduce(0) { $0 + $1.utf8.count }
            let shape = files.count == 1 ? "" : " in \(files.count) files"
            if written == 0 {
                print("\(output) is up to date (unchanged, \(total) bytes\(shape) from \(sourceName))")
            } else {
                print("Wrote \(output) (\(total) bytes\(shape) from \(sourceName))")
            }
        } catch let failure as Failure {
            FileHandle.standardError.write(Data("odata-proxygen: \(failure.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// A duration in seconds with three decimals.
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.3f", Double(seconds) + Double(attoseconds) / 1e18)
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
