import Foundation
import HTTPTypes
import ODataCore

/// An ``ODataCore/HTTPTransport`` that sends a safe request (`GET`, `HEAD`, `OPTIONS`) again as a
/// ``RetryPolicy`` says: after no answer (``ODataCore/NoAnswer``) or a status the policy retries, waiting on a
/// ``RetryClock``. Any other request, and one whose answer goes to a sink or file (its bytes may be half written),
/// is sent once. When the policy gives up, the last answer is returned, or the last error thrown.
///
/// The offline store's download reads through one; the online store does when
/// `OnlineStoreOptions.retryPolicy` is set.
public struct RetryingTransport: HTTPTransport {
    /// The transport requests go through.
    public let base: any HTTPTransport
    /// When to send again.
    public let policy: RetryPolicy
    /// The clock the waits are on.
    public let clock: any RetryClock

    /// Creates the transport.
    ///
    /// - Parameters:
    ///   - base: The transport requests go through.
    ///   - policy: When to send again.
    ///   - clock: The clock the waits are on; the default is the system's.
    public init(base: any HTTPTransport, policy: RetryPolicy, clock: any RetryClock = SystemRetryClock()) {
        self.base = base
        self.policy = policy
        self.clock = clock
    }

    /// Sends `request`, again after a retried failure.
    ///
    /// - Parameter request: The request.
    /// - Returns: The first answer the policy does not retry, or the last one when it gives up.
    /// - Throws: The last transport error when the policy gives up on failures without an answer; `CancellationError`.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard policy.maxAttempts > 1, ["GET", "HEAD", "OPTIONS"].contains(request.method.uppercased()),
              request.responseBodySink == nil, request.responseBodyFile == nil
        else { return try await base.send(request) }
        var attempts = 0
        var firstFailure: Date?
        while true {
            attempts += 1
            let failure: RetryPolicy.Failure
            let outcome: Result<TransportResponse, any Error>
            do {
                let response = try await base.send(request)
                guard policy.retryableStatuses.contains(response.status) else { return response }
                failure = RetryPolicy.Failure(status: response.status, retryAfter: response.headerFields[.retryAfter])
                outcome = .success(response)
            } catch {
                if error is CancellationError || Task.isCancelled { throw error }
                guard NoAnswer.of(error) != nil else { throw error }
                failure = .noAnswer
                outcome = .failure(error)
            }
            let now = clock.now
            let first = firstFailure ?? now
            firstFailure = first
            let elapsed = Duration(timeInterval: now.timeIntervalSince(first))
            switch policy.decision(after: failure, attempts: attempts, sinceFirstFailure: elapsed, now: now, random: Double.random(in: 0..<1)) {
            case .retry(let wait): try await clock.sleep(for: wait)
            case .giveUp: return try outcome.get()
            }
        }
    }
}
