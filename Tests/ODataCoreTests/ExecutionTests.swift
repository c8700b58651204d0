import Foundation
import Synchronization
import Testing
@testable import ODataCore

/// Records each callback with the status seen at that moment.
final class RecordingListener: ODataRequestListener {
    let log = LockedValue<[String]>([])
    let responses = LockedValue<[ObjectIdentifier]>([])

    func requestStarted(_ execution: RequestExecution) { log.withLock { $0.append("started:\(execution.status)") } }
    func requestCacheResponse(_ execution: RequestExecution, response: ODataResponse?) {
        log.withLock { $0.append("cache(\(response == nil ? "nil" : "hit")):\(execution.status)") }
    }
    func requestServerResponse(_ execution: RequestExecution, response: ODataResponse) {
        log.withLock { $0.append("server:\(execution.status)") }
        responses.withLock { $0.append(ObjectIdentifier(response)) }
    }
    func requestFailed(_ execution: RequestExecution, error: any Error, response: ODataResponse?) {
        log.withLock { $0.append("failed:\(execution.status)") }
    }
    func requestFinished(_ execution: RequestExecution, response: ODataResponse?) {
        log.withLock { $0.append("finished:\(execution.status)") }
        if let response { responses.withLock { $0.append(ObjectIdentifier(response)) } }
    }
}

@Suite struct ExecutionTests {
    @Test func statusFollowsTheEventsAndTheListenerSeesIt() async throws {
        let listener = RecordingListener()
        let execution = RequestExecution(request: .get("Customers"), listener: listener)
        let server = ODataResponse(statusCode: 200)
        execution.report(.started)
        execution.report(.cacheResponse(nil))
        execution.report(.serverResponse(server))
        execution.report(.finished(server))
        execution.report(.serverResponse(server)) // ignored after finished
        #expect(listener.log.withLock { $0 } == ["started:initialized", "cache(nil):inProgress", "server:inProgress", "finished:completed"])
        let ids = listener.responses.withLock { $0 }
        #expect(ids.count == 2 && ids[0] == ids[1], "finished gets the very object of serverResponse")
        #expect(try await execution.result() === server)
        var kinds: [String] = []
        for await event in execution.events {
            switch event {
            case .started: kinds.append("started")
            case .cacheResponse: kinds.append("cache")
            case .serverResponse: kinds.append("server")
            case .failed: kinds.append("failed")
            case .finished: kinds.append("finished")
            }
        }
        #expect(kinds == ["started", "cache", "server", "finished"])
    }

    @Test func aFailureStaysFailedAndResultThrows() async {
        let listener = RecordingListener()
        let execution = RequestExecution(request: .get("Customers"), listener: listener)
        let response = ODataResponse(statusCode: 500)
        let waiter = Task { try await execution.result() }
        execution.report(.started)
        execution.report(.failed(ODataError(.invalidState, "boom"), response))
        execution.report(.finished(response))
        #expect(execution.status == .failed)
        #expect(listener.log.withLock { $0 } == ["started:initialized", "failed:failed", "finished:failed"])
        await #expect(throws: ODataError.self) { try await waiter.value }
    }

    /// A task that sleeps until it is cancelled.
    private func sleeper() -> Task<Void, Never> {
        Task {
            do { try await Task.sleep(for: .seconds(600)) } catch {}
        }
    }

    @Test func cancelReachesATaskAttachedLate() async {
        let execution = RequestExecution(request: .get("Customers"), listener: nil)
        execution.cancel()
        execution.cancel()
        let task = sleeper()
        execution.attach(task)
        await task.value
        #expect(task.isCancelled)
        #expect(execution.isCancelled)
    }

    @Test func cancelReachesTheAttachedTask() async {
        let execution = RequestExecution(request: .get("Customers"), listener: nil)
        let task = sleeper()
        execution.attach(task)
        execution.cancel()
        await task.value
        #expect(execution.isCancelled)
    }

    /// A store's `stop()` (at `close()`) cancels the work, before or after its task is attached, without marking the
    /// execution cancelled; after the end it does nothing.
    @Test func stopCancelsTheTaskButNotTheExecution() async {
        let early = RequestExecution(request: .get("Customers"), listener: nil)
        early.stop()
        let first = sleeper()
        early.attach(first)
        await first.value
        #expect(!early.isCancelled)
        let late = RequestExecution(request: .get("Customers"), listener: nil)
        let second = sleeper()
        late.attach(second)
        late.stop()
        await second.value
        #expect(!late.isCancelled)
        let ended = RequestExecution(request: .get("Customers"), listener: nil)
        ended.report(.started)
        ended.report(.finished(nil))
        let third = sleeper()
        ended.attach(third)
        ended.stop()
        ended.cancel()
        #expect(!third.isCancelled)
        #expect(!ended.isCancelled)
        third.cancel()
    }

    /// Events reported after the sequence was asked for reach a reader that waits for them, in order.
    @Test func eventsReachAWaitingReaderInOrder() async {
        let execution = RequestExecution(request: .get("Products"), listener: nil)
        let reader = Task {
            var kinds: [String] = []
            for await event in execution.events {
                switch event {
                case .started: kinds.append("started")
                case .cacheResponse: kinds.append("cache")
                case .serverResponse: kinds.append("server")
                case .failed: kinds.append("failed")
                case .finished: kinds.append("finished")
                }
            }
            return kinds
        }
        execution.report(.started)
        try? await Task.sleep(for: .milliseconds(20))  // the reader waits now
        execution.report(.cacheResponse(nil))
        try? await Task.sleep(for: .milliseconds(20))
        execution.report(.serverResponse(ODataResponse(statusCode: 200, payload: Data())))
        execution.report(.finished(nil))
        execution.report(.started)  // after finished: ignored
        #expect(await reader.value == ["started", "cache", "server", "finished"])
    }

    /// A reader waiting for an event of an execution that never finishes ends when its task is cancelled; a
    /// second reader at the same time ends at once.
    @Test func aCancelledReaderEndsAndASecondReaderEndsAtOnce() async {
        let execution = RequestExecution(request: .get("Products"), listener: nil)
        let reader = Task {
            var count = 0
            for await _ in execution.events { count += 1 }
            return count
        }
        try? await Task.sleep(for: .milliseconds(20))
        var second = execution.events.makeAsyncIterator()
        #expect(await second.next() == nil)
        reader.cancel()
        #expect(await reader.value == 0)
    }
}
