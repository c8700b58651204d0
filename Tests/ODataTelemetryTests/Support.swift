import CurlHTTP
import Foundation
import HTTPTypes
import InMemoryTracing
import Logging
import ODataCore
import Tracing

/// An in-memory tracer that propagates W3C trace context (`traceparent: 00-<trace>-<span>-01`), as swift-otel does.
struct W3CTracer: Tracer {
    typealias Span = InMemorySpan
    let memory: InMemoryTracer

    init() {
        memory = InMemoryTracer(idGenerator: .init(nextTraceID: { Self.hex(16) }, nextSpanID: { Self.hex(8) }))
    }

    private static func hex(_ bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        memory.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func forceFlush() { memory.forceFlush() }

    func activeSpan(identifiedBy context: ServiceContext) -> InMemorySpan? { memory.activeSpan(identifiedBy: context) }

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}
}

/// Keeps every log line, message and metadata, at every level.
struct CapturingLogHandler: LogHandler {
    let lines: LockedValue<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = self.metadata.merging(event.metadata ?? [:]) { _, new in new }
        let text = "\(event.level) \(event.message) " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        lines.withLock { $0.append(text) }
    }
}

/// A temporary directory, removed when the object goes.
final class TemporaryFolder: Sendable {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "telemetry-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    var url: URL { URL(fileURLWithPath: path) }
}
