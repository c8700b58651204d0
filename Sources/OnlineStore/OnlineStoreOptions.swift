import Foundation
public import ODataTelemetry
public import CurlHTTP
public import HTTPTypes
public import ODataSession
public import TechnicalCache

/// The options of an ``OnlineODataStore``; every property says its default.
public struct OnlineStoreOptions: Sendable {
    /// Whether the store has a technical cache. The default is `true`.
    public var useCache: Bool = true
    /// The passphrase the cache's key is derived from. The default is `nil`: a random key is
    /// generated and kept in the key file `<storeDirectory>/<storeName>.cache/cache.key` (0600).
    public var cacheEncryptionKey: String?
    /// Where the random cache key is kept when no ``cacheEncryptionKey`` is given — for example the
    /// platform's keyring behind your own `KeyStore`. The default is `nil`: the key file
    /// `<storeDirectory>/<storeName>.cache/cache.key` (0600).
    public var cacheKeyStore: (any KeyStore)?
    /// Switches cache encryption off. Only for data that is not confidential; a store whose options
    /// also give ``cacheEncryptionKey`` or ``cacheKeyStore`` is refused. The default is `false`.
    public var disableCacheEncryption: Bool = false
    /// The most bytes the cache may hold (payloads, headers and metadata); least recently used
    /// entries go first. The default is 64 MiB.
    public var cacheSizeLimit: Int = 64 << 20
    /// The bytes of recently read cache entries held decoded in memory, so that reading one again costs
    /// neither decryption nor hashing its URL; a held entry answers only while the cache on disk still
    /// stores it. The default is 16 MiB; 0 decrypts every read from the disk.
    public var cacheMemoryBudget: Int = 16 << 20
    /// The directory the store keeps its files in. The default is `~/.cache/odatastores`
    /// (or the system's temporary directory when there is no home).
    public var storeDirectory: URL = OnlineStoreOptions.defaultDirectory
    /// The store's name; its cache lives in `<storeDirectory>/<storeName>.cache`. The default is `"online"`.
    public var storeName: String = "online"
    /// A partition (user or tenant) so that two users of one cache never see each other's entries.
    /// The default is `nil` (one partition).
    public var cachePartition: String?
    /// How the cache key is derived from ``cacheEncryptionKey``. The default is
    /// `KeyDerivation.standard` (PBKDF2-HMAC-SHA256, 600,000 rounds); tests may lower the cost.
    public var cacheKeyDerivation: KeyDerivation = .standard
    /// How often the cache's writes reach the disk. The default is `.periodic(interval: .seconds(1))`:
    /// a killed process loses nothing (commits are in the page cache), a system crash or power failure
    /// may lose the cache writes of the last second — harmless for a cache, whose entries the server
    /// can give again. `.full` flushes every commit (nothing lost even on power failure) at the price
    /// of one fsync per stored response and per 304 refresh (0.5–8 ms measured here).
    public var cacheDurability: CacheDurability = .periodic(interval: .seconds(1))
    /// A Redis server the cache shares with the other instances of a fleet: a local miss is read from Redis
    /// (passive mode too), every stored server answer and 304 refresh is written to it off the caller's path.
    /// Redis holds only sealed entries under keyed hashes; instances share entries when they share
    /// ``cacheEncryptionKey`` (and ``cacheKeyDerivation``) and the tier's namespace. A Redis outage means
    /// local-only operation, never an error to the caller. Its logger defaults to ``telemetry``'s. The default
    /// is `nil`: the cache is local only.
    public var secondTier: RedisTierConfiguration?
    /// In active mode, an entry younger than this is delivered without asking the server (the
    /// server callback then carries the cached response), unless the request says
    /// `Cache-Control: no-cache`. The default is `nil`: always revalidate.
    public var maxAge: Duration?
    /// Identical GETs in flight at the same time share one network request. A read that joins a
    /// request already under way gets that request's answer, which the server may have produced
    /// just before the read began (at most one round trip earlier). A read never joins one that
    /// began before a write made through this store finished, so it always sees this store's own
    /// writes; set `false` when every read must also reflect writes acknowledged to other clients
    /// before it started. The default is `true`.
    public var coalescesIdenticalReads: Bool = true
    /// When a read (`GET`, `HEAD`) is sent again after no answer, `408`, `429` or a `5xx` (`RetryPolicy`, the offline
    /// store's too); writes are never re-sent by the store. The default is `nil`: no retry, because an online read is
    /// made for a caller who is waiting — a request handler with its own deadline, a person — and who is better
    /// served by the failure at once (or, in active mode, by the cached copy it already got) than by a read that
    /// takes up to the policy's budget longer. In active mode the cached copy is delivered before the network is
    /// asked, so a retry delays only the server's answer, never the cache callback.
    public var retryPolicy: RetryPolicy?
    /// The clock retries wait on. The default is the system's; tests give ODataTesting's `TestClock`.
    public var retryClock: any RetryClock = SystemRetryClock()
    /// The largest stream ``OnlineODataStore/readStream(_:to:headerFields:)`` keeps in the technical cache, in
    /// bytes: one at most this size is stored (revalidated with its `ETag` like a JSON answer, and written into the
    /// caller's file from the cache on a `304`); a larger one is never stored, and goes from the network to the file
    /// only. `0` keeps no stream. The JSON path does not look at it. The default is 1 MiB.
    public var maxCachedStreamSize: Int = 1 << 20
    /// Header fields sent with every request (for example `Authorization`). The default is
    /// `Accept: application/json`.
    public var defaultHeaderFields: HTTPFields = [.accept: "application/json"]
    /// The session with the back end: authentication (basic, bearer, custom), CSRF tokens, session cookies
    /// and the SAP dialect (`sap-client`, `sap-language`, `MERGE`). The default is `SessionOptions()`: no
    /// authentication, CSRF tokens fetched when the store first writes, cookies kept in memory. The SAP client
    /// and language also partition the cache, as they select other data under the same URL.
    public var session: SessionOptions = SessionOptions()
    /// Where the store reports its requests, cache decisions and failures: a swift-log `Logger`, a swift-metrics
    /// factory and a swift-distributed-tracing tracer. The default logs nothing and uses the process-wide metrics
    /// factory and tracer (no-ops until the application bootstraps them). Nothing secret is reported.
    public var telemetry = Telemetry()
    /// The HTTP transport's options. The default is `CurlConfiguration()`.
    public var transport: CurlConfiguration = CurlConfiguration()

    /// Creates the default options.
    public init() {}

    /// `~/.cache/odatastores`, or the temporary directory without a home.
    public static var defaultDirectory: URL {
        if let home = ProcessInfo.processInfo.environment["HOME"], !home.isEmpty {
            return URL(fileURLWithPath: home).appendingPathComponent(".cache/odatastores", isDirectory: true)
        }
        return FileManager.default.temporaryDirectory.appendingPathComponent("odatastores", isDirectory: true)
    }
}

/// Receives the outcome of ``OnlineODataStore/open()``.
public protocol OnlineODataStoreDelegate: Sendable {
    /// The store opened.
    /// - Parameter store: the store.
    func onlineStoreOpenFinished(_ store: OnlineODataStore)
    /// The store could not open.
    /// - Parameters:
    ///   - store: the store.
    ///   - error: why.
    func onlineStoreOpenFailed(_ store: OnlineODataStore, error: any Error)
}
