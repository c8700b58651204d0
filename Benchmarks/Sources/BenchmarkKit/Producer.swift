import Foundation

/// The fixture producer's binary: `ODATA_FIXTURE_SERVER`, else the repository's release build, else its debug build.
public func fixtureBinary() -> String? {
    repositoryBinary(named: "odata-fixture-server", environment: "ODATA_FIXTURE_SERVER")
}

/// An executable of the repository (the package above Benchmarks/): the path in the environment variable
/// `environment`, else its release build, else its debug build.
public func repositoryBinary(named name: String, environment: String) -> String? {
    if let path = ProcessInfo.processInfo.environment[environment] { return path }
    let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    for configuration in ["release", "debug"] {
        let path = here.appendingPathComponent(".build/\(configuration)/\(name)").path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// Starts the producer over a data directory (its bundled data when `nil`) and returns the process and its service root.
/// `idle` starts it under `chrt --idle 0` (every thread of it at `SCHED_IDLE`): a back end that stands in for one on
/// another machine, so that it does not compete for the cores with the process measured.
public func startProducer(binary: String, data: String?, port: Int = 0, idle: Bool = false) throws -> (Process, String) {
    let process = Process()
    let arguments = ["--port", String(port), "--page-size", "1000"] + (data.map { ["--data", $0] } ?? [])
    if idle {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chrt")
        process.arguments = ["--idle", "0", binary] + arguments
    } else {
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
    }
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    var text = ""
    while !text.contains("\n") {
        let data = output.fileHandleForReading.availableData
        if data.isEmpty { break }
        text += String(decoding: data, as: UTF8.self)
    }
    guard let start = text.range(of: "serving "), let end = text.range(of: " (Ctrl-C") else {
        process.terminate()
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the producer did not start: \(text)"])
    }
    return (process, String(text[start.upperBound..<end.lowerBound]))
}

/// This process's peak resident memory since it started or since ``resetPeakResidentBytes()`` (`VmHWM`;
/// `getrusage`'s `ru_maxrss` would keep the parent's from before `exec`).
public func peakResidentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kilobytes * 1024
}

/// This process's resident memory now, by kind (`/proc/self/status`): anonymous pages (the heap and
/// stacks) and file-backed pages (mapped files, such as an LMDB map, and the program's own code).
public func residentBreakdown() -> (anonymous: Int, file: Int) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
    func kilobytes(_ field: String) -> Int {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
    return (kilobytes("RssAnon:") * 1024, kilobytes("RssFile:") * 1024)
}

/// Starts a new peak: `VmHWM` becomes the current resident size (Linux: `5` into `/proc/self/clear_refs`).
/// - Returns: whether the kernel took it.
@discardableResult
public func resetPeakResidentBytes() -> Bool {
    guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
    defer { try? handle.close() }
    do { try handle.write(contentsOf: Data("5".utf8)) } catch { return false }
    return true
}
