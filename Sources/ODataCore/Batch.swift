import Foundation
import HTTPTypes

/// An OData `$batch`: reads and change sets, encoded as `multipart/mixed` or as a V4.01 JSON batch.
public struct BatchRequest: Sendable, Hashable {
    /// One part of a batch: a single request (normally a read) or an atomic change set.
    public enum Part: Sendable, Hashable {
        /// A request outside any change set.
        case request(ODataRequest)
        /// An atomic change set: all or nothing. Each request has a `Content-ID` that later
        /// requests in the same change set may reference as `$<id>`.
        case changeSet([ChangeSetRequest])
    }

    /// A request inside a change set with its `Content-ID`.
    public struct ChangeSetRequest: Sendable, Hashable {
        /// The Content-ID, unique within the batch.
        public var contentID: String
        /// The request.
        public var request: ODataRequest

        /// Creates a change-set member.
        /// - Parameters:
        ///   - contentID: the Content-ID.
        ///   - request: the request.
        public init(contentID: String, request: ODataRequest) {
            self.contentID = contentID
            self.request = request
        }
    }

    /// The parts, in order.
    public var parts: [Part]

    /// Creates a batch.
    /// - Parameter parts: the parts, in order.
    public init(parts: [Part]) {
        self.parts = parts
    }

    /// Every request of the batch in order, change-set members included.
    public var allRequests: [ODataRequest] {
        parts.flatMap { part -> [ODataRequest] in
            switch part {
            case .request(let request): [request]
            case .changeSet(let members): members.map(\.request)
            }
        }
    }
}

/// The response to a ``BatchRequest``, part for part.
public struct BatchResponse: Sendable {
    /// One part of a batch response.
    public enum Part: Sendable {
        /// The response to a single request, or the one response that replaced a failed change set.
        case response(ODataResponse, contentID: String?)
        /// The responses of a change set that succeeded, each with its Content-ID.
        case changeSet([(contentID: String?, response: ODataResponse)])
    }

    /// The parts, in order.
    public var parts: [Part]

    /// Creates a batch response.
    /// - Parameter parts: the parts, in order.
    public init(parts: [Part]) {
        self.parts = parts
    }

    /// Every response in order, change-set members flattened.
    public var allResponses: [ODataResponse] {
        parts.flatMap { part -> [ODataResponse] in
            switch part {
            case .response(let response, _): [response]
            case .changeSet(let members): members.map(\.response)
            }
        }
    }
}

/// Encodes and decodes `$batch` bodies (`multipart/mixed`, OData V4 and V2 alike).
public enum MultipartBatch {
    /// Encodes a batch request body.
    /// - Parameters:
    ///   - batch: the batch.
    ///   - boundary: the outer boundary; change sets get derived ones.
    /// - Returns: the body and the `Content-Type` header value to send with it.
    /// - Throws: ``ODataError`` when a request's path or options cannot be rendered.
    public static func encode(_ batch: BatchRequest, boundary: String = "batch_" + UUID().uuidString) throws(ODataError) -> (body: Data, contentType: String) {
        var out = Data()
        for (index, part) in batch.parts.enumerated() {
            out.append("--\(boundary)\r\n")
            switch part {
            case .request(let request):
                out.append("Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
                try appendRequest(request, to: &out)
            case .changeSet(let members):
                let inner = "changeset_\(index)_" + boundary
                out.append("Content-Type: multipart/mixed; boundary=\(inner)\r\n\r\n")
                for member in members {
                    out.append("--\(inner)\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: \(member.contentID)\r\n\r\n")
                    try appendRequest(member.request, to: &out)
                }
                out.append("--\(inner)--\r\n")
            }
        }
        out.append("--\(boundary)--\r\n")
        return (out, "multipart/mixed; boundary=\(boundary)")
    }

    /// Decodes a batch request body, as a server does.
    /// - Parameters:
    ///   - body: the body.
    ///   - contentType: the request's `Content-Type` (it names the boundary).
    /// - Returns: the batch; paths percent-decoded by ``PercentDecoding``, query strings kept verbatim as
    ///   ``QueryOption/encoded(_:)`` pieces.
    /// - Throws: ``ODataError`` `.malformedBatch` or `.malformedHTTPMessage` with what was wrong (a part whose path
    ///   has a `%` that starts no `%XX` is a `.malformedHTTPMessage`).
    public static func decodeRequest(_ body: Data, contentType: String) throws(ODataError) -> BatchRequest {
        let boundary = try boundary(of: contentType)
        var parts: [BatchRequest.Part] = []
        for part in try splitMultipart(body, boundary: boundary) {
            if let inner = try nestedBoundary(part) {
                var members: [BatchRequest.ChangeSetRequest] = []
                for (offset, member) in try splitMultipart(part.body, boundary: inner).enumerated() {
                    let request = try parseRequest(member.body)
                    members.append(.init(contentID: member.headers[contentIDField] ?? String(offset + 1), request: request))
                }
                parts.append(.changeSet(members))
            } else {
                parts.append(.request(try parseRequest(part.body)))
            }
        }
        return BatchRequest(parts: parts)
    }

    /// Encodes a batch response body, as a server does.
    /// - Parameters:
    ///   - response: the parts.
    ///   - boundary: the outer boundary.
    /// - Returns: the body and its `Content-Type` header value.
    public static func encode(_ response: BatchResponse, boundary: String = "batchresponse_" + UUID().uuidString) -> (body: Data, contentType: String) {
        var out = Data()
        for (index, part) in response.parts.enumerated() {
            out.append("--\(boundary)\r\n")
            switch part {
            case .response(let response, let contentID):
                out.append("Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n")
                if let contentID { out.append("Content-ID: \(contentID)\r\n") }
                out.append("\r\n")
                appendResponse(response, to: &out)
            case .changeSet(let members):
                // Short prefix: the boundary must stay within RFC 2046's 70 characters even for
                // the thousandth change set ("changesetresponse_10_" + the default was 71).
                let inner = "csr_\(index)_" + boundary
                out.append("Content-Type: multipart/mixed; boundary=\(inner)\r\n\r\n")
                for member in members {
                    out.append("--\(inner)\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n")
                    if let contentID = member.contentID { out.append("Content-ID: \(contentID)\r\n") }
                    out.append("\r\n")
                    appendResponse(member.response, to: &out)
                }
                out.append("--\(inner)--\r\n")
            }
        }
        out.append("--\(boundary)--\r\n")
        return (out, "multipart/mixed; boundary=\(boundary)")
    }

    /// Decodes a batch response body.
    /// - Parameters:
    ///   - body: the body.
    ///   - contentType: the response's `Content-Type` (it names the boundary).
    /// - Returns: the parts.
    /// - Throws: ``ODataError`` `.malformedBatch` or `.malformedHTTPMessage` with what was wrong.
    public static func decodeResponse(_ body: Data, contentType: String) throws(ODataError) -> BatchResponse {
        let boundary = try boundary(of: contentType)
        var parts: [BatchResponse.Part] = []
        for part in try splitMultipart(body, boundary: boundary) {
            if let inner = try nestedBoundary(part) {
                var members: [(contentID: String?, response: ODataResponse)] = []
                for member in try splitMultipart(part.body, boundary: inner) {
                    members.append((member.headers[contentIDField], try parseResponse(member.body)))
                }
                parts.append(.changeSet(members))
            } else {
                parts.append(.response(try parseResponse(part.body), contentID: part.headers[contentIDField]))
            }
        }
        return BatchResponse(parts: parts)
    }

    // MARK: - Multipart

    private static let contentIDField = HTTPField.Name("Content-ID")!

    struct MultipartPart {
        var headers: HTTPFields
        var body: Data
    }

    /// The `boundary` parameter of a multipart `Content-Type`.
    static func boundary(of contentType: String) throws(ODataError) -> String {
        let lowered = contentType.lowercased()
        guard lowered.hasPrefix("multipart/mixed") else {
            throw ODataError(.malformedBatch, "expected a multipart/mixed content type, got '\(contentType)'")
        }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            // RFC 2046: 1 to 70 characters.
            guard !value.isEmpty, value.count <= 70 else { break }
            return value
        }
        throw ODataError(.malformedBatch, "the content type '\(contentType)' names no valid boundary")
    }

    private static func nestedBoundary(_ part: MultipartPart) throws(ODataError) -> String? {
        guard let type = part.headers[.contentType], type.lowercased().hasPrefix("multipart/mixed") else { return nil }
        return try boundary(of: type)
    }

    /// Splits a multipart body at `--boundary` lines; the preamble and epilogue are ignored.
    static func splitMultipart(_ body: Data, boundary: String) throws(ODataError) -> [MultipartPart] {
        let bytes = [UInt8](body)
        let delimiter = Array("--\(boundary)".utf8)
        var positions: [(start: Int, end: Int, isClose: Bool)] = []
        var index = 0
        while let found = find(delimiter, in: bytes, from: index) {
            // A delimiter must start a line.
            if found == 0 || bytes[found - 1] == 0x0A {
                var after = found + delimiter.count
                let isClose = after + 1 < bytes.count && bytes[after] == UInt8(ascii: "-") && bytes[after + 1] == UInt8(ascii: "-")
                if isClose { after += 2 }
                // Skip transport padding up to the end of the line.
                while after < bytes.count, bytes[after] == 0x20 || bytes[after] == 0x09 { after += 1 }
                if after < bytes.count, bytes[after] == 0x0D { after += 1 }
                if after < bytes.count, bytes[after] == 0x0A { after += 1 }
                positions.append((found, after, isClose))
                if isClose { break }
            }
            index = found + delimiter.count
        }
        guard let last = positions.last else {
            throw ODataError(.malformedBatch, "no '--\(boundary)' delimiter found in the body")
        }
        guard last.isClose else {
            throw ODataError(.malformedBatch, "the body ends without the closing '--\(boundary)--' delimiter", offset: bytes.count)
        }
        var parts: [MultipartPart] = []
        for (current, next) in zip(positions, positions.dropFirst()) {
            guard !current.isClose else { break }
            var end = next.start
            // The CRLF before a delimiter belongs to the delimiter.
            if end > current.end, bytes[end - 1] == 0x0A { end -= 1 }
            if end > current.end, bytes[end - 1] == 0x0D { end -= 1 }
            let (headers, bodyStart) = try parseHeaders(bytes, from: current.end, end: end, what: "batch part")
            parts.append(MultipartPart(headers: headers, body: Data(bytes[bodyStart..<end])))
        }
        return parts
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        let first = needle[0]
        var index = start
        let limit = haystack.count - needle.count
        while index <= limit {
            if haystack[index] == first {
                var matched = true
                for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                    matched = false
                    break
                }
                if matched { return index }
            }
            index += 1
        }
        return nil
    }

    // MARK: - HTTP messages inside parts

    /// Reads header lines up to the blank line; tolerates bare LF line ends.
    static func parseHeaders(_ bytes: [UInt8], from start: Int, end: Int, what: String) throws(ODataError) -> (HTTPFields, Int) {
        var fields = HTTPFields()
        var index = start
        while index < end {
            var lineEnd = index
            while lineEnd < end, bytes[lineEnd] != 0x0A { lineEnd += 1 }
            var contentEnd = lineEnd
            if contentEnd > index, bytes[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            let next = min(lineEnd + 1, end)
            if contentEnd == index { return (fields, next) }
            let line = String(decoding: bytes[index..<contentEnd], as: UTF8.self)
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon]).trimmingCharacters(in: .whitespaces)) else {
                throw ODataError(.malformedHTTPMessage, "invalid header line '\(line.prefix(80))' in a \(what)", offset: index)
            }
            fields.append(HTTPField(name: name, value: String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
            index = next
        }
        // Headers ran to the end: no body.
        return (fields, end)
    }

    private static func startLine(_ bytes: [UInt8]) throws(ODataError) -> (line: String, rest: Int) {
        var index = 0
        // Leading blank lines are tolerated.
        while index < bytes.count, bytes[index] == 0x0D || bytes[index] == 0x0A { index += 1 }
        var lineEnd = index
        while lineEnd < bytes.count, bytes[lineEnd] != 0x0A { lineEnd += 1 }
        guard lineEnd > index else { throw ODataError(.malformedHTTPMessage, "a batch part has no HTTP start line", offset: index) }
        var contentEnd = lineEnd
        if bytes[contentEnd - 1] == 0x0D { contentEnd -= 1 }
        return (String(decoding: bytes[index..<contentEnd], as: UTF8.self), min(lineEnd + 1, bytes.count))
    }

    /// Parses `METHOD url HTTP/1.1`, headers and body into a request; the url's path is percent-decoded by
    /// ``PercentDecoding`` (a `+` stays a plus), its query kept verbatim.
    /// - Throws: ``ODataError`` `.malformedHTTPMessage` for a bad start line or header, or a path with a `%` that
    ///   starts no `%XX` or that decodes to bytes that are not UTF-8 (the offset is in the path).
    static func parseRequest(_ data: Data) throws(ODataError) -> ODataRequest {
        let bytes = [UInt8](data)
        let (line, rest) = try startLine(bytes)
        let words = line.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count == 3, words[2].hasPrefix("HTTP/"), !words[0].isEmpty, words[0].allSatisfy({ $0.isLetter && $0.isASCII }) else {
            throw ODataError(.malformedHTTPMessage, "expected 'METHOD url HTTP/1.1', got '\(line.prefix(80))'")
        }
        guard let method = HTTPRequest.Method(String(words[0])) else {
            throw ODataError(.malformedHTTPMessage, "invalid method '\(words[0])'")
        }
        let (headers, bodyStart) = try parseHeaders(bytes, from: rest, end: bytes.count, what: "request")
        let target = String(words[1])
        let pathAndQuery = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let options = pathAndQuery.count > 1
            ? pathAndQuery[1].split(separator: "&").map { QueryOption.encoded(String($0)) } : []
        let body = bodyStart < bytes.count ? Data(bytes[bodyStart...]) : nil
        let path: String
        do { path = try PercentDecoding.decodeString(String(pathAndQuery[0])) } catch {
            throw ODataError(.malformedHTTPMessage, "the request target '\(target.prefix(80))' of a batch part: \(error.message)",
                             offset: error.offset)
        }
        return ODataRequest(method: method, resourcePath: path, queryOptions: options, headerFields: headers, body: body, useCache: false)
    }

    /// Parses `HTTP/1.1 200 OK`, headers and body into a response.
    static func parseResponse(_ data: Data) throws(ODataError) -> ODataResponse {
        let bytes = [UInt8](data)
        let (line, rest) = try startLine(bytes)
        let words = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard words.count >= 2, words[0].hasPrefix("HTTP/"), let status = Int(words[1]), (100...599).contains(status) else {
            throw ODataError(.malformedHTTPMessage, "expected 'HTTP/1.1 <status> <reason>', got '\(line.prefix(80))'")
        }
        let (headers, bodyStart) = try parseHeaders(bytes, from: rest, end: bytes.count, what: "response")
        var body = bodyStart < bytes.count ? Data(bytes[bodyStart...]) : Data()
        if let length = headers[.contentLength].flatMap({ Int($0) }) {
            guard length >= 0 else {
                throw ODataError(.malformedHTTPMessage, "Content-Length \(length) is negative")
            }
            guard length <= body.count else {
                throw ODataError(.malformedHTTPMessage, "Content-Length \(length) but only \(body.count) bytes in the part")
            }
            body = body.prefix(length)
        }
        return ODataResponse(statusCode: status, headerFields: headers, payload: body)
    }

    private static func appendRequest(_ request: ODataRequest, to out: inout Data) throws(ODataError) {
        out.append("\(request.method.rawValue) \(try request.relativeURL()) HTTP/1.1\r\n")
        var headers = request.headerFields
        if let body = request.body {
            if headers[.contentType] == nil { headers[.contentType] = "application/json" }
            headers[.contentLength] = String(body.count)
        }
        for field in headers { out.append("\(field.name.rawName): \(field.value)\r\n") }
        out.append("\r\n")
        if let body = request.body { out.append(body) }
        out.append("\r\n")
    }

    private static func appendResponse(_ response: ODataResponse, to out: inout Data) {
        out.append("HTTP/1.1 \(response.statusCode) \(reasonPhrase(response.statusCode))\r\n")
        var headers = response.headerFields
        headers[.contentLength] = String(response.payload.count)
        for field in headers { out.append("\(field.name.rawName): \(field.value)\r\n") }
        out.append("\r\n")
        out.append(response.payload)
        out.append("\r\n")
    }
}

/// The standard reason phrase of a status code (RFC 9110 §15), for status lines.
func reasonPhrase(_ code: Int) -> String {
    let known: HTTPResponse.Status? = switch code {
    case 100: .continue
    case 200: .ok
    case 201: .created
    case 202: .accepted
    case 204: .noContent
    case 206: .partialContent
    case 304: .notModified
    case 400: .badRequest
    case 401: .unauthorized
    case 403: .forbidden
    case 404: .notFound
    case 405: .methodNotAllowed
    case 406: .notAcceptable
    case 408: .requestTimeout
    case 409: .conflict
    case 410: .gone
    case 412: .preconditionFailed
    case 413: .contentTooLarge
    case 415: .unsupportedMediaType
    case 422: .unprocessableContent
    case 428: .preconditionRequired
    case 429: .tooManyRequests
    case 500: .internalServerError
    case 501: .notImplemented
    case 502: .badGateway
    case 503: .serviceUnavailable
    case 504: .gatewayTimeout
    default: nil
    }
    return known?.reasonPhrase ?? "Status \(code)"
}

extension Data {
    fileprivate mutating func append(_ text: String) {
        append(contentsOf: Array(text.utf8))
    }
}
