import Foundation
public import Logging
public import CoreMetrics
public import Tracing

/// Where a store or transport reports what it does: a swift-log `Logger`, a swift-metrics factory and a
/// swift-distributed-tracing tracer — the three observability APIs of server-side Swift.
///
/// The default reports nothing: a no-op logger (a library never prints on its own), and the process-wide
/// metrics factory and tracer (`MetricsSystem.factory`, `InstrumentationSystem.tracer`), which are no-ops until the
/// application bootstraps them. Pass a `Logger` to see the requests, cache decisions and upload and download
/// steps; bootstrap swift-metrics (for example with swift-prometheus) and a tracer (for example swift-otel) to
/// export them.
///
/// Nothing secret reaches any of them: no `Authorization`, cookie or CSRF token value, no encryption key or
/// passphrase, no request or response body. URLs are reported without their query (it may hold data) and
/// without user information.
public struct Telemetry: Sendable {
    /// The logger; its label is the caller's. Requests are logged at `debug`, cache decisions at `trace`,
    /// upload and download steps at `debug`, failures at `warning`.
    public var logger: Logger
    /// The factory metrics are made with.
    public var metricsFactory: any MetricsFactory
    /// The tracer spans are started with.
    public var tracer: any Tracer
    /// Whether the stores report at all; `false` only for ``disabled``. With no-op backends (nothing bootstrapped, no
    /// logger given) they report nothing either, and pay nothing for it: see ``reportsAnything``.
    public let isEnabled: Bool

    /// Creates the reporting set.
    ///
    /// - Parameters:
    ///   - logger: The logger; the default logs nothing.
    ///   - metricsFactory: The metrics factory; the default is `MetricsSystem.factory`.
    ///   - tracer: The tracer; the default is `InstrumentationSystem.tracer`.
    public init(logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil, tracer: (any Tracer)? = nil) {
        self.logger = logger ?? Logger(label: "ODataStores", factory: { _ in SwiftLogNoOpLogHandler() })
        self.metricsFactory = metricsFactory ?? MetricsSystem.factory
        self.tracer = tracer ?? InstrumentationSystem.tracer
        isEnabled = true
    }

    private init(disabled: Void) {
        logger = Logger(label: "ODataStores", factory: { _ in SwiftLogNoOpLogHandler() })
        metricsFactory = NOOPMetricsHandler.instance
        tracer = NoOpTracer()
        isEnabled = false
    }

    /// No reporting at all, whatever the process-wide metrics factory and tracer are: the stores send without the
    /// instrumented transport and make no-op metrics.
    public static var disabled: Telemetry { Telemetry(disabled: ()) }

    /// The default: no logging, the process-wide metrics factory and tracer.
    public static var standard: Telemetry { Telemetry() }
}

/// The names of the metrics the stores report (Prometheus style: `_total` counters, `_seconds` timers). Their
/// dimensions have low cardinality only: a method, a status class, a result — never a URL or a key.
public enum MetricName {
    /// HTTP requests sent; dimensions `method`, `status_class` (`2xx` … `5xx`, `error` for a transport failure).
    public static let httpRequests = "odata_http_requests_total"
    /// HTTP request durations; dimension `method`.
    public static let httpDuration = "odata_http_request_duration_seconds"
    /// Technical cache lookups; dimension `result` (`hit`, `miss`).
    public static let cacheLookups = "odata_cache_lookups_total"
    /// Revalidations answered `304 Not Modified`.
    public static let cacheNotModified = "odata_cache_not_modified_total"
    /// Entries evicted for the byte budget.
    public static let cacheEvictions = "odata_cache_evictions_total"
    /// Entries that failed authentication or decoding and were removed.
    public static let cacheIntegrityFailures = "odata_cache_integrity_failures_total"
    /// Cache writes, refreshes, removals, flushes and syncs that failed in the storage (`CacheStatistics.storageFailures`).
    public static let cacheStorageFailures = "odata_cache_storage_failures_total"
    /// Bytes the cache holds.
    public static let cacheBytes = "odata_cache_bytes"
    /// Reads that shared another identical read's round trip.
    public static let coalescedReads = "odata_coalesced_reads_total"
    /// Offline uploads; dimension `result` (`ok`, `failed`, `unreachable`: stopped by an outage).
    public static let uploads = "odata_offline_uploads_total"
    /// Offline upload durations.
    public static let uploadDuration = "odata_offline_upload_duration_seconds"
    /// Queued requests an upload sent, by outcome; dimension `result` (`ok`, `failed`).
    public static let uploadedRequests = "odata_offline_uploaded_requests_total"
    /// Conflicts an offline upload resolved (a `412`, or a configured status, on an update or delete) without
    /// archiving them; dimension `resolution` (`serverWins`, `clientWins`, `mergeFields`, `send`).
    public static let uploadConflicts = "odata_offline_upload_conflicts_total"
    /// Offline downloads (initial and later); dimension `result` (`ok`, `failed`, `unreachable`).
    public static let downloads = "odata_offline_downloads_total"
    /// Offline download durations.
    public static let downloadDuration = "odata_offline_download_duration_seconds"
    /// Requests waiting in the offline queue.
    public static let queueLength = "odata_offline_queue_length"
    /// Entries in the offline store's ErrorArchive.
    public static let errorArchiveSize = "odata_offline_error_archive_size"
    /// The offline synchronizer's state: 1 for the current one (`state` = idle, syncing, waiting, needs_attention,
    /// stopped), 0 for the others.
    public static let syncState = "odata_offline_sync_state"
}

extension Telemetry {
    /// Whether spans go anywhere: `false` for ``disabled`` and for swift-distributed-tracing's `NoOpTracer` (the
    /// process-wide tracer until one is bootstrapped). A reporter asks once, when it is made, and then starts no span
    /// per request.
    public var tracesSpans: Bool { isEnabled && !(tracer is NoOpTracer) }

    /// Whether metrics go anywhere: `false` for ``disabled`` and for swift-metrics' `NOOPMetricsHandler` (the
    /// process-wide factory until one is bootstrapped). A reporter asks once, when it is made, and then makes and
    /// records no metric per request.
    public var recordsMetrics: Bool { isEnabled && !(metricsFactory is NOOPMetricsHandler) }

    /// Whether the logger can write anything: `false` for ``disabled`` and for swift-log's `SwiftLogNoOpLogHandler`
    /// (the default logger). A logger with another handler counts whatever its level, which may change.
    public var writesLogs: Bool { isEnabled && !(logger.handler is SwiftLogNoOpLogHandler) }

    /// Whether any of the three reports anything; when none does, the stores send without the instrumented
    /// transport, as with ``disabled``.
    public var reportsAnything: Bool { tracesSpans || recordsMetrics || writesLogs }
}

extension Telemetry {
    /// A counter of this telemetry's factory.
    public func counter(_ label: String, _ dimensions: [(String, String)] = []) -> Counter {
        Counter(label: label, dimensions: dimensions, factory: metricsFactory)
    }

    /// A timer of this telemetry's factory.
    public func timer(_ label: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Timer {
        CoreMetrics.Timer(label: label, dimensions: dimensions, factory: metricsFactory)
    }

    /// A gauge of this telemetry's factory.
    public func gauge(_ label: String, _ dimensions: [(String, String)] = []) -> Gauge {
        Gauge(label: label, dimensions: dimensions, factory: metricsFactory)
    }
}

extension Telemetry {
    /// A duration in milliseconds with three decimals, as log lines show it.
    public static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.3f", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }

    /// A duration in whole nanoseconds, as timers record it.
    public static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
