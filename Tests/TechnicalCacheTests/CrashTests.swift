import Foundation
import Testing
import TechnicalCache
#if canImport(Glibc)
import Glibc
#endif

/// The roles a re-run of this test binary can play, chosen by `CACHE_TEST_CHILD`.
private enum ChildRole: String {
    case writer
    case holder
}

private let childEnvironment = ProcessInfo.processInfo.environment
private let childRole = childEnvironment["CACHE_TEST_CHILD"].flatMap(ChildRole.init(rawValue:))

private func crashEntry(_ counter: Int) -> CacheEntry {
    CacheEntry(
        status: 200,
        headers: [.init(name: "X-Counter", value: String(counter))],
        payload: patternPayload(index: counter, count: 300 + (counter * 397) % 9000))
}

private func durability(named name: String) -> CacheDurability {
    name == "full" ? .full : .periodic(interval: .milliseconds(50))
}

/// Writes entries 0, 1, 2, … and prints `COMMITTED n` after each store returned.
private func writerLoop(directory: String, durabilityName: String, limit: Int, report: (Int) -> Void) throws {
    let cache = try ResponseCache(directory: directory, configuration: testConfiguration(durability: durability(named: durabilityName)))
    try cache.open(encryption: .key("crash-key"))
    let deadline = Date().addingTimeInterval(60)
    for counter in 0..<limit where Date() < deadline {
        try cache.store(crashEntry(counter), for: "https://h/items/\(counter)")
        report(counter)
    }
    cache.close()
}

/// Runs this test binary again with only the test `name` selected and `environment` added.
private func spawnChild(test name: String, environment: [String: String]) throws -> (Process, Pipe, Pipe) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = ["--testing-library", "swift-testing", "--filter", name]
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    return (process, output, errors)
}

/// Reads lines from `pipe` until `stop` returns true for the lines so far or the pipe ends.
private func readLines(_ pipe: Pipe, until stop: ([String]) -> Bool) -> [String] {
    var buffer = Data()
    var lines: [String] = []
    let handle = pipe.fileHandleForReading
    while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        buffer.append(chunk)
        while let newline = buffer.firstIndex(of: 0x0A) {
            lines.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
            buffer.removeSubrange(buffer.startIndex...newline)
        }
        if stop(lines) { break }
    }
    return lines
}

@Suite struct CrashTests {
    /// In a child process (`CACHE_TEST_CHILD=writer`) this is the endless writer loop the parent kills;
    /// in a normal run it runs a short loop and checks every entry it wrote.
    @Test func childWriterLoop() throws {
        if childRole == .writer, let directory = childEnvironment["CACHE_TEST_DIR"] {
            try writerLoop(directory: directory, durabilityName: childEnvironment["CACHE_TEST_DURABILITY"] ?? "full", limit: 1_000_000) { counter in
                FileHandle.standardOutput.write(Data("COMMITTED \(counter)\n".utf8))
            }
            return
        }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var committed: [Int] = []
        try writerLoop(directory: dir.cachePath, durabilityName: "full", limit: 25) { committed.append($0) }
        #expect(committed == Array(0..<25))
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("crash-key"))
        defer { cache.close() }
        for counter in committed {
            #expect(try cache.entry(for: "https://h/items/\(counter)")?.withoutTimes == crashEntry(counter).withoutTimes)
        }
    }

    /// In a child process (`CACHE_TEST_CHILD=holder`) this opens the cache and waits to be killed;
    /// in a normal run it checks that a cache can be opened, closed and opened again.
    @Test func childHolder() throws {
        if childRole == .holder, let directory = childEnvironment["CACHE_TEST_DIR"] {
            let cache = try ResponseCache(directory: directory, configuration: testConfiguration())
            try cache.open(encryption: .key("holder-key"))
            FileHandle.standardOutput.write(Data("OPEN\n".utf8))
            Thread.sleep(forTimeInterval: 60)
            return
        }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("holder-key"))
        cache.close()
        try cache.open(encryption: .key("holder-key"))
        #expect(cache.isOpen)
        cache.close()
    }

    @Test(arguments: ["full", "periodic"])
    func sigkillDuringAWriteLoopKeepsEveryCommittedEntry(durabilityName: String) throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let target = 150 + Int.random(in: 0..<100)
        let (process, output, errors) = try spawnChild(test: "CrashTests/childWriterLoop", environment: [
            "CACHE_TEST_CHILD": "writer", "CACHE_TEST_DIR": dir.cachePath, "CACHE_TEST_DURABILITY": durabilityName,
        ])
        var killed = false
        var lines = readLines(output) { lines in
            lines.lazy.filter { $0.hasPrefix("COMMITTED ") }.count >= target
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            killed = true
        }
        // Lines the child printed before it died are commits too.
        lines += readLines(output) { _ in false }
        process.waitUntilExit()
        let committed = lines.compactMap { line -> Int? in
            guard line.hasPrefix("COMMITTED ") else { return nil }
            return Int(line.dropFirst("COMMITTED ".count))
        }
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        try #require(killed, "the child ended by itself: \(stderr.suffix(2000))")
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGKILL)
        try #require(committed.count >= target, "the child committed only \(committed.count): \(stderr.suffix(2000))")
        #expect(committed == Array(0..<committed.count))

        // The cache opens (the dead child's lock is gone) with every committed entry intact.
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("crash-key"))
        defer { cache.close() }
        for counter in committed {
            let found = try cache.entry(for: "https://h/items/\(counter)")
            #expect(found?.withoutTimes == crashEntry(counter).withoutTimes, "entry \(counter)")
        }
        // The write in flight, if it committed, is intact too; nothing failed authentication.
        let next = committed.count
        if let inFlight = try cache.entry(for: "https://h/items/\(next)") {
            #expect(inFlight.withoutTimes == crashEntry(next).withoutTimes)
        }
        let stats = cache.statistics
        #expect(stats.integrityFailures == 0)
        #expect(stats.entryCount >= committed.count && stats.entryCount <= committed.count + 1)
        // And it takes new writes.
        try cache.store(crashEntry(next + 1), for: "after")
        #expect(try cache.entry(for: "after")?.payload == crashEntry(next + 1).payload)
    }

    @Test func aSecondOpenFromAnotherProcessIsRefused() throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let (process, output, errors) = try spawnChild(test: "CrashTests/childHolder", environment: [
            "CACHE_TEST_CHILD": "holder", "CACHE_TEST_DIR": dir.cachePath,
        ])
        let lines = readLines(output) { $0.contains("OPEN") }
        let stderr = { String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self) }
        guard lines.contains("OPEN") else {
            process.waitUntilExit()
            Issue.record("the child did not open the cache: \(stderr())")
            return
        }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        var refusal: CacheError?
        do { try cache.open(encryption: .key("holder-key")) } catch let error as CacheError { refusal = error }
        #expect(refusal == .alreadyOpen)
        #expect(refusal?.detail.contains("another process") == true)
        #expect(throws: CacheError.alreadyOpen) { try cache.reset() }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try cache.open(encryption: .key("holder-key"))
        #expect(cache.isOpen)
        cache.close()
    }
}

extension CacheEntry {
    /// The entry with its times zeroed, to compare content only.
    var withoutTimes: CacheEntry {
        CacheEntry(status: status, headers: headers, payload: payload, storedAt: Date(timeIntervalSince1970: 0))
    }
}
