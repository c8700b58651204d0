import CoreMetrics
import Foundation
import HTTPTypes
import Logging
import ODataCore
import ODataSession
import ODataTelemetry
import Tracing

/// The reads and reports of a conflict at upload (``OfflineODataConflictPolicy``); the decisions are the
/// ``UploadMachine``'s.
extension OfflineODataProvider {
    /// The machine's rule for the parameters' policy.
    var conflictRule: UploadMachine.ConflictRule {
        switch parameters.conflictPolicy {
        case .archive: .fixed(.archive)
        case .serverWins: .fixed(.serverWins)
        case .clientWins: .fixed(.clientWins)
        case .mergeFields: .fixed(.mergeFields)
        case .custom: .custom
        }
    }

    /// The versions of the entity of `entry`: as last downloaded and as the store holds it now, and the back end's
    /// (`GET` of the entity, re-sent by the retry policy like every read; `404`/`410`: it has it no more).
    func readConflict(_ entry: QueuedRequest, store: EntityStore, noAnswer: inout (any Error & Sendable)?) async throws -> ConflictRead {
        let (set, key) = UploadSteps.split(entry.entity)
        let record = try store.record(set: set, key: key)
        let base = record.flatMap { $0.original ?? ($0.state == .downloaded ? $0.entity : nil) }.map(ConflictMerge.properties)
        let path = String(entry.url.prefix { $0 != "?" })
        let request = TransportRequest(method: "GET", url: serviceRoot + path, headerFields: backEndHeaders())
        let response: TransportResponse
        do {
            response = try await RetryingTransport(base: try transport(), policy: parameters.retryPolicy, clock: parameters.clock).send(request)
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            switch Self.classify(error, noAnswer: &noAnswer) {
            case .transport(_, let description): return .unanswered(description)
            case let other: return .failed("GET \(path): \(other)")
            }
        }
        if response.status == 404 || response.status == 410 {
            return .versions(base: base, localEntity: record?.entity, remote: nil, remoteETag: nil)
        }
        guard response.status == 200 else {
            let error = ODataServiceError.parse(response.body, statusCode: response.status)
            return .failed("GET \(path) answered \(response.status): \(error.message)")
        }
        do {
            let object = try ODataPayload.decodeEntity(response.body).jsonV4
            var ingest = Ingest(model: model)
            let reference = try ingest.add(object, set: set, query: "")
            let remote = ingest.records[reference]?.entity ?? JSONObject()
            let etag = response.headerFields[.eTag] ?? remote["@odata.etag"]?.stringValue
            return .versions(base: base, localEntity: record?.entity, remote: ConflictMerge.properties(remote), remoteETag: etag)
        } catch {
            return .failed("GET \(path) answered what is no entity of \(set): \(error)")
        }
    }

    /// Asks the custom resolver (``OfflineODataConflictPolicy/custom(_:)``); any other policy has none to ask.
    func askResolver(_ conflict: OfflineODataConflict) async -> OfflineODataConflictResolution {
        guard case .custom(let resolver) = parameters.conflictPolicy else { return .archive }
        return await resolver(conflict)
    }

    /// Tells the delegate, the span, the log (method, request ID, status, resolution: no value, no URL) and the
    /// conflicts counter of a resolved conflict.
    func reportResolved(_ resolved: OfflineODataResolvedConflict) {
        let name = Self.resolutionName(resolved.resolution)
        let conflict = resolved.conflict
        spanEvent("conflict resolved", ["odata.request_id": .int64(conflict.requestID), "http.request.method": .string(conflict.method),
                                        "odata.conflict.resolution": .string(name)])
        parameters.telemetry.counter(MetricName.uploadConflicts, [("resolution", name)]).increment()
        parameters.telemetry.logger.info("offline conflict resolved", metadata: [
            "request_id": .stringConvertible(conflict.requestID), "method": .string(conflict.method),
            "status": .stringConvertible(conflict.statusCode), "resolution": .string(name),
            "dropped": .stringConvertible(resolved.droppedRequestIDs.count),
        ])
        reportConflict(resolved)
    }

    static func resolutionName(_ resolution: OfflineODataConflictResolution) -> String {
        switch resolution {
        case .archive: "archive"
        case .serverWins: "serverWins"
        case .clientWins: "clientWins"
        case .mergeFields: "mergeFields"
        case .send: "send"
        }
    }
}
