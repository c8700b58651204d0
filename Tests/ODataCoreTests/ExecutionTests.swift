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

    @Test func cancelRunsTheHandlerOnceEvenWhenSetLate() {
        let calls = LockedValue(0)
        let execution = RequestExecution(request: .get("Customers"), listener: nil)
        execution.cancel()
        execution.cancel()
        execution.setCancellationHandler { calls.withLock { $0 += 1 } }
        #expect(calls.withLock { $0 } == 1)
        #expect(execution.isCancelled)
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
