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
    public var headerFields: HTTPFields {
        switch fields {
        case .ready(let fields): fields
        case .deferred(let deferred): deferred.fields
        }
    }
    private let fields: Fields
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
        fields = .ready(headerFields)
        self.payload = payload
        self.isFromCache = isFromCache
        self.isRevalidated = isRevalidated
    }

    /// Creates a response whose header fields are made only when first read: a cached answer keeps its headers
    /// as plain lines, and most callers read only the payload (each field's name and value would otherwise be
    /// validated on every read from the cache).
    /// - Parameters:
    ///   - statusCode: the HTTP status.
    ///   - payload: the body.
    ///   - isFromCache: whether it was read from the cache.
    ///   - isRevalidated: whether a 304 confirmed a cached payload.
    ///   - headerFields: makes the headers, at most once.
    package init(statusCode: Int, payload: Data, isFromCache: Bool, isRevalidated: Bool, headerFields: @escaping @Sendable () -> HTTPFields) {
        self.statusCode = statusCode
        fields = .deferred(DeferredFields(headerFields))
        self.payload = payload
        self.isFromCache = isFromCache
        self.isRevalidated = isRevalidated
    }

    /// The header fields, or what makes them.
    private enum Fields: Sendable {
        case ready(HTTPFields)
        case deferred(DeferredFields)
    }

    /// Header fields made on first use, once.
    private final class DeferredFields: Sendable {
        private let state: LockedValue<State>
        private enum State {
            case pending(@Sendable () -> HTTPFields)
            case made(HTTPFields)
        }

        init(_ make: @escaping @Sendable () -> HTTPFields) {
            state = LockedValue(.pending(make))
        }

        var fields: HTTPFields {
            state.withLock { state in
                switch state {
                case .made(let fields): return fields
                case .pending(let make):
                    let fields = make()
                    state = .made(fields)
                    return fields
                }
            }
        }
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
        switch fields {
        case .ready(let fields):
            ODataResponse(statusCode: statusCode, headerFields: fields, payload: payload, isFromCache: isFromCache, isRevalidated: isRevalidated)
        case .deferred(let deferred):
            ODataResponse(statusCode: statusCode, payload: payload, isFromCache: isFromCache, isRevalidated: isRevalidated) { deferred.fields }
        }
    }
}

extension ODataResponse: CustomStringConvertible {
    /// Status, size and flags, for logs.
    public var description: String {
        "ODataResponse(\(statusCode), \(payload.count) bytes\(isFromCache ? ", from cache" : "")\(isRevalidated ? ", revalidated" : ""))"
    }
}
