import Dispatch
import Foundation
import ODataCore
import ODataFixtures
import Synchronization
@testable import OfflineStore
import Testing

/// The offline store's writes run on a thread of their own (#45): a task that writes suspends, and the threads of
/// Swift's cooperative pool go on with other tasks while a transaction, its commit or the log's sync is under way.
@Suite struct WriterThreadTests {
    /// How the shared background executor's threads run: at `SCHED_IDLE`, or at the default priority once a
    /// saturated CPU made work wait (escalated).
    static let background: Set<BackgroundExecutor.Priority> = [.idle, .nice(0)]

    @Test func aWriteRunsOnTheWriterThreadNotOnTheCallingOne() async throws {
        let directory = try TemporaryDirectory()
        let store = try EntityStore(directory: directory.path, secret: Data(repeating: 5, count: 64), cacheBudget: 1 << 20)
        defer { store.close() }
        #expect(!store.isOnWriterThread)
        let ranOnWriter = try await store.write { changes in
            try changes.putMeta("probe", [1, 2, 3])
            return store.isOnWriterThread
        }
        #expect(ranOnWriter)
        // At the background threads' priority, not the caller's.
        let (onBackground, priority) = try await store.write { _ in (BackgroundExecutor.isBackgroundThread, BackgroundExecutor.currentThreadPriority) }
        #expect(onBackground && Self.background.contains(priority))
        #expect(!BackgroundExecutor.isBackgroundThread)
        #expect(!store.isOnWriterThread)
        // The blocking form says so in its name and runs where it is called.
        #expect(try store.writeBlocking { _ in store.isOnWriterThread } == false)
        // A failing body's error reaches the awaiting task, and the store writes on.
        await #expect(throws: OfflineODataError.self) {
            try await store.write { _ in throw OfflineODataError(.invalidRequest, "refused on purpose") }
        }
        #expect(try await store.write { _ in 7 } == 7)
    }

    /// More writers than the pool has threads, the first held inside its transaction until a task on the pool lets
    /// it go: with writes that blocked their callers' threads (each waiting for the store's writing connection),
    /// that task would never run and the held write would give up after 30 s.
    @Test func writersWaitingForTheStoreLeaveThePoolFree() async throws {
        let directory = try TemporaryDirectory()
        let store = try EntityStore(directory: directory.path, secret: nil, cacheBudget: 1 << 20)
        defer { store.close() }
        let gate = DispatchSemaphore(value: 0)
        let (entered, enteredContinuation) = AsyncStream<Void>.makeStream()
        let writers = ProcessInfo.processInfo.activeProcessorCount + 2
        let released = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await store.write { _ in
                    enteredContinuation.yield()
                    return gate.wait(timeout: .now() + 30) == .success
                }
            }
            var iterator = entered.makeAsyncIterator()
            _ = await iterator.next()
            for index in 0..<writers {
                group.addTask { try await store.write { changes in try changes.putMeta("writer \(index)", [UInt8(index)]); return true } }
            }
            // Queued after the writers, it runs on the pool while they wait: possible only if none of them holds a
            // pool thread.
            group.addTask { gate.signal(); return true }
            var results: [Bool] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(released.count == writers + 2)
        #expect(released.allSatisfy { $0 }, "the held write timed out: the writers blocked the pool")
    }

    /// A download's and an upload's own work (parsing pages, the queue's bookkeeping, the progress the delegate is
    /// told) runs on the background threads, at their lower priority: the cooperative pool and the CPU stay with the
    /// process's other tasks. The caller's thread keeps its priority.
    @Test func downloadsAndUploadsRunOnTheBackgroundThreads() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let delegate = NicenessDelegate()
        let provider = try await Northwind.provider(server, directory, pageSize: 5, delegate: delegate)
        try await provider.open()
        defer { Task { await provider.close() } }
        _ = try await provider.execute(.local("PATCH", "Employees(2)", body: #"{"City":"Background City"}"#))
        let result = try await provider.upload()
        #expect(result.succeeded == 1)
        try await provider.download()
        let seen = delegate.seen.withLock { $0 }
        #expect(seen.download.count > 10, "the initial download and the download report progress page by page")
        #expect(!seen.upload.isEmpty)
        #expect(Set(seen.download + seen.upload).isSubset(of: Self.background), "\(Set(seen.download + seen.upload))")
        #expect(!BackgroundExecutor.isBackgroundThread)
    }
}

/// Records how the thread each progress report comes on is scheduled (nice -1: not a background thread).
private final class NicenessDelegate: OfflineODataDelegate {
    let seen = Mutex<(download: [BackgroundExecutor.Priority], upload: [BackgroundExecutor.Priority])>(([], []))

    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateDownloadProgress progress: OfflineODataDownloadProgress) {
        let priority = BackgroundExecutor.isBackgroundThread ? BackgroundExecutor.currentThreadPriority : .nice(-1)
        seen.withLock { $0.download.append(priority) }
    }

    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateUploadProgress progress: OfflineODataUploadProgress) {
        let priority = BackgroundExecutor.isBackgroundThread ? BackgroundExecutor.currentThreadPriority : .nice(-1)
        seen.withLock { $0.upload.append(priority) }
    }
}
