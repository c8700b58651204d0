// ODataGateway: a small Hummingbird service in front of an OData back end.
//
// GET /products/{id}  reads Products(id) through an OnlineODataStore in active mode (the technical cache
//                     answers first, the back end revalidates); when the back end is down (a transport
//                     error or a 5xx) it answers from the cache alone (a passive, cache-only read).
// GET /metrics        Prometheus text format: the store's odata_* metrics (and everything else
//                     reported through swift-metrics).
//
// The HTTP server and the store run in one ServiceGroup; SIGTERM or SIGINT shuts them down gracefully:
// first the server (no new requests, running ones finish), then the store (OnlineStoreService).
//
// Configuration (environment): ODATA_SERVICE_ROOT, GATEWAY_PORT, GATEWAY_CACHE_DIR, LOG_LEVEL;
// see README.md.

import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import ODataCore
import ODataTelemetry
import OnlineStore
import Prometheus
import ServiceLifecycle

// MARK: Configuration

let environment = ProcessInfo.processInfo.environment
let serviceRoot = environment["ODATA_SERVICE_ROOT"] ?? "http://127.0.0.1:8080/"
let port = Int(environment["GATEWAY_PORT"] ?? "") ?? 8090
let cacheDirectory = URL(fileURLWithPath: environment["GATEWAY_CACHE_DIR"]
    ?? FileManager.default.temporaryDirectory.appendingPathComponent("odata-gateway").path, isDirectory: true)

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardOutput(label: label)
    handler.logLevel = Logger.Level(rawValue: environment["LOG_LEVEL"] ?? "") ?? .info
    return handler
}
let logger = Logger(label: "odata-gateway")

// Metrics: one Prometheus registry behind swift-metrics; the store's telemetry reports into it.
let registry = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

// MARK: The store

var options = OnlineStoreOptions()
options.storeDirectory = cacheDirectory
options.storeName = "gateway"
// The example keeps its cache unencrypted; a real service sets cacheEncryptionKey or cacheKeyStore.
options.disableCacheEncryption = true
options.telemetry = Telemetry(logger: Logger(label: "odata-store"))
try FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
let store = try OnlineODataStore(serviceRoot: serviceRoot, options: options)

/// Where an answer came from, in the `X-Gateway-Source` header.
enum Source: String {
    /// The back end answered (possibly `304`, confirming the cached copy).
    case backEnd = "back-end"
    /// The back end was down; the technical cache answered.
    case cacheFallback = "cache-fallback"
}

/// Whether a failure means the back end is down (a transport error or a 5xx), rather than an answer
/// to pass on (a 404, for example).
func backEndIsDown(_ error: any Error) -> Bool {
    if let error = error as? ODataServiceError, let status = error.statusCode { return status >= 500 }
    return !(error is CancellationError)
}

/// A passive read: the technical cache alone (`Cache-Control: only-if-cached`, RFC 9111 §5.2.1.7),
/// without switching the shared store to passive mode. `nil` when nothing is cached.
func cachedProduct(_ path: String) async -> ODataResponse? {
    let request = ODataRequest(resourcePath: path, headerFields: [.cacheControl: "only-if-cached"])
    guard let response = try? await store.response(for: request), response.isSuccess else { return nil }
    return response
}

func reply(_ response: ODataResponse, source: Source) -> Response {
    var headers = HTTPFields()
    headers[.contentType] = response.headerFields[.contentType] ?? "application/json"
    headers[HTTPField.Name("X-Gateway-Source")!] = source.rawValue
    if response.isRevalidated { headers[HTTPField.Name("X-Gateway-Cache")!] = "revalidated" }
    if let etag = response.etag { headers[.eTag] = etag }
    return Response(status: .init(code: response.statusCode), headers: headers,
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: response.payload)))
}

// MARK: Routes

let router = Router()
router.add(middleware: LogRequestsMiddleware(.info))

router.get("products/:id") { _, context -> Response in
    let id = try context.parameters.require("id", as: Int.self)
    let path = "Products(\(id))"
    do {
        guard let response = try await store.response(for: ODataRequest(resourcePath: path)) else {
            throw HTTPError(.badGateway, message: "the back end gave no answer")
        }
        return reply(response, source: .backEnd)
    } catch let error as ODataServiceError where !backEndIsDown(error) {
        // The back end answered, with a client error (a 404 for an unknown product): pass it on.
        let status = HTTPResponse.Status(code: error.statusCode ?? 502)
        throw HTTPError(status, message: error.message)
    } catch let error as HTTPError {
        throw error
    } catch {
        guard backEndIsDown(error) else { throw error }
        logger.warning("back end down, answering from the cache", metadata: ["path": "\(path)", "error": "\(error)"])
        if let cached = await cachedProduct(path) { return reply(cached, source: .cacheFallback) }
        throw HTTPError(.serviceUnavailable, message: "the back end is down and \(path) is not cached")
    }
}

router.get("metrics") { _, _ -> Response in
    var buffer: [UInt8] = []
    buffer.reserveCapacity(4096)
    registry.emit(into: &buffer)
    return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: buffer)))
}

// MARK: Services

let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "odata-gateway"),
    logger: logger
)
// The group shuts down from the last service to the first: the HTTP server first, then the store.
let group = ServiceGroup(
    configuration: .init(
        services: [.init(service: OnlineStoreService(store: store, drainDeadline: .seconds(10), logger: logger)), .init(service: app)],
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger
    )
)
logger.info("odata-gateway: http://127.0.0.1:\(port)/products/{id} and /metrics, back end \(serviceRoot)")
try await group.run()
