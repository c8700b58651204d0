import Foundation
import ODataCore

/// When and how long to wait before a request is sent again: the one retry policy of both stores (the offline
/// upload and download, and the online store's reads when asked for).
///
/// A failure is retried when it may pass on its own: no answer at all (``NoAnswer``), or a status in
/// ``retryableStatuses`` (by default `408`, `429` and every `5xx`). Retry `n` (from 1) waits a random time between
/// zero and `min(maxDelay, baseDelay × 2ⁿ⁻¹)` ("full jitter"; with ``jitter`` off, exactly the upper end), except
/// that a `429` or `503` with a `Retry-After` header (delta-seconds or an HTTP-date, RFC 9110 §10.2.3) waits
/// what the back end asked, even beyond ``maxDelay``. No retry is made after ``maxAttempts`` sends, nor one whose
/// wait would end more than ``budget`` after the first failure. Whether a request may be sent twice at all
/// (idempotence, repeatable requests) is the caller's rule, not the policy's.
///
/// ```swift
/// var policy = RetryPolicy()          // 4 sends, 100 ms doubling up to 10 s, within 30 s
/// policy.maxAttempts = 6
/// policy.budget = .seconds(120)
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// How many times a request is sent at most, the first send included; `1` never retries. The default is 4.
    public var maxAttempts: Int
    /// The upper end of the first retry's wait; it doubles for each further retry. The default is 100 ms.
    public var baseDelay: Duration
    /// The longest backoff wait (a `Retry-After` may ask for longer). The default is 10 s.
    public var maxDelay: Duration
    /// How long after the first failure a retry's wait may end at the latest. The default is 30 s.
    public var budget: Duration
    /// Whether a backoff wait is a random time up to its upper end (full jitter, so that many clients that failed
    /// together do not come back together). The default is `true`.
    public var jitter: Bool
    /// The HTTP statuses that are retried. The default is `408`, `429` and `500`–`599`.
    public var retryableStatuses: Set<Int>
    /// Whether a failure without any answer (refused, reset, timed out, no name) is retried. The default is `true`.
    public var retriesWithoutAnswer: Bool

    /// Creates a policy; every parameter has the default documented on its property.
    ///
    /// - Parameters:
    ///   - maxAttempts: Sends at most, the first included.
    ///   - baseDelay: The first retry's longest wait.
    ///   - maxDelay: The longest backoff wait.
    ///   - budget: How long after the first failure the last retry may start.
    ///   - jitter: Whether waits are random up to their upper end.
    ///   - retryableStatuses: The statuses retried.
    ///   - retriesWithoutAnswer: Whether a failure without an answer is retried.
    public init(maxAttempts: Int = 4, baseDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(10),
                budget: Duration = .seconds(30), jitter: Bool = true,
                retryableStatuses: Set<Int> = Set([408, 429]).union(500..<600), retriesWithoutAnswer: Bool = true) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.budget = budget
        self.jitter = jitter
        self.retryableStatuses = retryableStatuses
        self.retriesWithoutAnswer = retriesWithoutAnswer
    }

    /// A policy that never retries.
    public static let never = RetryPolicy(maxAttempts: 1)

    /// What is wrong with the policy, or `nil` when it can be used.
    public var problem: String? {
        if maxAttempts < 1 { return "maxAttempts must be at least 1, got \(maxAttempts)" }
        if baseDelay < .zero || maxDelay < .zero || budget < .zero { return "baseDelay, maxDelay and budget must not be negative" }
        return nil
    }

    /// One failed send, as the policy sees it.
    public struct Failure: Sendable, Hashable {
        /// The HTTP status, or `nil` when no answer came.
        public var status: Int?
        /// The answer's `Retry-After` header, if any.
        public var retryAfter: String?

        /// A failure with an answer.
        ///
        /// - Parameters:
        ///   - status: The HTTP status.
        ///   - retryAfter: The `Retry-After` header, if any.
        public init(status: Int, retryAfter: String? = nil) {
            self.status = status
            self.retryAfter = retryAfter
        }

        /// A failure without an answer (``NoAnswer``).
        public static let noAnswer = Failure(nil)

        private init(_ status: Int?) {
            self.status = status
            self.retryAfter = nil
        }
    }

    /// What the policy says after a failed send.
    public enum Decision: Sendable, Hashable {
        /// Send again after this wait.
        case retry(after: Duration)
        /// Do not send again: the reason, for a person.
        case giveUp(String)
    }

    /// Whether and when to send again after `failure`.
    ///
    /// - Parameters:
    ///   - failure: What the last send got.
    ///   - attempts: How many sends were made so far (1 after the first).
    ///   - sinceFirstFailure: How long ago the first send of the request failed.
    ///   - now: The current time, for a `Retry-After` HTTP-date.
    ///   - random: A number in `0..<1` for the jitter.
    /// - Returns: ``Decision/retry(after:)`` or ``Decision/giveUp(_:)``.
    public func decision(after failure: Failure, attempts: Int, sinceFirstFailure: Duration, now: Date, random: Double) -> Decision {
        if let status = failure.status {
            guard retryableStatuses.contains(status) else { return .giveUp("HTTP \(status) is not retried") }
        } else if !retriesWithoutAnswer {
            return .giveUp("a failure without an answer is not retried")
        }
        guard attempts < maxAttempts else { return .giveUp("sent \(attempts) times (maxAttempts \(maxAttempts))") }
        let wait: Duration
        if let status = failure.status, status == 429 || status == 503,
           let asked = Self.retryAfter(failure.retryAfter, now: now) {
            wait = asked
        } else {
            wait = backoff(beforeRetry: attempts, random: random)
        }
        guard sinceFirstFailure + wait <= budget else {
            return .giveUp("the next try in \(Self.describe(wait)) would end past the retry budget of \(Self.describe(budget))")
        }
        return .retry(after: wait)
    }

    /// The backoff wait before retry `retry` (from 1): up to `min(maxDelay, baseDelay × 2ʳᵉᵗʳʸ⁻¹)`, a random
    /// share of it with ``jitter``.
    ///
    /// - Parameters:
    ///   - retry: The retry's number, from 1.
    ///   - random: A number in `0..<1`.
    /// - Returns: The wait.
    public func backoff(beforeRetry retry: Int, random: Double) -> Duration {
        let doublings = Double(min(max(retry - 1, 0), 40))
        let upper = min(maxDelay.timeInterval, baseDelay.timeInterval * pow(2, doublings))
        let share = jitter ? min(max(random, 0), 1) : 1
        return Duration(timeInterval: upper * share)
    }

    /// The wait a `Retry-After` value asks for: delta-seconds, or an HTTP-date (IMF-fixdate, RFC 850 or asctime,
    /// RFC 9110 §5.6.7) less `now` (a past date asks for no wait).
    ///
    /// - Parameters:
    ///   - value: The header's value.
    ///   - now: The current time.
    /// - Returns: The wait, or `nil` when there is no value or it is neither form.
    public static func retryAfter(_ value: String?, now: Date) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) {
            return Int64(text).map { .seconds($0) } ?? .seconds(Int64.max / 1_000_000_000_000)
        }
        for format in httpDateFormats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) {
                return Duration(timeInterval: date.timeIntervalSince(now))
            }
        }
        return nil
    }

    /// IMF-fixdate, RFC 850 and asctime.
    private static let httpDateFormats = ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"]

    /// A duration for a person: `250 ms`, `2.0 s`.
    static func describe(_ duration: Duration) -> String {
        let value = duration.timeInterval
        return value < 1 ? "\(Int((value * 1000).rounded())) ms" : "\((value * 10).rounded() / 10) s"
    }
}
