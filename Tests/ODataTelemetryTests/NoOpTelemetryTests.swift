import CoreMetrics
import Foundation
import HTTPTypes
import Logging
import MetricsTestKit
import ODataCore
import ODataTelemetry
import Testing
import Tracing

/// Telemetry that reports nothing costs nothing (issue 31): with a no-op tracer, metrics factory and logger — the
/// default until the application bootstraps a backend — the stores send without the instrumented transport, as with
/// `Telemetry.disabled`; any backend that reports keeps it.
@Suite struct NoOpTelemetryTests {
    /// A transport that answers 200 at once.
    struct Wire: HTTPTransport {
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            TransportResponse(status: 200, headerFields: [:], body: Data(), metrics: TransferMetrics(
                headerBytes: 0, bodyBytes: 0, totalTime: .zero, connectionReused: true, newConnections: 0, httpVersion: .http1_1))
        }
    }

    static let noOpLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test func noOpBackendsAddNoLayer() {
        let noOp = Telemetry(logger: Self.noOpLogger, metricsFactory: NOOPMetricsHandler.instance, tracer: NoOpTracer())
        #expect(!noOp.tracesSpans && !noOp.recordsMetrics && !noOp.writesLogs && !noOp.reportsAnything)
        #expect(!(InstrumentedTransport.wrapping(Wire(), telemetry: noOp) is InstrumentedTransport))
        #expect(!Telemetry.disabled.reportsAnything)
        #expect(!(InstrumentedTransport.wrapping(Wire(), telemetry: .disabled) is InstrumentedTransport))
    }

    @Test func anyBackendThatReportsKeepsTheLayer() {
        let metrics = Telemetry(metricsFactory: TestMetrics(), tracer: NoOpTracer())
        #expect(metrics.recordsMetrics && !metrics.tracesSpans && !metrics.writesLogs)
        #expect(InstrumentedTransport.wrapping(Wire(), telemetry: metrics) is InstrumentedTransport)

        let tracing = Telemetry(metricsFactory: NOOPMetricsHandler.instance, tracer: W3CTracer())
        #expect(tracing.tracesSpans && !tracing.recordsMetrics)
        #expect(InstrumentedTransport.wrapping(Wire(), telemetry: tracing) is InstrumentedTransport)

        // A logger with a real handler counts whatever its level: the level may change while the store runs.
        var quiet = Logger(label: "test", factory: { StreamLogHandler.standardError(label: $0) })
        quiet.logLevel = .critical
        let logging = Telemetry(logger: quiet, metricsFactory: NOOPMetricsHandler.instance, tracer: NoOpTracer())
        #expect(logging.writesLogs && logging.reportsAnything)
        #expect(InstrumentedTransport.wrapping(Wire(), telemetry: logging) is InstrumentedTransport)
    }

    /// Metrics without a tracer: the request is counted and timed, no span is started.
    @Test func metricsAloneCountTheRequest() async throws {
        let metrics = TestMetrics()
        let transport = InstrumentedTransport.wrapping(Wire(), telemetry: Telemetry(metricsFactory: metrics, tracer: NoOpTracer()))
        _ = try await transport.send(TransportRequest(url: "http://odata.invalid/svc/Products"))
        #expect(metrics.counterTotal(label: MetricName.httpRequests, dimensions: [("method", "GET"), ("status_class", "2xx")]) == 1)
        #expect(try metrics.expectTimer(MetricName.httpDuration, [("method", "GET")]).values.count == 1)
    }
}
