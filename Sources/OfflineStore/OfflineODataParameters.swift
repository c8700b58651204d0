public import HTTPTypes
public import CurlHTTP
public import ODataCore
public import ODataTelemetry
public import ODataSession
public import ODataKeys
import Foundation
import SQLCipher

/// The settings of an ``OfflineODataProvider``.
///
/// One store lives in the directory `storePath/storeName`. It is encrypted: with
/// ``storeEncryptionKey`` when given, else with a random key kept by ``keyStore`` (by default a
/// 0600 key file next to the store); plaintext only when ``disableDefaultEncryptionKey`` is set
/// and no key is given.
public struct OfflineODataParameters: Sendable {
    /// The store's name: the directory under ``storePath`` that holds it. The default is `"offline"`.
    public var storeName: String
    /// The directory that holds stores. The default is ``defaultStorePath``: a per-user data directory
    /// (`$XDG_DATA_HOME/odatastores`, else `~/.local/share/odatastores`), not the process's current directory, so a
    /// service started from anywhere finds its stores again and never writes them where it happened to start.
    public var storePath: String
    /// The passphrase the store key is derived from (PBKDF2 or scrypt, see ``keyDerivation``).
    /// The default is `nil`: a random key from ``keyStore``.
    public var storeEncryptionKey: String?
    /// Whether a store without ``storeEncryptionKey`` is stored in plaintext instead of under a
    /// random default key. The default is `false` (encrypted).
    public var disableDefaultEncryptionKey: Bool
    /// Where the random default key is kept. The default (`nil`) is a `FileKeyStore` at
    /// `storePath/storeName.key` (mode 0600).
    public var keyStore: (any KeyStore)?
    /// How the passphrase becomes a key. The default is `KeyDerivation.standard`.
    public var keyDerivation: KeyDerivation
    /// The memory the store's SQLCipher page cache may use, in bytes: decrypted pages held there are read
    /// without decrypting them again. The default is 128 MiB.
    public var pageCacheBudget: Int = 128 << 20
    /// Where the store's bulk work runs: its opens, downloads and uploads, and its writer (every transaction, a local
    /// change's too). The default, `BackgroundExecutor.shared`, runs them at `SCHED_IDLE`, so they yield a core to
    /// the process's other threads at once (and take the default priority when work waited 200 ms: a saturated CPU
    /// slows them, never stops them); give a `BackgroundExecutor` of priority `.nice(10)`
    /// where other work keeps the CPU busy all the time (a local write waits for the writer), or of nice 0 where the
    /// store's work is the process's main work (a command-line tool).
    public var backgroundExecutor: BackgroundExecutor = .shared
    /// The page size of a new store's database in bytes: a power of two from 512 to 65,536, the unit SQLCipher
    /// reads, decrypts and checks. The default is 4,096. An existing store keeps the size it was made with (found
    /// when it opens, whatever this says).
    ///
    /// A query that finds its rows through an index reads about one page per row the first time after `open()`
    /// (rows found through an index lie scattered), and each page read costs a fixed part (a system call, SQLCipher's
    /// checks) and a part that grows with its size (decryption): smaller pages make that first read cheaper — 1,024
    /// took the first selective query of `OfflineBenchmarks` at a million narrow rows from 2.0–2.3× to 1.6–1.8× the time
    /// of the same query later — and scans dearer (≈ 1.9× there: four times the pages). A row longer than a page less
    /// 35 bytes and its SQLCipher reserve (≈ 940 bytes at 1,024) continues on overflow pages. Keep the default for sets
    /// that are mostly scanned (a `$filter` on properties without an index) or whose entities are long; choose 1,024
    /// or 2,048 for large sets of narrow entities read mostly through indexes.
    public var databasePageSize: Int = 4096
    /// The number of entities per page of a local read; a longer result carries an
    /// `@odata.nextLink` that the store resolves itself. The default is `0` (no paging).
    public var pageSize: Int
    /// Whether queued requests carry `Repeatability-Request-ID` / `Repeatability-First-Sent`.
    /// The default is `false`. Without it, an upload sends each request that is not idempotent (`POST`,
    /// `PATCH`, `MERGE`) on a new connection, so that the transport cannot re-send it by itself after a reused
    /// connection died (see ``uploadRetries``): one by one against a producer on loopback that cost about a
    /// third of the requests per second (`BENCHMARKS.md`), and against an HTTPS back end it costs a handshake per
    /// request. With it (for a back end that honours repeatability) connections are reused; `$batch`
    /// (``uploadMode``) amortises the connection either way.
    public var enableRepeatableRequests: Bool
    /// Whether opening a store with another user's pending requests (``currentUser`` differs from
    /// the user who queued them) uploads them first, with that user's credentials. When `false`
    /// (the default), such an open fails with `OfflineODataError` `.pendingRequestsOfAnotherUser`.
    public var forceUploadOnUserSwitch: Bool
    /// The user working with the store now. The default is `nil`.
    public var currentUser: String?
    /// HTTP headers (for example `Authorization`) to send per user name, as `HTTPFields` like every header in the
    /// library (`["alice": [.authorization: "Bearer …"]]`). The default is empty.
    public var credentials: [String: HTTPFields]
    /// Extra headers sent with every back-end request (`[HTTPField.Name("sap-client")!: "100"]`). The default is empty.
    public var httpHeaders: HTTPFields
    /// The HTTP transport; `nil` (the default) makes a `CurlTransport` with ``transportConfiguration`` while the store
    /// talks to the back end.
    public var transport: (any HTTPTransport)?
    /// The options of the store's own `CurlTransport` (when ``transport`` is `nil`), as `OnlineStoreOptions.transport`
    /// gives the online store's: timeouts, proxy, and TLS — the CAs to trust (`caFile`, `caPath`) and the client
    /// certificate for mutual TLS (`clientCertificate`, its key's pass phrase never reported). The default is
    /// `CurlConfiguration()`: the system's CAs, no client certificate. With a ``transport`` of your own, configure
    /// that transport instead: the store refuses parameters that set both.
    public var transportConfiguration: CurlConfiguration = CurlConfiguration()
    /// Where the store reports its requests, uploads and downloads: a swift-log `Logger`, a swift-metrics factory and
    /// a swift-distributed-tracing tracer. The default logs nothing and uses the process-wide metrics factory and
    /// tracer. Nothing secret is reported: no credential, token, cookie, key or body.
    public var telemetry = Telemetry()
    /// The session with the back end: authentication (basic, bearer, custom), CSRF tokens, session cookies
    /// and the SAP dialect (`sap-client`, `sap-language`, `MERGE`). The default is `SessionOptions()`: no
    /// authentication, a CSRF token fetched before the first upload, cookies kept in memory, and updates sent as
    /// `MERGE` to a service whose `$metadata` is EDMX 1.0 (OData V2), as `PATCH` to any other; a
    /// `SessionOptions.updateMethod` set here is used whatever the service (`.patch` for a V2 back end that
    /// takes it). The authenticator is the current user's; a previous user's requests (``forceUploadOnUserSwitch``) go in a
    /// session of their own with ``credentials`` of that user.
    public var session: SessionOptions = SessionOptions()
    /// When the upload and the download send a request again (`RetryPolicy`): after no answer, `408`,
    /// `429` or a `5xx`, with exponential backoff and full jitter, honouring `Retry-After` on `429` and `503`, within a
    /// time budget. Without ``enableRepeatableRequests``, a request that is not idempotent (`POST`, `PATCH`, `MERGE`)
    /// is re-sent only after a failure that proves the back end never got it (connection refused, a host name that
    /// does not resolve); otherwise its report and its ErrorArchive entry say the back end may have executed it.
    /// When the policy gives up on a request that got no answer at all, the upload stops and the request stays
    /// queued (``OfflineODataError/backEndUnreachable``). The default is `RetryPolicy()`: 4 sends, 100 ms doubling up
    /// to 10 s, within 30 s.
    public var retryPolicy = RetryPolicy()
    /// The clock retries and ``OfflineSynchronizer`` wait on. The default is the system's; tests give ODataTesting's
    /// `TestClock`, so that nothing sleeps.
    public var clock: any RetryClock = SystemRetryClock()
    /// How often an upload re-sends a request: ``retryPolicy``'s `maxAttempts` less one. The default is `3`.
    public var uploadRetries: Int {
        get { retryPolicy.maxAttempts - 1 }
        set { retryPolicy.maxAttempts = newValue + 1 }
    }
    /// The longest pause before the first re-send: ``retryPolicy``'s `baseDelay` (it doubles for each further one).
    /// The default is 100 ms.
    public var uploadRetryDelay: Duration {
        get { retryPolicy.baseDelay }
        set { retryPolicy.baseDelay = newValue }
    }
    /// How an upload sends the queued requests: one HTTP request each, or consecutive requests
    /// together in `$batch` bodies. The default is ``OfflineODataUploadMode/oneByOne``: it works
    /// with every back end (some refuse or limit `$batch`), and a request's failure or retry touches
    /// only that request. ``OfflineODataUploadMode/batch(maxRequestsPerBatch:)`` saves a round trip
    /// per request and commits the answers of a `$batch` in one transaction — measured 4.8× the
    /// requests per second on loopback and 13× with 2 ms per HTTP request, in `$batch`es of 100
    /// (BENCHMARKS.md) — with the same outcome for every request. Choose it for back ends that
    /// accept `$batch`.
    public var uploadMode: OfflineODataUploadMode = .oneByOne
    /// Documents the service's `$metadata` includes with `edmx:Reference` (a vocabulary such as `Org.OData.Core.V1`,
    /// another service's types), as bytes: a property of one of their types is read with that type (an enum's members,
    /// a complex type's properties, a type definition's underlying type) in local queries, instead of being kept as
    /// it comes with a warning. Give them at every open: the store keeps the service's `$metadata`, not these.
    public var metadataReferences: [Data] = []
    /// What an upload does with an update or delete the back end refuses because another client changed the entity
    /// (a status of ``conflictStatuses``): see ``OfflineODataConflictPolicy`` for each policy's table. The default is
    /// ``OfflineODataConflictPolicy/archive``: the request goes to the ErrorArchive, as in the SAP SDK.
    public var conflictPolicy: OfflineODataConflictPolicy = .archive
    /// The statuses that mean such a conflict. The default is `[412]` (`If-Match` failed); add `409` for a back end that
    /// answers a version conflict so. Only an update or delete of an entity is resolved (not a create, a relationship
    /// request or a media replace).
    public var conflictStatuses: Set<Int> = [412]

    /// Creates parameters; every argument has the default documented on its property.
    ///
    /// - Parameters:
    ///   - storeName: The store's name.
    ///   - storePath: The directory holding stores.
    ///   - storeEncryptionKey: The passphrase, or `nil` for a random default key.
    ///   - disableDefaultEncryptionKey: Store plaintext when no key is given.
    ///   - keyStore: Where the default key is kept.
    ///   - keyDerivation: The KDF and its cost.
    ///   - pageSize: Entities per local page, `0` for no paging.
    ///   - enableRepeatableRequests: Whether to send repeatability headers.
    ///   - forceUploadOnUserSwitch: Whether to upload another user's requests first.
    ///   - currentUser: The current user.
    ///   - credentials: Headers per user.
    ///   - httpHeaders: Headers for every request.
    ///   - transport: The HTTP transport.
    public init(
        storeName: String = "offline",
        storePath: String = OfflineODataParameters.defaultStorePath,
        storeEncryptionKey: String? = nil,
        disableDefaultEncryptionKey: Bool = false,
        keyStore: (any KeyStore)? = nil,
        keyDerivation: KeyDerivation = .standard,
        pageSize: Int = 0,
        enableRepeatableRequests: Bool = false,
        forceUploadOnUserSwitch: Bool = false,
        currentUser: String? = nil,
        credentials: [String: HTTPFields] = [:],
        httpHeaders: HTTPFields = [:],
        transport: (any HTTPTransport)? = nil
    ) {
        self.storeName = storeName
        self.storePath = storePath
        self.storeEncryptionKey = storeEncryptionKey
        self.disableDefaultEncryptionKey = disableDefaultEncryptionKey
        self.keyStore = keyStore
        self.keyDerivation = keyDerivation
        self.pageSize = pageSize
        self.enableRepeatableRequests = enableRepeatableRequests
        self.forceUploadOnUserSwitch = forceUploadOnUserSwitch
        self.currentUser = currentUser
        self.credentials = credentials
        self.httpHeaders = httpHeaders
        self.transport = transport
    }

    /// Checks the parameters.
    func validate() throws(OfflineODataError) {
        guard !storeName.isEmpty, !storeName.contains("/"), storeName != ".", storeName != ".." else {
            throw OfflineODataError(.invalidParameters, "storeName '\(storeName)' must be a non-empty file name without '/'")
        }
        guard !storePath.isEmpty else {
            throw OfflineODataError(.invalidParameters, "storePath is empty (the default needs HOME or XDG_DATA_HOME): give the directory that holds stores")
        }
        if let problem = retryPolicy.problem { throw OfflineODataError(.invalidParameters, "retryPolicy: \(problem)") }
        if let status = conflictStatuses.first(where: { !(400..<500).contains($0) }) {
            throw OfflineODataError(.invalidParameters, "conflictStatuses must be 4xx statuses, got \(status)")
        }
        if case .batch(let limit) = uploadMode, limit < 1 {
            throw OfflineODataError(.invalidParameters, "maxRequestsPerBatch must be at least 1, got \(limit)")
        }
        guard pageCacheBudget >= 1 << 20 else {
            throw OfflineODataError(.invalidParameters, "pageCacheBudget must be at least 1 MiB, got \(pageCacheBudget) bytes")
        }
        guard SQLCipherConnection.pageSizes.contains(databasePageSize) else {
            throw OfflineODataError(.invalidParameters, "databasePageSize must be a power of two from 512 to 65536 bytes, got \(databasePageSize)")
        }
        if transport != nil, transportConfiguration != CurlConfiguration() {
            throw OfflineODataError(.invalidParameters, "transportConfiguration is used only by the store's own transport: configure the transport given in `transport` instead")
        }
        guard pageSize >= 0 else { throw OfflineODataError(.invalidParameters, "pageSize must not be negative, got \(pageSize)") }
        if let key = storeEncryptionKey, key.isEmpty {
            throw OfflineODataError(.invalidParameters, "storeEncryptionKey is empty; pass nil for the default key")
        }
    }

    /// The default ``storePath``: `$XDG_DATA_HOME/odatastores`, else `$HOME/.local/share/odatastores` (the XDG Base
    /// Directory rule for user data: unlike the online store's cache, the offline store holds changes not uploaded
    /// yet, so it never defaults to a cache or temporary directory). Empty when the process has neither variable (a
    /// service without a home): ``OfflineODataProvider/init(serviceRoot:parameters:delegate:)`` then refuses the
    /// parameters with `invalidParameters` until ``storePath`` is given.
    public static var defaultStorePath: String { defaultStorePath(environment: ProcessInfo.processInfo.environment) }

    /// ``defaultStorePath`` for these environment variables.
    static func defaultStorePath(environment: [String: String]) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/odatastores" }
        if let home = environment["HOME"], !home.isEmpty { return (home.hasSuffix("/") ? home : home + "/") + ".local/share/odatastores" }
        return ""
    }

    /// The store's directory.
    var storeDirectory: String {
        (storePath.hasSuffix("/") ? storePath : storePath + "/") + storeName
    }
}

/// How ``OfflineODataProvider/upload()`` sends the queued requests (see ``OfflineODataParameters/uploadMode``).
public enum OfflineODataUploadMode: Sendable, Hashable {
    /// One HTTP request per queued request, in order. The default.
    case oneByOne
    /// Consecutive queued requests in one `$batch` POST, at most `maxRequestsPerBatch` in a body,
    /// in order. Each request is its own change set, so one failure never rolls back another, and
    /// each outcome is reported exactly as in ``oneByOne``. A batch ends after a create, so requests
    /// that use the create's temporary key are sent once the server's key is known. A transport
    /// failure, 408, 429 or 5xx of the whole batch is retried like a single request.
    case batch(maxRequestsPerBatch: Int)
}
