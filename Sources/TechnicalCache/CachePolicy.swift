import Foundation
import HTTPTypes

/// How a store uses its technical cache: the one name of passive mode, for ``CachingTransport``, ``CachePolicy``
/// and the online store (`OnlineODataStore.mode`, whose state tables decide what a request does in each).
public enum StoreMode: String, Sendable, Hashable, CaseIterable {
    /// The default: ask the server, revalidating with the stored entry's validators; the online store delivers the
    /// cached copy (if any) first.
    case active
    /// Answer from the technical cache alone: no network round trip, the cache is never changed.
    case passive
}

/// The parts of a request the cache decisions look at.
public struct CacheRequest: Sendable, Hashable {
    /// The HTTP method, for example `GET`.
    public var method: String
    /// The request headers.
    public var headers: HTTPFields
    /// Whether the application asked for the cache on this request.
    public var useCache: Bool

    /// Creates a request description.
    ///
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - headers: The request headers. The default is none.
    ///   - useCache: Whether the application asked for the cache. The default is `true`.
    public init(method: String, headers: HTTPFields = HTTPFields(), useCache: Bool = true) {
        self.method = method
        self.headers = headers
        self.useCache = useCache
    }
}

/// What to do with a request before it goes out.
public enum CacheDecision: Sendable, Hashable {
    /// Answer with the stored entry (in passive mode the entry may be `nil`: nothing cached is not a failure).
    case serveStored
    /// Deliver the stored entry as the cache response, then send the request with these conditional
    /// headers; a 304 means the stored entry is the answer.
    case revalidate(conditionalHeaders: HTTPFields)
    /// Send the request as it is.
    case fetch
    /// The request cannot be answered in this mode (passive mode and an uncacheable request, or
    /// `Cache-Control: only-if-cached` with nothing stored).
    case unsatisfiable
}

/// What to do with the stored entry once the server answered.
public enum CacheAction: Sendable, Hashable {
    /// Store the response, replacing any previous entry.
    case store
    /// The server answered 304: refresh the stored entry's headers and keep its payload.
    case refresh
    /// Remove the stored entry (the resource is gone, or the response may not be stored).
    case remove
    /// Leave the cache as it is.
    case leave
}

/// The cache decisions as pure functions of their inputs, apart from storage and transport
/// (after OkHttp's `CacheStrategy`). Nothing here does I/O.
///
/// Rules (SPEC "Cache content rules", RFC 9111):
/// - Only `GET` requests with `useCache` are cacheable; create, update and delete never touch the cache.
/// - Active mode asks the server, conditionally when the entry has a validator: `If-None-Match`
///   with its `ETag` (RFC 9110 §13.1.2), and `If-Modified-Since` with its `Last-Modified` (§13.1.3);
///   only an entry younger than the caller's `maxAge`, or `Cache-Control: only-if-cached`, is served
///   without asking.
/// - Passive mode answers from the cache only and never changes it.
/// - `Cache-Control: no-store` in the request or the response keeps the response out of the cache
///   (RFC 9111 §5.2.1.5, §5.2.2.5); a `no-store` response also drops the stale entry it supersedes.
/// - 404 and 410 remove the entry; other failures leave it.
public enum CachePolicy {
    /// Whether the cache takes part in this request at all.
    ///
    /// - Parameter request: The request.
    /// - Returns: `true` for a `GET` with `useCache` that does not carry `Cache-Control: no-store`.
    public static func isCacheable(_ request: CacheRequest) -> Bool {
        request.useCache && isGET(request.method) && !hasDirective("no-store", in: request.headers)
    }

    /// Decides how to run a request, given what is stored.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - stored: The stored entry for its URL, or `nil`.
    ///   - mode: Active or passive.
    ///   - maxAge: In active mode, a stored entry younger than this (by ``CacheEntry/storedAt``) is
    ///     served without asking the server, unless the request says `Cache-Control: no-cache` or sets
    ///     its own validators. The default is `nil`: always ask.
    ///   - now: The time to measure the entry's age at. The default is now.
    /// - Returns: The decision.
    public static func decision(for request: CacheRequest, stored: CacheEntry?, mode: StoreMode, maxAge: Duration? = nil, now: Date = Date()) -> CacheDecision {
        switch strategy(for: request, stored: stored, mode: mode, maxAge: maxAge, now: now) {
        case .serveStored: return .serveStored
        case .unsatisfiable: return .unsatisfiable
        case .fetch: return .fetch
        case .revalidate:
            var conditional = HTTPFields()
            stored?.appendConditionalLines(to: &conditional)
            return .revalidate(conditionalHeaders: conditional)
        }
    }

    /// ``decision(for:stored:mode:maxAge:now:)`` without building the conditional lines: ``CachingTransport`` appends
    /// them to its request straight from the entry (``CacheEntry/appendConditionalLines(to:)``).
    enum Strategy {
        case serveStored
        /// Revalidate with the stored entry's validators (it has at least one).
        case revalidate
        case fetch
        case unsatisfiable
    }

    /// The rules of ``decision(for:stored:mode:maxAge:now:)``.
    static func strategy(for request: CacheRequest, stored: CacheEntry?, mode: StoreMode, maxAge: Duration?, now: @autoclosure () -> Date) -> Strategy {
        if mode == .passive {
            // Passive mode answers a read with what is stored (nothing stored is an answer too) and never stores, so a
            // request's `no-store` changes nothing; anything else would need the server.
            return request.useCache && isGET(request.method) ? .serveStored : .unsatisfiable
        }
        guard isCacheable(request) else { return .fetch }
        if hasDirective("only-if-cached", in: request.headers) {
            // RFC 9111 §5.2.1.7: answer from the cache or with 504.
            return stored == nil ? .unsatisfiable : .serveStored
        }
        guard let stored else { return .fetch }
        // An application that sets its own validators keeps them.
        if request.headers.contains(.ifNoneMatch) || request.headers.contains(.ifModifiedSince) {
            return .fetch
        }
        if let maxAge, !hasDirective("no-cache", in: request.headers) {
            let seconds = Double(maxAge.components.seconds) + Double(maxAge.components.attoseconds) / 1e18
            if now().timeIntervalSince(stored.storedAt) < seconds { return .serveStored }
        }
        return stored.hasValidators ? .revalidate : .fetch
    }

    /// Decides what the server's answer does to the stored entry.
    ///
    /// - Parameters:
    ///   - request: The request that was sent.
    ///   - status: The response's status code.
    ///   - headers: The response's headers.
    ///   - hasStoredEntry: Whether an entry was stored for the URL when the request went out.
    ///   - mode: Active or passive.
    /// - Returns: The action on the stored entry.
    public static func action(
        for request: CacheRequest,
        status: Int,
        headers: HTTPFields,
        hasStoredEntry: Bool,
        mode: StoreMode
    ) -> CacheAction {
        guard mode == .active, request.useCache, isGET(request.method) else { return .leave }
        switch status {
        case 304:
            return hasStoredEntry ? .refresh : .leave
        case 404, 410:
            return .remove
        case 200...299 where status != 206:
            if hasDirective("no-store", in: request.headers) || hasDirective("no-store", in: headers) {
                return hasStoredEntry ? .remove : .leave
            }
            return .store
        default:
            return .leave
        }
    }

    /// Whether a 304 answer confirms `stored`, the entry whose validators the request sent
    /// (RFC 9111 §4.3.4, with the weak comparison of `If-None-Match`, RFC 9110 §8.8.3.2).
    ///
    /// A 304 that names an `ETag` confirms only an entry with that entity tag; one without an `ETag`
    /// but with a `Last-Modified` confirms only an entry with that date (or without one); a 304
    /// without validators confirms the entry.
    ///
    /// - Parameters:
    ///   - headers: The 304 response's headers.
    ///   - stored: The stored entry.
    /// - Returns: `false` when the 304 is about another representation: its body is not the answer.
    public static func notModified(_ headers: HTTPFields, confirms stored: CacheEntry) -> Bool {
        func value(_ name: HTTPField.Name) -> String? { CacheEntry.firstIndex(of: name, in: headers).map { headers[$0].value } }
        // The same text is the same validator (the usual 304, which echoes the stored one): nothing to trim.
        if let etag = value(.eTag) {
            guard let storedTag = stored.etag else { return false }
            return etag == storedTag || opaqueTag(etag) == opaqueTag(storedTag)
        }
        if let lastModified = value(.lastModified), let storedDate = stored.lastModified {
            return lastModified == storedDate || trimmed(lastModified) == trimmed(storedDate)
        }
        return true
    }

    /// Whether a method is `GET`, in any case (without making an uppercased copy on every request).
    private static func isGET(_ method: String) -> Bool {
        CacheEntry.namesEqual(method, "GET")
    }

    /// An entity tag without its weakness indicator, for the weak comparison.
    private static func opaqueTag(_ tag: String) -> Substring {
        let trimmed = trimmed(tag)
        return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed
    }

    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    private static func trimmed(_ text: some StringProtocol) -> Substring {
        let text = Substring(text)
        let utf8 = text.utf8
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var start = utf8.startIndex
        var end = utf8.endIndex
        while start < end, isSpace(utf8[start]) { start = utf8.index(after: start) }
        while end > start, isSpace(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        return text[start..<end]
    }

    /// Whether a `Cache-Control` header in `headers` carries `directive` (case-insensitive,
    /// arguments such as `max-age=0` ignored).
    ///
    /// - Parameters:
    ///   - directive: The directive's name, lowercased.
    ///   - headers: The headers to look in.
    /// - Returns: `true` when present.
    public static func hasDirective(_ directive: String, in headers: HTTPFields) -> Bool {
        hasDirective(directive, in: headers, from: 0)
    }

    /// ``hasDirective(_:in:)`` reading the lines from `start` (no `Cache-Control` line before it).
    static func hasDirective(_ directive: String, in headers: HTTPFields, from start: Int) -> Bool {
        // Only the `Cache-Control` lines are read (found by position, no other line copied).
        var next = CacheEntry.firstIndex(of: .cacheControl, in: headers, from: start)
        while let index = next {
            let found = headers[index].value.split(separator: ",").contains { part in
                let name = part.split(separator: "=", maxSplits: 1).first ?? part[...]
                return CacheEntry.namesEqual(String(trimmed(name)), directive)
            }
            if found { return true }
            next = CacheEntry.firstIndex(of: .cacheControl, in: headers, from: index + 1)
        }
        return false
    }
}
