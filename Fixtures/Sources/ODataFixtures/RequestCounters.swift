import Synchronization
import ODataCore

/// Counts what the producer received and executed, per method and path, so a test can
/// assert "executed exactly once".
///
/// Paths are relative to the service root and percent-decoded, without the query:
/// `Customers('ALFKI')`, `Orders`, `$batch`. Requests inside a `$batch` are counted under
/// their own method and path (and the batch under `POST $batch`).
public final class RequestCounters: Sendable {
    /// The counts of one method and path.
    public struct Entry: Sendable, Hashable {
        /// The HTTP method, upper case.
        public var method: String
        /// The path relative to the service root, percent-decoded.
        public var path: String
        /// Requests that arrived over HTTP (batch members are not HTTP requests and count 0 here).
        public var received: Int
        /// Requests the producer executed (changed or read data), batch members included.
        public var executed: Int
        /// Repeatable requests answered with a stored response instead of being executed.
        public var replayed: Int
        /// Requests a fault answered or dropped instead of the producer.
        public var faulted: Int
    }

    private struct Key: Hashable {
        let method: String
        let path: String
    }

    private let entries = LockedValue<[Key: Entry]>([:])
    private let traceparentLog = LockedValue<[String]>([])

    init() {}

    private func bump(_ method: String, _ path: String, _ update: (inout Entry) -> Void) {
        let key = Key(method: method.uppercased(), path: path)
        entries.withLock { entries in
            var entry = entries[key]
                ?? Entry(method: key.method, path: path, received: 0, executed: 0, replayed: 0, faulted: 0)
            update(&entry)
            entries[key] = entry
        }
    }

    func recordReceived(method: String, path: String) { bump(method, path) { $0.received += 1 } }
    /// Keeps a `traceparent` header the producer received (the last 1,000).
    func recordTraceparent(_ value: String) {
        traceparentLog.withLock { log in
            log.append(value)
            if log.count > 1_000 { log.removeFirst(log.count - 1_000) }
        }
    }

    /// The W3C `traceparent` headers received, oldest first (the last 1,000).
    public var traceparents: [String] { traceparentLog.withLock { $0 } }
    func recordExecuted(method: String, path: String) { bump(method, path) { $0.executed += 1 } }
    func recordReplayed(method: String, path: String) { bump(method, path) { $0.replayed += 1 } }
    func recordFaulted(method: String, path: String) { bump(method, path) { $0.faulted += 1 } }

    /// How many times the producer executed a method on a path.
    /// - Parameters:
    ///   - method: the HTTP method (any case).
    ///   - path: the path relative to the service root, percent-decoded, without query.
    /// - Returns: the count (0 when never seen).
    public func executions(method: String, path: String) -> Int {
        entry(method: method, path: path)?.executed ?? 0
    }

    /// How many HTTP requests arrived for a method and path, whatever happened to them.
    /// - Parameters:
    ///   - method: the HTTP method (any case).
    ///   - path: the path relative to the service root, percent-decoded, without query.
    /// - Returns: the count (0 when never seen).
    public func requests(method: String, path: String) -> Int {
        entry(method: method, path: path)?.received ?? 0
    }

    /// The counts of one method and path.
    /// - Parameters:
    ///   - method: the HTTP method (any case).
    ///   - path: the path relative to the service root, percent-decoded, without query.
    /// - Returns: the entry, or `nil` when never seen.
    public func entry(method: String, path: String) -> Entry? {
        entries.withLock { $0[Key(method: method.uppercased(), path: path)] }
    }

    /// Every entry, sorted by path then method.
    public var all: [Entry] {
        entries.withLock { Array($0.values) }.sorted { ($0.path, $0.method) < ($1.path, $1.method) }
    }

    /// The number of executions of every method and path together.
    public var totalExecutions: Int { entries.withLock { $0.values.reduce(0) { $0 + $1.executed } } }

    /// The number of HTTP requests that arrived, of every method and path together.
    public var totalRequests: Int { entries.withLock { $0.values.reduce(0) { $0 + $1.received } } }

    /// Forgets all counts.
    public func reset() { entries.withLock { $0.removeAll() } }
}
