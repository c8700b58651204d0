import Foundation
import Synchronization
import CurlHTTP
public import ODataCore
public import ODataSession
public import TechnicalCache
import HTTPTypes
import ODataTelemetry

/// An online OData store: requests go through libcurl to the back end; reads can use an
/// encrypted, persistent technical cache in *active* mode (cached copy first, then the server's,
/// revalidated with `If-None-Match` / `If-Modified-Since`) or *passive* mode (the cache alone).
///
/// The callbacks each execution makes follow SPEC's state tables exactly; see ``CallbackPlan``.
///
/// ## Topics
///
/// ### Opening and modes
/// - ``init(serviceRoot:options:delegate:transport:)``
/// - ``open()``
/// - ``close()``
/// - ``setMode(_:)``
///
/// ### Executing requests
/// - ``execute(_:listener:)``
/// - ``response(for:listener:)``
/// - ``execute(batch:listener:)``
/// - ``executeSynchronously(_:)``
///
/// ### The technical cache
/// - ``closeCache()``
/// - ``reopenCache(encryptionKey:)``
/// - ``resetCache()``
public final class OnlineODataStore: Sendable {
    /// The service root every request path is relative to.
    public let serviceRoot: String
    /// The service root with exactly one trailing slash, validated once.
    private let root: String
    /// The options the store was created with.
    public let options: OnlineStoreOptions

    /// The session with the back end: authentication, CSRF tokens and cookies (``OnlineStoreOptions/session``).
    /// Every request of the store goes through it.
    public let session: ServiceSession
    private let delegate: (any OnlineODataStoreDelegate)?
    private let transport: any HTTPTransport
    /// Reports cache decisions to the options' telemetry.
    private let reporter: CacheReporter
    private let ownedTransport: CurlTransport?
    let cache: ResponseCache?
    private let state = LockedValue(State())
    private let counters = LockedValue(OnlineStoreStatistics())
    /// The GETs in flight that identical reads may join (a lock of its own: every coalescing read takes it).
    private let flights = LockedValue<[FlightKey: Flight]>([:])

    private struct State {
        var isOpen = false
        var mode: StoreMode = .active
        var running: [UInt64: @Sendable () -> Void] = [:]
        var nextExecution: UInt64 = 0
        /// Counts the writes (any method but GET and HEAD) that finished; a read joins only reads that
        /// began after the last one, so it never gets an answer older than a write this store made.
        var writeEpoch: UInt64 = 0
        /// The ``response(for:listener:)`` calls running in their callers' tasks (not in `running`).
        var directCalls = 0
    }

    /// Creates a store; nothing is opened until ``open()``.
    /// - Parameters:
    ///   - serviceRoot: the absolute http(s) URL of the OData service.
    ///   - options: the options.
    ///   - delegate: receives the outcome of ``open()``.
    ///   - transport: the HTTP transport; the default is a `CurlTransport` with `options.transport`.
    /// - Throws: `ODataError` `.invalidURL` for a bad service root, `.invalidConfiguration` for
    ///   encryption switched off while a key or key store is given; a transport set-up error.
    public init(serviceRoot: String, options: OnlineStoreOptions = OnlineStoreOptions(),
                delegate: (any OnlineODataStoreDelegate)? = nil, transport: (any HTTPTransport)? = nil) throws {
        if options.disableCacheEncryption && (options.cacheEncryptionKey != nil || options.cacheKeyStore != nil) {
            throw ODataError(.invalidConfiguration, "disableCacheEncryption is set although a cacheEncryptionKey or cacheKeyStore is given")
        }
        root = try ODataRequest.join(serviceRoot: serviceRoot, relative: "")
        self.serviceRoot = serviceRoot
        self.options = options
        self.delegate = delegate
        ownedTransport = transport == nil ? try CurlTransport(configuration: options.transport) : nil
        session = ServiceSession(serviceRoot: root, options: options.session,
                                 transport: InstrumentedTransport.wrapping(transport ?? ownedTransport!, telemetry: options.telemetry))
        reporter = CacheReporter(telemetry: options.telemetry)
        self.transport = session
        if options.useCache {
            var configuration = CacheConfiguration(sizeLimit: options.cacheSizeLimit, partition: Self.cachePartition(options),
                                                   keyDerivation: options.cacheKeyDerivation, durability: options.cacheDurability,
                                                   memoryBudget: options.cacheMemoryBudget)
            configuration.secondTier = options.secondTier.map { tier in
                var tier = tier
                tier.logger = tier.logger ?? options.telemetry.logger
                return tier
            }
            cache = try ResponseCache(directory: options.storeDirectory.appendingPathComponent(options.storeName + ".cache").path,
                                      configuration: configuration)
        } else {
            cache = nil
        }
    }

    deinit {
        ownedTransport?.shutdown()
    }

    /// The cache partition: the user's, and the SAP client and language, which select other data under the
    /// same URL.
    private static func cachePartition(_ options: OnlineStoreOptions) -> String? {
        let parts = [options.cachePartition, options.session.sapClient.map { "sap-client=\($0)" },
                     options.session.sapLanguage.map { "sap-language=\($0)" }].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: "\n")
    }

    // MARK: - Lifecycle

    /// Opens the store and its cache. Opening an open store is harmless and reports nothing new.
    /// - Throws: a cache error (wrong key, cache in use by another process…); the delegate hears it too.
    public func open() async throws {
        if isOpen { return }
        do {
            if let cache, !cache.isOpen {
                try cache.open(encryption: initialEncryption)
            }
            let opened = state.withLock { state -> Bool in
                if state.isOpen { return false }
                state.isOpen = true
                return true
            }
            if opened { delegate?.onlineStoreOpenFinished(self) }
        } catch {
            delegate?.onlineStoreOpenFailed(self, error: error)
            throw error
        }
    }

    /// Closes the store: running requests end with a failure, the cache is closed.
    public func close() {
        let cancels = state.withLock { state -> [@Sendable () -> Void] in
            state.isOpen = false
            defer { state.running = [:] }
            return Array(state.running.values)
        }
        for cancel in cancels { cancel() }
        cache?.close()
        session.endSession()
    }

    /// How many requests run now: the executions started by ``execute(_:listener:)`` and
    /// ``execute(batch:listener:)`` that have not ended, plus the ``response(for:listener:)`` calls under
    /// way. ``close()`` cancels the former and forgets them. For `OnlineStoreService`'s graceful shutdown.
    var inFlightRequests: Int { state.withLock { $0.running.count + $0.directCalls } }

    /// Whether the store is open.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// The store's mode; the default is ``StoreMode/active``.
    public var mode: StoreMode { state.withLock { $0.mode } }

    /// Switches between active and passive mode.
    /// - Parameter mode: the new mode.
    /// - Throws: `ODataError` `.invalidState` when passive mode is asked of a store without a cache.
    public func setMode(_ mode: StoreMode) throws {
        if mode == .passive, cache == nil {
            throw ODataError(.invalidState, "passive mode needs the technical cache, which is disabled for this store")
        }
        state.withLock { $0.mode = mode }
    }

    // MARK: - Cache lifecycle

    /// Whether the store was created with a technical cache.
    public var isCacheEnabled: Bool { cache != nil }

    /// Whether the technical cache is open.
    public var isCacheOpen: Bool { cache?.isOpen ?? false }

    /// Closes the cache while the store stays open (for example while the process is idle).
    /// Running requests that use it finish without it.
    public func closeCache() {
        cache?.close()
    }

    /// Reopens the cache with its key.
    /// - Parameter encryptionKey: the passphrase; `nil` uses the options' key (or the generated one).
    /// - Throws: `ODataError` `.invalidState` without a cache; a cache error for a wrong key.
    public func reopenCache(encryptionKey: String? = nil) throws {
        guard let cache else { throw ODataError(.invalidState, "this store has no technical cache") }
        if cache.isOpen { return }
        try cache.open(encryption: encryptionKey.map { .key($0) } ?? initialEncryption)
    }

    /// Changes the cache's encryption key without losing entries (every entry is re-sealed in one
    /// transaction). Afterwards open the cache with the new passphrase (``reopenCache(encryptionKey:)``,
    /// or ``OnlineStoreOptions/cacheEncryptionKey`` for the next store).
    /// - Parameter newKey: the new passphrase.
    /// - Throws: `ODataError` `.invalidState` without a cache; a cache error when the cache is closed,
    ///   not encrypted, or cannot be written (then nothing changed).
    public func rekeyCache(to newKey: String) throws {
        guard let cache else { throw ODataError(.invalidState, "this store has no technical cache") }
        try cache.rekey(to: .key(newKey))
    }

    /// Wipes the cache. Allowed only while the cache is closed.
    /// - Throws: `ODataError` `.invalidState` without a cache; a cache error while it is open.
    public func resetCache() throws {
        guard let cache else { throw ODataError(.invalidState, "this store has no technical cache") }
        try cache.reset()
    }

    /// Counters of requests, network use and the cache.
    public var statistics: OnlineStoreStatistics {
        var result = counters.withLock { $0 }
        if let cache {
            result.cache = cache.statistics
            result.secondTier = cache.secondTierStatistics
        }
        return result
    }

    private var initialEncryption: CacheEncryption {
        if options.disableCacheEncryption { return .disabled }
        if let key = options.cacheEncryptionKey { return .key(key) }
        if let keyStore = options.cacheKeyStore { return .keyStore(keyStore) }
        return .keyStore(cache?.defaultKeyStore ?? FileKeyStore(path: options.storeDirectory.appendingPathComponent(options.storeName + ".key").path))
    }

    // MARK: - Executing requests

    /// Executes a request asynchronously; callbacks go to `listener` and to the execution's events.
    /// - Parameters:
    ///   - request: the request.
    ///   - listener: receives the callbacks, if given.
    /// - Returns: the execution, for its status, events, result and cancellation.
    @discardableResult
    public func execute(_ request: ODataRequest, listener: (any ODataRequestListener)? = nil) -> RequestExecution {
        let execution = RequestExecution(request: request, listener: listener)
        start(execution) { store in await store.run(single: execution, yieldsBeforeNetwork: true) }
        return execution
    }

    /// Executes a request in the calling task and returns its final response: the same callbacks,
    /// statuses and rules as ``execute(_:listener:)``, without handing the work to a new task —
    /// the cheapest way to read from async code. Cancelling the calling task cancels the request.
    /// - Parameters:
    ///   - request: the request.
    ///   - listener: receives the callbacks, if given.
    /// - Returns: the final response (in passive mode `nil` when nothing is cached).
    /// - Throws: the failure the execution reported.
    public func response(for request: ODataRequest, listener: (any ODataRequestListener)? = nil) async throws -> ODataResponse? {
        let execution = RequestExecution(request: request, listener: listener, handedOut: false)
        state.withLock { $0.directCalls += 1 }
        await run(single: execution)
        state.withLock { $0.directCalls -= 1 }
        return try await execution.result()
    }

    /// Executes a `$batch` asynchronously (multipart). Its cache response is assembled from the
    /// cached parts; the server's read parts update the cache, each under its own URL.
    /// - Parameters:
    ///   - batch: the batch.
    ///   - listener: receives the callbacks, if given.
    /// - Returns: the execution; its responses carry the multipart batch response.
    @discardableResult
    public func execute(batch: BatchRequest, listener: (any ODataRequestListener)? = nil) -> RequestExecution {
        let request = ODataRequest(method: .post, resourcePath: "$batch", useCache: batch.parts.contains { Self.isCachedRead($0) })
        let execution = RequestExecution(request: request, listener: listener)
        start(execution) { store in await store.run(batch: batch, execution: execution) }
        return execution
    }

    /// Executes a request and waits for it, blocking the calling thread. As documented, this never
    /// uses the technical cache. For threads of your own only: never call it from async code, where
    /// it would block one of the few threads of Swift's cooperative pool.
    /// - Parameter request: the request.
    /// - Returns: the server's response.
    /// - Throws: the failure.
    public func executeSynchronously(_ request: ODataRequest) throws -> ODataResponse {
        var uncached = request
        uncached.useCache = false
        let execution = execute(uncached)
        let box = LockedValue<Result<ODataResponse?, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let response = try await execution.result()
                box.withLock { $0 = .success(response) }
            } catch {
                box.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        let result = box.withLock { $0 } ?? .failure(ODataError(.invalidState, "the request did not finish"))
        guard let response = try result.get() else { throw ODataError(.invalidState, "the request finished without a response") }
        return response
    }

    /// Runs `body` in a task that starts at once on the calling thread (`Task.immediate`): the work up to
    /// the first suspension — the whole of a passive read, the cache answer of an active one — costs no
    /// thread hop.
    private func start(_ execution: RequestExecution, _ body: @escaping @Sendable (OnlineODataStore) async -> Void) {
        let task = LockedValue<Task<Void, Never>?>(nil)
        let cancel: @Sendable () -> Void = { task.withLock { $0 }?.cancel() }
        let id = state.withLock { state -> UInt64 in
            state.nextExecution &+= 1
            state.running[state.nextExecution] = cancel
            return state.nextExecution
        }
        let started = Task.immediate { [self] in
            await body(self)
            _ = state.withLock { $0.running.removeValue(forKey: id) }
        }
        task.withLock { $0 = started }
        execution.setCancellationHandler(cancel)
    }

    private static func isCachedRead(_ part: BatchRequest.Part) -> Bool {
        if case .request(let request) = part { return request.isCacheable }
        return false
    }

    private func plan(for kind: RequestKind) -> CallbackPlan {
        let (open, mode) = state.withLock { ($0.isOpen, $0.mode) }
        let cacheState: CacheState = cache == nil ? .disabled : (cache!.isOpen ? .open : .closed)
        return CallbackPlan.plan(mode: mode, storeIsOpen: open, cache: cacheState, kind: kind)
    }

    private func fail(_ execution: RequestExecution, _ error: any Error, _ response: ODataResponse? = nil) {
        execution.report(.failed(error, response))
        execution.report(.finished(response))
    }

    /// - Parameter yieldsBeforeNetwork: Started by ``execute(_:listener:)`` (at once, on the caller's thread):
    ///   hand the thread back before the network, so that `execute` returns with the cache's answer already
    ///   delivered and the round trip runs concurrently.
    private func run(single execution: RequestExecution, yieldsBeforeNetwork: Bool = false) async {
        let request = execution.request
        execution.report(.started)
        counters.withLock { $0.requests += 1 }
        let plan = plan(for: request.isCacheable ? .cachedRead : .other)
        if case .failure(let reason) = plan { return fail(execution, ODataError(.invalidState, reason)) }
        let url: String
        do { url = try root + request.relativeURL() } catch {
            // An active read reports its cache answer before any failure (SPEC); a request that
            // cannot become a URL has none.
            if plan.readsCache && plan != .cacheOnly { execution.report(.cacheResponse(nil)) }
            return fail(execution, error)
        }

        var cached: CacheEntry?
        if plan.readsCache {
            cached = lookup(url)
            counters.withLock { cached == nil ? ($0.cacheMisses += 1) : ($0.cacheHits += 1) }
            reporter.lookup(hit: cached != nil, url: url, cache: cache)
            // The cache's answer as an event: built only when someone can see it, or when it is the result.
            let cacheResponse = execution.isObserved || plan == .cacheOnly ? cached.map { Self.response(from: $0, revalidated: false) } : nil
            if execution.isObserved { execution.report(.cacheResponse(cacheResponse)) }
            if plan == .cacheOnly {
                // Passive mode: the cache's answer is the result (the same object); nil is not a failure.
                execution.report(.finished(cacheResponse))
                return
            }
        }
        var headers = options.defaultHeaderFields
        for field in request.headerFields { headers[fields: field.name] = request.headerFields[fields: field.name] }
        let cacheRequest = CacheRequest(method: request.method.rawValue, headers: Self.cacheHeaders(request.headerFields), useCache: request.useCache)
        var conditionalNames: [HTTPField.Name] = []
        if plan.readsCache {
            switch CachePolicy.decision(for: cacheRequest, stored: cached, mode: .active, maxAge: options.maxAge) {
            case .serveStored:
                // Younger than `maxAge`, or `only-if-cached`: the stored entry is the server response.
                guard let cached else { break }
                let response = Self.response(from: cached, revalidated: false)
                counters.withLock { $0.servedFresh += 1 }
                reporter.decision("served fresh", url: url)
                execution.report(.serverResponse(response))
                execution.report(.finished(response))
                return
            case .unsatisfiable:
                // `only-if-cached` with nothing stored (RFC 9111 §5.2.1.7).
                return fail(execution, ODataServiceError(code: "", message: "HTTP 504: not cached (only-if-cached)", statusCode: 504), Self.notCached)
            case .revalidate(let conditional):
                for header in conditional {
                    if let name = HTTPField.Name(header.name) {
                        headers[name] = header.value
                        conditionalNames.append(name)
                    }
                }
            case .fetch:
                break
            }
        }
        if yieldsBeforeNetwork { await Task.yield() }
        let coalescing = request.method == .get && options.coalescesIdenticalReads
        // The answer is stored as of when the request was sent, so that a slower answer to an earlier
        // request never replaces it (`keepingNewer`).
        var sentAt = Date()
        var reply: TransportResponse
        // A 304's headers as the cache keeps them, when it confirms the copy held (converted and checked once).
        var confirming: [CacheEntry.Header]?
        func confirmation(of reply: TransportResponse) -> [CacheEntry.Header]? {
            guard reply.status == 304, let cached else { return nil }
            let headers = Self.cacheHeaders(reply.headerFields)
            return CachePolicy.notModified(headers, confirms: cached) ? headers : nil
        }
        do {
            reply = try await send(TransportRequest(method: request.method.rawValue, url: url, headerFields: headers, body: request.body), coalescing: coalescing)
            confirming = confirmation(of: reply)
            if reply.status == 304, cached != nil, confirming == nil, !conditionalNames.isEmpty {
                // The 304 is about another representation than the copy held: ask for the body.
                for name in conditionalNames { headers[name] = nil }
                sentAt = Date()
                reply = try await send(TransportRequest(method: request.method.rawValue, url: url, headerFields: headers, body: request.body), coalescing: coalescing)
                confirming = confirmation(of: reply)
            }
        } catch {
            if !isOpen { return fail(execution, ODataError(.invalidState, "the store was closed while the request ran")) }
            return fail(execution, error)
        }
        if Task.isCancelled || !isOpen {
            return fail(execution, isOpen ? CancellationError() : ODataError(.invalidState, "the store was closed while the request ran"))
        }

        let response: ODataResponse
        if let confirming, let cached {
            counters.withLock { $0.notModified += 1 }
            reporter.notModified(url: url)
            // The copy the request revalidated is the answer, even when another answer replaced it in
            // the cache meanwhile (the refresh then leaves that one alone).
            let refreshed = plan.readsCache ? await updateCache(url: url, request: cacheRequest, status: 304, headers: confirming, payload: Data(), stored: cached, confirmed: true, sentAt: sentAt) : nil
            response = Self.response(from: refreshed ?? cached, revalidated: true)
        } else {
            response = ODataResponse(statusCode: reply.status, headerFields: reply.headerFields, payload: reply.body)
            if plan.readsCache {
                _ = await updateCache(url: url, request: cacheRequest, status: reply.status, headers: Self.cacheHeaders(reply.headerFields), payload: reply.body, stored: cached, sentAt: sentAt)
            }
        }
        if response.isSuccess {
            execution.report(.serverResponse(response))
            execution.report(.finished(response))
        } else {
            fail(execution, response.serviceError ?? ODataServiceError(code: "", message: "HTTP \(reply.status)", statusCode: reply.status), response)
        }
    }

    private func run(batch: BatchRequest, execution: RequestExecution) async {
        execution.report(.started)
        counters.withLock { $0.requests += 1 }
        let plan = plan(for: execution.request.useCache ? .cachedRead : .other)
        if case .failure(let reason) = plan { return fail(execution, ODataError(.invalidState, reason)) }
        let urls: [String?]
        let encoded: (body: Data, contentType: String)
        let batchURL: String
        do {
            urls = try batch.parts.map { part throws -> String? in
                if case .request(let request) = part, request.isCacheable { return try root + request.relativeURL() }
                return nil
            }
            encoded = try MultipartBatch.encode(session.dialect(batch))
            batchURL = root + "$batch"
        } catch {
            return fail(execution, error)
        }
        if plan.readsCache {
            var parts: [BatchResponse.Part] = []
            for url in urls {
                if let url, let entry = lookup(url) {
                    parts.append(.response(Self.response(from: entry, revalidated: false), contentID: nil))
                } else {
                    parts.append(.response(Self.notCached, contentID: nil))
                }
            }
            let assembled = MultipartBatch.encode(BatchResponse(parts: parts))
            let response = ODataResponse(statusCode: 200, headerFields: [.contentType: assembled.contentType], payload: assembled.body, isFromCache: true)
            execution.report(.cacheResponse(response))
            if plan == .cacheOnly {
                execution.report(.finished(response))
                return
            }
        }
        var headers = options.defaultHeaderFields
        headers[.contentType] = encoded.contentType
        let sentAt = Date()
        let reply: TransportResponse
        do {
            reply = try await send(TransportRequest(method: "POST", url: batchURL, headerFields: headers, body: encoded.body), coalescing: false)
        } catch {
            return fail(execution, isOpen ? error : ODataError(.invalidState, "the store was closed while the request ran"))
        }
        let response = ODataResponse(statusCode: reply.status, headerFields: reply.headerFields, payload: reply.body)
        guard response.isSuccess else {
            return fail(execution, response.serviceError ?? ODataServiceError(code: "", message: "HTTP \(reply.status)", statusCode: reply.status), response)
        }
        if plan.readsCache, let contentType = reply.headerFields[.contentType],
           let decoded = try? MultipartBatch.decodeResponse(reply.body, contentType: contentType), decoded.parts.count == urls.count {
            for (part, url) in zip(decoded.parts, urls) {
                guard let url, case .response(let partResponse, _) = part else { continue }
                _ = await updateCache(url: url, request: CacheRequest(method: "GET"), status: partResponse.statusCode,
                                      headers: Self.cacheHeaders(partResponse.headerFields), payload: partResponse.payload, stored: nil, sentAt: sentAt)
            }
        }
        execution.report(.serverResponse(response))
        execution.report(.finished(response))
    }

    /// A batch part that was never cached: `504` as for an unsatisfiable `only-if-cached` (RFC 9111 §5.2.1.7).
    private static let notCached = ODataResponse(statusCode: 504, headerFields: [HTTPField.Name("Cache-Status")!: "ODataStores; fwd=miss; detail=not-cached"], isFromCache: true)

    /// The cache's entry for a URL; a closed or failing cache is a miss (the cache is best-effort).
    private func lookup(_ url: String) -> CacheEntry? {
        (try? cache?.entry(for: url)) ?? nil
    }

    /// Carries out what ``CachePolicy`` says the server's answer does to the stored entry: as of
    /// `sentAt`, so that an answer never replaces one to a request sent later, and a 304 refreshes
    /// only the copy it confirmed. A cache closed meanwhile is left alone.
    /// - Returns: the refreshed entry after a 304, if it is still the one stored.
    /// - Parameter confirmed: whether a 304's `headers` were checked to confirm `stored`.
    private func updateCache(url: String, request: CacheRequest, status: Int, headers: [CacheEntry.Header], payload: Data, stored: CacheEntry?, confirmed: Bool = false, sentAt: Date) async -> CacheEntry? {
        guard let cache, cache.isOpen else { return nil }
        switch CachePolicy.action(for: request, status: status, headers: headers, hasStoredEntry: stored != nil, mode: .active) {
        case .store:
            let stored = (try? await cache.store(CacheEntry(status: status, headers: headers, payload: payload, storedAt: sentAt), for: url, keepingNewer: true)) ?? false
            reporter.decision(stored ? "stored" : "not stored", url: url)
            reporter.counts(of: cache)
        case .refresh:
            let refreshed = (try? await cache.refresh(for: url, with304Headers: headers, revalidating: stored, confirmed: confirmed, at: sentAt)) ?? nil
            reporter.decision(refreshed == nil ? "refresh skipped (superseded)" : "refreshed", url: url)
            return refreshed
        case .remove:
            _ = try? await cache.removeEntry(for: url)
            reporter.decision("removed", url: url)
            reporter.counts(of: cache)
        case .leave:
            break
        }
        return nil
    }

    private static func cacheHeaders(_ fields: HTTPFields) -> [CacheEntry.Header] {
        fields.map { CacheEntry.Header(name: $0.name.rawName, value: $0.value) }
    }

    private func send(_ request: TransportRequest, coalescing: Bool) async throws -> TransportResponse {
        let isWrite = request.method != "GET" && request.method != "HEAD"
        if isWrite {
            defer { state.withLock { $0.writeEpoch &+= 1 } }
            return try await sendCounted(request)
        }
        guard coalescing else { return try await sendCounted(request) }
        return try await send(request, key: FlightKey(epoch: state.withLock { $0.writeEpoch }, url: request.url, headers: request.headerFields))
    }

    /// Sends `request` in the calling task (no task of its own, no extra thread hop). With `coalescing`, an
    /// identical request already in flight is joined instead: its answer is this one's too.
    private func send(_ request: TransportRequest, key: FlightKey) async throws -> TransportResponse {
        while true {
            let (flight, isLeader): (Flight, Bool) = flights.withLock { flights in
                if let existing = flights[key] { return (existing, false) }
                let flight = Flight()
                flights[key] = flight
                return (flight, true)
            }
            if isLeader {
                let result: Result<TransportResponse, any Error>
                do { result = .success(try await sendCounted(request)) } catch { result = .failure(error) }
                flights.withLock { flights in
                    if let index = flights.index(forKey: key), flights.values[index] === flight { flights.remove(at: index) }
                }
                flight.finish(result)
                return try result.get()
            }
            counters.withLock { $0.coalesced += 1 }
            reporter.coalesced()
            let result = await flight.result()
            // The leader's own cancellation is not this read's: ask again (join or lead a new flight).
            if case .failure(let error) = result, error is CancellationError, !Task.isCancelled { continue }
            try Task.checkCancellation()
            return try result.get()
        }
    }

    private func sendCounted(_ request: TransportRequest) async throws -> TransportResponse {
        let reply = try await transport.send(request)
        counters.withLock {
            $0.networkRequests += 1
            $0.bytesReceived += reply.metrics.headerBytes + reply.metrics.bodyBytes
        }
        return reply
    }

    /// The cache's answer; its header fields are made from the stored lines only if someone reads them.
    private static func response(from entry: CacheEntry, revalidated: Bool) -> ODataResponse {
        let headers = entry.headers
        return ODataResponse(statusCode: entry.status, payload: entry.payload, isFromCache: true, isRevalidated: revalidated) {
            HTTPFields(headers.compactMap { header in HTTPField.Name(header.name).map { HTTPField(name: $0, value: header.value) } })
        }
    }
}

/// Counters of an ``OnlineODataStore``.
public struct OnlineStoreStatistics: Sendable, Hashable {
    /// Executions started.
    public var requests = 0
    /// Requests that went to the network.
    public var networkRequests = 0
    /// Identical reads that shared another request's network round trip.
    public var coalesced = 0
    /// Header and body bytes received on the wire.
    public var bytesReceived = 0
    /// Revalidations answered with `304 Not Modified`.
    public var notModified = 0
    /// Cache lookups that found an entry.
    public var cacheHits = 0
    /// Cache lookups that found nothing.
    public var cacheMisses = 0
    /// Reads answered from the cache without the server: within ``OnlineStoreOptions/maxAge``, or
    /// asked with `Cache-Control: only-if-cached`.
    public var servedFresh = 0
    /// The technical cache's own counters, when the store has one.
    public var cache: CacheStatistics?
    /// The cache's Redis tier's counters, when ``OnlineStoreOptions/secondTier`` is set.
    public var secondTier: SecondTierStatistics?
}

/// What makes reads identical for coalescing: the URL and header fields (in order) of a GET, between the same
/// writes (a write through the store starts a new epoch, so no read joins one sent before it). Its hash is
/// computed once, outside the lock it is looked up under.
struct FlightKey: Hashable, Sendable {
    let epoch: UInt64
    let url: String
    let headers: HTTPFields
    private let hash: Int
    /// This key and its copies: the leader removes its flight under the key it added it with, which is then
    /// equal without comparing every header field.
    private let identity = Identity()
    private final class Identity: Sendable {}

    init(epoch: UInt64, url: String, headers: HTTPFields) {
        self.epoch = epoch
        self.url = url
        self.headers = headers
        var hasher = Hasher()
        hasher.combine(epoch)
        hasher.combine(url)
        for field in headers {
            hasher.combine(field.name.canonicalName)
            hasher.combine(field.value)
        }
        hash = hasher.finalize()
    }

    static func == (lhs: FlightKey, rhs: FlightKey) -> Bool {
        lhs.identity === rhs.identity
            || lhs.hash == rhs.hash && lhs.epoch == rhs.epoch && lhs.url == rhs.url && lhs.headers.elementsEqual(rhs.headers)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}

/// One network request that identical reads share: the first one sends it, the others wait for its answer.
final class Flight: Sendable {
    private struct State {
        var result: Result<TransportResponse, any Error>?
        var waiters: [CheckedContinuation<Result<TransportResponse, any Error>, Never>] = []
    }

    private let state = LockedValue(State())

    /// The answer, once the leader has it.
    func result() async -> Result<TransportResponse, any Error> {
        if let result = state.withLock({ $0.result }) { return result }
        return await withCheckedContinuation { waiter in
            let ready = state.withLock { state -> Result<TransportResponse, any Error>? in
                if let result = state.result { return result }
                state.waiters.append(waiter)
                return nil
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }

    /// Hands the answer to every waiter.
    func finish(_ result: Result<TransportResponse, any Error>) {
        let waiters = state.withLock { state in
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }
}
