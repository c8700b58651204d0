import Foundation
import Testing

/// Runs the short soak (`odata-soak --short`, ~10 s) as a child process, as `make soak` does for
/// longer: faults, cache reopenings, mode switches and a SIGKILLed cache writer; offline stores
/// making local changes, uploading and downloading under write faults, one of them in a child
/// SIGKILLed at random points; and every must-be-zero figure zero (the soak's exit status says so).
@Suite struct SoakTests {
    /// The soak executable next to this test bundle (same build directory, any scratch path).
    static func soakExecutable() -> URL? {
        var candidates: [URL] = []
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var directory = exe.deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent("odata-soak"))
            directory = directory.deletingLastPathComponent()
        }
        if let argument = CommandLine.arguments.first {
            var directory = URL(fileURLWithPath: argument).deletingLastPathComponent()
            for _ in 0..<4 {
                candidates.append(directory.appendingPathComponent("odata-soak"))
                directory = directory.deletingLastPathComponent()
            }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/odata-soak"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    @Test(.timeLimit(.minutes(1)))
    func shortSoakHasNoWrongAnswersCrashesOrOpenFailures() throws {
        let executable = try #require(Self.soakExecutable(), "odata-soak must be built (swift build --build-tests builds it)")
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--short"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        print(text)
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0, "the soak failed:\n\(text)")
        #expect(text.contains("odata-soak: OK"))
        for column in ["wrong cache answers", "stale answers served as fresh", "store-open failures", "crashes",
                       "offline requests lost", "offline requests executed twice", "offline final-state mismatches",
                       "offline requests refused (not a fault)", "offline queues not drained"] {
            let line = text.split(separator: "\n").first { $0.contains(column) }
            #expect(line.map { $0.hasSuffix(" 0") } == true, "\(column): \(line ?? "missing")")
        }
    }
}
