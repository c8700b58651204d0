import Foundation

extension Duration {
    /// The duration in seconds, for `Date` arithmetic (retry waits, the synchronizer's deadlines).
    package var timeInterval: TimeInterval {
        TimeInterval(components.seconds) + TimeInterval(components.attoseconds) / 1e18
    }

    /// A duration of `interval` seconds (negative counts as zero).
    ///
    /// - Parameter interval: Seconds, as `Date` arithmetic gives them.
    package init(timeInterval interval: TimeInterval) {
        self = .nanoseconds(Int64((max(0, interval) * 1e9).rounded()))
    }
}
