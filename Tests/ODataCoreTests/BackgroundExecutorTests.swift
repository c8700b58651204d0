import Foundation
import ODataCore
import Synchronization
import Testing

/// The background threads (#45): work handed to them runs at their priority and off the cooperative pool; the caller
/// comes back at its own; a queue on them keeps its order.
@Suite struct BackgroundExecutorTests {
    /// Whether work of an executor of `priority` ran where it should: on a background thread at `priority`, or, for
    /// an idle executor on a saturated CPU (other tests run beside these), on one escalated to the default priority.
    static func runsAt(_ observed: Place, _ priority: BackgroundExecutor.Priority) -> Bool {
        observed.onBackground && (observed.priority == priority || (priority == .idle && observed.priority == .nice(0)))
    }

    /// Where the calling code runs.
    struct Place: Sendable {
        var onBackground = BackgroundExecutor.isBackgroundThread
        var priority = BackgroundExecutor.currentThreadPriority
        /// The thread's name as the system keeps it (what `ps -L`, `top -H` and `perf` show).
        var systemName = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .newlines) ?? "(unreadable)"
    }

    /// A job runs at the executor's priority, the default actors it calls too; the caller is resumed at its own.
    @Test(arguments: [BackgroundExecutor.Priority.idle, .nice(7)])
    func aJobRunsAtTheExecutorsPriorityAndTheCallerComesBackAtItsOwn(priority: BackgroundExecutor.Priority) async throws {
        let executor = priority == .idle ? BackgroundExecutor.shared : BackgroundExecutor(threads: 2, priority: priority)
        let probe = PriorityProbe()
        let (inside, inActor) = try await executor.run { () async throws -> (Place, Place) in
            let first = Place()
            // Not a wait for an event: a suspension whose resumption comes from the timer's thread, which must
            // bring the job back to the executor's threads.
            try await Task.sleep(for: .milliseconds(1))
            let inActor = await probe.priority()
            #expect(Self.runsAt(Place(), priority))
            return (first, inActor)
        }
        #expect(Self.runsAt(inside, priority))
        #expect(inside.systemName.hasPrefix("odata-bg-"), "the system shows the thread as a background one: \(inside.systemName)")
        #expect(Self.runsAt(inActor, priority), "a default actor the job calls runs on the job's threads")
        #expect(!BackgroundExecutor.isBackgroundThread && BackgroundExecutor.currentThreadPriority == .nice(0),
                "the caller is resumed where it runs, not on a background thread")
    }

    /// The names of this process's threads as the system keeps them.
    static func threadNames() throws -> [String] {
        // A thread may end between the listing and the reading of its name: it is then not one of them.
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
            try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
        }
    }

    /// An idle executor's threads, those that take work against starvation included, start at its first job — not at
    /// the first escalation, which would add threads (their stacks, their malloc arenas) to a process long after it
    /// warmed up, on a CPU already starved.
    @Test func anIdleExecutorsThreadsAllStartAtItsFirstJob() async throws {
        let executor = BackgroundExecutor(threads: 2, priority: .idle)
        let before = try Self.threadNames().filter { $0.hasPrefix("odata-bg-esc-") }.count
        try await executor.run {}
        #expect(executor.escalations == 0)
        // Each thread names itself as it starts: wait (bounded) for the name to appear, not for a time.
        let deadline = ContinuousClock.now + .seconds(10)
        while try Self.threadNames().filter({ $0.hasPrefix("odata-bg-esc-") }).count <= before, ContinuousClock.now < deadline {
            await Task.yield()
        }
        #expect(try Self.threadNames().filter { $0.hasPrefix("odata-bg-esc-") }.count > before, "the escalation thread started with the first job")
    }

    /// Cancelling the caller cancels the job; what the job throws reaches the caller.
    @Test func cancellingTheCallerCancelsTheJob() async throws {
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let caller = Task {
            try await BackgroundExecutor.shared.run {
                startedContinuation.yield()
                try await Task.sleep(for: .seconds(60))
            }
        }
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        await #expect(throws: URLError.self) {
            try await BackgroundExecutor.shared.run { throw URLError(.badURL) }
        }
    }

    /// On a CPU that threads of the default priority keep busy, an idle executor's work is slowed, never stopped:
    /// once a job has waited ``BackgroundExecutor/starvationBound``, threads at the default priority take work too. At
    /// `SCHED_IDLE` alone, 40 jobs of 2 ms each took minutes here beside two spinning threads per core.
    @Test func workOnABusyCPUIsTakenAtNiceTenAfterTheStarvationBound() async throws {
        let executor = BackgroundExecutor(threads: 2, priority: .idle)
        let spinning = Atomic<Bool>(true)
        let spinners = 2 * ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<spinners {
            Thread { while spinning.load(ordering: .relaxed) {} }.start()
        }
        defer { spinning.store(false, ordering: .relaxed) }
        let start = ContinuousClock.now
        let priorities = try await withThrowingTaskGroup(of: BackgroundExecutor.Priority.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    try await executor.run {
                        let until = ContinuousClock.now + .milliseconds(2)
                        while ContinuousClock.now < until {}
                        return BackgroundExecutor.isBackgroundThread ? BackgroundExecutor.currentThreadPriority : .nice(-1)
                    }
                }
            }
            var seen: [BackgroundExecutor.Priority] = []
            for try await priority in group { seen.append(priority) }
            return seen
        }
        spinning.store(false, ordering: .relaxed)
        #expect(priorities.count == 40)
        #expect(executor.escalations >= 1, "the work waited at SCHED_IDLE without being handed on")
        #expect(priorities.contains(.nice(0)), "taken by the escalated threads")
        #expect(!priorities.contains(.nice(-1)), "always on a background thread")
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    /// A queue's blocks run one at a time, in the order given, at the executor's priority; `isCurrent` holds
    /// inside them only.
    @Test func aQueueRunsItsBlocksInOrderOneAtATime() async throws {
        let queue = BackgroundQueue()
        let log = Mutex<[Int]>([])
        let running = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        #expect(!queue.isCurrent)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                queue.async {
                    if running.add(1, ordering: .sequentiallyConsistent).newValue > 1 { overlaps.add(1, ordering: .relaxed) }
                    log.withLock { $0.append(index) }
                    running.subtract(1, ordering: .sequentiallyConsistent)
                }
            }
            // Given after the 200 blocks: when it has run, they have.
            group.addTask {
                let inside = try await queue.run { (queue.isCurrent, Place()) }
                #expect(inside.0)
                #expect(Self.runsAt(inside.1, .idle))
            }
            try await group.waitForAll()
        }
        #expect(log.withLock { $0 } == Array(0..<200))
        #expect(overlaps.load(ordering: .relaxed) == 0)
        #expect(!queue.isCurrent)
        await #expect(throws: URLError.self) { try await queue.run { throw URLError(.badURL) } }
    }
}

private actor PriorityProbe {
    func priority() -> BackgroundExecutorTests.Place { BackgroundExecutorTests.Place() }
}
