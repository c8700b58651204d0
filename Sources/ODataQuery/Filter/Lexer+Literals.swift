import ODataCore

/// The literals the lexer scans past a plain token: GUIDs, bare durations, numbers and the temporal literals
/// that start like them, typed literals (`duration'…'`, `binary'…'`, `geography'…'`…), and the codecs they use.
extension Lexer {
    /// Whether a bare GUID starts at `offset`.
    func startsGUID(at offset: Int) -> Bool {
        var copy = self
        copy.position = offset
        return copy.scanGUID() != nil
    }

    /// A bare GUID `8-4-4-4-12` hex digits, not followed by a name character.
    mutating func scanGUID() -> Literal? {
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
    mutating func scanBareDuration() -> Literal? {
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
    mutating func scanNumberOrTemporal() throws(ODataError) -> Literal {
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

    func looksLikeDate(from start: Int) -> Bool {
        var i = start
        if i < bytes.count && bytes[i] == UInt8(ascii: "-") { i += 1 }
        var digits = 0
        while i < bytes.count && Lexer.isDigit(bytes[i]) {
            i += 1
            digits += 1
        }
        return digits >= 4 && i + 1 < bytes.count && bytes[i] == UInt8(ascii: "-") && Lexer.isDigit(bytes[i + 1])
    }

    func looksLikeTime(from start: Int) -> Bool {
        start + 2 < bytes.count && Lexer.isDigit(bytes[start]) && Lexer.isDigit(bytes[start + 1])
            && bytes[start + 2] == UInt8(ascii: ":")
    }

    mutating func scanNumber() throws(ODataError) -> Literal {
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
    mutating func typedLiteral(prefix: String, start: Int) throws(ODataError) -> Literal {
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

    static func hexValue(_ b: UInt8) -> UInt8? {
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
