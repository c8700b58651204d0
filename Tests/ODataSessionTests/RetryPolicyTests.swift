import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataSession
import ODataTesting
import Testing

/// The one retry policy: which failures, how long (backoff with full jitter, the cap, `Retry-After` in both forms),
/// the attempts and the budget; and `RetryingTransport` over the real fixture producer, on a test clock.
struct RetryPolicyTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: [
        ("2", Duration?.some(.seconds(2))), ("0", .zero), (" 120 ", .seconds(120)),
        ("Fri, 15 Jan 2027 08:00:05 GMT", .seconds(5)),  // IMF-fixdate, 5 s after `now`
        ("Friday, 15-Jan-27 08:01:00 GMT", .seconds(60)),  // RFC 850
        ("Fri Jan 15 08:00:30 2027", .seconds(30)),  // asctime
        ("Thu, 14 Jan 2027 08:00:00 GMT", .zero),  // a date in the past asks for no wait
        ("soon", nil), ("-3", nil), ("", nil), ("1.5", nil),
    ])
    func retryAfterReadsDeltaSecondsAndHTTPDates(value: String, wait: Duration?) {
        #expect(RetryPolicy.retryAfter(value, now: Self.now) == wait)
    }

    /// Full jitter: a wait between zero and `min(cap, base × 2ⁿ⁻¹)`; without jitter, the upper end.
    @Test func backoffDoublesUpToTheCapWithFullJitter() {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maxDelay: .seconds(1), jitter: false)
        #expect((1...6).map { policy.backoff(beforeRetry: $0, random: 0.3) } ==
                [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        let jittered = RetryPolicy(baseDelay: .milliseconds(100), maxDelay: .seconds(1))
        #expect(jittered.backoff(beforeRetry: 3, random: 0.25) == .milliseconds(100))
        #expect(jittered.backoff(beforeRetry: 3, random: 0) == .zero)
        for random in stride(from: 0.0, to: 1.0, by: 0.07) {
            #expect(jittered.backoff(beforeRetry: 20, random: random) <= .seconds(1))
        }
    }

    @Test func decisionsFollowStatusesAttemptsAndTheBudget() {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(4), budget: .seconds(10), jitter: false)
        func decide(_ failure: RetryPolicy.Failure, attempts: Int = 1, elapsed: Duration = .zero) -> RetryPolicy.Decision {
            policy.decision(after: failure, attempts: attempts, sinceFirstFailure: elapsed, now: Self.now, random: 0.5)
        }
        #expect(decide(RetryPolicy.Failure(status: 500)) == .retry(after: .seconds(1)))
        #expect(decide(.noAnswer, attempts: 2) == .retry(after: .seconds(2)))
        if case .giveUp(let why) = decide(.noAnswer, attempts: 3) { #expect(why.contains("maxAttempts 3")) } else { Issue.record("retried past maxAttempts") }
        if case .giveUp(let why) = decide(RetryPolicy.Failure(status: 404)) { #expect(why.contains("404")) } else { Issue.record("404 retried") }
        // `Retry-After` beyond the cap is honoured; one past the budget is not.
        #expect(decide(RetryPolicy.Failure(status: 429, retryAfter: "7")) == .retry(after: .seconds(7)))
        #expect(decide(RetryPolicy.Failure(status: 503, retryAfter: "7"), elapsed: .seconds(4)) != .retry(after: .seconds(7)))
        // `Retry-After` counts only on 429 and 503.
        #expect(decide(RetryPolicy.Failure(status: 500, retryAfter: "7")) == .retry(after: .seconds(1)))
        #expect(decide(.noAnswer, elapsed: .seconds(9)) == .retry(after: .seconds(1)))
        #expect(decide(.noAnswer, elapsed: .seconds(9.5)) != .retry(after: .seconds(1)))
        var quiet = policy
        quiet.retriesWithoutAnswer = false
        #expect(quiet.decision(after: .noAnswer, attempts: 1, sinceFirstFailure: .zero, now: Self.now, random: 0) != .retry(after: .seconds(1)))
        #expect(RetryPolicy.never.decision(after: .noAnswer, attempts: 1, sinceFirstFailure: .zero, now: Self.now, random: 0) != .retry(after: .zero))
        #expect(RetryPolicy(maxAttempts: 0).problem != nil && RetryPolicy().problem == nil)
    }

    /// Which failures mean "no answer": the one classification both stores use.
    @Test func noAnswerClassifiesTransportAndSessionFailures() {
        #expect(NoAnswer.of(CurlError(kind: .connectFailed, message: "refused")) == .requestNotSent)
        #expect(NoAnswer.of(CurlError(kind: .tls, message: "handshake")) == .requestNotSent)
        #expect(NoAnswer.of(CurlError(kind: .timedOut, message: "t")) == .requestMayHaveArrived)
        #expect(NoAnswer.of(CurlError(kind: .timedOut, message: "connect", requestSent: false)) == .requestNotSent)
        #expect(NoAnswer.of(CurlError(kind: .connectionClosed, message: "reset")) == .requestMayHaveArrived)
        #expect(NoAnswer.of(CurlError(kind: .malformedResponse, message: "junk")) == nil)
        #expect(NoAnswer.of(SessionError(.csrfTokenFetchFailed, "x", underlying: CurlError(kind: .connectFailed, message: "refused"))) == .requestNotSent)
        #expect(NoAnswer.of(SessionError(.csrfTokenFetchFailed, statusCode: 500, "answered 500")) == nil)
        #expect(NoAnswer.of(CancellationError()) == nil)
    }

    /// A real connect that is refused: libcurl's error says no byte went out.
    @Test func aRefusedConnectionSentNothing() async throws {
        let server = try await FixtureServer.start()
        let root = server.serviceRoot
        await server.stop()
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let error = await #expect(throws: CurlError.self) { _ = try await curl.send(TransportRequest(url: root + "Customers")) }
        #expect(error.map { NoAnswer.of($0) } == .requestNotSent)
    }

    /// `RetryingTransport` re-sends a `GET` the producer answered `503` (twice, `Retry-After: 3` the second time),
    /// waiting on the clock; a `PATCH` is sent once whatever it gets.
    @Test func theRetryingTransportResendsSafeRequestsOnTheClock() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let scripted = ScriptedTransport(serviceRoot: server.serviceRoot, forwardingTo: curl)
        scripted.on("GET", "Customers", replies: [.status(503), .status(503, headerFields: [.retryAfter: "3"]), .connectionRefused, .forward])
        scripted.on("PATCH", "Customers('ALFKI')", reply: .status(503))
        let clock = TestClock(advancesBySleeping: true)
        let transport = RetryingTransport(base: scripted, policy: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(200), jitter: false), clock: clock)
        let response = try await transport.send(TransportRequest(url: server.serviceRoot + "Customers"))
        #expect(response.status == 200)
        #expect(clock.sleeps == [.milliseconds(200), .seconds(3), .milliseconds(800)])
        #expect(server.counters.requests(method: "GET", path: "Customers") == 1)
        let patch = try await transport.send(TransportRequest(method: "PATCH", url: server.serviceRoot + "Customers('ALFKI')", body: Data("{}".utf8)))
        #expect(patch.status == 503)
        #expect(scripted.requests("PATCH", "Customers('ALFKI')").count == 1)
        #expect(clock.sleeps.count == 3)
    }
}
