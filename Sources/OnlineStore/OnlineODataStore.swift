import Foundation
import Synchronization
import CurlHTTP
public import ODataCore
public import ODataSession
import TechnicalCache
import HTTPTypes
import ODataTelemetry

/// An online OData store: requests go through libcurl to the back end; reads can use an
/// encrypted, persistent technical cache in *active* mode (cached copy first, then the server's,
/// revalidated with `If-None-Match` / `If-Modified-Since`) or *passive* mode (the cache alone).
///
/// The callbacks each execution makes follow SPEC's state tables exactly; see ``CallbackPlan``. The cache's
/// side of a read is `TechnicalCache`'s `CachingTransport`; the store keeps its callbacks, coalescing and API.
/// Its stack, top down: the store (callbacks) → `CachingTransport` → coalescing → `ServiceSession` →
/// telemetry (`InstrumentedTransport`) → the transport (curl); `docs/notes/cache.md` says why in that order.
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
    let root: String
    /// The options the store was created with.
    public let options: OnlineStoreOptions

    /// The session with the back end: authentication, CSRF tokens and cookies (``OnlineStoreOptions/session``).
    /// Every request of the store goes through it.
    public let session: ServiceSession
    private let delegate: (any OnlineODataStoreDelegate)?
    /// Below the cache: coalescing, then the session (every request that is not answered by the cache).
    let network: CoalescingTransport
    /// The cache side of reads, when the store has a cache.
    let caching: CachingTransport?
    /// The cache side of streams (``readStream(_:to:headerFields:)``): over the session itself, as streams are
    /// neither coalesced nor counted as the JSON path's requests; streams up to ``OnlineStoreOptions/maxCachedStreamSize``.
    let streamCaching: CachingTransport?
    private let ownedTransport: CurlTransport?
    let cache: ResponseCache?
    private let state = LockedValue(State())
    let counters: LockedValue<OnlineStoreStatistics>
    /// The resources observed with ``observe(_:every:)``.
    let liveResources = LiveResources()
    /// The ``response(for:listener:)`` calls running in their callers' tasks (not in `State.running`).
    private let directCalls = Atomic<Int>(0)

    private struct State {
        var isOpen = false
        var mode: StoreMode = .active
        /// The executions running in tasks of their own (``start(_:_:)``), until their task ends.
        var running: [UInt64: RequestExecution] = [:]
        var nextExecution: UInt64 = 0
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
        let counters = LockedValue(OnlineStoreStatistics())
        self.counters = counters
        if options.useCache {
            var configuration = CacheConfiguration(sizeLimit: options.cacheSizeLimit, partition: Self.cachePartition(options),
                                                   keyDerivation: options.cacheKeyDerivation, durability: options.cacheDurability,
                                                   memoryBudget: options.cacheMemoryBudget)
            configuration.logger = options.telemetry.logger
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
        let reporter = CacheReporter(telemetry: options.telemetry, counters: counters, cache: cache)
        let session = session
        let reads: any HTTPTransport = options.retryPolicy.map { RetryingTransport(base: session, policy: $0, clock: options.retryClock) } ?? session
        let network = CoalescingTransport(upstream: reads, coalescesReads: options.coalescesIdenticalReads, counters: counters, reporter: reporter)
        self.network = network
        caching = cache.map { CachingTransport(cache: $0, upstream: network, maxAge: options.maxAge, listener: reporter) }
        streamCaching = cache.map {
            CachingTransport(cache: $0, upstream: session, maxAge: options.maxAge, listener: reporter, maxStreamSize: options.maxCachedStreamSize)
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
        let running = state.withLock { state -> [RequestExecution] in
            state.isOpen = false
            defer { state.running = [:] }
            return Array(state.running.values)
        }
        for execution in running { execution.stop() }
        liveResources.finishAll()
        cache?.close()
        session.endSession()
    }

    /// How many requests run now: the executions started by ``execute(_:listener:)`` and
    /// ``execute(batch:listener:)`` that have not ended, plus the ``response(for:listener:)`` calls under
    /// way. ``close()`` cancels the former and forgets them. For `OnlineStoreService`'s graceful shutdown.
    var inFlightRequests: Int { state.withLock { $0.running.count } + directCalls.load(ordering: .relaxed) }

    /// Whether the store is open.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// The store's mode; the default is `StoreMode.active`.
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

    /// Counters of requests, network use and the cache.
    public var statistics: OnlineStoreStatistics {
        var result = counters.withLock { $0 }
        if let cache {
            result.cache = cache.statistics
            result.secondTier = cache.secondTierStatistics
        }
        return result
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
        // What ends before any suspension (a passive read, a request the plan refuses) needs no task.
        guard case .network(let sent, let plan) = begin(single: request, reportingTo: execution) else { return execution }
        start(execution) { store in _ = await store.finish(sent, plan: plan, reportingTo: execution, yieldsBeforeNetwork: true) }
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
        // Without a listener nobody can see an event: there is no execution to report to, only the outcome.
        let execution = listener.map { RequestExecution(request: request, listener: $0) }
        directCalls.add(1, ordering: .relaxed)
        let outcome = await run(single: request, reportingTo: execution)
        directCalls.subtract(1, ordering: .relaxed)
        return try outcome.get()
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
    /// the first suspension — the cache answer of an active read — costs no thread hop.
    func start(_ execution: RequestExecution, _ body: @escaping @Sendable (OnlineODataStore) async -> Void) {
        let id = state.withLock { state -> UInt64 in
            state.nextExecution &+= 1
            state.running[state.nextExecution] = execution
            return state.nextExecution
        }
        let started = Task.immediate { [self] in
            await body(self)
            _ = state.withLock { $0.running.removeValue(forKey: id) }
        }
        execution.attach(started)
    }

    func plan(for kind: RequestKind) -> CallbackPlan {
        let (open, mode) = state.withLock { ($0.isOpen, $0.mode) }
        // Whether the cache is open or closed decides the plan of a cached read only (SPEC's tables): other requests
        // do not ask the cache's lock.
        let cacheState: CacheState = if let cache { kind == .other || cache.isOpen ? .open : .closed } else { .disabled }
        return CallbackPlan.plan(mode: mode, storeIsOpen: open, cache: cacheState, kind: kind)
    }

    /// Reports a failure and the end to `execution`, if any; returns the outcome its ``RequestExecution/result()`` gives.
    @discardableResult
    func fail(_ execution: RequestExecution?, _ error: any Error, _ response: ODataResponse? = nil) -> Result<ODataResponse?, any Error> {
        execution?.report(.failed(error, response))
        execution?.report(.finished(response))
        return .failure(error)
    }

    /// Reports the server's answer and the end to `execution`, if any; returns the outcome.
    private func succeed(_ execution: RequestExecution?, _ response: ODataResponse) -> Result<ODataResponse?, any Error> {
        execution?.report(.serverResponse(response))
        execution?.report(.finished(response))
        return .success(response)
    }

    /// What is left of a request after ``begin(single:reportingTo:)``.
    enum Start {
        /// It ended (a passive read, a refused plan, a URL that cannot be built): the outcome, reported.
        case finished(Result<ODataResponse?, any Error>)
        /// It goes on to the cache's active read or the network: the request to send, and its plan.
        case network(TransportRequest, CallbackPlan)
    }

    /// Runs one request: reports its events to `execution` — `nil` for a ``response(for:listener:)`` call without a
    /// listener, whose events nobody can see — and returns its outcome, the one ``RequestExecution/result()`` gives.
    private func run(single request: ODataRequest, reportingTo execution: RequestExecution?) async -> Result<ODataResponse?, any Error> {
        switch begin(single: request, reportingTo: execution) {
        case .finished(let outcome): return outcome
        case .network(let sent, let plan): return await finish(sent, plan: plan, reportingTo: execution)
        }
    }

    /// The part of a request that never suspends: `started`, the plan, the URL and header fields, and a passive
    /// read whole (the lookup is all it does). ``execute(_:listener:)`` starts a task only for what is left.
    private func begin(single request: ODataRequest, reportingTo execution: RequestExecution?) -> Start {
        execution?.report(.started)
        counters.withLock { $0.requests += 1 }
        let plan = plan(for: request.isCacheable ? .cachedRead : .other)
        if case .failure(let reason) = plan { return .finished(fail(execution, ODataError(.invalidState, reason))) }
        let url: String
        do { url = try root + request.relativeURL() } catch {
            // An active read reports its cache answer before any failure (SPEC); a request that
            // cannot become a URL has none.
            if plan.readsCache && plan != .passiveRead { execution?.report(.cacheResponse(nil)) }
            return .finished(fail(execution, error))
        }
        var headers = options.defaultHeaderFields
        for field in request.headerFields { headers[fields: field.name] = request.headerFields[fields: field.name] }
        let sent = TransportRequest(method: request.method.rawValue, url: url, headerFields: headers, body: request.body)
        if plan == .passiveRead, let caching {
            // Passive mode: the cache's answer is the result (the same object); nil is not a failure.
            guard case .passive(let cached) = caching.passiveAnswer(sent, useCache: request.useCache) else {
                return .finished(fail(execution, ODataError(.invalidState, "passive mode answers cached reads only; this request needs the server")))
            }
            let cacheResponse = cached.map { Self.response(from: $0, revalidated: false) }
            execution?.report(.cacheResponse(cacheResponse))
            execution?.report(.finished(cacheResponse))
            return .finished(.success(cacheResponse))
        }
        return .network(sent, plan)
    }

    /// The rest of a request after ``begin(single:reportingTo:)``: an active read through the cache, or the network.
    ///
    /// - Parameter yieldsBeforeNetwork: Started by ``execute(_:listener:)`` (at once, on the caller's thread):
    ///   hand the thread back before the network, so that `execute` returns with the cache's answer already
    ///   delivered and the round trip runs concurrently.
    private func finish(_ sent: TransportRequest, plan: CallbackPlan, reportingTo execution: RequestExecution?,
                        yieldsBeforeNetwork: Bool = false) async -> Result<ODataResponse?, any Error> {
        let response: ODataResponse
        do {
            if plan.readsCache, let caching {
                let outcome = try await caching.intercept(sent, cacheAnswer: { cached in
                    // The cache's answer as an event: built only when someone can see it.
                    if let execution { execution.report(.cacheResponse(cached.map { Self.response(from: $0, revalidated: false) })) }
                }, beforeNetwork: {
                    if yieldsBeforeNetwork { await Task.yield() }
                })
                switch outcome {
                case .passive(let cached):
                    // `intercept` answers active reads only (passive ones end in `begin` with `passiveAnswer`); the
                    // case is answered as passive mode would, not trapped.
                    let cacheResponse = cached.map { Self.response(from: $0, revalidated: false) }
                    execution?.report(.finished(cacheResponse))
                    return .success(cacheResponse)
                case .fresh(let entry):
                    // Younger than `maxAge`, or `only-if-cached`: the stored entry is the server response.
                    return succeed(execution, Self.response(from: entry, revalidated: false))
                case .unsatisfiable:
                    // `only-if-cached` with nothing stored (RFC 9111 §5.2.1.7).
                    return fail(execution, ODataServiceError(code: "", message: "HTTP 504: not cached (only-if-cached)", statusCode: 504), Self.notCached)
                case .notModified(let entry):
                    response = Self.response(from: entry, revalidated: true)
                case .network(let reply):
                    response = ODataResponse(statusCode: reply.status, headerFields: reply.headerFields, payload: reply.body)
                }
            } else {
                if yieldsBeforeNetwork { await Task.yield() }
                let reply = try await network.send(sent)
                response = ODataResponse(statusCode: reply.status, headerFields: reply.headerFields, payload: reply.body)
            }
        } catch {
            if !isOpen { return fail(execution, ODataError(.invalidState, "the store was closed while the request ran")) }
            return fail(execution, error)
        }
        if Task.isCancelled || !isOpen {
            return fail(execution, isOpen ? CancellationError() : ODataError(.invalidState, "the store was closed while the request ran"))
        }
        if response.isSuccess { return succeed(execution, response) }
        return fail(execution, response.serviceError ?? ODataServiceError(code: "", message: "HTTP \(response.statusCode)", statusCode: response.statusCode), response)
    }

    /// A batch part that was never cached: `504` as for an unsatisfiable `only-if-cached` (RFC 9111 §5.2.1.7).
    static let notCached = ODataResponse(statusCode: 504, headerFields: [HTTPField.Name("Cache-Status")!: "ODataStores; fwd=miss; detail=not-cached"], isFromCache: true)

    /// The cache's answer.
    static func response(from entry: CacheEntry, revalidated: Bool) -> ODataResponse {
        ODataResponse(statusCode: entry.status, headerFields: entry.headers, payload: entry.payload, isFromCache: true, isRevalidated: revalidated)
    }
}
