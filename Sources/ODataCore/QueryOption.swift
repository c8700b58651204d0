import Foundation

/// One query option of an OData request, rendered into the URL in the order given.
///
/// System options take their values unencoded (`.filter("Name eq 'O''Neil'")`); rendering
/// percent-encodes what a URL query cannot carry (space, `&`, `=`, `+`, `#`, `%`, non-ASCII…)
/// and keeps what OData URLs conventionally show literally (`$`, `'`, `(`, `)`, `,`, `:`, `@`, `/`).
public enum QueryOption: Sendable, Hashable {
    /// `$filter` with an OData expression.
    case filter(String)
    /// `$select` with property paths.
    case select([String])
    /// `$expand` with navigation paths, each optionally with nested options (`Orders($top=2)`).
    case expand([String])
    /// `$orderby` with property paths, each optionally followed by ` asc` or ` desc`.
    case orderBy([String])
    /// `$top`.
    case top(Int)
    /// `$skip`.
    case skip(Int)
    /// `$count`.
    case count(Bool)
    /// `$search`.
    case search(String)
    /// `$skiptoken`, as a server's next link gives it.
    case skipToken(String)
    /// `$deltatoken`, as a server's delta link gives it.
    case deltaToken(String)
    /// `$format`.
    case format(String)
    /// A custom option or a parameter alias (`sap-client=100`, `@p1='x'`), value unencoded.
    case custom(name: String, value: String)
    /// An already percent-encoded `name=value` piece, rendered verbatim (as read from a URL).
    case encoded(String)

    /// The option's name as it appears in the URL (`$filter`, `sap-client`).
    public var name: String {
        switch self {
        case .filter: "$filter"
        case .select: "$select"
        case .expand: "$expand"
        case .orderBy: "$orderby"
        case .top: "$top"
        case .skip: "$skip"
        case .count: "$count"
        case .search: "$search"
        case .skipToken: "$skiptoken"
        case .deltaToken: "$deltatoken"
        case .format: "$format"
        case .custom(let name, _): name
        case .encoded(let piece): String(piece.prefix { $0 != "=" }).removingPercentEncoding ?? ""
        }
    }

    /// The option's value before percent-encoding.
    public var value: String {
        switch self {
        case .filter(let text), .search(let text), .skipToken(let text), .deltaToken(let text), .format(let text):
            text
        case .select(let paths), .expand(let paths), .orderBy(let paths): paths.joined(separator: ",")
        case .top(let count), .skip(let count): String(count)
        case .count(let flag): flag ? "true" : "false"
        case .custom(_, let value): value
        case .encoded(let piece):
            piece.firstIndex(of: "=").map { String(piece[piece.index(after: $0)...]).removingPercentEncoding ?? "" } ?? ""
        }
    }

    /// Checks the option and renders it as `name=value`, percent-encoded.
    /// - Returns: the piece of the query string.
    /// - Throws: ``ODataError`` `.invalidQueryOption` for a negative `$top`/`$skip`, an empty
    ///   `$select`/`$expand`/`$orderby` item, an empty or `$`-less system-looking custom name.
    public func rendered() throws(ODataError) -> String {
        switch self {
        case .top(let count) where count < 0, .skip(let count) where count < 0:
            throw ODataError(.invalidQueryOption, "\(name) must not be negative, got \(count)")
        case .select(let paths), .expand(let paths), .orderBy(let paths):
            if paths.isEmpty || paths.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
                throw ODataError(.invalidQueryOption, "\(name) needs at least one item and no empty item")
            }
        case .custom(let name, _) where name.isEmpty:
            throw ODataError(.invalidQueryOption, "a custom query option needs a name")
        case .encoded(let piece):
            if piece.isEmpty || piece.contains("&") || piece.contains("#") || piece.contains(" ") {
                throw ODataError(.invalidQueryOption, "an encoded query option must be one name=value piece, got '\(piece)'")
            }
            return piece
        default:
            break
        }
        return PercentEncoding.encodeQueryName(name) + "=" + PercentEncoding.encodeQueryValue(value)
    }
}

/// Renders OData literals for use inside `$filter` values and key predicates.
public enum ODataLiteral {
    /// A string literal with single quotes doubled: `O'Neil` → `'O''Neil'`.
    /// - Parameter text: the string.
    /// - Returns: the literal.
    public static func string(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}

/// Percent-encoding for the parts of OData URLs.
public enum PercentEncoding {
    // RFC 3986 unreserved plus the sub-delimiters and ':' '@' that OData URLs show literally.
    private static let pathAllowed: Set<UInt8> = {
        var set = unreserved
        for byte in "!$&'()*+,;=:@/".utf8 { set.insert(byte) }
        return set
    }()
    // In a query option name '&', '=', '+' and '#' would change the meaning, so they are encoded.
    private static let queryNameAllowed: Set<UInt8> = {
        var set = unreserved
        for byte in "!$'()*,;:@/?".utf8 { set.insert(byte) }
        return set
    }()
    // A value may keep '=' (servers split an option at its first '='; nested `$expand` options need it).
    private static let queryValueAllowed: Set<UInt8> = queryNameAllowed.union([UInt8(ascii: "=")])
    private static let unreserved: Set<UInt8> = Set(
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))

    /// Encodes a query option name.
    /// - Parameter text: unencoded text.
    /// - Returns: text safe as the name of a URL query option.
    public static func encodeQueryName(_ text: String) -> String {
        encode(text, allowed: queryNameAllowed, keepEncoded: false)
    }

    /// Encodes a query option value.
    /// - Parameter text: unencoded text.
    /// - Returns: text safe as the value of a URL query option.
    public static func encodeQueryValue(_ text: String) -> String {
        encode(text, allowed: queryValueAllowed, keepEncoded: false)
    }

    /// Encodes a resource path; `%XX` sequences already present are kept.
    /// - Parameter path: a resource path such as `Customers('ALFKI')/Orders`.
    /// - Returns: the path safe in a URL.
    public static func encodePath(_ path: String) -> String {
        encode(path, allowed: pathAllowed, keepEncoded: true)
    }

    private static func encode(_ text: String, allowed: Set<UInt8>, keepEncoded: Bool) -> String {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        let hex = Array("0123456789ABCDEF".utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if allowed.contains(byte) {
                output.append(byte)
            } else if keepEncoded, byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                isHex(bytes[index + 1]), isHex(bytes[index + 2])
            {
                output.append(byte)
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }
}
