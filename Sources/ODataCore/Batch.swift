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
}
