import ODataCore

/// A value while an expression is evaluated: JSON values plus the typed values literals and
/// functions produce. Strings from entities are coerced to the other operand's type when compared.
enum Value {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case dateTimeOffset(DateTimeOffset)
    case date(Int64)
    case timeOfDay(Int64)
    case duration(Int64)
    case guid(String)
    case binary([UInt8])
    case enumMember(String)
    case array([JSONValue])
    case object(JSONObject)
    case list([Value])

    init(_ json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        case .array(let a): self = .array(a)
        case .object(let o): self = .object(o)
        }
    }

    init(_ literal: Literal) {
        switch literal {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .decimal(let t): self = .double(Double(t) ?? .nan)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        case .guid(let g): self = .guid(g)
        case .date(let t): self = Temporal.date(t).map(Value.date) ?? .null
        case .timeOfDay(let t): self = Temporal.timeOfDay(t).map(Value.timeOfDay) ?? .null
        case .dateTimeOffset(let t): self = Temporal.dateTimeOffset(t).map(Value.dateTimeOffset) ?? .null
        case .duration(let t): self = Temporal.duration(t).map(Value.duration) ?? .null
        case .binary(let t): self = Lexer.decodeBase64(t).map(Value.binary) ?? .null
        case .enumMember(_, let v): self = .enumMember(v)
        case .geo(_, let text): self = .string(text)
        case .json(let j): self = Value(j)
        }
    }

    var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value as JSON, as OData V4 JSON writes it (temporal values as strings).
    var json: JSONValue {
        switch self {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d):
            if d.isNaN { return .string("NaN") }
            if d.isInfinite { return .string(d < 0 ? "-INF" : "INF") }
            return .double(d)
        case .string(let s): return .string(s)
        case .dateTimeOffset(let d): return .string(d.text)
        case .date(let d): return .string(Temporal.renderDate(d))
        case .timeOfDay(let t): return .string(Temporal.renderTimeOfDay(t))
        case .duration(let d): return .string(Temporal.renderDuration(d))
        case .guid(let g): return .string(g)
        case .binary(let b): return .string(Lexer.encodeBase64URL(b))
        case .enumMember(let e): return .string(e)
        case .array(let a): return .array(a)
        case .object(let o): return .object(o)
        case .list(let l): return .array(l.map(\.json))
        }
    }

    /// A string coerced to the type of `other`, so entity strings compare with typed literals.
    static func coerce(_ string: String, like other: Value) -> Value? {
        switch other {
        case .string: return .string(string)
        case .dateTimeOffset:
            if let d = Temporal.dateTimeOffset(string) { return .dateTimeOffset(d) }
            return nil
        case .date:
            if let d = Temporal.date(string) { return .date(d) }
            return nil
        case .timeOfDay: return Temporal.timeOfDay(string).map(Value.timeOfDay)
        case .duration: return Temporal.duration(string).map(Value.duration)
        case .guid: return .guid(string.lowercased())
        case .enumMember: return .enumMember(string)
        case .int, .double: return number(string)
        case .binary: return Lexer.decodeBase64(string).map(Value.binary)
        default: return nil
        }
    }

    /// A string holding a number (`INF`, `-INF`, `NaN`, or IEEE754-compatible decimals).
    static func number(_ string: String) -> Value? {
        switch string {
        case "INF": return .double(.infinity)
        case "-INF": return .double(-.infinity)
        case "NaN": return .double(.nan)
        default:
            if let i = Int64(string) { return .int(i) }
            return Double(string).map(Value.double)
        }
    }

    /// Orders two non-null values; nil when they cannot be compared.
    static func compare(_ a: Value, _ b: Value) -> Int? {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.int(let x), .double(let y)): return compareDoubles(Double(x), y)
        case (.double(let x), .int(let y)): return compareDoubles(x, Double(y))
        case (.double(let x), .double(let y)): return compareDoubles(x, y)
        case (.string(let x), .string(let y)): return compareStrings(x, y)
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.dateTimeOffset(let x), .dateTimeOffset(let y)): return DateTimeOffset.compare(x, y)
        case (.date(let x), .date(let y)), (.timeOfDay(let x), .timeOfDay(let y)), (.duration(let x), .duration(let y)):
            return x < y ? -1 : (x == y ? 0 : 1)
        case (.guid(let x), .guid(let y)): return compareStrings(x, y)
        case (.enumMember(let x), .enumMember(let y)): return x == y ? 0 : nil
        case (.binary(let x), .binary(let y)): return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        case (.string(let s), _):
            guard let coerced = coerce(s, like: b) else { return nil }
            if case .string = coerced { return nil }
            return compare(coerced, b)
        case (_, .string(let s)):
            guard let coerced = coerce(s, like: a) else { return nil }
            if case .string = coerced { return nil }
            return compare(a, coerced)
        case (.array(let x), .array(let y)): return x == y ? 0 : nil
        case (.object(let x), .object(let y)): return x == y ? 0 : nil
        case (.list(let x), .array(let y)): return x.map(\.json) == y ? 0 : nil
        case (.array(let x), .list(let y)): return x == y.map(\.json) ? 0 : nil
        default: return nil
        }
    }

    /// NaN equals NaN and is incomparable with other numbers.
    @inline(__always)
    static func compareDoubles(_ x: Double, _ y: Double) -> Int? {
        if x < y { return -1 }
        if x > y { return 1 }
        if x == y { return 0 }
        return x.isNaN && y.isNaN ? 0 : nil
    }

    /// Ordinal comparison by Unicode scalar values (case-sensitive, culture-free); UTF-8 byte
    /// order is code point order.
    @inline(__always)
    static func compareStrings(_ x: String, _ y: String) -> Int {
        if x == y { return 0 }
        return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1
    }

    /// `eq` semantics: `null eq null` is true, null against a value is false.
    static func equals(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        default: return compare(a, b) == 0
        }
    }
}

/// A three-valued boolean: OData's logical operators propagate null.
enum Tri: UInt8 {
    case `false` = 0
    case `true` = 1
    case null = 2

    init(_ b: Bool) { self = b ? .true : .false }

    var value: Value {
        switch self {
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .null: return .null
        }
    }

    init(_ value: Value) {
        switch value {
        case .bool(let b): self = b ? .true : .false
        default: self = .null
        }
    }
}
