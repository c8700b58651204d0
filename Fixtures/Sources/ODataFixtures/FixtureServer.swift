import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ODataCore
import ServiceLifecycle
import Synchronization

/// An OData V4 producer on 127.0.0.1 for tests, the demo and benchmarks, with faults on demand.
///
/// ```swift
/// let server = try await FixtureServer.start()
/// // server.serviceRoot == "http://127.0.0.1:PORT/"
/// try server.faults.add(FaultRule(.fail(status: 503, code: "Busy", message: "try later"), method: "GET", path: "Customers", times: 1))
/// ...
/// #expect(server.counters.executions(method: "POST", path: "Orders") == 1)
/// await server.stop()
/// ```
///
/// Each server has its own data, faults and counters; several can run in one process.
public final class FixtureServer: Sendable {
    /// The server root URL, `http://127.0.0.1:PORT/`.
    public let baseURL: URL
    /// The TCP port the server listens on.
    public let port: Int
    /// The faults of this server; add and remove them at any time.
    public let faults: FaultInjector
    let service: FixtureService
    private let running: LockedValue<(group: ServiceGroup, task: Task<Void, any Error>)?>

    private init(port: Int, service: FixtureService, group: ServiceGroup, task: Task<Void, any Error>) {
        self.port = port
        self.baseURL = URL(string: "http://127.0.0.1:\(port)/")!
        self.service = service
        self.faults = service.faults
        self.running = LockedValue((group, task))
    }

    /// Loads the data and starts a server.
    /// - Parameter configuration: port, service root, paging and data; the default serves the
    ///   bundled Northwind data on a free port.
    /// - Returns: the running server.
    /// - Throws: ``FixtureError`` `.invalidArgument` for a bad configuration, `.invalidData` for data
    ///   that cannot be loaded, `.serverFailure` when the port cannot be bound.
    public static func start(_ configuration: FixtureConfiguration = FixtureConfiguration()) async throws(FixtureError)
        -> FixtureServer
    {
        let configuration = try configuration.validated()
        // Loaded data counts as changed an hour ago, so any later change has a later Last-Modified.
        let loadedAt = Int64(Date().timeIntervalSince1970) - 3600
        let data = try DataLoader.load(configuration.dataDirectory, loadedAt: loadedAt)
        let service = FixtureService(configuration: configuration, data: data)
        let responder = FixtureResponder(service: service, faults: service.faults, controlEndpoint: configuration.controlEndpoint)

        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "odata-fixture-server")
        logger.logLevel = .warning
        let application = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: configuration.port)),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger
        )
        let failure = LockedValue<String?>(nil)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [application], logger: logger))
        let task = Task {
            do {
                try await group.run()
            } catch {
                failure.withLock { $0 = "\(error)" }
                portContinuation.finish()
                throw error
            }
            portContinuation.finish()
        }
        var boundPort: Int?
        for await port in ports {
            boundPort = port
            break
        }
        guard let boundPort, boundPort > 0 else {
            task.cancel()
            _ = await task.result
            let reason = failure.withLock { $0 } ?? "the server stopped before it listened"
            throw FixtureError(.serverFailure, "cannot listen on 127.0.0.1:\(configuration.port): \(reason)")
        }
        let root = "http://127.0.0.1:\(boundPort)" + configuration.serviceRootPath
        service.serviceRoot = root
        return FixtureServer(port: boundPort, service: service, group: group, task: task)
    }

    /// The OData service root, `http://127.0.0.1:PORT/` plus the configured service root path.
    public var serviceRoot: String { service.serviceRoot }

    /// The counts of received, executed, replayed and faulted requests per method and path.
    public var counters: RequestCounters { service.counters }

    /// The model served at `$metadata`.
    public var model: ServiceModel { service.model }

    /// How V2 collection pages write `__next` from now on (with ``FixtureConfiguration/ProtocolVersion/v2``).
    public var v2NextLink: FixtureConfiguration.V2NextLink {
        get { service.v2NextLink.withLock { $0 } }
        set { service.v2NextLink.withLock { $0 = newValue } }
    }

    /// Forgets all request counts.
    public func resetCounters() { service.counters.reset() }

    /// Changes data on the producer side, as another client of the back end would; the changes
    /// get new ETags and appear in delta responses. When the closure throws, nothing changes.
    /// - Parameter body: the change, given the data as `inout`.
    /// - Returns: what the closure returns.
    /// - Throws: what the closure throws (``FixtureError`` from ``FixtureData``'s methods).
    @discardableResult
    public func mutate<Result: Sendable>(_ body: (inout FixtureData) throws -> Result) throws -> Result {
        try service.withData(body)
    }

    /// Reads the data on the producer side.
    /// - Parameter body: the read, given the data.
    /// - Returns: what the closure returns.
    /// - Throws: what the closure throws.
    public func read<Result: Sendable>(_ body: (FixtureData) throws -> Result) throws -> Result {
        try service.withData { data in try body(data) }
    }

    /// Puts the data back to what it was at start; ETags and delta tokens issued before stay invalid.
    public func resetData() { service.resetData() }

    /// Expires every delta token issued so far: their delta requests get 410 Gone.
    public func expireDeltaTokens() { service.expireDeltaTokens() }

    /// Forgets the stored responses of repeatable requests, as a back end whose retention ended.
    public func forgetRepeatableRequests() { service.forgetRepeatableRequests() }

    /// Stops listening and closes every connection: a graceful shutdown that lets responses in
    /// flight finish, cut short after two seconds. Stopping twice is harmless.
    public func stop() async {
        guard let (group, task) = running.withLock({ running in
            defer { running = nil }
            return running
        }) else { return }
        await group.triggerGracefulShutdown()
        let deadline = Task {
            try await Task.sleep(for: .seconds(2))
            task.cancel()
        }
        _ = await task.result
        deadline.cancel()
    }
}

/// The request context: Hummingbird's, plus the connection's channel so a fault can close it.
struct FixtureRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }

    /// Bodies up to 256 MiB are accepted (a media resource of 100 MiB is uploaded in the benchmarks).
    var maxUploadSize: Int { 256 * 1024 * 1024 }
}

/// Thrown when a fault closed the connection; nothing more is written.
struct ConnectionDropped: Error {}

/// Turns Hummingbird requests into producer requests, and applies faults on the way.
struct FixtureResponder: HTTPResponder {
    typealias Context = FixtureRequestContext

    let service: FixtureService
    let faults: FaultInjector
    let controlEndpoint: Bool

    func respond(to request: Request, context: FixtureRequestContext) async throws -> Response {
        var request = request
        let bytes: [UInt8]
        do {
            bytes = [UInt8](buffer: try await request.collectBody(upTo: context.maxUploadSize))
        } catch {
            return Self.response(.error(ServiceFailure(413, "PayloadTooLarge", "the request body is larger than \(context.maxUploadSize) bytes")))
        }
        let rawPath = request.uri.path
        let query = request.uri.query ?? ""
        let method = request.method.rawValue.uppercased()

        if controlEndpoint, rawPath.hasPrefix("/$fixture/") || rawPath.hasPrefix("/%24fixture/") {
            let control = ControlEndpoint(service: service, faults: faults)
            let prefix = rawPath.hasPrefix("/$fixture/") ? "/$fixture/" : "/%24fixture/"
            let path = String(rawPath.dropFirst(prefix.count))
            return Self.response(control.handle(method: method, path: path, body: bytes))
        }
        let rootPath = service.configuration.serviceRootPath
        guard rawPath.hasPrefix(rootPath) || rawPath + "/" == rootPath else {
            return Self.response(.error(.notFound("'\(rawPath)' is outside the service root \(rootPath)")))
        }
        let relative = String(rawPath.dropFirst(min(rootPath.count, rawPath.count)))
        let incoming = IncomingRequest(method: method, path: relative, query: query, headers: request.headers, body: bytes)
        let countedPath = incoming.decodedPath
        service.counters.recordReceived(method: method, path: countedPath)
        if let traceparent = request.headers[HTTPField.Name("traceparent")!] { service.counters.recordTraceparent(traceparent) }

        let decision = faults.decide(method: method, path: countedPath)
        if decision.latency > .zero { try await Task.sleep(for: decision.latency) }
        switch decision.action {
        case nil:
            return Self.response(service.handle(incoming))
        case .latency:
            return Self.response(service.handle(incoming))
        case .fail(let status, let code, let message):
            service.counters.recordFaulted(method: method, path: countedPath)
            return Self.response(.error(ServiceFailure(status, code, message)))
        case .dropConnection:
            service.counters.recordFaulted(method: method, path: countedPath)
            try? await context.channel.close()
            throw ConnectionDropped()
        case .executeThenDropConnection:
            _ = service.handle(incoming)
            service.counters.recordFaulted(method: method, path: countedPath)
            try? await context.channel.close()
            throw ConnectionDropped()
        case .executeThenFail(let status):
            _ = service.handle(incoming)
            service.counters.recordFaulted(method: method, path: countedPath)
            return Self.response(.error(ServiceFailure(status, "FailedAfterExecution", "the request was executed, then the back end failed")))
        case .truncateBody(let keep):
            let outgoing = service.handle(incoming)
            service.counters.recordFaulted(method: method, path: countedPath)
            let channel = context.channel
            let partial = ByteBuffer(bytes: outgoing.body.prefix(keep))
            return Response(
                status: HTTPResponse.Status(code: outgoing.status), headers: outgoing.headers,
                body: ResponseBody(contentLength: outgoing.body.count) { writer in
                    if partial.readableBytes > 0 { try await writer.write(partial) }
                    // Give the bytes time to leave, then cut the connection mid-body.
                    try await Task.sleep(for: .milliseconds(20))
                    try? await channel.close()
                    throw ConnectionDropped()
                })
        case .slowBody(let chunkSize, let interval):
            let outgoing = service.handle(incoming)
            service.counters.recordFaulted(method: method, path: countedPath)
            let bytes = outgoing.body
            return Response(
                status: HTTPResponse.Status(code: outgoing.status), headers: outgoing.headers,
                body: ResponseBody(contentLength: bytes.count) { writer in
                    var offset = 0
                    while offset < bytes.count {
                        if offset > 0 { try await Task.sleep(for: interval) }
                        let end = min(offset + chunkSize, bytes.count)
                        try await writer.write(ByteBuffer(bytes: bytes[offset..<end]))
                        offset = end
                    }
                    try await writer.finish(nil)
                })
        }
    }

    static func response(_ outgoing: OutgoingResponse) -> Response {
        let status = HTTPResponse.Status(code: outgoing.status)
        if outgoing.body.isEmpty {
            return Response(status: status, headers: outgoing.headers, body: ResponseBody())
        }
        return Response(status: status, headers: outgoing.headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: outgoing.body)))
    }
}
