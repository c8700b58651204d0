/// How a ``ServiceSession`` talks to its back end: authentication, CSRF protection, cookies and the SAP
/// dialect. Both stores take one (`OnlineStoreOptions.session`, `OfflineODataParameters.session`); every
/// property says its default.
public struct SessionOptions: Sendable {
    /// Authenticates every request and renews credentials after a `401`. The default is `nil` (requests go
    /// as the store sends them).
    public var authentication: (any RequestAuthenticator)?
    /// The CSRF token protocol of SAP Gateway, S/4HANA and CAP. The default is ``CSRFPolicy/automatic``.
    public var csrf: CSRFPolicy = .automatic
    /// Whether session cookies are kept (in memory) and sent back. The default is `true`: an SAP back end
    /// binds a CSRF token to the session cookie that came with it.
    public var keepsCookies: Bool = true
    /// The SAP client (`sap-client`), added to every request URL that names none. The default is `nil`.
    public var sapClient: String?
    /// The logon language (`sap-language`, such as `EN`), added to every request URL that names none. The
    /// default is `nil` (the back end's default).
    public var sapLanguage: String?
    /// How a partial update (`PATCH`) is sent. Not set, it reads ``UpdateMethod/patch`` and the session's
    /// ``ServiceSession/defaultUpdateMethod`` decides: `PATCH`, unless the session's owner knows the service speaks
    /// OData V2 (the offline store, from an EDMX 1.0 `$metadata`, makes it ``UpdateMethod/merge``). Set, it is
    /// used whatever the service: OData V2 producers that refuse `PATCH` want ``UpdateMethod/merge`` or
    /// ``UpdateMethod/tunnelledMerge``; one that takes `PATCH` can be given ``UpdateMethod/patch``.
    public var updateMethod: UpdateMethod {
        get { configuredUpdateMethod ?? .patch }
        set { configuredUpdateMethod = newValue }
    }
    /// The update method set in these options (``updateMethod``, or the initialiser's `updateMethod`), or `nil`
    /// when none was: the session then sends partial updates as its ``ServiceSession/defaultUpdateMethod`` says.
    public private(set) var configuredUpdateMethod: UpdateMethod?

    /// Creates the default options.
    public init() {}

    /// Creates options.
    ///
    /// - Parameters:
    ///   - authentication: The authenticator, or `nil`.
    ///   - csrf: The CSRF policy.
    ///   - sapClient: The SAP client, or `nil`.
    ///   - sapLanguage: The logon language, or `nil`.
    ///   - updateMethod: How a `PATCH` is sent; `nil` (the default) leaves it to the session's
    ///     ``ServiceSession/defaultUpdateMethod``.
    public init(authentication: (any RequestAuthenticator)? = nil, csrf: CSRFPolicy = .automatic,
                sapClient: String? = nil, sapLanguage: String? = nil, updateMethod: UpdateMethod? = nil) {
        self.authentication = authentication
        self.csrf = csrf
        self.sapClient = sapClient
        self.sapLanguage = sapLanguage
        self.configuredUpdateMethod = updateMethod
    }
}

/// Whether and how a ``ServiceSession`` fetches and sends CSRF tokens.
///
/// Automatic: before the first modifying request (`POST`, `PUT`, `PATCH`, `MERGE`, `DELETE`, and so every
/// `$batch`) the session fetches a token with `X-CSRF-Token: Fetch` on a `GET` of the service root, keeps it
/// for the session and sends it on every modifying request. A `403` that carries `X-CSRF-Token: Required`
/// fetches a new token once — one fetch for all concurrent requests — and retries the request once; a second
/// such `403` fails the request with ``SessionError/csrfTokenRejected``. A back end that answers the fetch
/// without a token is taken to need none.
public struct CSRFPolicy: Sendable, Hashable {
    /// Whether tokens are fetched and sent.
    public var isEnabled: Bool
    /// The header field that carries the token. SAP's is `X-CSRF-Token`.
    public var headerName: String

    /// Tokens fetched and sent in `X-CSRF-Token`.
    public static let automatic = CSRFPolicy(isEnabled: true, headerName: "X-CSRF-Token")
    /// No tokens: for back ends without CSRF protection (saves the one fetch per session).
    public static let off = CSRFPolicy(isEnabled: false, headerName: "X-CSRF-Token")

    /// Tokens fetched and sent in another header field, for a back end that names it differently.
    ///
    /// - Parameter headerName: The header field's name.
    /// - Returns: The policy.
    public static func automatic(headerName: String) -> CSRFPolicy {
        CSRFPolicy(isEnabled: true, headerName: headerName)
    }
}

/// How a ``ServiceSession`` sends a partial update.
public enum UpdateMethod: Sendable, Hashable {
    /// `PATCH`, as OData V4 (and most V2 producers) expect.
    case patch
    /// `MERGE`, the OData V2 verb.
    case merge
    /// `POST` with `X-HTTP-Method: MERGE`, for a V2 producer behind a proxy that lets only `GET` and `POST` pass.
    case tunnelledMerge
}
