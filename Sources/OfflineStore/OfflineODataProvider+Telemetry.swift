import CoreMetrics
import Foundation
import Logging
import ODataCore
import ODataTyped
import ODataTelemetry
import Tracing

/// What the offline store reports through ``OfflineODataParameters/telemetry``: a span per upload and download
/// (the HTTP requests inside are its children; `$batch` bodies and failed requests are events), their counts and
/// durations, the queue length and the ErrorArchive size, and log lines for each step. Never a body, a key value
/// of a request's URL query, or a credential.
extension OfflineODataProvider {
    /// The kinds of synchronisation that are reported.
    enum SyncOperation: String {
        case upload
        case download
        case initialDownload = "initial download"

        var counter: String { self == .upload ? MetricName.uploads : MetricName.downloads }
        var timer: String { self == .upload ? MetricName.uploadDuration : MetricName.downloadDuration }
    }

    /// Runs `body` inside a span named after `operation`, timing and counting it and logging its start and end.
    func reported<R>(_ operation: SyncOperation, _ body: () async throws -> R) async throws -> R {
        let telemetry = parameters.telemetry
        telemetry.logger.debug("offline \(operation.rawValue) started", metadata: ["store": .string(parameters.storeName)])
        let start = ContinuousClock.now
        do {
            let result = try await telemetry.tracer.withAnySpan("OfflineODataProvider \(operation.rawValue)", ofKind: .internal) { span in
                span.attributes["odata.store"] = parameters.storeName
                return try await body()
            }
            let elapsed = ContinuousClock.now - start
            telemetry.counter(operation.counter, [("result", "ok")]).increment()
            telemetry.timer(operation.timer).recordNanoseconds(Telemetry.nanoseconds(elapsed))
            telemetry.logger.debug("offline \(operation.rawValue) finished", metadata: [
                "store": .string(parameters.storeName), "duration_ms": .string(Telemetry.milliseconds(elapsed)),
            ])
            reportQueue()
            return result
        } catch {
            let elapsed = ContinuousClock.now - start
            // An outage is told apart from a failure: a dashboard shows "offline since", not "broken".
            let outage = (error as? OfflineODataError) == .backEndUnreachable
            telemetry.counter(operation.counter, [("result", outage ? "unreachable" : "failed")]).increment()
            telemetry.timer(operation.timer).recordNanoseconds(Telemetry.nanoseconds(elapsed))
            if error is CancellationError {
                telemetry.logger.debug("offline \(operation.rawValue) cancelled", metadata: ["store": .string(parameters.storeName)])
            } else {
                telemetry.logger.warning("offline \(operation.rawValue) failed", metadata: [
                    "store": .string(parameters.storeName), "error": .string(String(describing: error)),
                ])
            }
            reportQueue()
            throw error
        }
    }

    /// Counts the requests an upload settled and logs each failure (method, request ID, status; no URL, no body).
    func reportUploaded(_ result: OfflineODataUploadResult) {
        let telemetry = parameters.telemetry
        telemetry.counter(MetricName.uploadedRequests, [("result", "ok")]).increment(by: Int64(result.succeeded))
        telemetry.counter(MetricName.uploadedRequests, [("result", "failed")]).increment(by: Int64(result.failed.count))
        for failure in result.failed {
            telemetry.logger.warning("offline request failed", metadata: [
                "request_id": .stringConvertible(failure.requestID), "method": .string(failure.requestMethod),
                "status": .string(failure.httpStatusCode.map(String.init) ?? "none"),
                "code": .string(failure.code ?? ""),
            ])
        }
        telemetry.logger.debug("offline upload settled requests", metadata: [
            "sent": .stringConvertible(result.sent), "succeeded": .stringConvertible(result.succeeded),
            "failed": .stringConvertible(result.failed.count),
        ])
    }

    /// Adds an event to the current span (a `$batch` sent, a request failed).
    func spanEvent(_ name: String, _ attributes: SpanAttributes = [:]) {
        guard let context = ServiceContext.current, let span = parameters.telemetry.tracer.activeSpan(identifiedBy: context) else { return }
        span.addEvent(SpanEvent(name: name, attributes: attributes))
    }

    /// Records the queue length and the ErrorArchive size.
    func reportQueue() {
        guard let store = try? openStore() else { return }
        let telemetry = parameters.telemetry
        if let count = try? store.queueCount() { telemetry.gauge(MetricName.queueLength).record(count) }
        if let count = try? store.errorCount() { telemetry.gauge(MetricName.errorArchiveSize).record(count) }
    }
}
