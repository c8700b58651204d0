import Foundation
import HTTPTypes
import ODataCore
import ODataSession
import ODataTesting
import Testing
@testable import OnlineStore

/// The online store's retries: off by default; with `retryPolicy`, a read is re-sent on the clock, and an active
/// read's cache callback comes before any retry.
@Suite struct RetryTests {
    @Test func readsAreNotRetriedByDefault() async throws {
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "Customers('ALFKI')", reply: .status(503))
        try await Harness.run(on: backEnd) { harness in
            let store = try await harness.openStore { $0.useCache = false }
            let (recorder, _) = await record(store, .get("Customers('ALFKI')"))
            #expect(recorder.entries == immediateFailure, "the 503 reaches the caller at once")
            #expect(backEnd.requests("GET", "Customers('ALFKI')").count == 1)
        }
    }

    /// The cached copy is delivered while the retry still waits on the clock; the server's answer comes after it.
    @Test func anActiveReadsCacheCallbackIsNeverDelayedByARetry() async throws {
        let backEnd = ScriptedTransport()
        let etag = #"W/"c1""#
        let body = Data(JSON.string(ScriptedTransport.customer("ALFKI")).utf8)
        backEnd.on("GET", "Customers('ALFKI')", replies: [
            .status(200, headerFields: [.contentType: "application/json", .eTag: etag], body: body),
            .status(503, headerFields: [.retryAfter: "3"]),
            .status(304, headerFields: [.eTag: etag]),
        ])
        let clock = TestClock()
        try await Harness.run(on: backEnd) { harness in
            let store = try await harness.openStore {
                $0.retryPolicy = RetryPolicy(maxAttempts: 3, jitter: false)
                $0.retryClock = clock
            }
            _ = await record(store, .get("Customers('ALFKI')"))
            let recorder = CallbackRecorder()
            let execution = store.execute(.get("Customers('ALFKI')"), listener: recorder)
            #expect(await clock.nextSleep() == .seconds(3), "Retry-After on the 503")
            #expect(recorder.entries == ["started(initialized)", "cacheResponse(inProgress)"], "the cache answered before the retry")
            clock.advance(by: .seconds(3))
            let response = try #require(try await execution.result())
            #expect(response.isRevalidated)
            #expect(recorder.entries == activeSuccess)
            #expect(backEnd.requests("GET", "Customers('ALFKI')").count == 3)
        }
    }
}
