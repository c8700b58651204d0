// OfflineBenchmarks' key lookup in instructions, under callgrind (`make bench-instructions-offline`): opens the store
// an earlier OfflineBenchmarks run kept (`OFFLINE_BENCH_WORK`, served from `OFFLINE_BENCH_ROOT`, `OFFLINE_BENCH_N`
// entities) and looks keys up `OFFLINE_BENCH_INSTRUCTIONS` times through each door, each dumped by name.
//
// A program of its own because its main thread must not run an async main: libdispatch parks that thread in
// sigsuspend, whose signal mask valgrind 3.19 writes to (read-only memory: valgrind dies). The main thread waits on a
// semaphore; the lookups run in a task on the global executor (OfflineBenchmarks times them from the main actor).
import Foundation
import OfflineBenchKit

let environment = ProcessInfo.processInfo.environment
let count = Int(environment["OFFLINE_BENCH_N"] ?? "") ?? 100_000
let iterations = Int(environment["OFFLINE_BENCH_INSTRUCTIONS"] ?? "") ?? 200
guard let work = environment["OFFLINE_BENCH_WORK"], let serviceRoot = environment["OFFLINE_BENCH_ROOT"] else {
    print("OfflineKeyInstructions runs under callgrind over a kept store: run `make bench-instructions-offline`")
    exit(0)
}
let finished = DispatchSemaphore(value: 0)
nonisolated(unsafe) var failure: (any Error)?
Task.detached {
    do {
        let provider = try await makeBenchProvider(work: work, serviceRoot: serviceRoot)
        try await provider.open()
        var lookups = KeyLookups(provider: provider, count: count)
        try await lookups.countInstructions(iterations: iterations, count: count)
        await provider.close()
    } catch {
        failure = error
    }
    finished.signal()
}
finished.wait()
if let failure {
    print("OfflineKeyInstructions failed: \(failure)")
    exit(1)
}
