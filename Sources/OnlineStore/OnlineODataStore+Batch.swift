import Foundation
import HTTPTypes
import Logging
public import ODataCore
import ODataSession
import ODataTelemetry
import TechnicalCache

extension OnlineODataStore {
    /// Executes a `$batch` asynchronously (multipart). Its cache response is assembled from the
    /// cached parts; the server's read parts update the cache, each under its own URL.
    /// - Parameters:
    ///   - batch: the batch.
    ///   - listener: receives the callbacks, if given.
    /// - Returns: the execution; its responses carry the multipart batch response.
    @discardableResult
    public func execute(batch: BatchRequest, listener: (any ODataRequestListener)? = nil) -> RequestExecution {
        let request = ODataRequest(method: .post, resourcePath: "$batch", useCache: batch.parts.contains { Self.isCachedRead($0) })
        let execution = RequestExecution(request: request, listener: listener)
        start(execution) { store in await store.run(batch: batch, execution: execution) }
        return execution
    }

    private static func isCachedRead(_ part: BatchRequest.Part) -> Bool {
        if case .request(let request) = part { return request.isCacheable }
        return false
    }

    private func run(batch: BatchRequest, execution: RequestExecution) async {
        execution.report(.started)
        counters.withLock { $0.requests += 1 }
        let plan = plan(for: execution.request.useCache ? .cachedRead : .other)
        if case .failure(let reason) = plan {
            fail(execution, ODataError(.invalidState, reason))
            return
        }
        let urls: [String?]
        let encoded: (body: Data, contentType: String)
        let batchURL: String
        do {
            urls = try batch.parts.map { part throws -> String? in
                if case .request(let request) = part, request.isCacheable { return try root + request.relativeURL() }
                return nil
            }
            encoded = try MultipartBatch.encode(session.dialect(batch))
            batchURL = root + "$batch"
        } catch {
            fail(execution, error)
            return
        }
        if plan.readsCache, let caching {
            var parts: [BatchResponse.Part] = []
            for url in urls {
                if let url, let entry = caching.lookup(url) {
                    parts.append(.response(Self.response(from: entry, revalidated: false), contentID: nil))
                } else {
                    parts.append(.response(Self.notCached, contentID: nil))
                }
            }
            let assembled = MultipartBatch.encode(BatchResponse(parts: parts))
            let response = ODataResponse(statusCode: 200, headerFields: [.contentType: assembled.contentType], payload: assembled.body, isFromCache: true)
            execution.report(.cacheResponse(response))
            if plan == .passiveRead {
                execution.report(.finished(response))
                return
            }
        }
        var headers = options.defaultHeaderFields
        headers[.contentType] = encoded.contentType
        let sentAt = Date()
        let reply: TransportResponse
        do {
            reply = try await network.send(TransportRequest(method: "POST", url: batchURL, headerFields: headers, body: encoded.body))
        } catch {
            fail(execution, isOpen ? error : ODataError(.invalidState, "the store was closed while the request ran"))
            return
        }
        let response = ODataResponse(statusCode: reply.status, headerFields: reply.headerFields, payload: reply.body)
        guard response.isSuccess else {
            fail(execution, response.serviceError ?? ODataServiceError(code: "", message: "HTTP \(reply.status)", statusCode: reply.status), response)
            return
        }
        // An answer that does not split into its parts is not cached (logged: the producer's batch is malformed);
        // the caller still gets it whole.
        if plan.readsCache, let caching, let contentType = reply.headerFields[.contentType] {
            do {
                let decoded = try MultipartBatch.decodeResponse(reply.body, contentType: contentType)
                if decoded.parts.count == urls.count {
                    for (part, url) in zip(decoded.parts, urls) {
                        guard let url, case .response(let partResponse, _) = part else { continue }
                        await caching.update(status: partResponse.statusCode, headerFields: partResponse.headerFields, body: partResponse.payload,
                                             for: TransportRequest(url: url), stored: nil, sentAt: sentAt)
                    }
                }
            } catch {
                options.telemetry.logger.warning("batch answer does not split into its parts; its reads are not cached",
                                                 metadata: ["error": .string(String(describing: error))])
            }
        }
        execution.report(.serverResponse(response))
        execution.report(.finished(response))
    }
}
