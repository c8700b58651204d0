import Foundation
public import HTTPTypes

/// A response to an OData request: from the server, or from the technical cache.
///
/// A class so that identity can be checked: the object given to `requestFinished` is the very one
/// given to `requestServerResponse` or `requestFailed`. An empty ``payload`` is a payload (the
/// server answered with no content); "no response" is `nil` wherever a response is optional.
public final class ODataResponse: Sendable {
    /// The HTTP status code.
    public let statusCode: Int
    /// The response headers (case-insensitive names; order and repeated fields kept).
    public let headerFields: HTTPFields
    /// The body bytes; empty when the server sent no content.
    public let payload: Data
    /// Whether the payload comes from the technical cache.
    public let isFromCache: Bool
    /// Whether the server confirmed the cached payload with `304 Not Modified`.
    public let isRevalidated: Bool

    /// Creates a response.
    /// - Parameters:
    ///   - statusCode: the HTTP status.
    ///   - headerFields: the headers.
    ///   - payload: the body.
    ///   - isFromCache: whether it was read from the cache.
    ///   - isRevalidated: whether a 304 confirmed a cached payload.
    public init(statusCode: Int, headerFields: HTTPFields = [:], payload: Data = Data(), isFromCache: Bool = false, isRevalidated: Bool = false) {
        self.statusCode = statusCode
        self.headerFields = headerFields
        self.payload = payload
        self.isFromCache = isFromCache
        self.isRevalidated = isRevalidated
    }

    /// The `ETag` header, if any.
    public var etag: String? { headerFields[.eTag] }

    /// The `Last-Modified` header, if any.
    public var lastModified: String? { headerFields[.lastModified] }

    /// Whether the status is 2xx (or 304, which carries a confirmed cached payload).
    public var isSuccess: Bool { (200..<300).contains(statusCode) || statusCode == 304 }

    /// The payload parsed as JSON.
    /// - Throws: ``ODataError`` `.malformedJSON`.
    public func json() throws(ODataError) -> JSONValue {
        try JSON.parse(payload)
    }

    /// The payload read as an OData collection (V4 `value` or V2 `d/results`).
    /// - Throws: ``ODataError`` `.malformedJSON` or `.malformedPayload`.
    public func entitySet() throws(ODataError) -> ODataEntitySet {
        try ODataPayload.decodeEntitySet(payload)
    }

    /// The payload read as one OData entity (V4 or V2 `d`).
    /// - Throws: ``ODataError`` `.malformedJSON` or `.malformedPayload`.
    public func entity() throws(ODataError) -> ODataEntity {
        try ODataPayload.decodeEntity(payload)
    }

    /// The OData error the server sent, for a status of 400 or more; `nil` otherwise.
    public var serviceError: ODataServiceError? {
        statusCode >= 400 ? ODataServiceError.parse(payload, statusCode: statusCode) : nil
    }

    /// A copy with other flags, for the cache layer.
    /// - Parameters:
    ///   - isFromCache: whether it was read from the cache.
    ///   - isRevalidated: whether a 304 confirmed it.
    /// - Returns: a new response object with the same status, headers and payload.
    public func with(isFromCache: Bool, isRevalidated: Bool) -> ODataResponse {
        ODataResponse(statusCode: statusCode, headerFields: headerFields, payload: payload, isFromCache: isFromCache, isRevalidated: isRevalidated)
    }
}

extension ODataResponse: CustomStringConvertible {
    /// Status, size and flags, for logs.
    public var description: String {
        "ODataResponse(\(statusCode), \(payload.count) bytes\(isFromCache ? ", from cache" : "")\(isRevalidated ? ", revalidated" : ""))"
    }
}
