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
    private mutating func scanString() throws(ODataError) -> String {
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

    /// Whether a bare GUID starts at `offset`.
    private func startsGUID(at offset: Int) -> Bool {
        var copy = self
        copy.position = offset
        return copy.scanGUID() != nil
    }

    /// A bare GUID `8-4-4-4-12` hex digits, not followed by a name character.
    private mutating func scanGUID() -> Literal? {
        let groups = [8, 4, 4, 4, 12]
        var index = position
        for (n, length) in groups.enumerated() {
            for _ in 0..<length {
                guard index < bytes.count, Lexer.isHex(bytes[index]) else { return nil }
                index += 1
            }
            if n < 4 {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "-") else { return nil }
                index += 1
            }
        }
        if index < bytes.count && Lexer.isIdentifierPart(bytes[index]) { return nil }
        let value = text(position..<index).lowercased()
        position = index
        return .guid(value)
    }

    /// A bare ISO 8601 duration (OData 4.01 allows it without the `duration'…'` wrapper).
    private mutating func scanBareDuration() -> Literal? {
        let found: (Int64, Int)? = bytes.withUnsafeBufferPointer { buffer in
            var scanner = Temporal.Scanner(buffer, at: position)
            guard let nanos = Temporal.scanDuration(&scanner) else { return nil }
            if !scanner.atEnd && Lexer.isIdentifierPart(buffer[scanner.index]) { return nil }
            return (nanos, scanner.index)
        }
        guard let (nanos, end) = found else { return nil }
        position = end
        return .duration(Temporal.renderDuration(nanos))
    }

    /// A date-time, date, time of day or number starting at a digit or a minus sign.
    private mutating func scanNumberOrTemporal() throws(ODataError) -> Literal {
        let start = position
        let temporal: (Literal, Int)? = bytes.withUnsafeBufferPointer { buffer in
            var scanner = Temporal.Scanner(buffer, at: start)
            if let dto = Temporal.scanDateTimeOffset(&scanner), scanner.atEnd || !Lexer.isIdentifierPart(buffer[scanner.index]) {
                return (.dateTimeOffset(dto.text), scanner.index)
            }
            scanner.index = start
            if let day = Temporal.scanDate(&scanner), scanner.atEnd || !Lexer.isIdentifierPart(buffer[scanner.index]) {
                return (.date(Temporal.renderDate(day)), scanner.index)
            }
            scanner.index = start
            if let time = Temporal.scanTimeOfDay(&scanner), scanner.atEnd || !Lexer.isIdentifierPart(buffer[scanner.index]) {
                return (.timeOfDay(Temporal.renderTimeOfDay(time)), scanner.index)
            }
            return nil
        }
        if let (literal, end) = temporal {
            position = end
            return literal
        }
        // A date-like prefix that failed validation is a bad date, not a subtraction.
        if looksLikeDate(from: start) {
            throw error("invalid date or date-time literal", at: start)
        }
        if looksLikeTime(from: start) {
            throw error("invalid time-of-day literal", at: start)
        }
        return try scanNumber()
    }

    private func looksLikeDate(from start: Int) -> Bool {
        var i = start
        if i < bytes.count && bytes[i] == UInt8(ascii: "-") { i += 1 }
        var digits = 0
        while i < bytes.count && Lexer.isDigit(bytes[i]) {
            i += 1
            digits += 1
        }
        return digits >= 4 && i + 1 < bytes.count && bytes[i] == UInt8(ascii: "-") && Lexer.isDigit(bytes[i + 1])
    }

    private func looksLikeTime(from start: Int) -> Bool {
        start + 2 < bytes.count && Lexer.isDigit(bytes[start]) && Lexer.isDigit(bytes[start + 1])
            && bytes[start + 2] == UInt8(ascii: ":")
    }

    private mutating func scanNumber() throws(ODataError) -> Literal {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        while position < bytes.count && Lexer.isDigit(bytes[position]) { position += 1 }
        var isDecimal = false
        var isDouble = false
        if position < bytes.count && bytes[position] == UInt8(ascii: ".") {
            position += 1
            let fractionStart = position
            while position < bytes.count && Lexer.isDigit(bytes[position]) { position += 1 }
            guard position > fractionStart else { throw error("expected digits after the decimal point", at: position) }
            isDecimal = true
        }
        if position < bytes.count && (bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E")) {
            position += 1
            if position < bytes.count && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")) {
                position += 1
            }
            let exponentStart = position
            while position < bytes.count && Lexer.isDigit(bytes[position]) { position += 1 }
            guard position > exponentStart else { throw error("expected digits in the exponent", at: position) }
            isDouble = true
        }
        // OData V2's type suffixes: 12L (Int64), 1.5M (Decimal), 1.5D / 1.5F (Double, Single).
        var suffix: UInt8?
        if position < bytes.count, "LlMmDdFf".utf8.contains(bytes[position]),
           position + 1 >= bytes.count || !(Lexer.isIdentifierPart(bytes[position + 1]) || bytes[position + 1] == UInt8(ascii: ".")) {
            suffix = bytes[position] | 0x20
        }
        if suffix == nil, position < bytes.count && (Lexer.isIdentifierPart(bytes[position]) || bytes[position] == UInt8(ascii: ".")) {
            throw error("unexpected character '\(text(position..<position + 1))' in a number", at: position)
        }
        let literal = text(start..<position)
        if let suffix {
            position += 1
            switch suffix {
            case UInt8(ascii: "l"):
                guard !isDecimal, !isDouble, let value = Int64(literal) else { throw error("invalid Int64 literal", at: start) }
                return .int(value)
            case UInt8(ascii: "m"):
                guard !isDouble else { throw error("invalid decimal literal", at: start) }
                // `20M` is a decimal: written `20.0` so that it prints and reads back as one.
                return .decimal(Lexer.canonicalDecimal(isDecimal ? literal : literal + ".0"))
            default:
                guard let value = Double(literal) else { throw error("invalid number", at: start) }
                return .double(value)
            }
        }
        if isDouble {
            guard let value = Double(literal) else { throw error("invalid number", at: start) }
            return .double(value)
        }
        if isDecimal { return .decimal(Lexer.canonicalDecimal(literal)) }
        if let value = Int64(literal) { return .int(value) }
        return .decimal(Lexer.canonicalDecimal(literal))
    }

    /// A decimal's text without redundant leading zeros (`007.50` → `7.50`).
    static func canonicalDecimal(_ text: String) -> String {
        var digits = Substring(text)
        var sign = ""
        if digits.hasPrefix("-") {
            sign = "-"
            digits = digits.dropFirst()
        }
        while digits.count > 1 && digits.hasPrefix("0") && !digits.dropFirst().hasPrefix(".") {
            digits = digits.dropFirst()
        }
        return sign + digits
    }

    /// `prefix'…'`: duration, binary, geography/geometry, or an enum value of a qualified type.
    private mutating func typedLiteral(prefix: String, start: Int) throws(ODataError) -> Literal {
        let quoteAt = position
        let body = try scanString()
        // The ABNF's quoted prefixes are case-insensitive (RFC 5234), as OData V2 producers write them (`DateTime'…'`);
        // an enum type's qualified name is not.
        let word = prefix.contains(".") ? prefix : prefix.lowercased()
        switch word {
        case "duration":
            guard let nanos = Temporal.duration(body) else { throw error("invalid duration literal", at: quoteAt + 1) }
            return .duration(Temporal.renderDuration(nanos))
        case "binary", "x":
            guard let canonical = Lexer.canonicalBinary(body, hex: word != "binary") else {
                throw error("invalid binary literal", at: quoteAt + 1)
            }
            return .binary(canonical)
        case "geography", "geometry":
            guard !body.isEmpty else { throw error("empty \(word) literal", at: quoteAt + 1) }
            return .geo(kind: word, text: body)
        case "guid":
            guard Temporal.parseWhole(body, { s in Lexer.isGUID(&s) }) == true else {
                throw error("invalid GUID literal", at: quoteAt + 1)
            }
            return .guid(body.lowercased())
        case "date":
            guard let day = Temporal.date(body) else { throw error("invalid date literal", at: quoteAt + 1) }
            return .date(Temporal.renderDate(day))
        case "datetimeoffset", "datetime":
            // OData V2's `datetime'2025-08-08T00:00:00'` has no offset: an instant in UTC (as `/Date(…)/` is).
            guard let dto = Temporal.dateTimeOffset(body) ?? (word == "datetime" ? Temporal.dateTimeOffset(body + "Z") : nil) else {
                throw error("invalid date-time literal", at: quoteAt + 1)
            }
            return .dateTimeOffset(dto.text)
        case "time", "timeofday":
            // V2 writes a time of day as a duration, `time'PT13H20M'`.
            if word == "time", body.hasPrefix("PT"), let nanos = Temporal.duration(body), nanos >= 0, nanos < 86_400_000_000_000 {
                return .timeOfDay(Temporal.renderTimeOfDay(nanos))
            }
            guard let time = Temporal.timeOfDay(body) else { throw error("invalid time-of-day literal", at: quoteAt + 1) }
            return .timeOfDay(Temporal.renderTimeOfDay(time))
        default:
            guard prefix.contains(".") else { throw error("unknown literal prefix '\(prefix)'", at: start) }
            let members = body.split(separator: ",", omittingEmptySubsequences: false)
            guard !members.isEmpty, members.allSatisfy({ member in
                guard let first = member.utf8.first else { return false }
                return (Lexer.isIdentifierStart(first) && first != 36 && member.utf8.allSatisfy(Lexer.isIdentifierPart))
                    || member.utf8.allSatisfy(Lexer.isDigit)
                    || ((first == 45 || first == 43) && member.utf8.dropFirst().allSatisfy(Lexer.isDigit) && member.count > 1)
            }) else {
                throw error("invalid enum value '\(body)'", at: quoteAt + 1)
            }
            return .enumMember(type: prefix, value: body)
        }
    }

    static func isGUID(_ s: inout Temporal.Scanner) -> Bool? {
        for (n, length) in [8, 4, 4, 4, 12].enumerated() {
            for _ in 0..<length {
                guard let b = s.peek, isHex(b) else { return nil }
                s.index += 1
            }
            if n < 4 && !s.take(UInt8(ascii: "-")) { return nil }
        }
        return true
    }

    private static let base64URL = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Decodes binary literal text (base64url, or hex with `X'…'`) and renders canonical base64url.
    static func canonicalBinary(_ text: String, hex: Bool) -> String? {
        guard let bytes = hex ? decodeHex(text) : decodeBase64(text) else { return nil }
        return encodeBase64URL(bytes)
    }

    static func decodeHex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var result: [UInt8] = []
        var index = 0
        while index < digits.count {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            result.append(high << 4 | low)
            index += 2
        }
        return result
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 48...57: return b - 48
        case 65...70: return b - 55
        case 97...102: return b - 87
        default: return nil
        }
    }

    /// Base64 or base64url, padded or not.
    static func decodeBase64(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        var padding = 0
        for b in text.utf8 {
            if b == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0 else { return nil }
            switch b {
            case 65...90: values.append(b - 65)
            case 97...122: values.append(b - 71)
            case 48...57: values.append(b + 4)
            case UInt8(ascii: "+"), UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "/"), UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        guard values.count % 4 != 1, padding <= 2 else { return nil }
        var result: [UInt8] = []
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            var buffer: UInt32 = 0
            for (offset, v) in chunk.enumerated() { buffer |= UInt32(v) << (18 - 6 * offset) }
            result.append(UInt8(buffer >> 16 & 0xFF))
            if chunk.count > 2 { result.append(UInt8(buffer >> 8 & 0xFF)) }
            if chunk.count > 3 { result.append(UInt8(buffer & 0xFF)) }
            index += 4
        }
        return result
    }

    static func encodeBase64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var buffer: UInt32 = 0
            for (offset, b) in chunk.enumerated() { buffer |= UInt32(b) << (16 - 8 * offset) }
            for n in 0...chunk.count { out.append(base64URL[Int(buffer >> (18 - 6 * n) & 0x3F)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
