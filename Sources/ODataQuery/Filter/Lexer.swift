import ODataCore

/// One token of an expression, with its UTF-8 offsets in the option value.
struct Token {
    enum Kind: Equatable {
        case identifier(String)
        case alias(String)
        case literal(Literal)
        case openParen, closeParen, comma, slash, colon, minus, equals
        /// `[` starting an array of expressions (`[FirstName,'Smith']`), when the text is not JSON.
        case openBracket
        /// `]` closing an array of expressions.
        case closeBracket
        case end
    }

    var kind: Kind
    /// Offset of the first byte.
    var start: Int
    /// Offset after the last byte.
    var end: Int
    /// Whether whitespace comes right before the token.
    var spaceBefore: Bool
}

/// Splits an option value into tokens; bare GUIDs, dates, times and date-times are literals.
struct Lexer {
    let bytes: [UInt8]
    var position = 0
    /// Why the last `[` was not JSON (reported when it is no array of expressions either).
    var jsonError: ODataError?
    /// Inside an array of expressions, where JSON strings (`"Miller"`) are string literals.
    var arrayDepth = 0

    init(_ text: String) {
        bytes = Array(text.utf8)
    }

    static func isIdentifierStart(_ b: UInt8) -> Bool {
        (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 95 || b == 36 || b >= 0x80
    }

    static func isIdentifierPart(_ b: UInt8) -> Bool {
        isIdentifierStart(b) || (b >= 48 && b <= 57)
    }

    static func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }

    static func isHex(_ b: UInt8) -> Bool {
        isDigit(b) || (b >= 65 && b <= 70) || (b >= 97 && b <= 102)
    }

    static func isSpace(_ b: UInt8) -> Bool { b == 32 || b == 9 || b == 10 || b == 13 }

    func error(_ message: String, at offset: Int) -> ODataError {
        ODataError(.invalidQueryOption, message, offset: offset)
    }

    func text(_ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }

    /// The next token.
    mutating func next() throws(ODataError) -> Token {
        let before = position
        while position < bytes.count && Lexer.isSpace(bytes[position]) { position += 1 }
        let spaced = position > before
        let start = position
        func token(_ kind: Token.Kind) -> Token {
            Token(kind: kind, start: start, end: position, spaceBefore: spaced)
        }
        guard position < bytes.count else { return token(.end) }
        let b = bytes[position]
        switch b {
        case UInt8(ascii: "("): position += 1; return token(.openParen)
        case UInt8(ascii: ")"): position += 1; return token(.closeParen)
        case UInt8(ascii: ","): position += 1; return token(.comma)
        case UInt8(ascii: "/"): position += 1; return token(.slash)
        case UInt8(ascii: ":"): position += 1; return token(.colon)
        case UInt8(ascii: "="): position += 1; return token(.equals)
        case UInt8(ascii: "'"):
            return token(.literal(.string(try scanString())))
        case UInt8(ascii: "["):
            // JSON when it parses as JSON; otherwise an array of expressions, read by the parser.
            do {
                return token(.literal(.json(try scanJSON())))
            } catch {
                jsonError = error
            }
            position = start + 1
            return token(.openBracket)
        case UInt8(ascii: "]"): position += 1; return token(.closeBracket)
        case UInt8(ascii: "\"") where arrayDepth > 0:
            var end = position + 1
            while end < bytes.count && bytes[end] != UInt8(ascii: "\"") {
                end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1
            }
            guard end < bytes.count, case .string(let string)? = try? JSON.parse(bytes[position...end]) else {
                throw error("malformed JSON string", at: position)
            }
            position = end + 1
            return token(.literal(.string(string)))
        case UInt8(ascii: "{"):
            return token(.literal(.json(try scanJSON())))
        case UInt8(ascii: "@"):
            // A parameter alias (`@p`), or an annotation (`@Core.Messages`, `@Measures.Currency#Reporting`).
            position += 1
            let nameStart = position
            guard position < bytes.count, Lexer.isIdentifierStart(bytes[position]) else {
                throw error("expected a parameter alias name after '@'", at: nameStart)
            }
            _ = scanQualifiedName()
            if position + 1 < bytes.count && bytes[position] == UInt8(ascii: "#") && Lexer.isIdentifierStart(bytes[position + 1]) {
                position += 1
                while position < bytes.count && Lexer.isIdentifierPart(bytes[position]) { position += 1 }
            }
            return token(.alias(text(nameStart..<position)))
        case UInt8(ascii: "+"):
            // A signed number (`+42`, `+0.314e+1`); the plus is dropped.
            guard position + 1 < bytes.count, Lexer.isDigit(bytes[position + 1]) else {
                throw error("unexpected character '+'", at: position)
            }
            position += 1
            let literal = try scanNumber()
            return Token(kind: .literal(literal), start: start, end: position, spaceBefore: spaced)
        case UInt8(ascii: "-"):
            if position + 1 < bytes.count {
                let n = bytes[position + 1]
                // `-` before a GUID or a time of day negates it (neither has a signed form); before
                // other digits it starts a number, a negative-year date or date-time.
                if Lexer.isHex(n) && startsGUID(at: position + 1) || looksLikeTime(from: position + 1) {
                    position += 1
                    return token(.minus)
                }
                if Lexer.isDigit(n) { return token(.literal(try scanNumberOrTemporal())) }
                if hasWord("INF", at: position + 1) {
                    position += 4
                    return token(.literal(.double(-.infinity)))
                }
                if n == UInt8(ascii: "P"), let duration = scanBareDuration() { return token(.literal(duration)) }
            }
            position += 1
            return token(.minus)
        default:
            break
        }
        if Lexer.isDigit(b) {
            if let guid = scanGUID() { return token(.literal(guid)) }
            return token(.literal(try scanNumberOrTemporal()))
        }
        if Lexer.isIdentifierStart(b) {
            if Lexer.isHex(b), let guid = scanGUID() { return token(.literal(guid)) }
            if b == UInt8(ascii: "P"), let duration = scanBareDuration() { return token(.literal(duration)) }
            let name = scanQualifiedName()
            if position < bytes.count && bytes[position] == UInt8(ascii: "'") {
                return token(.literal(try typedLiteral(prefix: name, start: start)))
            }
            // `null`, `true` and `false` are case-insensitive in OData 4.01.
            switch name.count <= 5 ? name.lowercased() : name {
            case "null": return token(.literal(.null))
            case "true": return token(.literal(.bool(true)))
            case "false": return token(.literal(.bool(false)))
            default: break
            }
            switch name {
            case "INF": return token(.literal(.double(.infinity)))
            case "NaN": return token(.literal(.double(.nan)))
            default: return token(.identifier(name))
            }
        }
        throw error("unexpected character '\(text(position..<min(bytes.count, position + 1)))'", at: position)
    }

    private func hasWord(_ word: String, at offset: Int) -> Bool {
        let w = Array(word.utf8)
        guard offset + w.count <= bytes.count, Array(bytes[offset..<offset + w.count]) == w else { return false }
        return offset + w.count == bytes.count || !Lexer.isIdentifierPart(bytes[offset + w.count])
    }

    /// A name, with `.`-separated qualifiers (`Edm.String`, `NS.Color`, `geo.distance`).
    private mutating func scanQualifiedName() -> String {
        let start = position
        while true {
            while position < bytes.count && Lexer.isIdentifierPart(bytes[position]) { position += 1 }
            if position + 1 < bytes.count && bytes[position] == UInt8(ascii: ".")
                && Lexer.isIdentifierStart(bytes[position + 1])
            {
                position += 1
                continue
            }
            break
        }
        return text(start..<position)
    }

    /// `'…'` with `''` for a quote; the position is on the opening quote.
    mutating func scanString() throws(ODataError) -> String {
        let start = position
        position += 1
        var result: [UInt8] = []
        while position < bytes.count {
            let b = bytes[position]
            if b == UInt8(ascii: "'") {
                if position + 1 < bytes.count && bytes[position + 1] == UInt8(ascii: "'") {
                    result.append(b)
                    position += 2
                    continue
                }
                position += 1
                return String(decoding: result, as: UTF8.self)
            }
            result.append(b)
            position += 1
        }
        throw error("unterminated string literal", at: start)
    }

    /// A JSON array or object: finds the matching bracket, then parses with the JSON parser.
    private mutating func scanJSON() throws(ODataError) -> JSONValue {
        let start = position
        var depth = 0
        var inString = false
        while position < bytes.count {
            let b = bytes[position]
            position += 1
            if inString {
                if b == UInt8(ascii: "\\") {
                    position += 1
                } else if b == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if depth == 0 {
                    do {
                        return try JSON.parse(bytes[start..<position])
                    } catch {
                        throw self.error("malformed JSON literal: \(error.message)", at: start + (error.offset ?? 0))
                    }
                }
            default: break
            }
        }
        throw error("unterminated JSON literal", at: start)
    }
}
