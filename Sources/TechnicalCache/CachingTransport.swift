public import Foundation
public import ODataCore
public import HTTPTypes

/// Hears what a ``CachingTransport`` did with each request, after OkHttp's `EventListener` (`cacheHit`,
/// `cacheMiss`, `cacheConditionalHit`). Every method has an empty default.
///
/// The online store's listener turns these into its statistics, metrics and `trace` log lines. URLs are handed
/// over as sent; a listener that logs them drops what may be secret (the online store logs them without query).
public protocol CacheEventListener: Sendable {
    /// A lookup found an entry for `url`.
    /// - Parameter url: The request URL.
    func cacheHit(url: String)
    /// A lookup found nothing for `url` (never cached, evicted, damaged, or the cache was closed).
    /// - Parameter url: The request URL.
    func cacheMiss(url: String)
    /// The stored entry answered without asking the server: younger than ``CachingTransport/maxAge``, or the
    /// request said `Cache-Control: only-if-cached`.
    /// - Parameter url: The request URL.
    func cacheServedFresh(url: String)
    /// The server answered a revalidation with `304 Not Modified` confirming the stored entry, which is the answer.
    /// - Parameter url: The request URL.
    func cacheConditionalHit(url: String)
    /// The server's answer changed the cache (or was meant to and did not).
    /// - Parameters:
    ///   - url: The request URL.
    ///   - change: What happened to the entry.
    func cacheChanged(url: String, change: CacheChange)
    /// A write to the cache failed; the request went on with the server's answer. The cache has counted it
    /// (``CacheStatistics/storageFailures``) and logged the first of its kind.
    /// - Parameters:
    ///   - url: The request URL.
    ///   - operation: The write that failed.
    ///   - error: Why.
    func cacheStorageFailed(url: String, operation: CacheStorageOperation, error: CacheError)
}

extension CacheEventListener {
    /// Does nothing.
    /// - Parameter url: The request URL.
    public func cacheHit(url: String) {}
    /// Does nothing.
    /// - Parameter url: The request URL.
    public func cacheMiss(url: String) {}
    /// Does nothing.
    /// - Parameter url: The request URL.
    public func cacheServedFresh(url: String) {}
    /// Does nothing.
    /// - Parameter url: The request URL.
    public func cacheConditionalHit(url: String) {}
    /// Does nothing.
    /// - Parameters:
    ///   - url: The request URL.
    ///   - change: What happened to the entry.
    public func cacheChanged(url: String, change: CacheChange) {}
    /// Does nothing.
    /// - Parameters:
    ///   - url: The request URL.
    ///   - operation: The write that failed.
    ///   - error: Why.
    public func cacheStorageFailed(url: String, operation: CacheStorageOperation, error: CacheError) {}
}

/// What a server's answer did to the cache (``CacheEventListener/cacheChanged(url:change:)``).
public enum CacheChange: String, Sendable, Hashable {
    /// The answer was stored.
    case stored
    /// The answer was not stored: too large, or a later request's answer is stored already.
    case notStored = "not stored"
    /// A 304 refreshed the stored entry.
    case refreshed
    /// A 304 refreshed nothing: the entry it confirmed had been replaced meanwhile.
    case refreshSuperseded = "refresh skipped (superseded)"
    /// The entry was removed (404, 410, or an answer that may not be stored).
    case removed
}

/// What a ``CachingTransport`` made of one request.
public enum CacheOutcome: Sendable {
    /// Passive mode: the stored entry, or `nil` when nothing is stored. The server was not asked.
    case passive(CacheEntry?)
    /// The stored entry answered without the server (younger than ``CachingTransport/maxAge``, or
    /// `Cache-Control: only-if-cached`).
    case fresh(CacheEntry)
    /// `Cache-Control: only-if-cached` with nothing stored: RFC 9111 §5.2.1.7's `504`.
    case unsatisfiable
    /// The server confirmed the stored entry with a 304: this entry (refreshed) is the answer.
    case notModified(CacheEntry)
    /// The server's answer; the cache was updated as ``CachePolicy`` says.
    case network(TransportResponse)
}

/// The whole cache side of a request in one place, after OkHttp's `CacheInterceptor`: the strategy is computed
/// once (``CachePolicy``), then the request is answered from the cache, or sent on (with conditional headers
/// when the stored entry has validators), and the server's answer is combined with the stored entry (a 304),
/// stored, or removes the entry (404, 410). Each outcome goes to the ``CacheEventListener``; a failed write is
/// counted by the cache and reported, never dropped, and never fails the request.
///
/// As an `HTTPTransport` it decorates `upstream`: a `GET` through ``send(_:)`` is answered as above (a cached
/// answer carries the stored status, headers and body); every other method goes to `upstream` untouched. The
/// online store calls ``intercept(_:cacheAnswer:beforeNetwork:)`` instead, which also hands over the cached
/// answer before the network (active mode's first callback) and answers passive reads; and, for the parts of a
/// `$batch` (one network request for many cached reads), ``lookup(_:)`` and ``update(status:headerFields:body:for:stored:sentAt:)``.
///
/// In the online store's stack it sits above the session (a fresh answer costs no token or login, and the
/// cache key is the URL the application asked for) and below the store's callbacks; see `docs/notes/cache.md`.
public final class CachingTransport: HTTPTransport {
    /// The cache.
    public let cache: ResponseCache
    /// Where requests go that the cache does not answer.
    public let upstream: any HTTPTransport
    /// In active mode, an entry younger than this is the answer without asking the server, unless the request
    /// says `Cache-Control: no-cache`; `nil` always revalidates.
    public let maxAge: Duration?
    /// The largest stream (a read whose answer goes to ``TransportRequest/responseBodyFile``) that is stored, in
    /// bytes: a larger one is never stored, and a copy stored earlier is removed (it is no longer the server's).
    public let maxStreamSize: Int
    private let listener: (any CacheEventListener)?

    /// Creates a caching transport.
    ///
    /// - Parameters:
    ///   - cache: The cache (opened and closed by its owner; a closed cache is passed by).
    ///   - upstream: The transport that sends what the cache does not answer.
    ///   - maxAge: The age below which a stored entry is served without the server. The default is `nil`.
    ///   - listener: Hears every outcome. The default is `nil`.
    ///   - maxStreamSize: The largest stream stored, in bytes. The default is `0`: no stream is stored.
    public init(cache: ResponseCache, upstream: any HTTPTransport, maxAge: Duration? = nil, listener: (any CacheEventListener)? = nil,
                maxStreamSize: Int = 0) {
        self.cache = cache
        self.upstream = upstream
        self.maxAge = maxAge
        self.listener = listener
        self.maxStreamSize = maxStreamSize
    }

    /// Sends `request` through the cache: a `GET` is answered from the cache or the server (revalidated,
    /// stored); anything else, or any request while the cache is closed, goes to ``upstream`` as it is.
    ///
    /// A stream — a `GET` with a ``TransportRequest/responseBodyFile`` — goes the same way: the server's answer
    /// arrives into the file and is stored when it is at most ``maxStreamSize`` bytes; a stored answer is written
    /// into the file (created or emptied, mode 0600) and returned with an empty body, as the transport returns a
    /// 2xx answer that went to a file.
    ///
    /// - Parameter request: The request.
    /// - Returns: The answer: the server's, or the stored entry's (status, headers, body; no transfer metrics),
    ///   or `504` for `Cache-Control: only-if-cached` with nothing stored.
    /// - Throws: What ``upstream`` throws; `CancellationError` when the task is cancelled; `CacheError.fileSystem` when a
    ///   stored stream cannot be written into its file.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard cache.isOpen, CacheEntry.namesEqual(request.method, "GET") else { return try await upstream.send(request) }
        switch try await intercept(request) {
        case .network(let reply): return reply
        case .fresh(let entry), .notModified(let entry), .passive(.some(let entry)):
            guard let file = request.responseBodyFile else { return Self.response(from: entry) }
            guard FileManager.default.createFile(atPath: file, contents: entry.payload, attributes: [.posixPermissions: 0o600]) else {
                throw CacheError.fileSystem.with(detail: "cannot write the stored answer into \(file)")
            }
            return Self.response(status: entry.status, headerFields: entry.headers, body: Data())
        case .unsatisfiable, .passive(nil): return Self.response(status: 504, headerFields: [:], body: Data())
        }
    }

    /// Passive mode's answer to a request, decided by the same table as every other (``CachePolicy``'s passive rows):
    /// a read is answered with what is stored — ``CacheOutcome/passive(_:)``, `nil` when nothing is — and never
    /// changes an entry; anything else is ``CacheOutcome/unsatisfiable``. The server is never asked, nothing waits.
    ///
    /// - Parameters:
    ///   - request: The request, its URL the cache key.
    ///   - useCache: The request's `useCache`; false makes a read unsatisfiable in passive mode.
    /// - Returns: ``CacheOutcome/passive(_:)`` or ``CacheOutcome/unsatisfiable``.
    public func passiveAnswer(_ request: TransportRequest, useCache: Bool = true) -> CacheOutcome {
        let cacheRequest = CacheRequest(method: request.method, headers: request.headerFields, useCache: useCache)
        let cached = lookup(request.url)
        switch CachePolicy.strategy(for: cacheRequest, stored: cached, mode: .passive, maxAge: nil, now: Date()) {
        case .serveStored: return .passive(cached)
        case .unsatisfiable, .fetch, .revalidate: return .unsatisfiable
        }
    }

    /// The cache side of one active-mode request, in one call: the lookup (handed to `cacheAnswer` at once), the
    /// decision, the network through ``upstream`` (after `beforeNetwork`), the retry without
    /// validators when a 304 is about another representation, and the change the answer makes to the cache —
    /// as of when the request was sent, so that an answer never replaces one to a request sent later.
    ///
    /// A task cancelled while the server answered changes nothing in the cache.
    ///
    /// - Parameters:
    ///   - request: The read, its URL the cache key.
    ///   - cacheAnswer: Receives the stored entry (or `nil`) before anything else happens.
    ///   - beforeNetwork: Runs once, just before the first request goes to ``upstream``.
    /// - Returns: What answers the request.
    /// - Throws: What ``upstream`` throws; `CancellationError` when the task was cancelled by the time the
    ///   server answered.
    public func intercept(_ request: TransportRequest, cacheAnswer: (CacheEntry?) -> Void = { _ in },
                          beforeNetwork: () async -> Void = {}) async throws -> CacheOutcome {
        let url = request.url
        let cached = lookup(url)
        cacheAnswer(cached)
        let cacheRequest = CacheRequest(method: request.method, headers: request.headerFields)
        var request = request
        var conditional = false
        switch CachePolicy.strategy(for: cacheRequest, stored: cached, mode: .active, maxAge: maxAge, now: Date()) {
        case .serveStored:
            if let cached {
                listener?.cacheServedFresh(url: url)
                return .fresh(cached)
            }
        case .unsatisfiable:
            return .unsatisfiable
        case .revalidate:
            // Revalidated only without validators of the request's own: the stored lines appended (renamed) replace
            // nothing, and their values are not checked again as a subscript's assignment would.
            cached?.appendConditionalLines(to: &request.headerFields)
            conditional = true
        case .fetch:
            break
        }
        await beforeNetwork()
        var sentAt = Date()
        var reply = try await upstream.send(request)
        var confirming = Self.confirmation(of: reply, stored: cached)
        if reply.status == 304, cached != nil, confirming == nil, conditional {
            // The 304 is about another representation than the copy held: ask for the body (the request had no
            // conditional lines of its own).
            request.headerFields[.ifNoneMatch] = nil
            request.headerFields[.ifModifiedSince] = nil
            sentAt = Date()
            reply = try await upstream.send(request)
            confirming = Self.confirmation(of: reply, stored: cached)
        }
        try Task.checkCancellation()
        if let confirming, let cached {
            listener?.cacheConditionalHit(url: url)
            // The copy the request revalidated is the answer, even when another answer replaced it in the
            // cache meanwhile (the refresh then leaves that one alone).
            let action = CachePolicy.action(for: cacheRequest, status: 304, headers: confirming, hasStoredEntry: true, mode: .active)
            let refreshed = await apply(action, url: url, status: 304, headers: confirming, payload: Data(), stored: cached, confirmed: true, sentAt: sentAt)
            return .notModified(refreshed ?? cached)
        }
        var action = CachePolicy.action(for: cacheRequest, status: reply.status, headers: reply.headerFields, hasStoredEntry: cached != nil, mode: .active)
        var payload = reply.body
        if action == .store, let file = request.responseBodyFile {
            // A stream: its bytes are in the file, stored when there are at most `maxStreamSize` of them.
            if let bytes = Self.streamBytes(file, limit: maxStreamSize) {
                payload = bytes
            } else if cached != nil {
                action = .remove
            } else {
                action = .leave
                listener?.cacheChanged(url: url, change: .notStored)
            }
        }
        _ = await apply(action, url: url, status: reply.status, headers: reply.headerFields, payload: payload, stored: cached, confirmed: false, sentAt: sentAt)
        return .network(reply)
    }

    /// The bytes of a stream's answer in `file` (no file: the answer was empty), or `nil` when there are more than
    /// `limit` of them or they cannot be read (then the stream is not stored; the caller has it in its file).
    private static func streamBytes(_ file: String, limit: Int) -> Data? {
        guard FileManager.default.fileExists(atPath: file) else { return Data() }
        guard let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int, size <= limit else { return nil }
        return FileManager.default.contents(atPath: file).flatMap { $0.count <= limit ? $0 : nil }
    }

    /// The stored entry for `url`, reported to the listener as a hit or a miss; a closed cache is a miss.
    ///
    /// - Parameter url: The request URL.
    /// - Returns: The entry, or `nil`.
    public func lookup(_ url: String) -> CacheEntry? {
        let found: CacheEntry?
        // `entry(for:)` throws only when the cache is closed (a damaged entry is a miss it counts itself).
        do { found = try cache.entry(for: url) } catch { found = nil }
        if found == nil { listener?.cacheMiss(url: url) } else { listener?.cacheHit(url: url) }
        return found
    }

    /// Applies what a server's answer to a read does to the cache (``CachePolicy/action(for:status:headers:hasStoredEntry:mode:)``):
    /// for the answers that came by another way than ``intercept(_:cacheAnswer:beforeNetwork:)``, such as
    /// the parts of a `$batch`. Nothing happens while the cache is closed.
    ///
    /// - Parameters:
    ///   - status: The answer's status code.
    ///   - headerFields: The answer's header fields.
    ///   - body: The answer's body.
    ///   - request: The read it answers (its method and header fields decide, its URL is the key).
    ///   - stored: The entry the request was made with, if any.
    ///   - sentAt: When the request was sent: the answer never replaces one to a request sent later.
    public func update(status: Int, headerFields: HTTPFields, body: Data, for request: TransportRequest, stored: CacheEntry?, sentAt: Date) async {
        let cacheRequest = CacheRequest(method: request.method, headers: request.headerFields)
        let action = CachePolicy.action(for: cacheRequest, status: status, headers: headerFields, hasStoredEntry: stored != nil, mode: .active)
        _ = await apply(action, url: request.url, status: status, headers: headerFields, payload: body, stored: stored, confirmed: false, sentAt: sentAt)
    }

    /// Carries out `action`; a failed write is reported and the request goes on. A cache closed meanwhile is
    /// left alone.
    /// - Returns: The refreshed entry after a 304, if it is still the one stored.
    private func apply(_ action: CacheAction, url: String, status: Int, headers: HTTPFields, payload: Data,
                       stored: CacheEntry?, confirmed: Bool, sentAt: Date) async -> CacheEntry? {
        guard action != .leave, cache.isOpen else { return nil }
        let operation: CacheStorageOperation = action == .store ? .write : action == .refresh ? .refresh : .removal
        do {
            switch action {
            case .store:
                // Handed to the cache's writer: the answer goes to the caller now, the entry commits in a group
                // (`ResponseCache.storeBehind`); until then a lookup of the URL answers it from memory.
                let listener = self.listener
                try await cache.storeBehind(CacheEntry(status: status, headers: headers, payload: payload, storedAt: sentAt), for: url,
                                            keepingNewer: true) { result in
                    switch result {
                    case .success(let stored): listener?.cacheChanged(url: url, change: stored ? .stored : .notStored)
                    case .failure(let error) where error == .notOpen: break  // closed meanwhile: nothing to record
                    case .failure(let error): listener?.cacheStorageFailed(url: url, operation: .write, error: error)
                    }
                }
            case .refresh:
                let refreshed = try await cache.refresh(for: url, with304Headers: headers, revalidating: stored, confirmed: confirmed, at: sentAt)
                listener?.cacheChanged(url: url, change: refreshed == nil ? .refreshSuperseded : .refreshed)
                return refreshed
            case .remove:
                try await cache.removeEntry(for: url)
                listener?.cacheChanged(url: url, change: .removed)
            case .leave:
                break
            }
        } catch let error as CacheError where error == .notOpen {
            // Closed while the request ran: the cache's owner closed it, nothing to record.
        } catch {
            listener?.cacheStorageFailed(url: url, operation: operation, error: ResponseCache.storageError(error))
        }
        return nil
    }

    /// A 304's headers, when they confirm the copy held (checked once).
    private static func confirmation(of reply: TransportResponse, stored: CacheEntry?) -> HTTPFields? {
        guard reply.status == 304, let stored else { return nil }
        return CachePolicy.notModified(reply.headerFields, confirms: stored) ? reply.headerFields : nil
    }

    /// A stored entry as an HTTP answer (no transfer metrics: nothing went over the wire).
    private static func response(from entry: CacheEntry) -> TransportResponse {
        response(status: entry.status, headerFields: entry.headers, body: entry.payload)
    }

    private static func response(status: Int, headerFields: HTTPFields, body: Data) -> TransportResponse {
        TransportResponse(status: status, headerFields: headerFields, body: body, metrics: TransferMetrics(
            headerBytes: 0, bodyBytes: 0, totalTime: .zero, connectionReused: true, newConnections: 0, httpVersion: .unknown))
    }
}
