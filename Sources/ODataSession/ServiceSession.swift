import Foundation
import HTTPTypes
public import ODataCore

/// The session with one OData service, below both stores: authentication, CSRF tokens, session cookies and
/// the SAP dialect, as SAP Gateway, S/4HANA and CAP ship them.
///
/// A session is an `HTTPTransport` that wraps another one. Each request gets the authenticator's header
/// fields, the session's cookies, a CSRF token when it modifies data, and `sap-client` / `sap-language`
/// when configured; a `PATCH` goes as ``updateMethod`` says. It retries a request at most
/// once after a `401` (with renewed credentials) and at most once after a `403 X-CSRF-Token: Required` (with a
/// new token); the back end executed neither of the rejected attempts, so nothing runs twice, and the retry
/// carries the same headers (the same `Repeatability-Request-ID`).
///
/// Nothing of the session is ever written: tokens and cookies live in memory, and the answers it passes up
/// carry no `Set-Cookie` and no CSRF token, so neither the technical cache nor the offline store can keep one.
/// ``endSession()`` forgets them (a user switch, a closed store).
///
/// ```swift
/// var options = SessionOptions()
/// options.authentication = BasicAuthentication(user: "CLERK", password: password)
/// options.sapClient = "100"
/// let session = ServiceSession(serviceRoot: "https://gateway/sap/opu/odata/sap/API_SALES_ORDER_SRV/",
///                              options: options, transport: try CurlTransport())
/// ```
public final class ServiceSession: HTTPTransport {
    /// The service root the CSRF token is fetched from.
    public let serviceRoot: String
    /// The options the session was created with.
    public let options: SessionOptions
    private let base: any HTTPTransport
    private let csrfToken = SingleFlight<CSRFToken>()
    private let cookies = CookieJar()
    private let counters = LockedValue(SessionStatistics())
    private let csrfField: HTTPField.Name?
    private let unconfiguredUpdateMethod = LockedValue(UpdateMethod.patch)

    /// A fetched token, or the back end's word that it wants none.
    private struct CSRFToken: Sendable, Equatable {
        var value: String?
    }

    /// Creates a session.
    ///
    /// - Parameters:
    ///   - serviceRoot: The service root, an absolute `http(s)` URL; the CSRF token is fetched from it.
    ///   - options: Authentication, CSRF, cookies and dialect.
    ///   - transport: The transport that sends the requests.
    public init(serviceRoot: String, options: SessionOptions = SessionOptions(), transport: any HTTPTransport) {
        self.serviceRoot = serviceRoot.hasSuffix("/") ? serviceRoot : serviceRoot + "/"
        self.options = options
        self.base = transport
        csrfField = options.csrf.isEnabled ? HTTPField.Name(options.csrf.headerName) : nil
    }

    /// How a partial update goes when ``SessionOptions/updateMethod`` is not set: ``UpdateMethod/patch`` until the
    /// session's owner sets another (the offline store makes it ``UpdateMethod/merge`` for a service whose
    /// `$metadata` is EDMX 1.0, OData V2). An update method set in the options always wins.
    public var defaultUpdateMethod: UpdateMethod {
        get { unconfiguredUpdateMethod.withLock { $0 } }
        set { unconfiguredUpdateMethod.withLock { $0 = newValue } }
    }

    /// How the session sends a partial update now: ``SessionOptions/updateMethod`` when set, else
    /// ``defaultUpdateMethod``.
    public var updateMethod: UpdateMethod { options.configuredUpdateMethod ?? defaultUpdateMethod }

    /// What the session has done so far.
    public var statistics: SessionStatistics { counters.withLock { $0 } }

    /// Forgets the session's CSRF token, cookies and the authenticator's credentials; the next request
    /// starts a new session.
    public func endSession() {
        csrfToken.reset()
        cookies.removeAll()
        options.authentication?.reset()
        counters.withLock { $0.sessionsEnded += 1 }
    }

    /// Sends a request within the session.
    ///
    /// - Parameter request: The request as a store built it.
    /// - Returns: The final answer, without `Set-Cookie` and CSRF token fields.
    /// - Throws: ``SessionError`` for a CSRF token the back end keeps rejecting or cannot give; the
    ///   authenticator's error; the transport's error; `CancellationError`.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        // A request the dialect leaves as it is (no `sap-client` or `sap-language`, no `PATCH` sent otherwise) is sent without a copy.
        if let adjusted = dialect(request) { return try await sendInSession(adjusted) }
        return try await sendInSession(request)
    }

    /// ``send(_:)`` after the dialect: credentials, CSRF token, the retries after a `401` or a `403`. Inlined into it.
    @inline(__always)
    private func sendInSession(_ request: TransportRequest) async throws -> TransportResponse {
        let modifying = Self.isModifying(request.method)
        var credentials = try await options.authentication?.headerFields()
        var token: CSRFToken? = modifying && csrfField != nil ? try await currentToken(for: request) : nil
        var renewedCredentials = false
        var renewedToken = false
        while true {
            try Task.checkCancellation()
            let (response, carriesSessionFields) = try await sendOnce(request, credentials: credentials, token: token?.value)
            if response.status == 401, let sent = credentials, !renewedCredentials, let authenticator = options.authentication {
                renewedCredentials = true
                if let renewed = try await authenticator.renewedHeaderFields(replacing: sent) {
                    counters.withLock { $0.credentialRenewals += 1 }
                    credentials = renewed
                    continue
                }
            }
            if response.status == 403, let csrfField, response.headerFields[csrfField]?.lowercased() == "required" {
                guard !renewedToken else {
                    throw SessionError(.csrfTokenRejected, statusCode: 403,
                                       "\(request.method) \(Self.pathOnly(request.url)): the back end refused the CSRF token (\(options.csrf.headerName): Required) again after a new one was fetched; the request was not executed")
                }
                renewedToken = true
                token = try await newToken(replacing: token ?? CSRFToken(value: nil), for: request)
                continue
            }
            return carriesSessionFields ? stripped(response) : response
        }
    }

    // MARK: - One attempt

    /// Inlined into its callers: one async frame fewer per request. Returns the answer and whether it carries
    /// `Set-Cookie` or the CSRF field (one pass over its fields; an answer with neither, the common case, needs no
    /// more).
    @inline(__always)
    private func sendOnce(_ request: TransportRequest, credentials: HTTPFields?, token: String?) async throws -> (TransportResponse, carriesSessionFields: Bool) {
        // The URL is parsed only when a cookie is held or received: a session without cookies costs nothing.
        let cookie = options.keepsCookies && !cookies.isEmpty ? URL(string: request.url).flatMap { cookies.header(for: $0) } : nil
        let response: TransportResponse
        if credentials == nil, token == nil || csrfField == nil, cookie == nil {
            response = try await base.send(request)  // nothing of the session's to add: no copy
        } else {
            var outgoing = request
            for field in credentials ?? [:] { outgoing.headerFields[field.name] = field.value }
            if let csrfField, let token { outgoing.headerFields[csrfField] = token }
            if let cookie { outgoing.headerFields[.cookie] = cookie }
            response = try await base.send(outgoing)
        }
        counters.withLock { $0.requests += 1 }
        let carriesSessionFields = carriesSessionFields(response.headerFields)
        if carriesSessionFields, options.keepsCookies, response.headerFields.contains(.setCookie), let url = URL(string: request.url) {
            cookies.store(response.headerFields[values: .setCookie], for: url)
        }
        return (response, carriesSessionFields)
    }

    /// Whether the fields hold `Set-Cookie` or the CSRF field, in one pass; a name of another length is not compared.
    private func carriesSessionFields(_ fields: HTTPFields) -> Bool {
        let setCookie = HTTPField.Name.setCookie.canonicalName
        guard let csrf = csrfField?.canonicalName else { return fields.contains(.setCookie) }
        let (setCookieLength, csrfLength) = (setCookie.utf8.count, csrf.utf8.count)
        return fields.contains { field in
            let name = field.name.canonicalName
            let length = name.utf8.count
            return (length == setCookieLength && name == setCookie) || (length == csrfLength && name == csrf)
        }
    }

    /// The answer as the stores see it: no cookie and no token a layer above could keep.
    private func stripped(_ response: TransportResponse) -> TransportResponse {
        var response = response
        response.headerFields[.setCookie] = nil
        if let csrfField { response.headerFields[csrfField] = nil }
        return response
    }

    // MARK: - CSRF tokens

    private func currentToken(for request: TransportRequest) async throws -> CSRFToken {
        try await csrfToken.value { try await self.fetchToken(for: request) }
    }

    private func newToken(replacing rejected: CSRFToken, for request: TransportRequest) async throws -> CSRFToken {
        try await csrfToken.replacing(rejected) { try await self.fetchToken(for: request) }
    }

    /// The header fields of a request that describe its body, its conditions or its identity; a token fetch
    /// made for the request takes every other field (credentials, API keys, a tenant header) from it.
    private static let requestSpecificFields: Set<String> = [
        "content-type", "content-length", "content-id", "content-encoding", "if-match", "if-none-match",
        "if-modified-since", "if-unmodified-since", "prefer", "repeatability-request-id", "repeatability-first-sent",
        "repeatability-client-id", "x-http-method", "accept",
    ]

    /// `GET <service root>` with `X-CSRF-Token: Fetch`: authenticated as `trigger` is (its credentials and
    /// other fields of the session, not of the request), with the session's cookies.
    private func fetchToken(for trigger: TransportRequest) async throws -> CSRFToken {
        guard let csrfField else { return CSRFToken(value: nil) }
        counters.withLock { $0.csrfTokenFetches += 1 }
        let fetch = TransportRequest(method: "GET", url: serviceRoot)
        var request = dialect(fetch) ?? fetch
        for field in trigger.headerFields where !Self.requestSpecificFields.contains(field.name.canonicalName) {
            request.headerFields.append(field)
        }
        request.headerFields[csrfField] = "Fetch"
        request.headerFields[.accept] = "application/json"
        var credentials = try await options.authentication?.headerFields()
        var response: TransportResponse
        do {
            response = try await sendOnce(request, credentials: credentials, token: nil).0
            if response.status == 401, let sent = credentials, let authenticator = options.authentication,
               let renewed = try await authenticator.renewedHeaderFields(replacing: sent) {
                counters.withLock { $0.credentialRenewals += 1 }
                credentials = renewed
                response = try await sendOnce(request, credentials: credentials, token: nil).0
            }
        } catch let error as CancellationError {
            throw error
        } catch {
            throw SessionError(.csrfTokenFetchFailed, "fetching a CSRF token from \(Self.pathOnly(serviceRoot)) failed: \(error)", underlying: error)
        }
        let value = response.headerFields[csrfField]
        if let value, !value.isEmpty, value.lowercased() != "required" {
            return CSRFToken(value: value)
        }
        guard (200..<400).contains(response.status) else {
            throw SessionError(.csrfTokenFetchFailed, statusCode: response.status,
                               "fetching a CSRF token from \(Self.pathOnly(serviceRoot)) answered HTTP \(response.status) without a token")
        }
        return CSRFToken(value: nil)  // the back end wants none
    }

    // MARK: - Dialect

    /// `sap-client` / `sap-language` on the URL, and the update method; `nil` when the request stays as it is.
    private func dialect(_ request: TransportRequest) -> TransportRequest? {
        let patch = Self.isModifying(request.method) && request.method.uppercased() == "PATCH"
        guard options.sapClient != nil || options.sapLanguage != nil || (patch && updateMethod != .patch) else { return nil }
        var request = request
        var additions: [String] = []
        if let client = options.sapClient, !Self.hasQueryParameter(request.url, "sap-client") {
            additions.append("sap-client=" + PercentEncoding.encodeQueryValue(client))
        }
        if let language = options.sapLanguage, !Self.hasQueryParameter(request.url, "sap-language") {
            additions.append("sap-language=" + PercentEncoding.encodeQueryValue(language))
        }
        if !additions.isEmpty {
            request.url += (request.url.contains("?") ? "&" : "?") + additions.joined(separator: "&")
        }
        if patch {
            switch updateMethod {
            case .patch: break
            case .merge: request.method = "MERGE"
            case .tunnelledMerge:
                request.method = "POST"
                request.headerFields[HTTPField.Name("X-HTTP-Method")!] = "MERGE"
            }
        }
        return request
    }

    /// A `$batch` with its parts' partial updates sent as ``updateMethod`` says: `MERGE` for
    /// `.merge` and `.tunnelledMerge` alike (a part is never seen by a proxy, so it needs no tunnel).
    ///
    /// - Parameter batch: The batch as a store built it.
    /// - Returns: The batch to encode.
    public func dialect(_ batch: BatchRequest) -> BatchRequest {
        guard updateMethod != .patch else { return batch }
        func merged(_ request: ODataRequest) -> ODataRequest {
            guard request.method == .patch, let merge = HTTPRequest.Method("MERGE") else { return request }
            var request = request
            request.method = merge
            return request
        }
        return BatchRequest(parts: batch.parts.map { part in
            switch part {
            case .request(let request): .request(merged(request))
            case .changeSet(let members): .changeSet(members.map { .init(contentID: $0.contentID, request: merged($0.request)) })
            }
        })
    }

    private static let modifyingMethods: Set<String> = ["POST", "PUT", "PATCH", "MERGE", "DELETE"]

    /// Whether `method` modifies data; a read, spelled as the stores spell it, is known without a copy in capitals.
    private static func isModifying(_ method: String) -> Bool {
        method == "GET" || method == "HEAD" ? false : modifyingMethods.contains(method.uppercased())
    }

    private static func hasQueryParameter(_ url: String, _ name: String) -> Bool {
        guard let query = url.split(separator: "?", maxSplits: 1).dropFirst().first else { return false }
        return query.split(separator: "&").contains { $0 == name || $0.hasPrefix(name + "=") }
    }

    /// A URL without its query, for messages (a query may carry values the user would not log).
    private static func pathOnly(_ url: String) -> String {
        String(url.split(separator: "?", maxSplits: 1).first ?? "")
    }
}

/// What a ``ServiceSession`` has done since it was created.
public struct SessionStatistics: Sendable, Hashable {
    /// HTTP requests sent, token fetches and retries included.
    public var requests = 0
    /// CSRF tokens fetched (`X-CSRF-Token: Fetch`).
    public var csrfTokenFetches = 0
    /// Requests retried with renewed credentials after a `401`.
    public var credentialRenewals = 0
    /// Times ``ServiceSession/endSession()`` ended the session.
    public var sessionsEnded = 0
}
