public import HTTPTypes
import Foundation
import ODataCore

/// Authenticates the requests of a ``ServiceSession``: it gives the header fields a request carries, and
/// renews them when the back end answers `401 Unauthorized`.
///
/// Ready implementations: ``BasicAuthentication``, ``BearerAuthentication`` (a token from your provider,
/// asked again after a `401`). A client certificate is the transport's business
/// (`CurlConfiguration.clientCertificate`), not an authenticator's. Implement the protocol for anything else
/// (an API key header, a signed request).
///
/// The session adds these fields below the stores, on the wire only: they never reach the technical cache,
/// the offline store's files, the ErrorArchive or an error message.
public protocol RequestAuthenticator: Sendable {
    /// The header fields that authenticate the next request, such as `Authorization: Bearer …`.
    ///
    /// - Throws: Whatever getting the credentials throws (the request then fails with it, unsent).
    func headerFields() async throws -> HTTPFields

    /// The back end answered `401` to a request sent with `rejected`: the fields to retry it with, or `nil`
    /// when the credentials cannot be renewed (the `401` then stands).
    ///
    /// The session retries each request at most once after a `401`. Many requests may be rejected with the
    /// same fields at once; a good implementation renews once for all of them (``BearerAuthentication`` does).
    ///
    /// - Parameter rejected: The fields the rejected request carried.
    /// - Returns: The fields to retry with, or `nil`.
    /// - Throws: Whatever renewing throws.
    func renewedHeaderFields(replacing rejected: HTTPFields) async throws -> HTTPFields?

    /// Forgets credentials held for the current session (a user switch, a closed store). The default does
    /// nothing.
    func reset()
}

extension RequestAuthenticator {
    /// Does nothing: an authenticator that keeps no per-session state has nothing to forget.
    public func reset() {}
}

/// HTTP basic authentication (RFC 7617): the same `Authorization: Basic …` on every request; a `401` stands.
public struct BasicAuthentication: RequestAuthenticator {
    private let fields: HTTPFields

    /// Creates basic authentication for a user.
    ///
    /// - Parameters:
    ///   - user: The user name (it must not contain `:`).
    ///   - password: The password.
    public init(user: String, password: String) {
        fields = [.authorization: "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()]
    }

    /// The `Authorization: Basic …` field.
    public func headerFields() async throws -> HTTPFields { fields }

    /// `nil`: a password cannot be renewed by asking again.
    public func renewedHeaderFields(replacing rejected: HTTPFields) async throws -> HTTPFields? { nil }
}

/// Bearer token authentication (RFC 6750) with tokens from your provider — an OAuth 2.0 client, a token
/// exchange, an SAP BTP destination.
///
/// The provider is asked once for the first token, and once more after a `401` however many concurrent
/// requests met it (single flight); each rejected request is then retried once with the new token.
///
/// ```swift
/// let auth = BearerAuthentication { try await oauth.fetchAccessToken() }
/// ```
public final class BearerAuthentication: RequestAuthenticator {
    private let provider: @Sendable () async throws -> String
    private let token = SingleFlight<String>()
    private let requests = LockedValue(0)

    /// Creates bearer authentication.
    ///
    /// - Parameter tokenProvider: Returns a valid access token; called for the first request and after a
    ///   `401`, never concurrently with itself.
    public init(tokenProvider: @escaping @Sendable () async throws -> String) {
        provider = tokenProvider
    }

    /// How often the token provider has been asked.
    public var tokenRequests: Int { requests.withLock { $0 } }

    /// The `Authorization: Bearer …` field with the current token (fetched when none is held).
    public func headerFields() async throws -> HTTPFields {
        Self.fields(try await token.value { try await self.fetch() })
    }

    /// The field with a new token, unless another request already replaced the rejected one.
    public func renewedHeaderFields(replacing rejected: HTTPFields) async throws -> HTTPFields? {
        guard let value = rejected[.authorization], value.hasPrefix("Bearer ") else { return try await headerFields() }
        return Self.fields(try await token.replacing(String(value.dropFirst(7))) { try await self.fetch() })
    }

    /// Forgets the token; the next request asks the provider again.
    public func reset() { token.reset() }

    private func fetch() async throws -> String {
        requests.withLock { $0 += 1 }
        return try await provider()
    }

    private static func fields(_ token: String) -> HTTPFields {
        [.authorization: "Bearer " + token]
    }
}
