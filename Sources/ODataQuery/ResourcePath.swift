public import ODataCore

/// A key predicate: `('ALFKI')`, `(1)` or `(OrderID=1,ProductID=2)`.
public enum KeyPredicate: Sendable, Hashable, CustomStringConvertible {
    /// One unnamed key value.
    case single(JSONValue)
    /// Named key values, in the order written.
    case named([KeyProperty])

    /// One named part of a composite key.
    public struct KeyProperty: Sendable, Hashable {
        /// The key property's name.
        public var name: String
        /// Its value.
        public var value: JSONValue

        /// Creates a named key value.
        /// - Parameters:
        ///   - name: the key property's name.
        ///   - value: its value.
        public init(_ name: String, _ value: JSONValue) {
            self.name = name
            self.value = value
        }
    }

    /// The canonical text with parentheses: `('O''Neil')`, `(OrderID=1,ProductID=2)`.
    public var description: String {
        switch self {
        case .single(let value):
            return "(" + KeyPredicate.renderValue(value) + ")"
        case .named(let parts):
            return "(" + parts.map { $0.name + "=" + KeyPredicate.renderValue($0.value) }.joined(separator: ",") + ")"
        }
    }

    /// The value of a named key property, or of the single key when unnamed.
    /// - Parameter name: the key property's name.
    /// - Returns: the value, or nil when this predicate names other properties.
    public func value(for name: String) -> JSONValue? {
        switch self {
        case .single(let value): return value
        case .named(let parts): return parts.first { $0.name == name }?.value
        }
    }

    /// Renders a canonical entity id such as `Customers('O''Neil')` or `Order_Details(OrderID=1,ProductID=2)`.
    /// - Parameters:
    ///   - entitySet: the entity set's name.
    ///   - key: the key values in key order; one value renders unnamed.
    /// - Returns: the entity set name followed by the key predicate.
    /// - Throws: ``ODataError`` `.invalidKey` when `key` is empty or a value is an array or object.
    public static func render(entitySet: String, key: [(name: String, value: JSONValue)]) throws(ODataError) -> String {
        guard !key.isEmpty else { throw ODataError(.invalidKey, "a key needs at least one value") }
        for part in key {
            switch part.value {
            case .array, .object: throw ODataError(.invalidKey, "key property '\(part.name)' is not a primitive value")
            default: break
            }
        }
        let predicate: KeyPredicate = key.count == 1
            ? .single(key[0].value) : .named(key.map { KeyProperty($0.name, $0.value) })
        return entitySet + predicate.description
    }

    /// A key value as a literal: strings quoted with `''` escapes, numbers and booleans as written.
    /// - Parameter value: a primitive JSON value.
    /// - Returns: the literal text.
    public static func renderValue(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d):
            if d.rounded() == d && abs(d) < 1e15 { return String(Int64(d)) }
            return "\(d)"
        case .string(let s): return ExpressionPrinter.quote(s)
        case .array, .object: return JSON.string(value)
        }
    }

    /// Parses a key predicate's inside, without the parentheses (`'ALFKI'`, `OrderID=1,ProductID=2`).
    ///
    /// Values are JSON values: numbers (OData V2's `12L`, `1.5M`, `1.5D`, `1.5F` included), booleans and strings.
    /// GUIDs, dates, times of day, date-times and durations — bare or as `guid'…'`, `datetime'…'`,
    /// `datetimeoffset'…'`, `time'…'`, `duration'…'` — are strings holding the text as written, without the
    /// prefix and quotes: a key is compared as the producer wrote it, not normalised.
    /// - Parameter text: the text between the parentheses, percent-decoded.
    /// - Returns: the predicate.
    /// - Throws: ``ODataError`` `.invalidKey` with the offset of what was wrong.
    public static func parse(_ text: String) throws(ODataError) -> KeyPredicate {
        var lexer = Lexer(text)
        func fail(_ message: String, _ offset: Int) -> ODataError { ODataError(.invalidKey, message, offset: offset) }
        func next() throws(ODataError) -> Token {
            do { return try lexer.next() } catch { throw fail(error.message, error.offset ?? 0) }
        }
        func value(_ token: Token) throws(ODataError) -> JSONValue {
            guard case .literal(let literal) = token.kind else {
                throw fail("expected a key value", token.start)
            }
            switch literal {
            case .null: throw fail("a key value cannot be null", token.start)
            case .bool(let b): return .bool(b)
            case .int(let i): return .int(i)
            case .decimal(let t): return Double(t).map(JSONValue.double) ?? .string(t)
            case .double(let d): return .double(d)
            case .string(let s): return .string(s)
            case .guid, .date, .timeOfDay, .dateTimeOffset, .duration:
                // A key names an entity: these keep the text as written (`guid'…'` keeps its case,
                // V2's `datetime'…'` and `time'PT13H'` their spelling), without the type prefix and quotes.
                let written = lexer.text(token.start..<token.end)
                guard let quote = written.firstIndex(of: "'"), written.hasSuffix("'") else { return .string(written) }
                return .string(String(written[written.index(after: quote)...].dropLast()))
            case .binary(let t): return .string(t)
            case .enumMember(_, let v): return .string(v)
            case .geo, .json: throw fail("expected a primitive key value", token.start)
            }
        }
        var token = try next()
        if token.kind == .end { throw fail("expected a key value", token.start) }
        if case .identifier(let name) = token.kind {
            var parts: [KeyProperty] = []
            var currentName = name
            while true {
                let eq = try next()
                guard eq.kind == .equals else { throw fail("expected '=' after key property '\(currentName)'", eq.start) }
                let v = try next()
                parts.append(KeyProperty(currentName, try value(v)))
                token = try next()
                if token.kind == .end { break }
                guard token.kind == .comma else { throw fail("expected ',' or the end of the key", token.start) }
                let nameToken = try next()
                guard case .identifier(let n) = nameToken.kind else {
                    throw fail("expected a key property name", nameToken.start)
                }
                guard !parts.contains(where: { $0.name == n }) else {
                    throw fail("key property '\(n)' given twice", nameToken.start)
                }
                currentName = n
            }
            return .named(parts)
        }
        let single = try value(token)
        let end = try next()
        guard end.kind == .end else {
            throw fail(end.kind == .comma ? "composite keys need names (Name=value)" : "expected the end of the key", end.start)
        }
        return .single(single)
    }
}

/// A resource path such as `Customers('ALFKI')/Orders/$count`: segments with optional key predicates.
public struct ResourcePath: Sendable, Hashable, CustomStringConvertible {
    /// One segment of a path.
    public struct Segment: Sendable, Hashable {
        /// What the segment names.
        public enum Kind: Sendable, Hashable {
            /// An entity set, singleton, navigation or structural property, function or action.
            case name(String)
            /// `$count`.
            case count
            /// `$ref`.
            case ref
            /// `$value`.
            case value
            /// `$batch`.
            case batch
            /// `$metadata`.
            case metadata
            /// `$entity`.
            case entity
            /// `$all`.
            case all
        }

        /// The segment's kind.
        public var kind: Kind
        /// The key predicate after the name, if any.
        public var key: KeyPredicate?

        /// Creates a segment.
        /// - Parameters:
        ///   - kind: what the segment names.
        ///   - key: its key predicate, if any.
        public init(_ kind: Kind, key: KeyPredicate? = nil) {
            self.kind = kind
            self.key = key
        }

        /// The segment's name as written (`Customers`, `$count`).
        public var name: String {
            switch kind {
            case .name(let n): return n
            case .count: return "$count"
            case .ref: return "$ref"
            case .value: return "$value"
            case .batch: return "$batch"
            case .metadata: return "$metadata"
            case .entity: return "$entity"
            case .all: return "$all"
            }
        }
    }

    /// The segments, in order.
    public var segments: [Segment]

    /// Creates a path from segments.
    /// - Parameter segments: the segments.
    public init(segments: [Segment]) {
        self.segments = segments
    }

    /// The canonical path text (key strings re-quoted, not percent-encoded).
    public var description: String {
        segments.map { $0.name + ($0.key?.description ?? "") }.joined(separator: "/")
    }

    /// Parses a resource path (relative to the service root; a leading `/` is ignored).
    /// - Parameter path: the path, percent-encoded or not (it is percent-decoded first).
    /// - Returns: the segments.
    /// - Throws: ``ODataError`` `.invalidURL` for a bad segment, `.invalidKey` for a bad key predicate;
    ///   offsets are into the percent-decoded path.
    public static func parse(_ path: String) throws(ODataError) -> ResourcePath {
        let decoded: [UInt8]
        do {
            decoded = try PercentDecoding.decode(path)
        } catch {
            throw ODataError(.invalidURL, error.message, offset: error.offset)
        }
        var index = 0
        if index < decoded.count && decoded[index] == UInt8(ascii: "/") { index += 1 }
        var segments: [Segment] = []
        while index < decoded.count {
            let nameStart = index
            while index < decoded.count, decoded[index] != UInt8(ascii: "/"), decoded[index] != UInt8(ascii: "(") {
                index += 1
            }
            let name = String(decoding: decoded[nameStart..<index], as: UTF8.self)
            guard !name.isEmpty else { throw ODataError(.invalidURL, "empty path segment", offset: nameStart) }
            let kind: Segment.Kind
            switch name {
            case "$count": kind = .count
            case "$ref": kind = .ref
            case "$value": kind = .value
            case "$batch": kind = .batch
            case "$metadata": kind = .metadata
            case "$entity": kind = .entity
            case "$all": kind = .all
            default:
                guard let first = name.utf8.first, Lexer.isIdentifierStart(first), first != 36,
                    name.utf8.allSatisfy({ Lexer.isIdentifierPart($0) || $0 == UInt8(ascii: ".") })
                else {
                    throw ODataError(.invalidURL, "invalid path segment '\(name)'", offset: nameStart)
                }
                kind = .name(name)
            }
            var key: KeyPredicate?
            if index < decoded.count && decoded[index] == UInt8(ascii: "(") {
                let open = index
                index += 1
                var inString = false
                let innerStart = index
                while index < decoded.count {
                    let b = decoded[index]
                    if b == UInt8(ascii: "'") {
                        if inString && index + 1 < decoded.count && decoded[index + 1] == UInt8(ascii: "'") {
                            index += 2
                            continue
                        }
                        inString.toggle()
                    } else if b == UInt8(ascii: ")") && !inString {
                        break
                    }
                    index += 1
                }
                guard index < decoded.count else {
                    throw ODataError(.invalidKey, "unterminated key predicate", offset: open)
                }
                let inner = String(decoding: decoded[innerStart..<index], as: UTF8.self)
                index += 1
                if inner.isEmpty {
                    key = nil  // `Function()` call syntax with no parameters.
                } else {
                    do {
                        key = try KeyPredicate.parse(inner)
                    } catch {
                        throw ODataError(.invalidKey, error.message, offset: innerStart + (error.offset ?? 0))
                    }
                }
            }
            segments.append(Segment(kind, key: key))
            if index < decoded.count {
                guard decoded[index] == UInt8(ascii: "/") else {
                    throw ODataError(.invalidURL, "expected '/' after a key predicate", offset: index)
                }
                index += 1
                if index == decoded.count { break }  // a trailing slash is harmless
            }
        }
        guard !segments.isEmpty else { throw ODataError(.invalidURL, "empty resource path", offset: 0) }
        return ResourcePath(segments: segments)
    }
}
