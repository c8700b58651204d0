import CurlHTTP
public import Foundation
public import HTTPTypes
public import ODataCore

/// What a ``ScriptedTransport`` does with a request a route matched: answer it, fail it, ask a closure, or send it
/// on to the transport the scripted one forwards to.
///
/// ```swift
/// transport.on("GET", "Products", reply: .json(#"{"value":[]}"#))
/// transport.on("POST", "Products", replies: [.connectionRefused, .status(201)])
/// transport.on("GET", "Slow", reply: .status(200).after(.milliseconds(50)))
/// ```
public struct ScriptedReply: Sendable {
    enum Action: Sendable {
        case respond(status: Int, headerFields: HTTPFields, body: Data)
        case response(TransportResponse)
        case fail(any Error)
        case handle(@Sendable (TransportRequest) async throws -> ScriptedReply)
        case forward(rewrite: (@Sendable (TransportResponse) async throws -> TransportResponse)?)
    }

    let action: Action
    /// The simulated latency before the reply is given; zero unless ``after(_:)`` set it.
    public private(set) var latency: Duration = .zero

    init(_ action: Action) { self.action = action }

    /// A reply with this status, these header fields and this body.
    ///
    /// - Parameters:
    ///   - status: The HTTP status code.
    ///   - headerFields: The response's header fields; the default is none.
    ///   - body: The response body; the default is empty.
    /// - Returns: The reply.
    public static func status(_ status: Int, headerFields: HTTPFields = [:], body: Data = Data()) -> ScriptedReply {
        ScriptedReply(.respond(status: status, headerFields: headerFields, body: body))
    }

    /// A JSON reply: the text as the body, `Content-Type: application/json` unless `headerFields` gives one.
    ///
    /// - Parameters:
    ///   - text: The JSON text, sent as it is (not checked).
    ///   - status: The HTTP status code; the default is 200.
    ///   - headerFields: Further header fields; the default is none.
    /// - Returns: The reply.
    public static func json(_ text: String, status: Int = 200, headerFields: HTTPFields = [:]) -> ScriptedReply {
        var fields = headerFields
        if fields[.contentType] == nil { fields[.contentType] = "application/json" }
        return .status(status, headerFields: fields, body: Data(text.utf8))
    }

    /// A JSON reply with a JSON value serialized as its body, `Content-Type: application/json` unless `headerFields`
    /// gives one.
    ///
    /// - Parameters:
    ///   - value: The JSON value.
    ///   - status: The HTTP status code; the default is 200.
    ///   - headerFields: Further header fields; the default is none.
    /// - Returns: The reply.
    public static func json(_ value: JSONValue, status: Int = 200, headerFields: HTTPFields = [:]) -> ScriptedReply {
        .json(JSON.string(value), status: status, headerFields: headerFields)
    }

    /// A complete transport response, returned as it is.
    ///
    /// - Parameter response: The response.
    /// - Returns: The reply.
    public static func response(_ response: TransportResponse) -> ScriptedReply {
        ScriptedReply(.response(response))
    }

    /// A failure: `send` throws `error`, as a transport does when no answer arrives.
    ///
    /// - Parameter error: The error to throw.
    /// - Returns: The reply.
    public static func failure(_ error: any Error) -> ScriptedReply {
        ScriptedReply(.fail(error))
    }

    /// A refused connection, thrown as `CurlTransport` throws it: a `CurlError` of kind `connectFailed`
    /// (`CURLE_COULDNT_CONNECT`). The request never reached the back end.
    public static var connectionRefused: ScriptedReply {
        .failure(CurlError(kind: .connectFailed, curlCode: 7, message: "Failed to connect: Connection refused (scripted)"))
    }

    /// A timeout, thrown as `CurlTransport` throws it: a `CurlError` of kind `timedOut` (`CURLE_OPERATION_TIMEDOUT`).
    /// The back end may have received and executed the request.
    public static var timeout: ScriptedReply {
        .failure(CurlError(kind: .timedOut, curlCode: 28, message: "Operation timed out (scripted)"))
    }

    /// A connection that closed before any answer, thrown as `CurlTransport` throws it: a `CurlError` of kind
    /// `connectionClosed` (`CURLE_GOT_NOTHING`). The back end may have received and executed the request.
    public static var connectionClosed: ScriptedReply {
        .failure(CurlError(kind: .connectionClosed, curlCode: 52, message: "Empty reply from server (scripted)"))
    }

    /// A reply the closure decides per request; it may inspect the request, count, and throw.
    ///
    /// - Parameter handler: Called with each request the route matches; its reply is given (a reply it returns
    ///   may itself be a handler or a forward; its latency is added).
    /// - Returns: The reply.
    public static func handler(_ handler: @escaping @Sendable (TransportRequest) async throws -> ScriptedReply) -> ScriptedReply {
        ScriptedReply(.handle(handler))
    }

    /// Sends the request on to the transport the ``ScriptedTransport`` forwards to (its `forwardingTo`), and
    /// returns that transport's answer; ``ScriptedTransportError`` when there is none.
    public static var forward: ScriptedReply { ScriptedReply(.forward(rewrite: nil)) }

    /// Sends the request on as ``forward`` does, and returns what `rewrite` makes of the real answer.
    ///
    /// - Parameter rewrite: Changes the real response (its status, header fields or body).
    /// - Returns: The reply.
    public static func forward(rewriting rewrite: @escaping @Sendable (TransportResponse) async throws -> TransportResponse) -> ScriptedReply {
        ScriptedReply(.forward(rewrite: rewrite))
    }

    /// This reply after a simulated latency: the transport sleeps (`Task.sleep`, so cancellation ends it with
    /// `CancellationError`) before it answers or fails.
    ///
    /// - Parameter latency: The time to wait before replying.
    /// - Returns: The delayed reply.
    public func after(_ latency: Duration) -> ScriptedReply {
        var reply = self
        reply.latency = latency
        return reply
    }
}

/// The metrics a scripted response reports: nothing measured, a reused HTTP/1.1 connection.
let scriptedMetrics = TransferMetrics(headerBytes: 0, bodyBytes: 0, totalTime: .zero, connectionReused: true,
                                      newConnections: 0, httpVersion: .http1_1)
