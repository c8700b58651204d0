import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataSession

extension OfflineODataProvider {
    /// Whether a download's `GET` asks the back end to track changes.
    enum ChangeTracking {
        /// No `Prefer: odata.track-changes`.
        case none
        /// `Prefer: odata.track-changes`, asked again without it when the back end refuses it (`400`, `501`).
        case preferred
        /// A delta link's `GET`: `Prefer: odata.track-changes`, and a `410 Gone` throws ``DeltaExpired``.
        case delta
    }

    /// The headers every back-end request carries: `Accept`, the parameters' headers, and the
    /// current user's credentials.
    func backEndHeaders(accept: String = "application/json") -> HTTPFields {
        var fields = HTTPFields()
        fields[.accept] = accept
        fields[HTTPField.Name("OData-Version")!] = "4.0"
        let credentials = (credentialsUser ?? parameters.currentUser).flatMap { parameters.credentials[$0] } ?? [:]
        for overriding in [parameters.httpHeaders, credentials] {
            for field in overriding { fields[fields: field.name] = overriding[fields: field.name] }
        }
        return fields
    }

    /// GETs `url` and returns the body of a 200 answer.
    func fetch(_ url: String, accept: String = "application/json", trackChanges: Bool = false) async throws -> Data {
        // Without `missingIsNil` a 404 throws, so the answer is never nil.
        try await fetch(url, accept: accept, changeTracking: trackChanges ? .preferred : .none, missingIsNil: false)!
    }

    /// Reads `url` from the back end; with `missingIsNil`, a 404 or 410 answers `nil`.
    ///
    /// - Throws: `OfflineODataError.downloadFailed` for a transport error or any other status than 200;
    ///   ``DeltaExpired`` for a `410` with ``ChangeTracking/delta``.
    func fetch(_ url: String, accept: String = "application/json", trackChanges: Bool = false, missingIsNil: Bool) async throws -> Data? {
        try await fetch(url, accept: accept, changeTracking: trackChanges ? .preferred : .none, missingIsNil: missingIsNil)
    }

    /// Reads `url` from the back end, asking for change tracking as `changeTracking` says; with `missingIsNil`, a
    /// 404 or 410 answers `nil`.
    ///
    /// - Throws: `OfflineODataError.downloadFailed` for a transport error or any other status than 200;
    ///   ``DeltaExpired`` for a `410` with ``ChangeTracking/delta``.
    func fetch(_ url: String, accept: String = "application/json", changeTracking: ChangeTracking, missingIsNil: Bool = false) async throws -> Data? {
        var response: TransportResponse
        do {
            let transport = RetryingTransport(base: try transport(), policy: parameters.retryPolicy, clock: parameters.clock)
            var headers = backEndHeaders(accept: accept)
            if changeTracking != .none { headers[HTTPField.Name("Prefer")!] = "odata.track-changes" }
            response = try await transport.send(TransportRequest(method: "GET", url: url, headerFields: headers))
            if changeTracking == .preferred && (response.status == 400 || response.status == 501) {
                // Change tracking is a preference (RFC 7240), yet some producers (mock-sap, for a set
                // without a change timestamp) refuse the request: ask again without it; the set is then
                // downloaded in full each time, as for a producer that ignores the preference.
                headers[HTTPField.Name("Prefer")!] = nil
                response = try await transport.send(TransportRequest(method: "GET", url: url, headerFields: headers))
            }
        } catch {
            if error is CancellationError { throw error }
            throw Self.downloadError("GET \(url)", error)
        }
        if changeTracking == .delta && response.status == 410 { throw DeltaExpired() }
        if missingIsNil && (response.status == 404 || response.status == 410) { return nil }
        guard response.status == 200 else {
            let serviceError = ODataServiceError.parse(response.body, statusCode: response.status)
            throw OfflineODataError(.downloadFailed, "GET \(url) answered \(response.status): \(serviceError.code) \(serviceError.message)",
                                    httpStatus: response.status)
        }
        return response.body
    }

    /// A next or delta link made absolute under the service root.
    func absolute(_ link: String) throws -> String {
        if link.hasPrefix("http://") || link.hasPrefix("https://") { return link }
        return try ODataRequest.join(serviceRoot: serviceRoot, relative: link)
    }
}

extension OfflineODataProvider {
    /// The error of a back-end read that got no usable answer: ``OfflineODataError/backEndUnreachable`` when no answer
    /// came (`NoAnswer`), else ``OfflineODataError/downloadFailed``.
    static func downloadError(_ what: String, _ error: any Error) -> OfflineODataError {
        if NoAnswer.of(error) != nil {
            return OfflineODataError(.backEndUnreachable, "\(what): the back end could not be reached: \(error)", underlying: error)
        }
        return OfflineODataError(.downloadFailed, "\(what) failed: \(error)", underlying: error)
    }
}

/// A delta link the back end no longer knows (410 Gone).
struct DeltaExpired: Error {}
