import Foundation

/// The clock retries and the offline synchronizer wait on: the time of day (for `Retry-After` HTTP-dates and the
/// state a service shows, "waiting until 10:05") and a sleep. ``SystemRetryClock`` is the real one; tests inject
/// ODataTesting's `TestClock`, so they never sleep.
public protocol RetryClock: Sendable {
    /// The current time.
    var now: Date { get }
    /// Waits `duration`.
    ///
    /// - Parameter duration: How long to wait.
    /// - Throws: `CancellationError` when the calling task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The system's clock: `Date()` and `Task.sleep`.
public struct SystemRetryClock: RetryClock {
    /// Creates the clock.
    public init() {}

    /// `Date()`.
    public var now: Date { Date() }

    /// `Task.sleep(for:)`.
    ///
    /// - Parameter duration: How long to wait.
    /// - Throws: `CancellationError` when the calling task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
