public import ODataCore

/// The query options of one OData request, parsed: system options as trees, custom options and
/// parameter aliases kept in order.
///
/// ```swift
/// let options = try QueryOptions.parse("$filter=Price%20gt%205&$orderby=Name&$top=10")
/// let result = try QueryEvaluator.apply(options, to: products)
/// ```
public struct QueryOptions: Sendable, Hashable, CustomStringConvertible {
    /// `$filter`.
    public var filter: FilterExpression?
    /// `$orderby`.
    public var orderBy: OrderBy?
    /// `$select`.
    public var select: Select?
    /// `$expand`.
    public var expand: Expand?
    /// `$top`.
    public var top: Int?
    /// `$skip`.
    public var skip: Int?
    /// `$count` (`true` asks for the total count).
    public var count: Bool?
    /// `$search`.
    public var search: SearchExpression?
    /// `$levels` (meaningful inside `$expand`).
    public var levels: ExpandLevels?
    /// `$skiptoken`, opaque.
    public var skipToken: String?
    /// `$deltatoken`, opaque.
    public var deltaToken: String?
    /// Other system options this module does not interpret (`$format`, `$apply`, `$compute`,
    /// `$schemaversion`, `$index`, `$id`), by lowercase name, values percent-decoded.
    public var otherSystemOptions: [String: String]
    /// Custom options (names not starting with `$` or `@`), in order, percent-decoded.
    public var customOptions: [CustomOption]
    /// Parameter alias values (`@p=5` → `["p": "5"]`), percent-decoded; already substituted
    /// into ``filter`` and ``orderBy``.
    public var aliases: [String: String]

    /// A custom query option.
    public struct CustomOption: Sendable, Hashable {
        /// The option's name.
        public var name: String
        /// The option's value (empty when written without `=`).
        public var value: String

        /// Creates a custom option.
        /// - Parameters:
        ///   - name: the name.
        ///   - value: the value.
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Creates empty options.
    public init() {
        otherSystemOptions = [:]
        customOptions = []
        aliases = [:]
    }

    static let uninterpreted: Set<String> = ["$format", "$apply", "$compute", "$schemaversion", "$index", "$id"]

    /// Parses a URL query string.
    ///
    /// Names and values are percent-decoded as RFC 3986 says (`+` stays a plus). System option
    /// names are case-insensitive and may be given once. Error offsets are UTF-8 offsets into the
    /// percent-decoded value of the option named in the message.
    /// - Parameter rawQuery: the query, with or without the leading `?`.
    /// - Returns: the options.
    /// - Throws: ``ODataError`` `.invalidQueryOption` naming the option and what was wrong in it.
    public static func parse(_ rawQuery: String) throws(ODataError) -> QueryOptions {
        var query = Substring(rawQuery)
        if query.hasPrefix("?") { query = query.dropFirst() }
        if let hash = query.utf8.firstIndex(of: UInt8(ascii: "#")) {
            let offset = query.utf8.distance(from: query.utf8.startIndex, to: hash)
            throw ODataError(.invalidQueryOption, "unencoded '#' in the query (it starts the fragment)", offset: offset)
        }
        var pairs: [(name: String, value: String)] = []
        for pieces in split(query) {
            let name = try decode(String(pieces[0]), option: String(pieces[0]))
            var rawValue = pieces.count > 1 ? String(pieces[1]) : ""
            if ["$expand", "$select"].contains(name.lowercased()) {
                // A percent-encoded `;` is data, not a nested-option separator: keep it apart until
                // the nested options are split.
                rawValue = rawValue.replacing("%3B", with: OptionSyntax.encodedSemicolon).replacing("%3b", with: OptionSyntax.encodedSemicolon)
            }
            if pieces.count > 1, name.lowercased() == "$search", let semicolon = pieces[1].utf8.firstIndex(of: UInt8(ascii: ";")) {
                // `;` separates nested options; in $search it must be percent-encoded.
                let offset = pieces[1].utf8.distance(from: pieces[1].utf8.startIndex, to: semicolon)
                throw ODataError(.invalidQueryOption, "in $search: unencoded ';'", offset: offset)
            }
            let value = pieces.count > 1 ? try decode(rawValue, option: name) : ""
            pairs.append((name, value))
        }
        return try build(pairs, nested: false, baseOffsets: nil)
    }

    /// The `name=value` pairs of a URL query, in order, names and values percent-decoded as RFC 3986 says
    /// (`+` stays a plus), without interpreting them: what ``parse(_:)`` reads before it checks the options.
    ///
    /// A piece without `=` has an empty value; empty pieces (`a=1&&b=2`) are skipped.
    /// - Parameter rawQuery: the query, with or without the leading `?`.
    /// - Returns: the pairs as written, repeated names included.
    /// - Throws: ``ODataError`` `.invalidQueryOption` for a bad `%` sequence or text that is not UTF-8.
    public static func decodedPairs(_ rawQuery: String) throws(ODataError) -> [(name: String, value: String)] {
        var query = Substring(rawQuery)
        if query.hasPrefix("?") { query = query.dropFirst() }
        var pairs: [(name: String, value: String)] = []
        for pieces in split(query) {
            let name = try decode(String(pieces[0]), option: String(pieces[0]))
            pairs.append((name, pieces.count > 1 ? try decode(String(pieces[1]), option: name) : ""))
        }
        return pairs
    }

    /// The `&`-separated pieces of a query, each split at its first `=`, still percent-encoded.
    static func split(_ query: Substring) -> [[Substring]] {
        query.split(separator: "&", omittingEmptySubsequences: true).map {
            $0.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        }
    }

    static func decode(_ text: String, option: String) throws(ODataError) -> String {
        do {
            return try PercentDecoding.decodeString(text)
        } catch {
            throw ODataError(.invalidQueryOption, "in \(option): \(error.message)", offset: error.offset)
        }
    }

    /// Builds options from decoded name/value pairs; nested options carry their value offsets.
    static func build(_ pairs: [(name: String, value: String)], nested: Bool, baseOffsets: [Int]?) throws(ODataError) -> QueryOptions {
        var options = QueryOptions()
        for (name, value) in pairs where name.hasPrefix("@") {
            let alias = String(name.dropFirst())
            guard !alias.isEmpty else { throw ODataError(.invalidQueryOption, "empty parameter alias name") }
            options.aliases[alias] = value
        }
        var seen: Set<String> = []
        for (index, pair) in pairs.enumerated() {
            let base = baseOffsets?[index] ?? 0
            let nameOffset = baseOffsets == nil ? 0 : base - pair.name.utf8.count - 1
            func wrap(_ error: ODataError, _ option: String) -> ODataError {
                let prefix = "in \(option): "
                let message = error.message.hasPrefix(prefix) ? error.message : prefix + error.message
                return ODataError(.invalidQueryOption, message, offset: (error.offset ?? 0) + base)
            }
            if pair.name.hasPrefix("@") { continue }
            guard pair.name.hasPrefix("$") else {
                if nested {
                    throw ODataError(.invalidQueryOption, "unknown nested option '\(pair.name)'", offset: nameOffset)
                }
                options.customOptions.append(CustomOption(pair.name, pair.value))
                continue
            }
            let name = pair.name.lowercased()
            // `$format` may be repeated (the ABNF allows it); the last value counts.
            guard seen.insert(name).inserted || name == "$format" else {
                throw ODataError(.invalidQueryOption, "\(name) given more than once", offset: nameOffset)
            }
            let value = pair.value
            do throws(ODataError) {
                if let first = value.utf8.first, Lexer.isSpace(first) {
                    throw ODataError(.invalidQueryOption, "unexpected whitespace after '='", offset: 0)
                }
                switch name {
                case "$filter":
                    options.filter = try FilterExpression.parse(value, aliases: options.aliases)
                case "$orderby":
                    options.orderBy = try OrderBy.parse(value, aliases: options.aliases)
                case "$select":
                    options.select = try Select.parse(value)
                case "$expand":
                    options.expand = try Expand.parse(value)
                case "$top":
                    options.top = try nonNegative(value, name)
                case "$skip":
                    options.skip = try nonNegative(value, name)
                case "$count":
                    switch value {
                    case "true": options.count = true
                    case "false": options.count = false
                    default: throw ODataError(.invalidQueryOption, "expected true or false", offset: 0)
                    }
                case "$search":
                    options.search = try SearchExpression.parse(value)
                case "$levels":
                    if value == "max" {
                        options.levels = .max
                    } else if value.count > 1 && value.hasPrefix("0") {
                        throw ODataError(.invalidQueryOption, "expected a number without leading zeros or max", offset: 0)
                    } else {
                        options.levels = .count(try nonNegative(value, name))
                    }
                case "$skiptoken":
                    guard !nested else { throw ODataError(.invalidQueryOption, "not allowed here", offset: 0) }
                    options.skipToken = value
                case "$deltatoken":
                    guard !nested else { throw ODataError(.invalidQueryOption, "not allowed here", offset: 0) }
                    options.deltaToken = value
                case "$index":
                    let digits = value.hasPrefix("-") ? value.dropFirst() : Substring(value)
                    guard !digits.isEmpty, digits.utf8.allSatisfy(Lexer.isDigit) else {
                        throw ODataError(.invalidQueryOption, "expected an integer, found '\(value)'", offset: 0)
                    }
                    options.otherSystemOptions[name] = value
                default:
                    guard uninterpreted.contains(name) else {
                        throw ODataError(.invalidQueryOption, "in \(name): unknown system query option", offset: nameOffset)
                    }
                    options.otherSystemOptions[name] = value
                }
            } catch {
                if error.message.hasSuffix("unknown system query option") { throw error }
                throw wrap(error, name)
            }
        }
        return options
    }

    static func nonNegative(_ value: String, _ name: String) throws(ODataError) -> Int {
        guard !value.isEmpty, value.utf8.allSatisfy(Lexer.isDigit), let n = Int(value) else {
            throw ODataError(.invalidQueryOption, "expected a non-negative integer, found '\(value)'", offset: 0)
        }
        return n
    }

    /// The options as a query string, system options first in a fixed order, then aliases and
    /// custom options; values are not percent-encoded (see ``queryString``).
    public var description: String {
        pairs(nested: false).map { $0.name + "=" + $0.value }.joined(separator: "&")
    }

    /// The options as a percent-encoded URL query string, without the leading `?`.
    public var queryString: String {
        pairs(nested: false).map { pair in
            // `;` separates nested options in $expand/$select; elsewhere it is data and is encoded.
            let keepsSemicolons = pair.name == "$expand" || pair.name == "$select"
            return QueryOptions.encode(pair.name) + "=" + QueryOptions.encode(pair.value, keepingSemicolons: keepsSemicolons)
        }
            .joined(separator: "&")
    }

    /// Nested form: `$filter=…;$top=1`.
    var nestedDescription: String {
        pairs(nested: true).map { $0.name + "=" + $0.value }.joined(separator: ";")
    }

    func pairs(nested: Bool) -> [(name: String, value: String)] {
        var result: [(String, String)] = []
        if let filter { result.append(("$filter", filter.description)) }
        if let search { result.append(("$search", search.description)) }
        if let orderBy { result.append(("$orderby", orderBy.description)) }
        if let select { result.append(("$select", select.description)) }
        if let expand { result.append(("$expand", expand.description)) }
        if let skip { result.append(("$skip", String(skip))) }
        if let top { result.append(("$top", String(top))) }
        if let count { result.append(("$count", count ? "true" : "false")) }
        if let levels { result.append(("$levels", levels.description)) }
        if let skipToken { result.append(("$skiptoken", skipToken)) }
        if let deltaToken { result.append(("$deltatoken", deltaToken)) }
        for name in otherSystemOptions.keys.sorted() { result.append((name, otherSystemOptions[name]!)) }
        for name in aliases.keys.sorted() { result.append(("@" + name, aliases[name]!)) }
        for option in customOptions { result.append((option.name, option.value)) }
        return result
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters and a few safe sub-delimiters
    /// (`;` stays when `keepingSemicolons`: in $expand/$select it separates nested options).
    static func encode(_ text: String, keepingSemicolons: Bool = false) -> String {
        var out: [UInt8] = []
        let hex = Array("0123456789ABCDEF".utf8)
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "$"),
                UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ","), UInt8(ascii: "'"), UInt8(ascii: "/"),
                UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "*"):
                out.append(b)
            case UInt8(ascii: ";") where keepingSemicolons:
                out.append(b)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
