import Foundation
import ODataCore

/// A resource path with its query options, decoded: what a defining query, a local request or
/// a local next link says.
struct ParsedQuery: Sendable, Hashable {
    struct Option: Sendable, Hashable {
        var name: String
        var value: String
    }

    var path: LocalPath
    var rawPath: String
    var options: [Option]

    static let systemOptions: Set<String> = ["$filter", "$select", "$expand", "$orderby", "$top", "$skip", "$count", "$search",
                                             "$skiptoken", "$deltatoken", "$format", "$apply", "$levels", "$inlinecount"]

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
            for piece in pieces[1].split(separator: "&") where !piece.isEmpty {
                let pair = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let decode = { (raw: Substring) in String(raw).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(raw) }
                options.append(Option(name: decode(pair[0]), value: pair.count == 2 ? decode(pair[1]) : ""))
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
        path = try LocalPath.parse(pathText)
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
            for option in options where ["$count", "$inlinecount", "$skiptoken", "$deltatoken", "$search", "$apply"].contains(option.name) {
                throw OfflineODataError(.invalidRequest, "\(option.name) is not allowed in a defining query")
            }
            if let filter = value(of: "$filter") { try LocalQuery.checkFilter(filter) }
        }
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
