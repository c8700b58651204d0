import Foundation
import HTTPTypes
public import ODataCore
import ODataSession
import TechnicalCache

extension OnlineODataStore {
    /// Reads a stream — a media resource (`Photos(1)/$value`), a stream property — into a file as it arrives,
    /// through the session (authentication, cookies, `sap-client`) but not through the JSON path: a stream of any
    /// size is never held whole in memory on its way. The technical cache keeps a stream of at most
    /// ``OnlineStoreOptions/maxCachedStreamSize`` bytes (1 MiB by default): the next read revalidates it with its
    /// `ETag` (`If-None-Match`), and a `304` writes the cached copy into `file`; a larger stream is never cached and is
    /// read from the back end each time.
    ///
    /// - Parameters:
    ///   - path: The resource path relative to the service root.
    ///   - file: Where a successful answer's body goes (created or emptied, mode 0600).
    ///   - headerFields: More header fields (`If-None-Match`…); the store's default header fields are sent too.
    /// - Returns: The back end's answer (or the cached one it confirmed): for a 2xx its status and header fields
    ///   (`Content-Type`, `ETag`) with an empty body (the bytes are in `file`); any other answer with its body (an
    ///   OData error) and `file` untouched.
    /// - Throws: `ODataError.invalidState` when the store is not open, the transport's or the session's error.
    public func readStream(_ path: String, to file: URL, headerFields: HTTPFields = [:]) async throws -> TransportResponse {
        var request = try streamRequest("GET", path, headerFields: headerFields)
        request.headerFields[.accept] = request.headerFields[.accept] ?? "*/*"
        request.responseBodyFile = file.path
        guard let streamCaching, options.maxCachedStreamSize > 0 else { return try await session.send(request) }
        return try await streamCaching.send(request)
    }

    /// Writes a stream — replaces a media resource (`PUT Photos(1)/$value`), creates a media entity (`POST Photos`) —
    /// from a file, read a piece at a time as the transfer goes, through the session (a CSRF token is fetched first
    /// where the back end wants one) and not through the JSON path nor the technical cache.
    ///
    /// - Parameters:
    ///   - path: The resource path relative to the service root.
    ///   - file: The bytes to send.
    ///   - contentType: Their content type.
    ///   - method: `PUT` (the default) or `POST`.
    ///   - ifMatch: The ETag the stream must still have (`If-Match`); `nil` sends none.
    /// - Returns: The back end's answer (its new `ETag` in the header fields of a 2xx).
    /// - Throws: `ODataError.invalidState` when the store is not open, the transport's or the session's error.
    public func writeStream(
        _ path: String, from file: URL, contentType: String, method: String = "PUT", ifMatch: String? = nil
    ) async throws -> TransportResponse {
        var fields = HTTPFields()
        fields[.contentType] = contentType
        if let ifMatch { fields[.ifMatch] = ifMatch }
        var request = try streamRequest(method, path, headerFields: fields)
        request.bodyFile = file.path
        return try await session.send(request)
    }

    /// A stream's request: the store's default header fields, then `headerFields`.
    private func streamRequest(_ method: String, _ path: String, headerFields: HTTPFields) throws -> TransportRequest {
        guard isOpen else { throw ODataError(.invalidState, "the online store is not open") }
        var fields = options.defaultHeaderFields
        for field in headerFields { fields[fields: field.name] = headerFields[fields: field.name] }
        return TransportRequest(method: method, url: try ODataRequest.join(serviceRoot: session.serviceRoot, relative: path), headerFields: fields)
    }
}
