import CoreMetrics
import Foundation
import HTTPTypes
import Logging
public import ODataCore
import Tracing

/// An `HTTPTransport` that reports every request it passes on: a client span (HTTP semantic conventions) whose
/// context the tracer injects into the request's headers (W3C `traceparent` with a W3C tracer), a debug log line
/// with method, URL (no query, no user information), status and duration, and the request counter and timer.
///
/// Both stores put it closest to the wire, below the session layer, so every request that leaves — a CSRF token
/// fetch and a retry included — is reported once. The span's parent is the caller's `ServiceContext.current`.
public struct InstrumentedTransport: HTTPTransport {
    private let base: any HTTPTransport
    private let telemetry: Telemetry
    /// The tracer, `nil` when it is a no-op: then no span is started and nothing is injected.
    private let tracer: (any Tracer)?
    /// The request counters and timers, `nil` when the metrics factory is a no-op.
    private let instruments: Instruments?
    /// Whether the logger can write: when it cannot, no log line's level is even asked.
    private let logs: Bool

    /// Wraps `base`. What is a no-op (the tracer, the metrics factory, the logger) is found out here, once: a
    /// request then pays only for what reports.
    ///
    /// - Parameters:
    ///   - base: The transport that sends.
    ///   - telemetry: Where to report.
    public init(_ base: any HTTPTransport, telemetry: Telemetry) {
        self.base = base
        self.telemetry = telemetry
        tracer = telemetry.tracesSpans ? telemetry.tracer : nil
        instruments = telemetry.recordsMetrics ? Instruments(telemetry: telemetry) : nil
        logs = telemetry.writesLogs
    }

    /// `base` wrapped for `telemetry`, or `base` itself when nothing reports: telemetry ``Telemetry/disabled``, or
    /// a no-op tracer, metrics factory and logger (``Telemetry/reportsAnything``) — the default until the
    /// application bootstraps a backend or passes a logger.
    public static func wrapping(_ base: any HTTPTransport, telemetry: Telemetry) -> any HTTPTransport {
        telemetry.reportsAnything ? InstrumentedTransport(base, telemetry: telemetry) : base
    }

    /// Sends `request` through the wrapped transport inside a client span.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let span = tracer?.startAnySpan(request.method, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        defer { span?.end() }
        var request = request
        if let span, let tracer {
            // The URL is taken apart only for a span that records or a log line that is written.
            if span.isRecording {
                let target = RedactedURL(request.url)
                span.attributes["http.request.method"] = request.method
                span.attributes["url.full"] = target.text
                if let host = target.host { span.attributes["server.address"] = host }
                if let port = target.port { span.attributes["server.port"] = port }
            }
            tracer.inject(span.context, into: &request.headerFields, using: HTTPFieldsInjector())
        }
        let start = ContinuousClock.now
        do {
            let response = try await base.send(request)
            let elapsed = ContinuousClock.now - start
            if let span, span.isRecording {
                span.attributes["http.response.status_code"] = response.status
                if response.status >= 400 {
                    span.attributes["error.type"] = String(response.status)
                    span.setStatus(SpanStatus(code: .error))
                }
            }
            instruments?.record(method: request.method, statusClass: response.status / 100, elapsed: elapsed)
            if logs {
                telemetry.logger.debug("HTTP request", metadata: [
                    "method": .string(request.method), "url": .string(RedactedURL(request.url).text),
                    "status": .stringConvertible(response.status), "duration_ms": .string(Telemetry.milliseconds(elapsed)),
                    "bytes": .stringConvertible(response.body.count),
                ])
            }
            return response
        } catch {
            let elapsed = ContinuousClock.now - start
            if let span {
                span.recordError(error)
                span.attributes["error.type"] = String(describing: type(of: error))
                span.setStatus(SpanStatus(code: .error))
            }
            instruments?.record(method: request.method, statusClass: nil, elapsed: elapsed)
            if logs, error is CancellationError {
                telemetry.logger.debug("HTTP request cancelled", metadata: ["method": .string(request.method), "url": .string(RedactedURL(request.url).text)])
            } else if logs {
                telemetry.logger.warning("HTTP request failed", metadata: [
                    "method": .string(request.method), "url": .string(RedactedURL(request.url).text),
                    "error": .string(String(describing: error)), "duration_ms": .string(Telemetry.milliseconds(elapsed)),
                ])
            }
            throw error
        }
    }
}

/// The request counters and timers, made once per method and status class.
private final class Instruments: Sendable {
    private let telemetry: Telemetry
    private struct Key: Hashable {
        let method: String
        let statusClass: Int?
    }
    private let counters = LockedValue<[Key: Counter]>([:])
    private let timers = LockedValue<[String: CoreMetrics.Timer]>([:])

    init(telemetry: Telemetry) {
        self.telemetry = telemetry
    }

    /// Counts and times one request; `statusClass` is the status divided by 100, nil for a transport failure.
    func record(method: String, statusClass: Int?, elapsed: Duration) {
        let key = Key(method: method, statusClass: statusClass)
        let counter = counters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = telemetry.counter(MetricName.httpRequests, [("method", method), ("status_class", statusClass.map { "\($0)xx" } ?? "error")])
            counters[key] = made
            return made
        }
        counter.increment()
        let timer = timers.withLock { timers in
            if let existing = timers[method] { return existing }
            let made = telemetry.timer(MetricName.httpDuration, [("method", method)])
            timers[method] = made
            return made
        }
        timer.recordNanoseconds(Telemetry.nanoseconds(elapsed))
    }
}

/// Writes what a tracer propagates (W3C `traceparent`, `tracestate`, …) into request headers.
public struct HTTPFieldsInjector: Injector {
    /// Creates the injector.
    public init() {}

    /// Sets the header `key` to `value`, replacing an earlier value.
    public func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        carrier[name] = value
    }
}

/// A URL as it may be reported: scheme, host, port and path; no user information, no query, no fragment.
struct RedactedURL {
    let text: String
    let host: String?
    let port: Int?

    init(_ url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else {
            // Not a URL we can take apart: report only what comes before a query.
            text = String(url.prefix { $0 != "?" && $0 != "#" }).split(separator: "@").last.map(String.init) ?? ""
            self.host = nil
            port = nil
            return
        }
        var redacted = scheme + "://" + host
        if let port = components.port { redacted += ":\(port)" }
        redacted += components.percentEncodedPath
        text = redacted
        self.host = host
        port = components.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
    }
}
