import Foundation
import HTTPTypes

/// The multipart framing of a `$batch` (boundaries, parts, nested change sets) and the HTTP messages inside
/// its parts (start lines, headers, bodies).
extension MultipartBatch {
    // MARK: - Multipart

    static let contentIDField = HTTPField.Name("Content-ID")!

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

    static func nestedBoundary(_ part: MultipartPart) throws(ODataError) -> String? {
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

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
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

    static func startLine(_ bytes: [UInt8]) throws(ODataError) -> (line: String, rest: Int) {
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

    static func appendRequest(_ request: ODataRequest, to out: inout Data) throws(ODataError) {
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

    static func appendResponse(_ response: ODataResponse, to out: inout Data) {
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
    /// Appends the UTF-8 bytes of `text` (a batch's framing and start lines).
    mutating func append(_ text: String) {
        append(contentsOf: Array(text.utf8))
    }
}
