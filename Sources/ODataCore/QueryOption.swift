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
    ///
    /// An ``encoded(_:)`` piece's name is percent-decoded by ``PercentDecoding`` (`%24top` → `$top`, a `+` stays a
    /// plus); a name with a `%` that starts no `%XX` (``rendered()`` refuses such a piece), or that decodes to bytes
    /// that are not UTF-8, is given as written.
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
        case .encoded(let piece): Self.decodedOrAsWritten(String(piece.prefix { $0 != "=" }))
        }
    }

    /// The option's value before percent-encoding.
    ///
    /// An ``encoded(_:)`` piece's value is percent-decoded as its ``name`` is, and given as written when it cannot be.
    public var value: String {
        switch self {
        case .filter(let text), .search(let text), .skipToken(let text), .deltaToken(let text), .format(let text):
            text
        case .select(let paths), .expand(let paths), .orderBy(let paths): paths.joined(separator: ",")
        case .top(let count), .skip(let count): String(count)
        case .count(let flag): flag ? "true" : "false"
        case .custom(_, let value): value
        case .encoded(let piece):
            piece.firstIndex(of: "=").map { Self.decodedOrAsWritten(String(piece[piece.index(after: $0)...])) } ?? ""
        }
    }

    /// Checks the option and renders it as `name=value`, percent-encoded.
    /// - Returns: the piece of the query string.
    /// - Throws: ``ODataError`` `.invalidQueryOption` for a negative `$top`/`$skip`, an empty
    ///   `$select`/`$expand`/`$orderby` item, an empty or `$`-less system-looking custom name; for an ``encoded(_:)``
    ///   piece that is not one `name=value` piece, or that has a `%` that starts no `%XX` (with its offset in the piece).
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
            // The `%` syntax only: an opaque token may carry bytes that are not UTF-8, and the server reads it as sent.
            do { _ = try PercentDecoding.decode(piece) } catch {
                throw ODataError(.invalidQueryOption, "the encoded query option '\(piece)': \(error.message)", offset: error.offset)
            }
            return piece
        default:
            break
        }
        return PercentEncoding.encodeQueryName(name) + "=" + PercentEncoding.encodeQueryValue(value)
    }

    /// An encoded piece's name or value decoded, or as written when it cannot be: a property cannot throw, and
    /// ``rendered()`` is where a piece with a malformed `%` sequence is refused.
    private static func decodedOrAsWritten(_ text: String) -> String {
        (try? PercentDecoding.decodeString(text)) ?? text
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
