import Foundation
import HTTPTypes
import ODataCore

/// A request as the producer handles it, whether it came over HTTP or inside a `$batch`.
struct IncomingRequest: Sendable {
    /// The method, upper case (after `X-HTTP-Method` tunnelling).
    var method: String
    /// The path relative to the service root, percent-encoded, without a leading `/`.
    var path: String
    /// The raw query string without `?`, percent-encoded.
    var query: String
    var headers: HTTPFields
    var body: [UInt8]

    /// The path percent-decoded (``PercentDecoding``: a `+` stays a plus): the name counters and faults use.
    ///
    /// A path with a `%` that starts no `%XX` is counted and matched as written: resolving it answers 400 (the
    /// resource path is invalid), and the counters name what the client sent.
    var decodedPath: String { Self.decodedForDisplay(path) }

    /// `text` percent-decoded, or as written when it cannot be: for names in counters, faults and error messages,
    /// where the request is being answered (or refused) anyway.
    static func decodedForDisplay(_ text: String) -> String {
        (try? PercentDecoding.decodeString(text)) ?? text
    }

    /// A request from a `$batch` part, whose resource path may be absolute, absolute-path or relative.
    init(batchPart request: ODataRequest, serviceRootPath: String) {
        var path = request.resourcePath
        if path.hasPrefix("http://") || path.hasPrefix("https://"), let components = URLComponents(string: path) {
            path = components.path
        }
        if path.hasPrefix(serviceRootPath) {
            path = String(path.dropFirst(serviceRootPath.count))
        } else if path.hasPrefix("/") {
            path = String(path.dropFirst())
        }
        self.method = request.method.rawValue.uppercased()
        self.path = PercentEncoding.encodePath(path)
        // A part's query as sent (the batch decoders keep it as `.encoded` pieces): a piece with a malformed `%`
        // sequence reaches the query parser, which answers this part 400, instead of being dropped.
        self.query = request.queryOptions.compactMap { option in
            if case .encoded(let piece) = option { return piece }
            return try? option.rendered()
        }.joined(separator: "&")
        self.headers = request.headerFields
        self.body = request.body.map { [UInt8]($0) } ?? []
    }

    init(method: String, path: String, query: String, headers: HTTPFields, body: [UInt8]) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }
}

/// A response of the producer before it goes on the wire or into a `$batch` response.
struct OutgoingResponse: Sendable {
    var status: Int
    var headers: HTTPFields
    var body: [UInt8]

    static let jsonContentType = "application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false"

    init(status: Int, headers: HTTPFields = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
        if self.headers[.odataVersion] == nil { self.headers[.odataVersion] = "4.0" }
    }

    /// A JSON response.
    static func json(_ status: Int, _ value: JSONValue, headers: HTTPFields = [:]) -> OutgoingResponse {
        var response = OutgoingResponse(status: status, headers: headers, body: JSON.serialize(value))
        response.headers[.contentType] = jsonContentType
        return response
    }

    /// An OData V4 JSON error response, written by ODataCore's error format.
    static func error(_ failure: ServiceFailure) -> OutgoingResponse {
        let error = ODataServiceError(code: failure.code, message: failure.message, target: failure.target)
        return json(failure.status, error.jsonBody)
    }

    /// The response as ODataCore's type, for a `$batch` response.
    var odataResponse: ODataResponse {
        ODataResponse(statusCode: status, headerFields: headers, payload: Data(body))
    }
}

/// A request the producer refuses: an HTTP status with an OData error code and message.
struct ServiceFailure: Error, Sendable {
    var status: Int
    var code: String
    var message: String
    var target: String?

    init(_ status: Int, _ code: String, _ message: String, target: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.target = target
    }

    /// The HTTP view of a data error.
    init(_ error: FixtureError) {
        if error == .notFound {
            self.init(404, "NotFound", error.message)
        } else if error == .conflict {
            self.init(409, "Conflict", error.message)
        } else {
            self.init(400, "BadRequest", error.message)
        }
    }

    static func notFound(_ message: String) -> ServiceFailure { ServiceFailure(404, "NotFound", message) }
    static func badRequest(_ message: String) -> ServiceFailure { ServiceFailure(400, "BadRequest", message) }
}
