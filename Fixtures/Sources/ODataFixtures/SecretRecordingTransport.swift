import Foundation
import CurlHTTP
import HTTPTypes
import ODataCore

/// A `CurlTransport` that remembers the secrets it carried — the base64 of basic credentials or a bearer token,
/// cookie name=value pairs, CSRF tokens — so that a test can search files, error messages and log lines for them.
public final class SecretRecordingTransport: HTTPTransport {
    private let base: CurlTransport
    private let seen = LockedValue<Set<String>>([])

    /// Makes the `CurlTransport` it sends through.
    public init() throws { base = try CurlTransport() }

    deinit { base.shutdown() }

    /// Sends `request` and notes the secrets of the request and its answer (values of 8 characters or more).
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await base.send(request)
        let csrf = HTTPField.Name("X-CSRF-Token")!
        var values: [String] = []
        if let value = request.headerFields[.authorization] { values.append(value.components(separatedBy: " ").last ?? value) }
        if let value = request.headerFields[.cookie] { values += value.components(separatedBy: "; ") }
        if let value = request.headerFields[csrf], value != "Fetch" { values.append(value) }
        if let value = response.headerFields[csrf], value != "Required" { values.append(value) }
        for cookie in response.headerFields[values: .setCookie] { values.append(String(cookie.split(separator: ";").first ?? "")) }
        seen.withLock { $0.formUnion(values.filter { $0.count >= 8 }) }
        return response
    }

    /// Every secret value seen so far.
    public var secrets: [String] { seen.withLock { Array($0) } }
}
