/// A pull reader over one JSON document: the caller asks for the next member, element or value, so a
/// payload can be decoded straight into typed values without building a ``JSONValue`` tree first.
///
/// It shares the tokenizer of ``JSON/parse(_:)-(Bytes)`` (the same strictness, depth limit and error
/// messages). Use it inside ``JSON/withReader(_:_:)`` only: it reads the caller's bytes in place.
///
/// ```swift
/// let names = try JSON.withReader(bytes) { (reader: inout JSONReader) throws(ODataError) in
///     var names: [String] = []
///     try reader.beginObject()
///     while let member = try reader.nextMember() {
///         if member == "name" { names.append(try reader.readString()) } else { try reader.skipValue() }
///     }
///     return names
/// }
/// ```
public struct JSONReader: ~Copyable {
    /// The kind of the next value.
    public enum Kind: Sendable, Hashable {
        /// `{`
        case object
        /// `[`
        case array
        /// a string
        case string
        /// a number
        case number
        /// `true` or `false`
        case bool
        /// `null`
        case null
    }

    private var parser: Parser
    /// True right after `beginObject`/`beginArray`: the first member or element has no comma before it.
    private var atContainerStart = false

    /// Creates a reader over bytes the caller keeps alive and unchanged for the reader's whole life
    /// (``JSON/withReader(_:_:)`` does that for you).
    /// - Parameter bytes: the whole document (a UTF-8 byte order mark is skipped).
    public init(unsafeBytes bytes: UnsafeBufferPointer<UInt8>) {
        parser = Parser(bytes)
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.index = 3 }
    }

    /// The byte offset of the reader in the document.
    public var offset: Int { parser.index }

    /// A malformed-JSON error at the current offset.
    /// - Parameter message: what was expected.
    /// - Returns: the error.
    public func error(_ message: String) -> ODataError { parser.fail(message) }

    /// The kind of the next value, without consuming it.
    /// - Throws: ``ODataError`` `.malformedJSON` at the end of the input or before a byte no value starts with.
    public mutating func peek() throws(ODataError) -> Kind {
        parser.skipWhitespace()
        guard parser.index < parser.bytes.count else { throw parser.fail("expected a JSON value, found the end of the input") }
        switch parser.bytes[parser.index] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: throw parser.fail("expected a JSON value")
        }
    }

    /// The name of the first member of the object that comes next, nothing consumed; nil when the next
    /// value is not an object or is empty.
    /// - Throws: ``ODataError`` `.malformedJSON` at the end of the input.
    public mutating func firstMemberName() throws(ODataError) -> String? {
        guard try peek() == .object else { return nil }
        let start = parser.index
        defer { parser.index = start }
        parser.index += 1
        parser.skipWhitespace()
        guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "\"") else { return nil }
        return try parser.parseString()
    }

    /// The string whose opening quote is at `offset` (read again, for messages), or nil if none is there.
    /// - Parameter offset: a byte offset.
    public func string(at offset: Int) -> String? {
        guard offset >= 0, offset < parser.bytes.count, parser.bytes[offset] == UInt8(ascii: "\"") else { return nil }
        var copy = Parser(parser.bytes)
        copy.index = offset
        return try? copy.parseString()
    }

    /// Consumes `{`.
    /// - Throws: ``ODataError`` `.malformedJSON` when the next value is not an object, or nests too deep.
    public mutating func beginObject() throws(ODataError) {
        guard try peek() == .object else { throw parser.fail("expected a JSON object") }
        try parser.enter()
        parser.index += 1
        atContainerStart = true
    }

    /// The name of the next member of the object begun last, its `:` consumed; `nil` after its `}`.
    /// The caller must read or skip the member's value before asking again.
    /// - Throws: ``ODataError`` `.malformedJSON`.
    public mutating func nextMember() throws(ODataError) -> String? {
        var offset = 0
        return try nextMember(nameOffset: &offset)
    }

    /// The name of the next member, as ``nextMember()``, and the offset of its opening quote.
    /// - Parameter nameOffset: set to the offset of the name's opening quote when there is a member.
    /// - Throws: ``ODataError`` `.malformedJSON`.
    public mutating func nextMember(nameOffset: inout Int) throws(ODataError) -> String? {
        parser.skipWhitespace()
        guard parser.index < parser.bytes.count else { throw parser.fail("expected a member or '}', found the end of the input") }
        if parser.bytes[parser.index] == UInt8(ascii: "}") {
            parser.index += 1
            parser.depth -= 1
            atContainerStart = false
            return nil
        }
        if atContainerStart {
            atContainerStart = false
        } else {
            guard parser.bytes[parser.index] == UInt8(ascii: ",") else { throw parser.fail("expected ',' or '}' in an object") }
            parser.index += 1
            parser.skipWhitespace()
        }
        guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "\"") else {
            throw parser.fail("expected a member name in quotes")
        }
        nameOffset = parser.index
        let name = try parser.parseString()
        parser.skipWhitespace()
        guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: ":") else {
            throw parser.fail("expected ':' after a member name")
        }
        parser.index += 1
        return name
    }

    /// Consumes `[`.
    /// - Throws: ``ODataError`` `.malformedJSON` when the next value is not an array, or nests too deep.
    public mutating func beginArray() throws(ODataError) {
        guard try peek() == .array else { throw parser.fail("expected a JSON array") }
        try parser.enter()
        parser.index += 1
        atContainerStart = true
    }

    /// Whether the array begun last has another element (then positioned before it); `false` after its `]`.
    /// - Throws: ``ODataError`` `.malformedJSON`.
    public mutating func nextElement() throws(ODataError) -> Bool {
        parser.skipWhitespace()
        guard parser.index < parser.bytes.count else { throw parser.fail("expected an element or ']', found the end of the input") }
        if parser.bytes[parser.index] == UInt8(ascii: "]") {
            parser.index += 1
            parser.depth -= 1
            atContainerStart = false
            return false
        }
        if atContainerStart {
            atContainerStart = false
        } else {
            guard parser.bytes[parser.index] == UInt8(ascii: ",") else { throw parser.fail("expected ',' or ']' in an array") }
            parser.index += 1
        }
        return true
    }

    /// Reads a string.
    /// - Throws: ``ODataError`` `.malformedJSON` when the next value is not a string.
    public mutating func readString() throws(ODataError) -> String {
        guard try peek() == .string else { throw parser.fail("expected a string") }
        return try parser.parseString()
    }

    /// Reads a number as it is written (`-12.50e3`), for exact decimals and range checks.
    /// - Throws: ``ODataError`` `.malformedJSON` when the next value is not a number.
    public mutating func readNumberText() throws(ODataError) -> String {
        guard try peek() == .number else { throw parser.fail("expected a number") }
        let start = parser.index
        _ = try parser.parseNumber()
        return String(decoding: UnsafeBufferPointer(rebasing: parser.bytes[start..<parser.index]), as: UTF8.self)
    }

    /// Reads an integer number that fits in 64 bits.
    /// - Throws: ``ODataError`` `.malformedJSON` when the next value is not such a number.
    public mutating func readInt64() throws(ODataError) -> Int64 {
        guard try peek() == .number else { throw parser.fail("expected a number") }
        let start = parser.index
        guard case .int(let value) = try parser.parseNumber() else {
            throw parser.fail("expected an integer that fits in 64 bits", at: start)
        }
        return value
    }

    /// Reads a number as a double.
    /// - Throws: ``ODataError`` `.malformedJSON` when the next value is not a number.
    public mutating func readDouble() throws(ODataError) -> Double {
        guard try peek() == .number else { throw parser.fail("expected a number") }
        switch try parser.parseNumber() {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: throw parser.fail("expected a number")
        }
    }

    /// Reads `true` or `false`.
    /// - Throws: ``ODataError`` `.malformedJSON` when the next value is not a boolean.
    public mutating func readBool() throws(ODataError) -> Bool {
        guard try peek() == .bool else { throw parser.fail("expected true or false") }
        if parser.bytes[parser.index] == UInt8(ascii: "t") {
            try parser.expectWord("true")
            return true
        }
        try parser.expectWord("false")
        return false
    }

    /// Consumes `null` if it comes next.
    /// - Returns: whether it did.
    /// - Throws: ``ODataError`` `.malformedJSON` at the end of the input or before a malformed value.
    public mutating func readNull() throws(ODataError) -> Bool {
        guard try peek() == .null else { return false }
        try parser.expectWord("null")
        return true
    }

    /// Reads the next value whole, as a tree.
    /// - Throws: ``ODataError`` `.malformedJSON`.
    public mutating func readValue() throws(ODataError) -> JSONValue {
        parser.skipWhitespace()
        return try parser.parseValue()
    }

    /// Skips the next value whole (checked as strictly as it would be read).
    /// - Throws: ``ODataError`` `.malformedJSON`.
    public mutating func skipValue() throws(ODataError) {
        switch try peek() {
        case .object:
            try beginObject()
            while try nextMember() != nil { try skipValue() }
        case .array:
            try beginArray()
            while try nextElement() { try skipValue() }
        case .string: _ = try parser.parseString()
        case .number: _ = try parser.parseNumber()
        case .bool: _ = try readBool()
        case .null: try parser.expectWord("null")
        }
        atContainerStart = false
    }

    /// Requires that nothing but whitespace follows.
    /// - Throws: ``ODataError`` `.malformedJSON` otherwise.
    public mutating func end() throws(ODataError) {
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.fail("expected the end of the input after the value") }
    }
}

extension JSON {
    /// Runs `body` with a pull reader over `bytes` (read in place; the reader must not escape).
    /// - Parameters:
    ///   - bytes: the whole document (a UTF-8 byte order mark is skipped).
    ///   - body: reads what it needs; it should call ``JSONReader/end()`` to insist on nothing after the value.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public static func withReader<Bytes: Collection<UInt8>, T, E: Error>(
        _ bytes: Bytes, _ body: (inout JSONReader) throws(E) -> T
    ) throws(E) -> T {
        let result: Result<T, E>? = bytes.withContiguousStorageIfAvailable { buffer in
            var reader = JSONReader(unsafeBytes: buffer)
            return Result { () throws(E) in try body(&reader) }
        }
        if let result { return try result.get() }
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { buffer throws(E) in
            var reader = JSONReader(unsafeBytes: buffer)
            return try body(&reader)
        }
    }
}
