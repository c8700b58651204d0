import Foundation
public import ODataSession

/// What an ``OfflineSynchronizer`` is doing, as a service shows it ("offline since 10:02, next try 10:05").
public enum OfflineSyncState: Sendable, Equatable, CustomStringConvertible {
    /// Nothing to do until the next change, interval or ``OfflineSynchronizer/syncNow()``; `lastSuccess` is when the
    /// last upload and download ended well (`nil`: not yet).
    case idle(lastSuccess: Date?)
    /// Uploading, then downloading.
    case syncing(OfflineSyncPhase)
    /// The back end cannot be reached: the next try is at `until` (or at once on ``OfflineSynchronizer/syncNow()``);
    /// `because` says what the last try got. Nothing queued is lost or archived meanwhile.
    case waiting(until: Date, because: String)
    /// Something only a person can fix stops the sync: credentials refused (`401`), a `403` that is not about the
    /// CSRF token, a TLS handshake the back end or the trust settings refuse, a store that cannot be written. It is
    /// tried again at the next interval, change or ``OfflineSynchronizer/syncNow()``.
    case needsAttention(OfflineODataError)
    /// The synchronizer ended (its task was cancelled, or the service shuts down).
    case stopped

    /// The state for a log line or a status page.
    public var description: String {
        switch self {
        case .idle(let last): return "idle" + (last.map { " (last success \(Self.time($0)))" } ?? "")
        case .syncing(let phase): return "syncing (\(phase))"
        case .waiting(let until, let because): return "waiting until \(Self.time(until)) because \(because)"
        case .needsAttention(let error): return "needs attention: \(error)"
        case .stopped: return "stopped"
        }
    }

    /// The state's name alone, for a metric label.
    public var name: String {
        switch self {
        case .idle: return "idle"
        case .syncing: return "syncing"
        case .waiting: return "waiting"
        case .needsAttention: return "needs_attention"
        case .stopped: return "stopped"
        }
    }

    private static func time(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle().year().month().day().time(includingFractionalSeconds: false))
    }
}

/// Which half of a sync runs.
public enum OfflineSyncPhase: String, Sendable, Equatable {
    /// ``OfflineODataProvider/upload()``.
    case uploading
    /// ``OfflineODataProvider/download(definingQueries:)``.
    case downloading
}

/// When an ``OfflineSynchronizer`` syncs.
public struct OfflineSyncConfiguration: Sendable, Hashable {
    /// The pause between syncs while nothing else asks for one. The default is 5 minutes.
    public var interval: Duration
    /// How long after a local change was queued the sync starts; each further change within it starts it anew,
    /// up to ``maximumDebounce`` after the first. The default is 2 s.
    public var debounce: Duration
    /// The longest a run of changes delays the sync. The default is 30 s.
    public var maximumDebounce: Duration
    /// How long to wait before trying again while the back end cannot be reached: its backoff (`baseDelay`,
    /// doubling, up to `maxDelay`, with jitter), never less than ``minimumWait``. The default waits 5 s doubling up
    /// to 5 minutes.
    public var unreachableBackoff: RetryPolicy
    /// The shortest wait between tries while the back end cannot be reached: at most 60 s ÷ this tries a minute.
    /// The default is 1 s.
    public var minimumWait: Duration
    /// Whether a sync downloads after it uploaded. The default is `true`.
    public var downloads: Bool

    /// Creates a configuration; every parameter has the default documented on its property.
    ///
    /// - Parameters:
    ///   - interval: The pause between syncs.
    ///   - debounce: The pause after a change.
    ///   - maximumDebounce: The longest a run of changes delays the sync.
    ///   - unreachableBackoff: The waits while the back end cannot be reached.
    ///   - minimumWait: The shortest of those waits.
    ///   - downloads: Whether a sync downloads after it uploaded.
    public init(interval: Duration = .seconds(300), debounce: Duration = .seconds(2), maximumDebounce: Duration = .seconds(30),
                unreachableBackoff: RetryPolicy = RetryPolicy(baseDelay: .seconds(5), maxDelay: .seconds(300)),
                minimumWait: Duration = .seconds(1), downloads: Bool = true) {
        self.interval = interval
        self.debounce = debounce
        self.maximumDebounce = maximumDebounce
        self.unreachableBackoff = unreachableBackoff
        self.minimumWait = minimumWait
        self.downloads = downloads
    }
}
