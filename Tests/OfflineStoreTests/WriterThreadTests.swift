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
    /// Where the shared background executor runs work: at `SCHED_IDLE`, or at nice 10 when a busy CPU starved it.
    static let background: Set<BackgroundExecutor.Priority> = [.idle, .nice(10)]

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
        #expect(Self.background.contains(try await store.write { _ in BackgroundExecutor.currentThreadPriority }))
        #expect(BackgroundExecutor.currentThreadPriority == .nice(0))
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
        #expect(BackgroundExecutor.currentThreadPriority == .nice(0))
    }
}

/// Records how the thread each progress report comes on is scheduled.
private final class NicenessDelegate: OfflineODataDelegate {
    let seen = Mutex<(download: [BackgroundExecutor.Priority], upload: [BackgroundExecutor.Priority])>(([], []))

    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateDownloadProgress progress: OfflineODataDownloadProgress) {
        let priority = BackgroundExecutor.currentThreadPriority
        seen.withLock { $0.download.append(priority) }
    }

    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateUploadProgress progress: OfflineODataUploadProgress) {
        let priority = BackgroundExecutor.currentThreadPriority
        seen.withLock { $0.upload.append(priority) }
    }
}
