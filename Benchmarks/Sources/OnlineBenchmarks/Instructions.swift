// The instruction-count mode (`make bench-instructions`): under callgrind, each key row runs a fixed number of
// calls between a zeroing of the counts and a dump named after the row; `scripts/bench-instructions.py` reads the
// dumps and prints instructions per call beside the floor. Instruction counts do not depend on the machine's load.
import BenchmarkKit
import CCallgrind
import CurlHTTP
import Foundation
import ODataCore
import OnlineStore
import TechnicalCache

/// `ONLINE_BENCH_INSTRUCTIONS=N`: count the instructions of N calls of each key row (under callgrind) instead of
/// timing every row.
let instructionIterations = ProcessInfo.processInfo.environment["ONLINE_BENCH_INSTRUCTIONS"].flatMap { Int($0) }

/// `ONLINE_BENCH_SERVE=1`: only start nginx with the benchmark's files, print its root URL, and stop it when
/// standard input ends (the instruction-count mode's server, started outside valgrind).
let servesOnly = ProcessInfo.processInfo.environment["ONLINE_BENCH_SERVE"] != nil

/// `ONLINE_BENCH_ROOT=http://127.0.0.1:port/`: read from this server (a `servesOnly` run) instead of starting one.
let serverRoot = ProcessInfo.processInfo.environment["ONLINE_BENCH_ROOT"]

/// Serves `files` with nginx until standard input ends.
func serve(_ files: [String: Data]) throws {
    let nginx = try Nginx.start(files: files)
    defer { nginx.stop() }
    FileHandle.standardOutput.write(Data("http://127.0.0.1:\(nginx.port)/\n".utf8))
    while readLine() != nil {}
}

/// The stores and floors the instruction rows use, as `runBenchmarks` made them.
struct InstructionSubjects {
    let store: OnlineODataStore
    /// The store with periodic durability (active reads, as the timed rows read it).
    let periodicStore: OnlineODataStore
    let quietStore: OnlineODataStore
    let passiveStore: OnlineODataStore
    let quietPassiveStore: OnlineODataStore
    let floorCache: ResponseCache
    let transport: CurlTransport
    let root: String
    let files: [String: Data]
}

/// Runs each key row `iterations` times after a warm-up, the counts zeroed before and dumped after under the
/// name `size|row` (every thread's instructions: the caller's, curl's event thread's, the cache's).
func countInstructions(_ subjects: InstructionSubjects, iterations: Int) async throws {
    guard ccallgrind_running() != 0 else {
        print("ONLINE_BENCH_INSTRUCTIONS counts instructions under callgrind: run `make bench-instructions`")
        return
    }
    for (name, size) in [("small.json", "1 KiB"), ("medium.json", "64 KiB")] where onlySize == nil || onlySize == size {
        let url = subjects.root + name
        let cached = ODataRequest.get(name)
        let uncached = ODataRequest(resourcePath: name, useCache: false)
        for passive in [subjects.passiveStore, subjects.quietPassiveStore] {
            try passive.setMode(.active)
            _ = try await passive.response(for: cached)
            try passive.setMode(.passive)
        }
        _ = try await subjects.floorCache.store(CacheEntry(status: 200, headers: [.contentType: "application/json"], payload: subjects.files[name]!), for: url)
        _ = try await subjects.periodicStore.response(for: cached)
        let plain = try await subjects.transport.send(TransportRequest(url: url))
        let conditional = TransportRequest(url: url, headerFields: [.ifNoneMatch: plain.headerFields[.eTag] ?? ""])
        let rows: [(String, () async throws -> Void)] = [
            ("CurlTransport alone, GET 200", { _ = try await subjects.transport.send(TransportRequest(url: url)) }),
            ("store, uncached GET", { _ = try await subjects.store.response(for: uncached) }),
            ("store, uncached GET, telemetry disabled", { _ = try await subjects.quietStore.response(for: uncached) }),
            ("CurlTransport alone, conditional GET → 304", {
                let reply = try await subjects.transport.send(conditional)
                precondition(reply.status == 304)
            }),
            ("store, active read (cache + 304), periodic sync", { _ = try await subjects.periodicStore.response(for: cached) }),
            ("TechnicalCache lookup", { _ = try subjects.floorCache.entry(for: url) }),
            ("store, passive read", { _ = try await subjects.passiveStore.response(for: cached) }),
            ("store, passive read through execute(_:), result()", { _ = try await subjects.passiveStore.execute(cached).result() }),
            ("store, passive read, telemetry disabled", { _ = try await subjects.quietPassiveStore.response(for: cached) }),
        ]
        for (label, body) in rows where selected(label) {
            for _ in 0..<20 { try await body() }
            ccallgrind_zero()
            for _ in 0..<iterations { try await body() }
            ccallgrind_dump("\(size)|\(label)|\(iterations)")
        }
    }
    try await countConcurrentInstructions(subjects, iterations: iterations)
}

/// The concurrent readers in instructions: `readers` tasks, each reading its own 1 KiB URL, `iterations / 4` rounds
/// (each round waits for all readers), counted per read — active reads (cache + 304) against uncached reads.
func countConcurrentInstructions(_ subjects: InstructionSubjects, iterations: Int) async throws {
    guard onlySize == nil || onlySize == "1 KiB" else { return }
    let store = subjects.periodicStore
    for readers in concurrentReaders {
        for index in 0..<readers { _ = try await store.response(for: .get("c\(index).json")) }
        for cached in [false, true] {
            let label = "\(readers) concurrent \(cached ? "active reads (cache + 304)" : "uncached GETs")"
            guard selected(label) else { continue }
            func round() async throws {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<readers {
                        group.addTask { _ = try await store.response(for: ODataRequest(resourcePath: "c\(index).json", useCache: cached)) }
                    }
                    try await group.waitForAll()
                }
            }
            try await round()
            let rounds = max(iterations / 4 * 64 / readers, 1)
            ccallgrind_zero()
            for _ in 0..<rounds { try await round() }
            // The refreshes the rounds left to write in the background are theirs.
            try await Task.sleep(for: settle)
            ccallgrind_dump("1 KiB|\(label)|\(rounds * readers)")
        }
    }
}
