import Foundation
import ODataCore
import ODataQuery

/// A request addressed to the local store — what a defining query, a local request or a local next link says:
/// its path as ODataQuery's ``ResourcePath`` reads it, the path as written, and its query options decoded, in order.
///
/// Paths and options are read by ODataQuery (RFC 3986: a `+` stays a plus); what the store refuses on top of that
/// (unknown or repeated system options, empty values, a defining query's shape) is checked here.
struct LocalRequest: Sendable, Hashable {
    struct Option: Sendable, Hashable {
        var name: String
        var value: String
    }

    var path: ResourcePath
    var rawPath: String
    var options: [Option]

    static let systemOptions: Set<String> = ["$filter", "$select", "$expand", "$orderby", "$top", "$skip", "$count", "$search",
                                             "$skiptoken", "$deltatoken", "$format", "$apply", "$levels", "$inlinecount", "$id"]

    /// Parses `path?query`, relative to the service root or absolute under it.
    init(_ text: String, serviceRoot: String, checkDefiningQuery: Bool = false) throws(OfflineODataError) {
        var relative = text
        if relative.hasPrefix(serviceRoot) {
            relative.removeFirst(serviceRoot.count)
        } else if relative.hasPrefix("http://") || relative.hasPrefix("https://") {
            throw OfflineODataError(.invalidRequest, "'\(text)' is not under the service root \(serviceRoot)")
        }
        let pieces = relative.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let pathText = String(pieces[0])
        var options: [Option] = []
        if pieces.count == 2 {
            do {
                options = try QueryOptions.decodedPairs(String(pieces[1])).map { Option(name: $0.name, value: $0.value) }
            } catch {
                throw Self.invalid(error, "the query of '\(text)'")
            }
        }
        try self.init(pathText: pathText, options: options, checkDefiningQuery: checkDefiningQuery)
    }

    /// Takes an ``ODataRequest``'s path and options.
    init(request: ODataRequest) throws(OfflineODataError) {
        try self.init(pathText: request.resourcePath,
                      options: request.queryOptions.map { Option(name: $0.name, value: $0.value) }, checkDefiningQuery: false)
    }

    private init(pathText: String, options: [Option], checkDefiningQuery: Bool) throws(OfflineODataError) {
        // V2's `A(1)/$links/Nav(2)` is read as V4's `A(1)/Nav(2)/$ref`: one path model for both.
        if let range = pathText.range(of: "/$links/") {
            path = try Self.path(pathText[..<range.lowerBound] + "/" + pathText[range.upperBound...] + "/$ref")
        } else {
            path = try Self.path(pathText)
        }
        rawPath = pathText.hasPrefix("/") ? String(pathText.dropFirst()) : pathText
        self.options = options
        var seen: Set<String> = []
        for option in options {
            if option.name.hasPrefix("$") {
                guard Self.systemOptions.contains(option.name) else {
                    throw OfflineODataError(.invalidRequest, "unknown system query option '\(option.name)'")
                }
                guard seen.insert(option.name).inserted else {
                    throw OfflineODataError(.invalidRequest, "the query option '\(option.name)' is given twice")
                }
                if option.value.trimmingCharacters(in: .whitespaces).isEmpty {
                    throw OfflineODataError(.invalidRequest, "the query option '\(option.name)' has no value")
                }
            }
            if option.name == "$id", path.segments.last?.kind != .ref {
                throw OfflineODataError(.invalidRequest, "$id names the entity of a relationship delete (Set(key)/Nav/$ref?$id=…) only")
            }
            if option.name == "$top" || option.name == "$skip" {
                guard let number = Int(option.value), number >= 0 else {
                    throw OfflineODataError(.invalidRequest, "\(option.name) must be a non-negative integer, got '\(option.value)'")
                }
            }
            if option.name == "$count", option.value != "true", option.value != "false" {
                throw OfflineODataError(.invalidRequest, "$count must be true or false, got '\(option.value)'")
            }
        }
        if checkDefiningQuery {
            guard path.segments.count == 1 || (path.segments.count == 2 && path.segments[0].key != nil) else {
                throw OfflineODataError(.invalidRequest, "'\(pathText)' must be an entity set, an entity, or one navigation from an entity")
            }
            // `$count=true` (V2: `$inlinecount=allpages`) is sent: the back end's count is the download progress's total.
            for option in options where ["$skiptoken", "$deltatoken", "$search", "$apply"].contains(option.name) {
                throw OfflineODataError(.invalidRequest, "\(option.name) is not allowed in a defining query")
            }
            if let inlineCount = value(of: "$inlinecount"), inlineCount != "allpages", inlineCount != "none" {
                throw OfflineODataError(.invalidRequest, "$inlinecount must be 'allpages' or 'none', got '\(inlineCount)'")
            }
            if let filter = value(of: "$filter") { try LocalQuery.checkFilter(filter) }
        }
    }

    /// Parses a resource path with ``ResourcePath/parse(_:)``: `Set`, `Set(key)`, `Set(key)/Nav`, `Set(key)/Nav(key)`…
    ///
    /// The path may be percent-encoded or not (an ``ODataRequest``'s path is kept as the caller wrote it): it is
    /// encoded as a URL path would be, `%XX` sequences kept, then decoded once — a `%` that starts no `%XX` is data.
    /// - Throws: `OfflineODataError.invalidRequest` naming the offending piece.
    static func path(_ text: String) throws(OfflineODataError) -> ResourcePath {
        // Without a `%` there is nothing to decode (the usual key lookup: no copy).
        let encoded = text.utf8.contains(UInt8(ascii: "%")) ? PercentEncoding.encodePath(text) : text
        do { return try ResourcePath.parse(encoded) } catch {
            throw invalid(error, "the resource path '\(text)'")
        }
    }

    /// The one place an ODataQuery parse error becomes the store's: `.invalidRequest`, naming what was read
    /// (a caller that checks defining queries makes it `.invalidDefiningQuery`).
    static func invalid(_ error: ODataError, _ what: String) -> OfflineODataError {
        OfflineODataError(.invalidRequest, "\(what) is malformed: \(error.message)")
    }

    func value(of name: String) -> String? {
        options.first { $0.name == name }?.value
    }

    /// `path?query` with the options percent-encoded, relative to the service root.
    func relativeURL(replacing replacements: [Option] = [], removing removed: Set<String> = []) -> String {
        var list = options.filter { !removed.contains($0.name) && !replacements.map(\.name).contains($0.name) }
        list.append(contentsOf: replacements)
        let path = PercentEncoding.encodePath(rawPath)
        guard !list.isEmpty else { return path }
        return path + "?" + list.map { PercentEncoding.encodeQueryName($0.name) + "=" + PercentEncoding.encodeQueryValue($0.value) }.joined(separator: "&")
    }
}
