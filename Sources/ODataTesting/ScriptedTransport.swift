import Foundation
import HTTPTypes
public import ODataCore

/// An `HTTPTransport` for tests that answers from a script and records every request it is sent.
///
/// Routes match a request by method, path and (optionally) query options; the first route that matches and still
/// has a reply answers. A route's path is relative to ``serviceRoot`` unless it starts with `/`; a path ending in
/// `*` matches every path that starts with what precedes it, and `"*"` alone matches every path; the method `"*"`
/// matches every method; a query option's value `"*"` matches any value. Paths and query options are compared
/// percent-decoded.
///
/// A request no route answers fails with ``ScriptedTransportError`` naming its method and URL — or, when the
/// transport was made with `forwardingTo:`, goes to that transport (a real back end with a few scripted answers
/// on top).
///
/// ```swift
/// let transport = ScriptedTransport()
/// transport.on("GET", "Products", reply: .collection([["ID": 1, "Name": "Bread"]]))
/// transport.on("POST", "Products", replies: [.connectionRefused, .json(#"{"ID":2}"#, status: 201)])
/// try await transport.withOnlineStore { store in
///     _ = try await store.response(for: .get("Products"))
/// }
/// #expect(transport.requests.map(\.method) == ["GET"])
/// ```
///
/// It is safe to use from many tasks at once: routes, replies and the record are kept under one lock.
public final class ScriptedTransport: HTTPTransport {
    /// The service root relative route paths are resolved against, and that ``withOnlineStore(options:_:)`` and
    /// ``withOfflineStore(parameters:definingQueries:open:_:)`` open their store on.
    public let serviceRoot: String
    private let rootPath: String
    private let forwardTarget: (any HTTPTransport)?
    private let state = LockedValue(State())

    private struct State {
        var routes: [Route] = []
        var requests: [TransportRequest] = []
        var unmatched: [TransportRequest] = []
    }

    private struct Route {
        let method: String
        let path: String
        let query: [String: String]
        var replies: [ScriptedReply]
        let repeats: Bool

        var description: String {
            method + " " + path + (query.isEmpty ? "" : "?" + query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&"))
        }
    }

    /// Creates a transport with no routes.
    ///
    /// - Parameters:
    ///   - serviceRoot: The absolute service root URL; the default is `http://odata.test/service/`, a name that
    ///     resolves nowhere (nothing is sent on the network unless `forwardingTo` is given).
    ///   - forwardingTo: Where requests no route answers go, and where ``ScriptedReply/forward`` sends them;
    ///     `nil` (the default) makes such requests fail with ``ScriptedTransportError``.
    public init(serviceRoot: String = "http://odata.test/service/", forwardingTo: (any HTTPTransport)? = nil) {
        self.serviceRoot = serviceRoot
        rootPath = Self.path(of: serviceRoot.hasSuffix("/") ? serviceRoot : serviceRoot + "/")
        forwardTarget = forwardingTo
    }

    // MARK: - Script

    /// Answers every matching request with `reply`.
    ///
    /// - Parameters:
    ///   - method: The request method, such as `"GET"` or `"MERGE"`; `"*"` matches every method.
    ///   - path: The path relative to ``serviceRoot`` (`""` is the root itself), or an absolute path starting with
    ///     `/`; a trailing `*` matches every path with that prefix.
    ///   - query: Query options the request must carry with these (decoded) values, `"*"` for any value; others
    ///     may be present. The default is none.
    ///   - reply: The reply to every matching request.
    /// - Returns: The transport, to chain further routes.
    @discardableResult
    public func on(_ method: String, _ path: String, query: [String: String] = [:], reply: ScriptedReply) -> ScriptedTransport {
        add(Route(method: method, path: resolve(path), query: query, replies: [reply], repeats: true))
    }

    /// Answers the next matching requests with `replies`, one each in order; once they are used up the route no
    /// longer matches (a later route, or the unmatched rule, takes the next request).
    ///
    /// - Parameters:
    ///   - method: The request method; `"*"` matches every method.
    ///   - path: The path, as ``on(_:_:query:reply:)`` reads it.
    ///   - query: Query options the request must carry; the default is none.
    ///   - replies: The replies, one per request.
    /// - Returns: The transport, to chain further routes.
    @discardableResult
    public func on(_ method: String, _ path: String, query: [String: String] = [:], replies: [ScriptedReply]) -> ScriptedTransport {
        add(Route(method: method, path: resolve(path), query: query, replies: replies, repeats: false))
    }

    /// Answers every matching request with what `handler` returns for it.
    ///
    /// - Parameters:
    ///   - method: The request method; `"*"` matches every method.
    ///   - path: The path, as ``on(_:_:query:reply:)`` reads it.
    ///   - query: Query options the request must carry; the default is none.
    ///   - handler: Decides the reply per request; what it throws, `send` throws.
    /// - Returns: The transport, to chain further routes.
    @discardableResult
    public func on(_ method: String, _ path: String, query: [String: String] = [:],
                   handler: @escaping @Sendable (TransportRequest) async throws -> ScriptedReply) -> ScriptedTransport {
        on(method, path, query: query, reply: .handler(handler))
    }

    private func add(_ route: Route) -> ScriptedTransport {
        state.withLock { $0.routes.append(route) }
        return self
    }

    // MARK: - Record

    /// Every request sent so far, in the order `send` was called, unmatched ones included.
    public var requests: [TransportRequest] { state.withLock { $0.requests } }

    /// The requests sent so far with this method to this path (read as ``on(_:_:query:reply:)`` reads a path).
    ///
    /// - Parameters:
    ///   - method: The method; `"*"` for every method.
    ///   - path: The path relative to ``serviceRoot``, or absolute; a trailing `*` matches a prefix.
    /// - Returns: The matching requests in the order they were sent.
    public func requests(_ method: String, _ path: String) -> [TransportRequest] {
        let route = Route(method: method, path: resolve(path), query: [:], replies: [], repeats: true)
        return requests.filter { matches(route, $0) }
    }

    /// The requests no route answered (and that went to the forwarding transport, or failed): a test that expects
    /// its script to be complete checks that this is empty, since a store may turn the failure into a result.
    public var unmatchedRequests: [TransportRequest] { state.withLock { $0.unmatched } }

    /// Forgets the requests recorded so far; the routes stay.
    public func removeRecordedRequests() {
        state.withLock { $0.requests.removeAll(); $0.unmatched.removeAll() }
    }

    // MARK: - HTTPTransport

    /// Records the request, finds the first route that matches it and gives that route's reply.
    ///
    /// - Parameter request: The request.
    /// - Returns: The scripted (or forwarded) response.
    /// - Throws: The failure a reply injects, what a handler throws, ``ScriptedTransportError`` for a request no
    ///   route answers (without a forwarding transport), `CancellationError` when cancelled during a latency.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let request = try Self.readingSource(of: request)
        let reply = state.withLock { state -> ScriptedReply? in
            state.requests.append(request)
            guard let index = state.routes.firstIndex(where: { !$0.replies.isEmpty && matches($0, request) }) else {
                state.unmatched.append(request)
                return nil
            }
            return state.routes[index].repeats ? state.routes[index].replies[0] : state.routes[index].replies.removeFirst()
        }
        guard let reply else {
            guard let forwardTarget else {
                throw ScriptedTransportError(method: request.method, url: request.url, routes: state.withLock { $0.routes.map(\.description) })
            }
            return try await forwardTarget.send(request)
        }
        return try await give(reply, to: request)
    }

    private func give(_ reply: ScriptedReply, to request: TransportRequest) async throws -> TransportResponse {
        if reply.latency > .zero { try await Task.sleep(for: reply.latency) }
        switch reply.action {
        case .respond(let status, let headerFields, let body):
            return try delivered(TransportResponse(status: status, headerFields: headerFields, body: body, metrics: scriptedMetrics), to: request)
        case .response(let response):
            return try delivered(response, to: request)
        case .fail(let error):
            throw error
        case .handle(let handler):
            return try await give(try await handler(request), to: request)
        case .forward(let rewrite):
            guard let forwardTarget else {
                throw ScriptedTransportError(method: request.method, url: request.url, routes: [], reason: "a route forwards it, but the transport forwards to nothing")
            }
            let response = try await forwardTarget.send(request)
            return try await rewrite?(response) ?? response
        }
    }

    /// The request with its ``TransportRequest/bodySource`` read whole into its `body`, which routes, handlers and
    /// the recorded requests see (a test's bodies are small).
    private static func readingSource(of request: TransportRequest) throws -> TransportRequest {
        guard let source = request.bodySource else { return request }
        var read = request
        var body = [UInt8](repeating: 0, count: source.count)
        try source.rewind()
        var filled = 0
        while filled < body.count {
            let count = try body.withUnsafeMutableBytes { try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            if count == 0 { break }
            filled += count
        }
        read.body = Data(body[..<filled])
        read.bodySource = nil
        return read
    }

    /// A scripted answer as ``CurlTransport`` gives it: a 2xx body goes to the request's `responseBodySink`, or its
    /// `responseBodyFile` (created or emptied, mode 0600), and the response's body is then empty.
    private func delivered(_ response: TransportResponse, to request: TransportRequest) throws -> TransportResponse {
        guard (200..<300).contains(response.status),
              let sink = request.responseBodySink ?? request.responseBodyFile.map({ FileBodySink(path: $0) }) else { return response }
        do {
            try sink.begin()
            try response.body.withUnsafeBytes { try sink.write($0) }
            try sink.finish()
        } catch {
            throw ScriptedTransportError(method: request.method, url: request.url, routes: [], reason: "the response body cannot be delivered: \(error)")
        }
        var delivered = response
        delivered.body = Data()
        return delivered
    }

    // MARK: - Matching

    private func matches(_ route: Route, _ request: TransportRequest) -> Bool {
        guard route.method == "*" || route.method.caseInsensitiveCompare(request.method) == .orderedSame else { return false }
        let path = Self.path(of: request.url)
        if route.path.hasSuffix("*") {
            guard path.hasPrefix(route.path.dropLast()) else { return false }
        } else if path != route.path {
            return false
        }
        if route.query.isEmpty { return true }
        let options = Self.queryOptions(of: request.url)
        return route.query.allSatisfy { name, value in options.contains { $0.0 == name && (value == "*" || $0.1 == value) } }
    }

    private func resolve(_ path: String) -> String {
        if path == "*" { return "*" }
        if path.hasPrefix("/") { return Self.decoded(path) }
        return rootPath + Self.decoded(path)
    }

    /// The percent-decoded path of an absolute or relative URL (everything before `?` or `#`, without scheme and
    /// authority).
    private static func path(of url: String) -> String {
        var rest = Substring(url)
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let scheme = rest.range(of: "://") {
            let afterAuthority = rest[scheme.upperBound...]
            rest = afterAuthority.firstIndex(of: "/").map { afterAuthority[$0...] } ?? "/"
        }
        return decoded(String(rest))
    }

    private static func queryOptions(of url: String) -> [(String, String)] {
        guard let start = url.firstIndex(of: "?") else { return [] }
        let query = url[url.index(after: start)...].prefix { $0 != "#" }
        return query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decoded(String(parts[0])), parts.count > 1 ? decoded(String(parts[1])) : "")
        }
    }

    /// Percent-decodes text; text with a malformed `%` sequence is compared as it is.
    private static func decoded(_ text: String) -> String {
        do { return try PercentDecoding.decodeString(text) } catch { return text }
    }
}

/// A request a ``ScriptedTransport`` could not answer: no route matched it and it forwards to nothing (or a route
/// forwards it and there is nothing to forward to).
public struct ScriptedTransportError: Error, Sendable, CustomStringConvertible {
    /// The request's method.
    public let method: String
    /// The request's URL.
    public let url: String
    /// The routes the transport had when the request came, as `METHOD path?query`, for the failure message.
    public let routes: [String]
    /// Why the request was not answered.
    public let reason: String

    init(method: String, url: String, routes: [String], reason: String = "no scripted route matches it") {
        self.method = method
        self.url = url
        self.routes = routes
        self.reason = reason
    }

    /// The method, the URL, the reason and the routes there were.
    public var description: String {
        "ScriptedTransport: \(method) \(url): \(reason)" + (routes.isEmpty ? "" : " (routes: \(routes.joined(separator: ", ")))")
    }
}
