import Foundation
import HTTPTypes
import Testing
import TechnicalCache
#if canImport(Glibc)
import Glibc
#endif

private func crashEntry(_ counter: Int) -> CacheEntry {
    CacheEntry(
        status: 200,
        headers: [HTTPField.Name("X-Counter")!: String(counter)],
        payload: patternPayload(index: counter, count: 300 + (counter * 397) % 9000))
}

private func durability(named name: String) -> CacheDurability {
    name == "full" ? .full : .periodic(interval: .milliseconds(50))
}

/// Writes entries 0, 1, 2, … and prints `COMMITTED n` after each store returned.
private func writerLoop(directory: String, durabilityName: String, limit: Int, report: (Int) -> Void) async throws {
    let cache = try ResponseCache(directory: directory, configuration: testConfiguration(durability: durability(named: durabilityName)))
    try cache.open(encryption: .key("crash-key"))
    let deadline = Date().addingTimeInterval(60)
    for counter in 0..<limit where Date() < deadline {
        try await cache.store(crashEntry(counter), for: "https://h/items/\(counter)")
        report(counter)
    }
    cache.close()
}

@Suite struct CrashTests {
    /// In a child process (`CACHE_TEST_CHILD=writer`) this is the endless writer loop the parent kills;
    /// in a normal run it runs a short loop and checks every entry it wrote.
    @Test func childWriterLoop() async throws {
        if childRole == .writer, let directory = childEnvironment["CACHE_TEST_DIR"] {
            try await writerLoop(directory: directory, durabilityName: childEnvironment["CACHE_TEST_DURABILITY"] ?? "full", limit: 1_000_000) { counter in
                report("COMMITTED \(counter)")
            }
            return
        }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var committed: [Int] = []
        try await writerLoop(directory: dir.cachePath, durabilityName: "full", limit: 25) { committed.append($0) }
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
            report("OPEN")
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
    func sigkillDuringAWriteLoopKeepsEveryCommittedEntry(durabilityName: String) async throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let target = 150 + Int.random(in: 0..<100)
        let child = try Child(test: "CrashTests/childWriterLoop", environment: [
            "CACHE_TEST_CHILD": "writer", "CACHE_TEST_DIR": dir.cachePath, "CACHE_TEST_DURABILITY": durabilityName,
        ])
        let process = child.process
        var killed = false
        var lines = child.readLines { lines in
            lines.lazy.filter { $0.hasPrefix("COMMITTED ") }.count >= target
        }
        if process.isRunning {
            kill(child.pid, SIGKILL)
            killed = true
        }
        // Lines the child printed before it died are commits too.
        lines += child.readLines { _ in false }
        process.waitUntilExit()
        let committed = lines.compactMap { line -> Int? in
            guard line.hasPrefix("COMMITTED ") else { return nil }
            return Int(line.dropFirst("COMMITTED ".count))
        }
        let stderr = child.stderrText
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
        try await cache.store(crashEntry(next + 1), for: "after")
        #expect(try cache.entry(for: "after")?.payload == crashEntry(next + 1).payload)
    }
}

extension CacheEntry {
    /// The entry with its times zeroed, to compare content only.
    var withoutTimes: CacheEntry {
        CacheEntry(status: status, headers: headers, payload: payload, storedAt: Date(timeIntervalSince1970: 0))
    }
}
