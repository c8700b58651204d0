// The cache writer the soak SIGKILLs at random points: the technical cache must reopen after every kill
// and every entry must still name its own URL.
import Foundation
import HTTPTypes
import TechnicalCache
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Child: a cache writer killed at random points

/// Opens a cache, then writes and reads entries whose payload names their URL until killed.
/// Exit 2: the cache did not open; exit 3: an entry's payload belongs to another URL.
func runChild(directory: String, verifyOnly: Bool) async -> Never {
    let cache: ResponseCache
    do {
        cache = try ResponseCache(directory: directory)
        try cache.open()
    } catch {
        FileHandle.standardError.write(Data("child: open failed: \(error)\n".utf8))
        exit(2)
    }
    var generator = SystemRandomNumberGenerator()
    var index = 0
    while true {
        let read = Int.random(in: 0..<300, using: &generator)
        if let entry = try? cache.entry(for: "child/\(read)") {
            guard String(decoding: entry.payload, as: UTF8.self).hasPrefix("child/\(read)#") else {
                FileHandle.standardError.write(Data("child: wrong payload for child/\(read)\n".utf8))
                exit(3)
            }
        }
        if verifyOnly && index >= 300 {
            cache.close()
            exit(0)
        }
        if !verifyOnly {
            let url = "child/\(index % 300)"
            let payload = Data((url + "#" + String(index) + String(repeating: ".", count: index % 2_000)).utf8)
            // A write the kill interrupts, or one the disk refuses, is what this child exists to survive: its
            // outcome is checked by reading (exit 3), not by the write's own answer.
            _ = try? await cache.store(CacheEntry(status: 200, headers: [.eTag: "W/\"\(index)\""], payload: payload), for: url)
        }
        index += 1
    }
}

/// Starts, SIGKILLs and restarts the child until the deadline; the cache must always reopen.
func killLoop(executable: String, directory: String, deadline: ContinuousClock.Instant, figures: Figures) {
    var generator = SystemRandomNumberGenerator()
    func launch(_ arguments: [String]) -> Process? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        do { try process.run() } catch { figures.add("store-open failures"); return nil }
        return process
    }
    func judge(_ process: Process) {
        guard process.terminationReason == .exit else { return }
        switch process.terminationStatus {
        case 0: break
        case 2: figures.add("store-open failures")
        case 3: figures.add("wrong cache answers")
        default: figures.add("crashes")
        }
    }
    while ContinuousClock.now < deadline {
        guard let process = launch(["--child", directory]) else { return }
        usleep(UInt32.random(in: 50_000...400_000, using: &generator))
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            figures.add("kills")
        }
        waitForExit(process)
        if process.terminationReason == .uncaughtSignal && process.terminationStatus != SIGKILL { figures.add("crashes") }
        judge(process)
    }
    // After the last kill the cache must open and every entry must still name its own URL.
    if let process = launch(["--child", directory, "--verify"]) {
        waitForExit(process)
        if process.terminationReason == .uncaughtSignal { figures.add("crashes") }
        judge(process)
    }
}

/// Waits until `process` has ended, by polling `isRunning`, then lets it go (``settle(_:)``).
func waitForExit(_ process: Process) {
    while process.isRunning { usleep(2_000) }
    settle(process)
}

/// Waits, without blocking a thread, until `process` has ended, then lets it go (``settle(_:)``).
func waitForExit(_ process: Process) async {
    while process.isRunning { try? await Task.sleep(for: .milliseconds(5)) }
    settle(process)
}

/// Lets an ended `process` go. In swift-corelibs-foundation `run()` adds a run loop source that holds the
/// `Process`, which holds the source: a retain cycle that only `waitUntilExit()` breaks. Left alone, every child
/// keeps ~1.3 KB in this process's heap (the `Process`, its URL, arguments and source; a pipe and its descriptor
/// too) — with ~5 children a second, most of the heap's climb the soak measured (heaptrack attached to a running
/// soak, docs/RELIABILITY.md). Once `isRunning` is false, `waitUntilExit()` returns at once without running the
/// thread's run loop (whose timer would keep a 64-byte dispatch continuation per call).
private func settle(_ process: Process) {
    process.waitUntilExit()
}
