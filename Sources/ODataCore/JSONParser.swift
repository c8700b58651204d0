import Foundation

/// Reads and writes JSON with the exactness OData needs: integers stay integers, members keep
/// their order, and malformed input is an ``ODataError`` with the offset of the problem.
public enum JSON {
    /// The deepest nesting of arrays and objects accepted; deeper input is an error, not a crash.
    public static let maximumDepth = 512

    /// Parses one JSON value (RFC 8259) from UTF-8 bytes.
    /// - Parameter bytes: the whole document.
    /// - Returns: the value.
    /// - Throws: ``ODataError`` `.malformedJSON`, the offset and what was expected.
    public static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(ODataError) -> JSONValue {
        let result: Result<JSONValue, ODataError>? = bytes.withContiguousStorageIfAvailable { buffer in
            var parser = Parser(buffer)
            return Result { () throws(ODataError) in try parser.parseDocument() }
        }
        if let result { return try result.get() }
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { buffer throws(ODataError) in
            var parser = Parser(buffer)
            return try parser.parseDocument()
        }
    }

    /// Parses one JSON value from a string.
    /// - Parameter text: the whole document.
    /// - Returns: the value.
    /// - Throws: ``ODataError`` `.malformedJSON`.
    public static func parse(_ text: String) throws(ODataError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Serializes a value as compact JSON.
    /// - Parameter value: the value to write.
    /// - Returns: UTF-8 bytes.
    public static func serialize(_ value: JSONValue) -> [UInt8] {
        var writer = Writer()
        writer.write(value)
        return writer.bytes
    }

    /// Serializes a value as compact JSON text.
    /// - Parameter value: the value to write.
    /// - Returns: the JSON text.
    public static func string(_ value: JSONValue) -> String {
        String(decoding: serialize(value), as: UTF8.self)
    }
}

struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func fail(_ message: String, at offset: Int? = nil) -> ODataError {
        ODataError(.malformedJSON, message, offset: offset ?? index)
    }

    mutating func parseDocument() throws(ODataError) -> JSONValue {
        // A UTF-8 byte order mark is tolerated.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        guard index < bytes.count else { throw fail("expected a JSON value, found the end of the input") }
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("expected the end of the input after the value") }
        return value
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(ODataError) -> JSONValue {
        guard index < bytes.count else { throw fail("expected a JSON value, found the end of the input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("expected a JSON value")
        }
    }

    mutating func expectWord(_ word: StaticString) throws(ODataError) {
        let start = index
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw fail("expected '\(word)'", at: start) }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw fail("expected '\(word)'", at: start)
        }
        index += count
    }

    mutating func enter() throws(ODataError) {
        depth += 1
        if depth > JSON.maximumDepth { throw fail("nesting deeper than \(JSON.maximumDepth) levels") }
    }

    mutating func parseObject() throws(ODataError) -> JSONValue {
        try enter()
        index += 1
        var object = JSONObject()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw fail("expected a member name in quotes")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':' after a member name") }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            object[key] = value
            skipWhitespace()
            guard index < bytes.count else { throw fail("expected ',' or '}' in an object, found the end of the input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; break }
            throw fail("expected ',' or '}' in an object")
        }
        depth -= 1
        return .object(object)
    }

    mutating func parseArray() throws(ODataError) -> JSONValue {
        try enter()
        index += 1
        var array: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(array)
        }
        while true {
            skipWhitespace()
            array.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("expected ',' or ']' in an array, found the end of the input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; break }
            throw fail("expected ',' or ']' in an array")
        }
        depth -= 1
        return .array(array)
    }

    mutating func parseString() throws(ODataError) -> String {
        let start = index
        index += 1
        // Fast path: no escapes.
        var scan = index
        while scan < bytes.count {
            let byte = bytes[scan]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[index..<scan])
                guard let text = String(validating: slice, as: UTF8.self) else {
                    throw fail("invalid UTF-8 in a string", at: start)
                }
                index = scan + 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("unescaped control character in a string", at: scan) }
            scan += 1
        }
        var buffer: [UInt8] = Array(bytes[index..<scan])
        index = scan
        while true {
            guard index < bytes.count else { throw fail("unterminated string", at: start) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { index += 1; break }
            if byte < 0x20 { throw fail("unescaped control character in a string") }
            if byte != UInt8(ascii: "\\") {
                buffer.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.count else { throw fail("unterminated escape sequence") }
            let escaped = bytes[index]
            index += 1
            switch escaped {
            case UInt8(ascii: "\""): buffer.append(0x22)
            case UInt8(ascii: "\\"): buffer.append(0x5C)
            case UInt8(ascii: "/"): buffer.append(0x2F)
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                    else { throw fail("lone high surrogate in a \\u escape") }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("invalid low surrogate in a \\u escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw fail("lone low surrogate in a \\u escape")
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                buffer.append(contentsOf: UTF8.encode(unicode)!)
            default:
                throw fail("invalid escape '\\\(Character(Unicode.Scalar(escaped)))'", at: index - 2)
            }
        }
        guard let text = String(validating: buffer, as: UTF8.self) else { throw fail("invalid UTF-8 in a string", at: start) }
        return text
    }

    mutating func parseHex4() throws(ODataError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail("expected four hex digits after \\u") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("expected four hex digits after \\u")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    mutating func parseNumber() throws(ODataError) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected a digit", at: index) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw fail("leading zeros are not allowed in a number", at: start) }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected a digit after '.'") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected a digit in the exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else { throw fail("number out of range", at: start) }
        return .double(value)
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}

private struct Writer {
    var bytes: [UInt8] = []

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: bytes.append(contentsOf: "null".utf8)
        case .bool(let flag): bytes.append(contentsOf: (flag ? "true" : "false").utf8)
        case .int(let number): bytes.append(contentsOf: String(number).utf8)
        case .double(let number):
            if number.isFinite {
                if number.rounded() == number && abs(number) < 1e15 {
                    // Keep the value a JSON number with a fraction so it reads back as a double.
                    bytes.append(contentsOf: String(Int64(number)).utf8)
                    bytes.append(contentsOf: ".0".utf8)
                } else {
                    bytes.append(contentsOf: "\(number)".utf8)
                }
            } else {
                // JSON has no INF or NaN; OData's JSON format writes them as strings.
                bytes.append(contentsOf: (number.isNaN ? "\"NaN\"" : number > 0 ? "\"INF\"" : "\"-INF\"").utf8)
            }
        case .string(let text): writeString(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (offset, (key, member)) in object.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                write(member)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escape: their bytes go in at once.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C }) {
            bytes.append(contentsOf: text.utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
            case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
