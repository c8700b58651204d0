import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The roles a re-run of this test binary can play, chosen by `CACHE_TEST_CHILD`.
enum ChildRole: String {
    /// `CrashTests`: stores entries 0, 1, 2, … until killed.
    case writer
    /// `CrashTests`: opens the cache and waits to be killed.
    case holder
    /// `ChunkedValueTests`: stores chunked entries under a small budget until killed.
    case chunkWriter
    /// `MultiProcessTests`: runs the commands read from its standard input, one a line.
    case scripted
    /// `MultiProcessTests`: a random workload on a shared cache.
    case load
}

let childEnvironment = ProcessInfo.processInfo.environment
let childRole = childEnvironment["CACHE_TEST_CHILD"].flatMap(ChildRole.init(rawValue:))

/// A re-run of this test binary with one test selected, its pipes, stopped by its process ID.
final class Child: @unchecked Sendable {
    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private let input = Pipe()
    private var buffer = Data()
    /// The child's standard error, drained as it comes so that the child never blocks on a full pipe.
    private let errorText = NSLock()
    private var errorData = Data()

    /// Runs this test binary again with only the test `name` selected and `environment` added.
    init(test name: String, environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--testing-library", "swift-testing", "--filter", name]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = input
        errors.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self else { return }
            self.errorText.lock()
            self.errorData.append(chunk)
            self.errorText.unlock()
            if chunk.isEmpty { handle.readabilityHandler = nil }
        }
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// Reads lines until `stop` returns true for the lines read so far, or the pipe ends.
    func readLines(until stop: ([String]) -> Bool) -> [String] {
        var lines: [String] = []
        let handle = output.fileHandleForReading
        while true {
            while let newline = buffer.firstIndex(of: 0x0A) {
                lines.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                buffer.removeSubrange(buffer.startIndex...newline)
                if stop(lines) { return lines }
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return lines }
            buffer.append(chunk)
        }
    }

    /// Sends one command line to a scripted child and returns its answer.
    func send(_ command: String) -> String {
        write(command)
        return answer()
    }

    /// Sends one command line to a scripted child without waiting for its answer.
    func write(_ command: String) {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
    }

    /// The scripted child's next answer (the text after `@@ ` on its next answer line), or "" when it ended.
    func answer() -> String {
        let lines = readLines { $0.last?.hasPrefix(answerPrefix) == true }
        guard let last = lines.last, last.hasPrefix(answerPrefix) else { return "" }
        return String(last.dropFirst(answerPrefix.count))
    }

    /// What the child wrote to its standard error so far (for failure messages; secrets never reach it).
    var stderrText: String {
        errorText.lock()
        defer { errorText.unlock() }
        return String(decoding: errorData.suffix(4000), as: UTF8.self)
    }

    /// Stops the child with `signal` (by its process ID) and waits for it.
    func stop(_ signal: Int32 = SIGKILL) {
        if process.isRunning { kill(pid, signal) }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }
}

/// The prefix of a scripted child's answer lines (other lines are the test runner's).
let answerPrefix = "@@ "

/// Writes one line to standard output at once (a child's report).
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
