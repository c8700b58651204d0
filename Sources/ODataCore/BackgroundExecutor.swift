import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Threads for bulk work — a download, an upload, a store's writes, a cache fill — at a lower scheduling priority
/// than the rest of the process.
///
/// Swift's cooperative pool has one thread per core, and a job that parses a million entities or commits their rows
/// on it takes those threads, and the CPU, from every other task of the process: an online read waits behind it.
/// Work run here leaves the pool alone, and its threads run at the ``priority`` given (on Linux a per-thread
/// attribute), so the kernel gives the CPU to the process's other threads whenever they want it and to the bulk work
/// the rest of the time: on an idle machine a download is as fast as on the pool, beside a busy service it yields.
///
/// Hand it a job with ``run(_:)`` (or use it as any task executor, `Task(executorPreference:)`): the job's
/// non-isolated code and the code of the default actors it calls run on these threads. The offline store runs its
/// opens, downloads and uploads so (and a ``BackgroundQueue`` is its writer); service code can do the same with its
/// own bulk work.
///
/// A caller of an actor that a background job is running on at that moment may go on, after the call returns, on
/// the background thread until its next suspension: a default actor runs the calls it is given on the thread it is
/// on.
///
/// The threads live as long as the process (as the cooperative pool's do): use ``shared``, or make one executor
/// per priority a process needs, never one per store. The system shows them as `odata-bg-N` (`ps -L`, `top -H`,
/// `perf`), and those that took work against starvation as `odata-bg-esc-N`.
public final class BackgroundExecutor: TaskExecutor, @unchecked Sendable {
    /// How the kernel schedules the threads against the process's other threads.
    public enum Priority: Sendable, Hashable {
        /// Linux's `SCHED_IDLE`: the threads run when no other thread of the machine wants the core, and give it up
        /// the moment one does — the strongest isolation (inside a system call, on a kernel built without preemption
        /// as `PREEMPT_NONE`, only when the call returns: a bulk write's copy into the page cache runs to its end).
        /// Against starvation on a CPU that other work keeps busy, once the oldest waiting job has waited
        /// ``starvationBound``, threads at the default priority take work too, for ten bounds at a time
        /// (``escalations`` counts it): bulk work on a saturated CPU gets about the share it had on the cooperative
        /// pool, and otherwise yields.
        case idle
        /// The default policy at this nice value (0–19; higher is lower): the threads get a share of a busy CPU
        /// (about 10 % against one thread at nice 0 for nice 10) and yield less promptly than ``idle``; at 0 the
        /// work is only off the cooperative pool, at the process's own priority.
        case nice(Int32)
    }

    /// The one instance the stores use unless told otherwise: two threads per core, ``Priority/idle``.
    public static let shared = BackgroundExecutor(threads: 2 * max(1, ProcessInfo.processInfo.activeProcessorCount), priority: .idle)

    /// How long a job of an ``Priority/idle`` executor may wait for a thread before threads at the default priority
    /// take work too: a saturated CPU slows the bulk work as it slows everything, never stops it (a transfer with a
    /// low-speed limit would fail).
    public static let starvationBound: Duration = .milliseconds(200)

    /// How the threads are scheduled.
    public let priority: Priority
    /// How many threads run work at once. More than the cores: a writer's transaction holds its thread while it
    /// waits for the disk, and the other threads go on.
    public let threadCount: Int

    private let condition = NSCondition()
    /// The jobs waiting for a thread, each with when it was given (uptime nanoseconds).
    private var work: [(item: Work, since: UInt64)] = []
    private var started = false
    /// Whether the threads at the default priority take work now, and whether the watch runs.
    private var escalated = false
    private var watching = false
    /// When the threads were escalated; whether work was given since the watch's last look, and its looks in a row
    /// that found none given.
    private var escalatedAt: UInt64 = 0
    private var submittedSinceLook = false
    private var quietLooks = 0
    private var escalationCount = 0

    /// How many times waiting work was handed to the threads at the default priority (an ``Priority/idle`` executor
    /// on a saturated CPU).
    public var escalations: Int {
        condition.lock()
        defer { condition.unlock() }
        return escalationCount
    }

    private enum Work {
        case job(UnownedJob)
        case block(@Sendable () -> Void)
    }

    /// An executor of `threads` threads at `priority`, started at its first job (for ``Priority/idle`` with half as
    /// many at the default priority, which take work only against starvation).
    public init(threads: Int, priority: Priority) {
        self.threadCount = max(1, threads)
        self.priority = priority
    }

    /// Runs `operation` in a task of its own that prefers these threads, and waits for it.
    ///
    /// The calling task suspends (its thread goes on with other tasks) and is resumed where it runs, not on a
    /// background thread: the caller's own work after this call keeps its priority. Cancelling the caller cancels
    /// the operation; the operation sees the caller's task-local values and priority.
    ///
    /// - Parameter operation: The work; the default actors it calls run their code on these threads too.
    /// - Returns: What `operation` returns.
    /// - Throws: What `operation` throws.
    public func run<R: Sendable>(_ operation: @escaping @Sendable () async throws -> R) async throws -> R {
        let task = Task(executorPreference: self) { try await operation() }
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    /// Runs `job` on one of the threads (what a task that prefers this executor is run with).
    public func enqueue(_ job: consuming ExecutorJob) {
        submit(.job(UnownedJob(job)))
    }

    /// Runs `block` on one of the threads, soon; blocks run in no particular order (``BackgroundQueue`` orders them).
    public func execute(_ block: @escaping @Sendable () -> Void) {
        submit(.block(block))
    }

    private func submit(_ item: Work) {
        condition.lock()
        if !started {
            started = true
            for index in 0..<threadCount { startThread(index, priority: priority) }
            // The threads that take work against starvation start with the others, not at the first escalation: the
            // process's threads are then fixed from the first job on, and an escalation on a starved CPU need not
            // create threads first.
            if priority == .idle {
                for index in 0..<max(1, threadCount / 2) { startThread(index, priority: .nice(0), escalation: true) }
            }
        }
        work.append((item, DispatchTime.now().uptimeNanoseconds))
        submittedSinceLook = true
        if priority == .idle && !watching {
            watching = true
            watch()
        }
        condition.signal()
        condition.unlock()
    }

    private func startThread(_ index: Int, priority: Priority, escalation: Bool = false) {
        // Linux keeps 15 bytes of a thread's name (what `top -H`, `ps -L` and `perf` show): a longer one never reaches it.
        let name = escalation ? "odata-bg-esc-\(index)" : "odata-bg-\(index)"
        let thread = Thread { [self] in
            Self.apply(priority)
            Self.nameForTheSystem(name)
            Thread.current.threadDictionary[Self.backgroundThreadKey] = true
            while true {
                condition.lock()
                while work.isEmpty || (escalation && !escalated) { condition.wait() }
                let item = work.removeFirst().item
                condition.unlock()
                switch item {
                case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
                case .block(let block): block()
                }
            }
        }
        thread.name = name
        thread.start()
    }

    /// Looks every half ``starvationBound`` (on a thread of the default priority) at how long the oldest job has
    /// waited: from the bound on, the threads at the default priority take work too — for ten bounds, then the
    /// threads at the executor's priority are tried alone again; sooner when nothing was given for five looks.
    /// Stops when nothing waits and nothing is escalated.
    private func watch() {
        let bound = Self.starvationBound.components
        let nanoseconds = UInt64(bound.seconds) * 1_000_000_000 + UInt64(bound.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds / 2))) { [weak self] in
            guard let self else { return }
            condition.lock()
            defer { condition.unlock() }
            let now = DispatchTime.now().uptimeNanoseconds
            quietLooks = submittedSinceLook ? 0 : quietLooks + 1
            submittedSinceLook = false
            if escalated && (now - escalatedAt >= 10 * nanoseconds || quietLooks >= 5) { escalated = false }
            if !escalated, let oldest = work.first?.since, now - oldest >= nanoseconds {
                escalated = true
                escalatedAt = now
                escalationCount += 1
                condition.broadcast()
            }
            if work.isEmpty && !escalated {
                watching = false
                return
            }
            watch()
        }
    }

    /// Marks the executors' threads (``isBackgroundThread``).
    private static let backgroundThreadKey = "ODataStores.BackgroundExecutor"

    /// Whether the calling code runs on a thread of a background executor (at its priority, or escalated).
    public static var isBackgroundThread: Bool { Thread.current.threadDictionary[backgroundThreadKey] != nil }

    /// Linux's `SCHED_IDLE` (`<sched.h>` defines it only with `_GNU_SOURCE`).
    private static let schedIdle: Int32 = 5

    /// Gives the calling thread `priority`. On Linux the policy and the nice value are the calling thread's
    /// (pid 0, who 0), not the process's; lowering one's own priority needs no privilege.
    private static func apply(_ priority: Priority) {
        #if canImport(Glibc)
        switch priority {
        case .idle:
            var parameter = sched_param(sched_priority: 0)
            _ = sched_setscheduler(0, schedIdle, &parameter)
        case .nice(let value):
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, value)
        }
        #endif
    }

    /// Names the calling thread where the system shows it (`/proc/thread-self/comm`, at most 15 bytes; Foundation's
    /// `Thread.name` stays in the process). A name is only a label: where the file cannot be written, the thread runs
    /// under the name it inherited.
    private static func nameForTheSystem(_ name: String) {
        #if os(Linux)
        let file = open("/proc/thread-self/comm", O_WRONLY)
        guard file >= 0 else { return }
        defer { close(file) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        #endif
    }

    /// How the calling thread is scheduled: ``Priority/idle``, else its nice value (0 for a thread nobody lowered).
    /// What a test proves where code ran with.
    public static var currentThreadPriority: Priority {
        #if canImport(Glibc)
        if sched_getscheduler(0) == schedIdle { return .idle }
        errno = 0
        return .nice(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
        #else
        return .nice(0)
        #endif
    }
}

/// A serial queue on the ``BackgroundExecutor``'s threads: blocks run one after another, in the order they were
/// given, each on some background thread.
///
/// What a store's writer is: its transactions wait for the disk on a background thread, at the background
/// priority, and never on a thread of the cooperative pool.
public final class BackgroundQueue: @unchecked Sendable {
    private let executor: BackgroundExecutor
    private let condition = NSCondition()
    private var blocks: [@Sendable () -> Void] = []
    private var draining = false
    /// The thread that drains the queue now, while it does.
    private var drainingThread: pthread_t?

    /// A queue on `executor`'s threads.
    public init(executor: BackgroundExecutor = .shared) {
        self.executor = executor
    }

    /// Runs `block` after every block given before it.
    public func async(_ block: @escaping @Sendable () -> Void) {
        condition.lock()
        blocks.append(block)
        let start = !draining
        draining = true
        condition.unlock()
        if start { executor.execute { self.drain() } }
    }

    /// Runs `body` after every block given before it; the calling task suspends meanwhile (its thread goes on).
    public func run<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Whether the calling code runs inside one of the queue's blocks.
    public var isCurrent: Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let drainingThread else { return false }
        return pthread_equal(drainingThread, pthread_self()) != 0
    }

    /// Runs the first block, then hands the rest to a job of its own: each block is one job of the executor, so work
    /// that waits is taken by whichever thread the executor gives it (see ``BackgroundExecutor/starvationBound``).
    private func drain() {
        condition.lock()
        guard !blocks.isEmpty else {
            draining = false
            condition.unlock()
            return
        }
        let block = blocks.removeFirst()
        drainingThread = pthread_self()
        condition.unlock()
        block()
        condition.lock()
        drainingThread = nil
        let more = !blocks.isEmpty
        if !more { draining = false }
        condition.unlock()
        if more { executor.execute { self.drain() } }
    }
}
