import Foundation
import HTTPTypes
import Testing
import ODataCore
@testable import TechnicalCache
#if canImport(Glibc)
import Glibc
#endif

/// Several real processes (re-runs of this test binary, stopped by their process ID) share one cache
/// directory (docs/notes/fleet.md, "Several processes on one host").
@Suite(.serialized) struct MultiProcessTests {
    // MARK: The children

    /// In a child process (`CACHE_TEST_CHILD=scripted`) this runs the commands read from standard input;
    /// in a normal run it runs a short script in this process and checks the answers.
    @Test func childScripted() async throws {
        if childRole == .scripted, let directory = childEnvironment["CACHE_TEST_DIR"] {
            let state = ScriptState(directory: directory)
            while let line = readLine() { report(answerPrefix + (await state.run(line))) }
            state.cache?.close()
            return
        }
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let state = ScriptState(directory: dir.cachePath)
        let script = [
            ("lookup u", "error CacheError.notOpen"), ("open", "ok"), ("lookup u", "miss"), ("store u 3 7 100", "stored"),
            ("lookup u", "hit 3 7"), ("touches", "1"), ("remove u", "removed"), ("remove u", "absent"), ("store u 1", "error usage"),
            ("close", "closed"), ("open-default", "error CacheError.keyUnavailable"), ("open", "ok"), ("close", "closed"),
        ]
        for (command, expected) in script { #expect(await state.run(command) == expected, "\(command)") }
    }

    /// In a child process (`CACHE_TEST_CHILD=load`) this runs the shared load and reports its counts;
    /// in a normal run it runs a short load alone and checks them.
    @Test func childLoad() async throws {
        if childRole == .load, let directory = childEnvironment["CACHE_TEST_DIR"] {
            let worker = Int(childEnvironment["CACHE_TEST_WORKER"] ?? "") ?? 1
            let stopFile = childEnvironment["CACHE_TEST_STOP_FILE"]
            let counts = await runSharedLoad(
                directory: directory, worker: worker, seed: UInt64(worker) &* 7_919 &+ 11,
                operations: Int(childEnvironment["CACHE_TEST_OPERATIONS"] ?? "") ?? 1_000,
                mix: childEnvironment["CACHE_TEST_MIX"] ?? "mixed",
                limit: Int(childEnvironment["CACHE_TEST_LIMIT"] ?? "") ?? Shared.limit,
                durability: childEnvironment["CACHE_TEST_DURABILITY"] == "full" ? .full : .periodic(interval: .milliseconds(200)),
                stop: { stopFile.map { FileManager.default.fileExists(atPath: $0) } ?? false },
                progress: { report("PROGRESS \($0) \(Date().timeIntervalSince1970)") })
            report(formatCounts(counts))
            return
        }
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let counts = await runSharedLoad(directory: dir.cachePath, worker: 0, seed: 5, operations: 600)
        #expect(counts["operations"] == 600)
        #expect(counts["wrong"] == 0 && counts["errors"] == 0 && counts["overBudget"] == 0 && counts["integrityFailures"] == 0)
        #expect((counts["hits"] ?? 0) > 0 && (counts["stores"] ?? 0) > 0 && (counts["refreshes"] ?? 0) > 0 && (counts["removals"] ?? 0) > 0)
        _ = try checkBookkeeping(dir.cachePath)
    }

    private func scripted(_ dir: TemporaryDirectory) throws -> Child {
        try Child(test: "MultiProcessTests/childScripted", environment: ["CACHE_TEST_CHILD": "scripted", "CACHE_TEST_DIR": dir.cachePath])
    }

    private func load(_ dir: TemporaryDirectory, worker: Int, operations: Int, extra: [String: String] = [:]) throws -> Child {
        try Child(test: "MultiProcessTests/childLoad", environment: [
            "CACHE_TEST_CHILD": "load", "CACHE_TEST_DIR": dir.cachePath, "CACHE_TEST_WORKER": "\(worker)",
            "CACHE_TEST_OPERATIONS": "\(operations)",
        ].merging(extra) { $1 })
    }

    /// Every URL of the shared set answers nothing or exactly a representation stored for it; the byte
    /// total is within the budget and is the sum of the entries; nothing fails authentication.
    private func checkSharedCache(_ directory: String) throws {
        let cache = try ResponseCache(directory: directory, configuration: Shared.configuration())
        try cache.open(encryption: .key(Shared.key))
        var found = 0
        var bytes = 0
        for url in Shared.urls {
            guard let entry = try cache.entry(for: url) else { continue }
            #expect(Shared.check(entry, url: url) != nil, "\(url) answers something nobody stored for it")
            found += 1
            bytes += entry.size
        }
        let statistics = cache.statistics
        #expect(statistics.integrityFailures == 0)
        #expect(statistics.entryCount == found)
        #expect(statistics.currentBytes == bytes)
        #expect(statistics.currentBytes <= Shared.limit)
        cache.close()
        let files = try checkBookkeeping(directory)
        #expect(files.entries == found && files.bytes == bytes)
    }

    // MARK: Under load

    @Test func threeProcessesReadAndWriteOneCacheUnderLoad() throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let children = try (1...3).map { try load(dir, worker: $0, operations: 3_000) }
        var total: [String: Int] = [:]
        for (index, child) in children.enumerated() {
            let lines = child.readLines { $0.last?.hasPrefix("DONE ") == true }
            child.process.waitUntilExit()
            let done = try #require(lines.last(where: { $0.hasPrefix("DONE ") }), "child \(index + 1) did not finish: \(child.stderrText)")
            let counts = parseCounts(done)
            #expect(child.process.terminationStatus == 0)
            #expect(counts["operations"] == 3_000, "child \(index + 1): \(done)")
            for must in ["wrong", "errors", "overBudget", "integrityFailures"] {
                #expect(counts[must] == 0, "child \(index + 1) \(must): \(done) \(lines.filter { $0.hasPrefix("WRONG") || $0.hasPrefix("ERROR") }.prefix(5))")
            }
            total.merge(counts) { $0 + $1 }
        }
        // The load did what it is for: it hit, stored, refreshed, removed, and the budget made it evict.
        for name in ["hits", "stores", "refreshes", "removals", "evictions"] {
            #expect((total[name] ?? 0) > 0, "no \(name) in \(total)")
        }
        try checkSharedCache(dir.cachePath)
    }

    @Test func aProcessKilledMidWriteLeavesTheCacheUsableByTheOthers() throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let stopFile = dir.path + "/stop"
        // The victim only writes, with a flush per commit: most of its time is spent inside a write
        // transaction, holding LMDB's writer lock.
        let victim = try load(dir, worker: 1, operations: 1_000_000, extra: ["CACHE_TEST_MIX": "write", "CACHE_TEST_DURABILITY": "full"])
        let survivor = try load(dir, worker: 2, operations: 1_000_000, extra: ["CACHE_TEST_STOP_FILE": stopFile])
        let progressed = victim.readLines { lines in lines.filter { $0.hasPrefix("PROGRESS ") }.count >= 4 }
        try #require(progressed.filter { $0.hasPrefix("PROGRESS ") }.count >= 4, "the victim did not write: \(victim.stderrText)")
        victim.stop(SIGKILL)
        let killedAt = Date().timeIntervalSince1970
        #expect(victim.process.terminationReason == .uncaughtSignal)

        // The survivor goes on: 300 more operations after the kill (its writes would hang if the dead
        // process's writer lock were not recovered).
        var after: Int?
        let lines = survivor.readLines { lines in
            guard let last = lines.last, last.hasPrefix("PROGRESS ") else { return endsWithReport(lines) }
            let fields = last.split(separator: " ")
            guard fields.count == 3, let count = Int(fields[1]), let time = Double(fields[2]), time > killedAt else { return false }
            if after == nil { after = count }
            return count >= (after ?? count) + 300
        }
        try #require(after != nil, "the survivor stopped: \(lines.suffix(3)) \(survivor.stderrText)")
        // A third process opens the cache meanwhile and reads only what was stored.
        let reader = try ResponseCache(directory: dir.cachePath, configuration: Shared.configuration())
        try reader.open(encryption: .key(Shared.key))
        for url in Shared.urls {
            if let entry = try reader.entry(for: url) { #expect(Shared.check(entry, url: url) != nil, "\(url)") }
        }
        #expect(reader.statistics.integrityFailures == 0)
        reader.close()

        #expect(FileManager.default.createFile(atPath: stopFile, contents: Data()))
        let rest = survivor.readLines { endsWithReport($0) }
        survivor.process.waitUntilExit()
        let done = try #require(rest.last(where: { $0.hasPrefix("DONE ") }), "the survivor did not finish: \(survivor.stderrText)")
        let counts = parseCounts(done)
        for must in ["wrong", "errors", "overBudget", "integrityFailures"] { #expect(counts[must] == 0, "\(must): \(done)") }
        try checkSharedCache(dir.cachePath)
    }

    // MARK: Exclusive operations

    @Test func resetAndRekeyAreRefusedWhileAnotherProcessHasTheCacheOpen() async throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let child = try scripted(dir)
        try #require(child.send("open") == "ok", "the child did not open the cache: \(child.stderrText)")
        // This process opens the same cache: sharing is allowed.
        let cache = try ResponseCache(directory: dir.cachePath, configuration: Shared.configuration())
        try cache.open(encryption: .key(Shared.key))
        for index in 0..<20 { try await cache.store(Shared.entry(url: Shared.urls[index], worker: 0, sequence: index, size: 500), for: Shared.urls[index]) }

        var refusal: CacheError?
        do { try cache.rekey(to: .key("another key")) } catch let error as CacheError { refusal = error }
        #expect(refusal == .inUseElsewhere)
        #expect(refusal?.detail.contains("process \(child.pid)") == true, "\(refusal?.detail ?? "")")
        // Nothing changed: both processes still read every entry with the old key.
        for index in 0..<20 { #expect(try cache.entry(for: Shared.urls[index]).flatMap { Shared.check($0, url: Shared.urls[index]) }?.sequence == index) }
        #expect(child.send("lookup \(Shared.urls[3])") == "hit 0 3")
        // A second cache object on the directory in this process is still refused.
        #expect(throws: CacheError.alreadyOpen) { try ResponseCache(directory: dir.cachePath, configuration: Shared.configuration()).open(encryption: .key(Shared.key)) }

        cache.close()
        #expect(throws: CacheError.inUseElsewhere) { try cache.reset() }
        try cache.open(encryption: .key(Shared.key))
        #expect(cache.statistics.entryCount == 20)

        // Once the other process has closed it, both are allowed.
        #expect(child.send("close") == "closed")
        try cache.rekey(to: .key("another key"))
        #expect(try cache.entry(for: Shared.urls[5]).flatMap { Shared.check($0, url: Shared.urls[5]) }?.sequence == 5)
        cache.close()
        #expect(child.send("open") == "error CacheError.wrongKey")
        try cache.reset()
        #expect(child.send("open") == "ok")
        #expect(child.send("lookup \(Shared.urls[5])") == "miss")
    }

    @Test func anOpenIsRefusedWhileAnotherProcessResetsOrRekeys() throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let child = try scripted(dir)
        // What `reset` and `rekey` hold while they run.
        let exclusive = try StorageLock.cache(directory: dir.cachePath, exclusive: true)
        #expect(child.send("open") == "error CacheError.inUseElsewhere")
        exclusive.release()
        #expect(child.send("open") == "ok")
        #expect(child.send("store u 1 1 10") == "stored")
    }

    @Test func processesOpeningANewCacheAtOnceAgreeOnOneKey() throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let children = try (0..<4).map { _ in try scripted(dir) }
        // All ask at once; each creates the key file and the key-check record if it finds none.
        for child in children { child.write("open-default") }
        for child in children { #expect(child.answer() == "ok", "\(child.stderrText)") }
        for (index, child) in children.enumerated() { #expect(child.send("store k\(index) \(index) 1 50") == "stored") }
        for child in children {
            for index in children.indices { #expect(child.send("lookup k\(index)") == "hit \(index) 1") }
        }
    }

    // MARK: What is kept in memory

    /// A 304 refresh held in memory is written only onto the representation it confirmed: another
    /// process's newer entry (another representation, the same one stored again later, or a removal) wins.
    @Test(arguments: ["other representation", "same representation again", "removal"])
    func aHeldRefreshNeverOverwritesWhatAnotherProcessWrote(change: String) async throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: Shared.configuration())
        cache.refreshFlushHold = .seconds(120)
        try cache.open(encryption: .key(Shared.key))
        let child = try scripted(dir)
        try #require(child.send("open") == "ok", "\(child.stderrText)")

        // Stored and refreshed as of requests sent a while ago: whatever the other process stores is later
        // (an entry stored in the same millisecond as a refresh counts as the same, and the refresh applies).
        try await cache.store(Shared.entry(url: "u", worker: 0, sequence: 1, size: 300, storedAt: Date() - 2), for: "u")
        let read = try #require(try cache.entry(for: "u"))
        let refreshed = try await cache.refresh(
            for: "u", with304Headers: [.eTag: Shared.etag(0, 1), HTTPField.Name("X-Checked")!: "yes"],
            revalidating: read, at: Date() - 1)
        #expect(refreshed?.headerValue(named: "X-Checked") == "yes")
        #expect(cache.pendingRefreshCount == 1)
        #expect(try cache.entry(for: "u")?.headerValue(named: "X-Checked") == "yes")

        switch change {
        case "other representation": #expect(child.send("store u 1 1 200") == "stored")
        case "same representation again": #expect(child.send("store u 0 1 300") == "stored")
        default: #expect(child.send("remove u") == "removed")
        }
        // Before the held refresh is written, lookups here already see the other process's write.
        let seen = try cache.entry(for: "u")
        #expect(cache.pendingRefreshCount == 1, "the refresh is still held")
        switch change {
        case "removal": #expect(seen == nil)
        default:
            #expect(seen.flatMap { Shared.check($0, url: "u") }.map { "\($0.worker) \($0.sequence)" } == (change == "other representation" ? "1 1" : "0 1"))
            #expect(seen?.headerValue(named: "X-Checked") == nil)
        }
        // Any write of this process writes the held refresh first: it finds the newer state and is dropped.
        try await cache.store(Shared.entry(url: "v", worker: 0, sequence: 2, size: 10), for: "v")
        #expect(cache.pendingRefreshCount == 0)
        #expect(cache.statistics.supersededWrites == 1)
        let expected = change == "removal" ? "miss" : (change == "other representation" ? "hit 1 1" : "hit 0 1")
        #expect(child.send("lookup u") == expected)
        #expect(try cache.entry(for: "u")?.headerValue(named: "X-Checked") == nil)
        cache.close()
        #expect(child.send("close") == "closed")
        _ = try checkBookkeeping(dir.cachePath)
    }

    /// A held entry is answered from memory only while every commit since it was checked is this process's own
    /// and left it alone: another process's replacement, removal or eviction of it is seen by the next lookup,
    /// also when this process committed after the other one (its last commit is then its own, but not every one).
    @Test(arguments: ["replacement", "removal", "eviction"])
    func aHeldEntryFollowsAnotherProcessAcrossOwnCommits(change: String) async throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: Shared.configuration())
        try cache.open(encryption: .key(Shared.key))
        defer { cache.close() }
        let child = try scripted(dir)
        try #require(child.send("open") == "ok", "\(child.stderrText)")
        func seen() throws -> String? { try cache.entry(for: "u").flatMap { Shared.check($0, url: "u") }.map { "\($0.worker) \($0.sequence)" } }
        try await cache.store(Shared.entry(url: "u", worker: 0, sequence: 1, size: 300), for: "u")
        #expect(try seen() == "0 1")
        try await cache.store(Shared.entry(url: "v", worker: 0, sequence: 2, size: 300), for: "v")
        let checks = cache.heldChecks
        #expect(try seen() == "0 1")
        #expect(cache.heldChecks == checks, "an own commit that left u alone needs no read of the disk")

        switch change {
        case "replacement": #expect(child.send("store u 1 1 200") == "stored")
        case "removal": #expect(child.send("remove u") == "removed")
        default:
            for index in 0..<4 { #expect(child.send("store big\(index) 1 \(index) 30000") == "stored") }
            #expect(child.send("lookup u") == "miss", "evicted by the other process")
        }
        try await cache.store(Shared.entry(url: "w", worker: 0, sequence: 3, size: 300), for: "w")
        #expect(try seen() == (change == "replacement" ? "1 1" : nil))
        #expect(cache.heldChecks == checks + 1, "read again: another process committed since u was checked")
        cache.close()
        #expect(child.send("close") == "closed")
        _ = try checkBookkeeping(dir.cachePath)
    }

    /// A 304 for an entry that another process replaced since this one read it is not held at all: the
    /// check that skips a read when nothing was committed looks at every process's commits.
    @Test func aRefreshOfAnEntryAnotherProcessReplacedIsDroppedAtOnce() async throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: Shared.configuration())
        try cache.open(encryption: .key(Shared.key))
        defer { cache.close() }
        let child = try scripted(dir)
        try #require(child.send("open") == "ok", "\(child.stderrText)")
        try await cache.store(Shared.entry(url: "u", worker: 0, sequence: 1, size: 300), for: "u")
        let read = try #require(try cache.entry(for: "u"))
        #expect(child.send("store u 1 1 200") == "stored")
        let refreshed = try await cache.refresh(for: "u", with304Headers: [.eTag: Shared.etag(0, 1)], revalidating: read)
        #expect(refreshed == nil)
        #expect(cache.pendingRefreshCount == 0)
        #expect(cache.statistics.supersededWrites == 1)
        #expect(try cache.entry(for: "u").flatMap { Shared.check($0, url: "u") }?.worker == 1)
    }

    /// The byte total, the entry count and the LRU order follow what another process does: its writes
    /// count against the budget here, the uses it records (with its own next write, or in the
    /// background when it only reads) protect entries from this process's evictions, and the two
    /// processes' LRU ticks never collide.
    @Test func sizeEntryCountAndLRUOrderFollowAnotherProcess() async throws {
        guard childRole == nil else { return }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let limit = 64 << 10
        let child = try scripted(dir)
        // Both open the empty cache first: both would start their LRU ticks at 1.
        try #require(child.send("open \(limit)") == "ok", "\(child.stderrText)")
        let cache = try ResponseCache(directory: dir.cachePath, configuration: Shared.configuration(limit: limit))
        try cache.open(encryption: .key(Shared.key))
        defer { cache.close() }
        func store(_ name: String, _ sequence: Int, size: Int = 6_000) async throws {
            try await cache.store(Shared.entry(url: name, worker: 0, sequence: sequence, size: size), for: name)
        }
        func present(_ names: [String]) throws -> [String] { try names.filter { try cache.containsEntry(for: $0) } }

        try await store("p0", 0)
        #expect(child.send("store c0 1 0 6000") == "stored")
        for index in 1...5 { try await store("p\(index)", index) }
        let before = cache.counts.currentBytes
        #expect(child.send("lookup p1") == "hit 0 1")
        #expect(child.send("store c1 1 1 6000") == "stored")  // writes the use of p1 first
        #expect(cache.counts.currentBytes > before + 6_000, "the other process's entry counts here")
        #expect(cache.statistics.entryCount == 8)
        #expect(cache.statistics.evictions == 0)

        // On disk, least recent first: p0 c0 p2 p3 p4 p5 p1 c1. A big entry evicts from the front.
        try await store("b0", 100, size: 20_000)
        #expect(cache.statistics.evictions > 0)
        let order = ["p0", "c0", "p2", "p3", "p4", "p5", "p1", "c1"]
        let left = try present(order)
        #expect(left == Array(order.suffix(left.count)), "evicted out of LRU order: \(left) left")
        #expect(left.contains("p1") && !left.contains("p0"))
        #expect(cache.counts.currentBytes <= limit)

        // The other process only reads now: its use of the oldest entry reaches the disk in the background.
        let oldest = try #require(left.first)
        #expect(child.send("lookup \(oldest)").hasPrefix("hit"))
        let deadline = Date().addingTimeInterval(10)
        while child.send("touches") != "0" && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(child.send("touches") == "0", "the use was not written")
        let evictionsBefore = cache.statistics.evictions
        try await store("b1", 101, size: 20_000)
        #expect(cache.statistics.evictions > evictionsBefore)
        #expect(try cache.containsEntry(for: oldest), "\(oldest) was used by the other process and must outlive older entries")
        let order2 = Array(left.dropFirst()) + ["b0", oldest]
        let left2 = try present(order2)
        #expect(left2 == Array(order2.suffix(left2.count)), "evicted out of LRU order: \(left2) left")
        #expect(cache.counts.currentBytes <= limit)

        // The byte total is the sum of what is stored, whoever stored it.
        let names = order + ["b0", "b1"]
        var sum = 0
        for name in names { sum += try cache.entry(for: name)?.size ?? 0 }
        #expect(cache.counts.currentBytes == sum)
        #expect(cache.statistics.entryCount == (try present(names)).count)
        cache.close()
        #expect(child.send("close") == "closed")
        _ = try checkBookkeeping(dir.cachePath)
    }
}

/// Whether the last line read is a load child's final report.
private func endsWithReport(_ lines: [String]) -> Bool {
    lines.last?.hasPrefix("DONE ") == true
}
