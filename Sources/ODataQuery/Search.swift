public import ODataCore

/// A `$search` expression: terms and phrases combined with `AND` (or juxtaposition), `OR`, `NOT`.
public indirect enum SearchExpression: Sendable, Hashable, CustomStringConvertible {
    /// A single word.
    case term(String)
    /// A double-quoted phrase.
    case phrase(String)
    /// Both sides must match.
    case and(SearchExpression, SearchExpression)
    /// Either side must match.
    case or(SearchExpression, SearchExpression)
    /// The operand must not match.
    case not(SearchExpression)

    /// The canonical option value.
    public var description: String {
        switch self {
        case .term(let t): return t
        case .phrase(let p): return "\"" + p.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
        case .and(let a, let b): return wrap(a, a.level < 2) + " AND " + wrap(b, b.level <= 2)
        case .or(let a, let b): return a.description + " OR " + wrap(b, b.level <= 1)
        case .not(let a): return "NOT " + wrap(a, a.level < 3)
        }
    }

    private var level: Int {
        switch self {
        case .or: return 1
        case .and: return 2
        default: return 3
        }
    }

    private func wrap(_ e: SearchExpression, _ parenthesized: Bool) -> String {
        parenthesized ? "(" + e.description + ")" : e.description
    }

    /// Parses a `$search` value (`blue OR "light green" NOT red`).
    /// - Parameter text: the option value, percent-decoded.
    /// - Returns: the search expression.
    /// - Throws: ``ODataError`` `.invalidQueryOption` with the offset of what was wrong.
    public static func parse(_ text: String) throws(ODataError) -> SearchExpression {
        let bytes = Array(text.utf8)
        // 4.01's incomplete expression: a whole value in single quotes is one phrase (`'"blue'`).
        if bytes.count >= 2, bytes.first == UInt8(ascii: "'"), bytes.last == UInt8(ascii: "'") {
            let inner = String(decoding: bytes[1..<(bytes.count - 1)], as: UTF8.self).replacing("''", with: "'")
            guard !inner.isEmpty else { throw ODataError(.invalidQueryOption, "empty search phrase", offset: 0) }
            return .phrase(inner)
        }
        var parser = SearchParser(bytes: bytes)
        let result = try parser.parseOr(depth: 0)
        parser.skipSpaces()
        guard parser.index == parser.bytes.count else {
            throw ODataError(.invalidQueryOption, "unexpected ')' in $search", offset: parser.index)
        }
        return result
    }

    /// Whether an entity matches: a term or phrase matches when some string value of the entity
    /// (at any depth) contains it, ignoring case.
    /// - Parameter entity: the entity.
    /// - Returns: true when the expression matches.
    public func matches(_ entity: JSONObject) -> Bool {
        switch self {
        case .term(let t), .phrase(let t):
            return SearchExpression.contains(.object(entity), t.lowercased())
        case .and(let a, let b): return a.matches(entity) && b.matches(entity)
        case .or(let a, let b): return a.matches(entity) || b.matches(entity)
        case .not(let a): return !a.matches(entity)
        }
    }

    private static func contains(_ value: JSONValue, _ needle: String) -> Bool {
        switch value {
        case .string(let s): return s.lowercased().contains(needle)
        case .array(let a): return a.contains { contains($0, needle) }
        case .object(let o):
            for (key, v) in o where !key.hasPrefix("@") && !key.contains("@") {
                if contains(v, needle) { return true }
            }
            return false
        default: return false
        }
    }
}

struct SearchParser {
    let bytes: [UInt8]
    var index = 0

    func error(_ message: String, _ offset: Int) -> ODataError {
        ODataError(.invalidQueryOption, message, offset: offset)
    }

    mutating func skipSpaces() {
        while index < bytes.count && Lexer.isSpace(bytes[index]) { index += 1 }
    }

    /// The next bare word without consuming it.
    func peekWord() -> String? {
        var i = index
        while i < bytes.count && Lexer.isSpace(bytes[i]) { i += 1 }
        let start = i
        while i < bytes.count, !Lexer.isSpace(bytes[i]), bytes[i] != UInt8(ascii: "("), bytes[i] != UInt8(ascii: ")"),
            bytes[i] != UInt8(ascii: "\"")
        {
            i += 1
        }
        return i > start ? String(decoding: bytes[start..<i], as: UTF8.self) : nil
    }

    mutating func consumeWord() {
        skipSpaces()
        while index < bytes.count, !Lexer.isSpace(bytes[index]), bytes[index] != UInt8(ascii: "("),
            bytes[index] != UInt8(ascii: ")"), bytes[index] != UInt8(ascii: "\"")
        {
            index += 1
        }
    }

    /// Terms joined in one chain count as nesting too: the tree grows one level per operator.
    /// Whether the next word is the operator `word`: `AND`, `OR` and `NOT` are words when no
    /// operand follows them (`$search=AND`, `NOT NOT`, `AND OR NOT`).
    func isOperator(_ word: String) -> Bool {
        guard peekWord() == word else { return false }
        var i = index
        while i < bytes.count && Lexer.isSpace(bytes[i]) { i += 1 }
        i += word.utf8.count
        while i < bytes.count && Lexer.isSpace(bytes[i]) { i += 1 }
        return i < bytes.count && bytes[i] != UInt8(ascii: ")")
    }

    mutating func parseOr(depth: Int) throws(ODataError) -> SearchExpression {
        var lhs = try parseAnd(depth: depth)
        var level = depth
        while isOperator("OR") {
            consumeWord()
            level += 1
            lhs = .or(lhs, try parseAnd(depth: level))
        }
        return lhs
    }

    mutating func parseAnd(depth: Int) throws(ODataError) -> SearchExpression {
        var lhs = try parseUnary(depth: depth)
        var level = depth
        while true {
            skipSpaces()
            guard index < bytes.count, bytes[index] != UInt8(ascii: ")"), !isOperator("OR") else { return lhs }
            if isOperator("AND") { consumeWord() }
            level += 1
            lhs = .and(lhs, try parseUnary(depth: level))
        }
    }

    mutating func parseUnary(depth: Int) throws(ODataError) -> SearchExpression {
        guard depth < ExpressionParser.maximumDepth else {
            throw error("$search nested deeper than \(ExpressionParser.maximumDepth) levels", index)
        }
        skipSpaces()
        if isOperator("NOT") {
            consumeWord()
            return .not(try parseUnary(depth: depth + 1))
        }
        guard index < bytes.count else { throw error("expected a search term", index) }
        let b = bytes[index]
        if b == UInt8(ascii: "(") {
            let open = index
            index += 1
            let inner = try parseOr(depth: depth + 1)
            skipSpaces()
            guard index < bytes.count && bytes[index] == UInt8(ascii: ")") else {
                throw error("expected ')' to close '(' at \(open)", index)
            }
            index += 1
            return inner
        }
        if b == UInt8(ascii: "\"") {
            let start = index
            index += 1
            var phrase: [UInt8] = []
            while index < bytes.count {
                let c = bytes[index]
                if c == UInt8(ascii: "\\"), index + 1 < bytes.count {
                    phrase.append(bytes[index + 1])
                    index += 2
                    continue
                }
                if c == UInt8(ascii: "\"") {
                    index += 1
                    guard !phrase.isEmpty else { throw error("empty search phrase", start) }
                    if index < bytes.count, !Lexer.isSpace(bytes[index]), bytes[index] != UInt8(ascii: ")") {
                        throw error("expected whitespace after a search phrase", index)
                    }
                    return .phrase(String(decoding: phrase, as: UTF8.self))
                }
                phrase.append(c)
                index += 1
            }
            throw error("unterminated search phrase", start)
        }
        if b == UInt8(ascii: ")") { throw error("expected a search term", index) }
        guard let word = peekWord() else { throw error("expected a search term", index) }
        if word == "AND" || word == "OR" {
            // A keyword with no operand before it is a word, unless a plain term follows it (`OR x`).
            let start = index
            consumeWord()
            skipSpaces()
            let next = peekWord()
            if index < bytes.count, bytes[index] != UInt8(ascii: ")"), next == nil || !["AND", "OR", "NOT"].contains(next!) {
                throw error("expected a search term before '\(word)'", start)
            }
            return .term(word)
        }
        consumeWord()
        return .term(word)
    }
}
