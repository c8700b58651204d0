import Foundation
import Testing

/// Runs the short soak (`odata-soak --short`, ~10 s) as a child process, as `make soak` does for
/// longer: faults, cache reopenings, mode switches and a SIGKILLed cache writer; offline stores
/// making local changes, uploading and downloading under write faults, one of them in a child
/// SIGKILLed at random points; and every must-be-zero figure zero (the soak's exit status says so). Then the
/// cluster profile for 6 s (`--cluster`).
@Suite(.serialized) struct SoakTests {
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
        try runSoak(["--short"])
    }

    /// The cluster profile, shorter (6 s): the Redis tier on a 3 + 3 Redis Cluster whose master of a random
    /// slot is SIGKILLed at 40 % of the run and started again at 70 %; the cluster is healthy at the end.
    @Test(.timeLimit(.minutes(1)))
    func shortClusterSoakSurvivesAMasterKilledMidRun() throws {
        let text = try runSoak(["--seconds", "6", "--cluster"], extraColumns: ["redis cluster: not healthy at the end"])
        #expect(text.contains("redis cluster: masters restarted"))
    }

    /// Runs the soak with `arguments` and checks its exit status and every must-be-zero column; returns its output.
    @discardableResult
    private func runSoak(_ arguments: [String], extraColumns: [String] = []) throws -> String {
        let executable = try #require(Self.soakExecutable(), "odata-soak must be built (swift build --build-tests builds it)")
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
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
                       "offline requests refused (not a fault)", "offline queues not drained"] + extraColumns {
            let line = text.split(separator: "\n").first { $0.contains(column) }
            #expect(line.map { $0.hasSuffix(" 0") } == true, "\(column): \(line ?? "missing")")
        }
        return text
    }
}
