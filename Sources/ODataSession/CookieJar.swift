import Foundation
import ODataCore

/// The cookies of one session (RFC 6265, the parts a back end's session needs), in memory only.
///
/// A cookie is kept from a `Set-Cookie` answer and sent back on the requests it matches: the same host (or a
/// subdomain for a `Domain` cookie), a path under its `Path`, `https` only when `Secure`, not expired. It is
/// never written anywhere; ``removeAll()`` ends the session. At most ``capacity`` cookies are kept (the oldest
/// go first), so a back end cannot grow the jar without bound.
final class CookieJar: Sendable {
    struct Cookie: Hashable {
        var name: String
        var value: String
        var domain: String
        var hostOnly: Bool
        var path: String
        var secure: Bool
        var expires: Date?
    }

    /// The most cookies kept.
    static let capacity = 300

    private let cookies = LockedValue<[Cookie]>([])

    /// The number of cookies held.
    var count: Int { cookies.withLock { $0.count } }

    /// Whether no cookie is held.
    var isEmpty: Bool { cookies.withLock { $0.isEmpty } }

    /// Keeps the cookies of `setCookie` values received for `url`.
    func store(_ setCookie: [String], for url: URL) {
        guard !setCookie.isEmpty, let host = url.host?.lowercased() else { return }
        let now = Date()
        let parsed = setCookie.compactMap { Self.parse($0, host: host, requestPath: url.path, now: now) }
        guard !parsed.isEmpty else { return }
        cookies.withLock { cookies in
            for cookie in parsed {
                cookies.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
                if let expires = cookie.expires, expires <= now { continue }  // an expiry in the past deletes
                cookies.append(cookie)
            }
            cookies.removeAll { $0.expires.map { $0 <= now } ?? false }
            if cookies.count > Self.capacity { cookies.removeFirst(cookies.count - Self.capacity) }
        }
    }

    /// The `Cookie` field value for a request to `url`, or `nil` when no cookie matches.
    func header(for url: URL) -> String? {
        guard let host = url.host?.lowercased() else { return nil }
        let path = url.path.isEmpty ? "/" : url.path
        let secure = url.scheme?.lowercased() == "https"
        let now = Date()
        let matching = cookies.withLock { cookies in
            cookies.filter { cookie in
                (cookie.hostOnly ? host == cookie.domain : (host == cookie.domain || host.hasSuffix("." + cookie.domain)))
                    && Self.pathMatches(path, cookie.path) && (!cookie.secure || secure)
                    && (cookie.expires.map { $0 > now } ?? true)
            }
        }
        guard !matching.isEmpty else { return nil }
        // Longer paths first (RFC 6265 §5.4).
        return matching.sorted { $0.path.count > $1.path.count }.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// Forgets every cookie.
    func removeAll() {
        cookies.withLock { $0.removeAll() }
    }

    /// RFC 6265 §5.1.4.
    private static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).first == "/"
    }

    /// RFC 6265 §5.2; `nil` for a value that is no cookie, or one for a domain the host may not set.
    static func parse(_ text: String, host: String, requestPath: String, now: Date) -> Cookie? {
        let parts = text.split(separator: ";", omittingEmptySubsequences: false)
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return nil }
        var cookie = Cookie(name: name, value: value, domain: host, hostOnly: true, path: defaultPath(requestPath),
                            secure: false, expires: nil)
        var maxAgeSeen = false
        for attribute in parts.dropFirst() {
            let pieces = attribute.split(separator: "=", maxSplits: 1)
            guard let key = pieces.first?.trimmingCharacters(in: .whitespaces).lowercased() else { continue }
            let argument = pieces.count > 1 ? pieces[1].trimmingCharacters(in: .whitespaces) : ""
            switch key {
            case "domain":
                var domain = argument.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                // A host may set a cookie for itself or a parent domain only.
                guard host == domain || host.hasSuffix("." + domain) else { return nil }
                cookie.domain = domain
                cookie.hostOnly = false
            case "path":
                if argument.hasPrefix("/") { cookie.path = argument }
            case "secure":
                cookie.secure = true
            case "max-age":
                guard let seconds = Int(argument) else { continue }
                maxAgeSeen = true
                cookie.expires = now.addingTimeInterval(TimeInterval(max(seconds, 0) == 0 ? -1 : seconds))
            case "expires":
                guard !maxAgeSeen, let date = httpDate(argument) else { continue }
                cookie.expires = date
            default:
                continue
            }
        }
        return cookie
    }

    /// RFC 6265 §5.1.4: the request path up to its last `/`.
    private static func defaultPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let last = path.lastIndex(of: "/"), last != path.startIndex else { return "/" }
        return String(path[..<last])
    }

    private static func httpDate(_ text: String) -> Date? {
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE, dd-MMM-yyyy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
