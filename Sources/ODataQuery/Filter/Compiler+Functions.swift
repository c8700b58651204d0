import ODataCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A compiled regular expression shared by evaluations; `Regex` values are immutable.
final class RegexBox: @unchecked Sendable {
    let regex: Regex<AnyRegexOutput>
    init(_ regex: Regex<AnyRegexOutput>) { self.regex = regex }
}

extension Compiler {
    /// The current time, read once when an expression is compiled.
    static func now() -> DateTimeOffset {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return DateTimeOffset(utcSeconds: Int64(ts.tv_sec), nanos: Int32(ts.tv_nsec), offsetMinutes: 0)
    }

    mutating func function(_ name: String, _ arguments: [FilterExpression]) throws(ODataError) -> Evaluate {
        // Trees built in code skip the parser's checks: check the argument count again.
        if let arity = ExpressionParser.canonicalFunctions[name], !arity.contains(arguments.count) {
            throw error("function '\(name)' takes \(arity.lowerBound)…\(arity.upperBound) arguments, got \(arguments.count)")
        }
        if name == "cast" || name == "isof" { return try typeFunction(name, arguments) }
        if name.hasPrefix("geo.") {
            throw error("function '\(name)' is not supported in evaluation")
        }
        if ExpressionParser.canonicalFunctions[name] == nil {
            return try custom(name, arguments)
        }
        if name == "matchesPattern", case .literal(.string(let pattern)) = arguments[1] {
            let s = try value(arguments[0])
            let regex: Regex<AnyRegexOutput>
            do {
                regex = try Regex(pattern)
            } catch {
                throw self.error("invalid pattern in matchesPattern: '\(pattern)'")
            }
            let box = RegexBox(regex)
            return { root, extras in
                guard case .string(let text) = s(root, extras) else { return .null }
                return .bool((try? box.regex.firstMatch(in: text)) != nil)
            }
        }
        let args = try arguments.map { (argument) throws(ODataError) in try value(argument) }
        switch args.count {
        case 0:
            let constant = try Compiler.nullary(name)
            return { _, _ in constant }
        case 1:
            let a = args[0]
            guard let f = Compiler.unary[name] else { throw error("unknown function '\(name)'") }
            return { root, extras in f(a(root, extras)) }
        case 2:
            let a = args[0]
            let b = args[1]
            if name == "substring" {
                return { root, extras in Compiler.substring(a(root, extras), b(root, extras), nil) }
            }
            guard let f = Compiler.binary[name] else { throw error("unknown function '\(name)'") }
            return { root, extras in f(a(root, extras), b(root, extras)) }
        default:
            let a = args[0]
            let b = args[1]
            let c = args[2]
            return { root, extras in Compiler.substring(a(root, extras), b(root, extras), c(root, extras)) }
        }
    }

    static func nullary(_ name: String) throws(ODataError) -> Value {
        switch name {
        case "now": return .dateTimeOffset(now())
        case "mindatetime": return .dateTimeOffset(Temporal.dateTimeOffset("0001-01-01T00:00:00Z")!)
        case "maxdatetime": return .dateTimeOffset(Temporal.dateTimeOffset("9999-12-31T23:59:59.999999999Z")!)
        default: throw ODataError(.invalidQueryOption, "unknown function '\(name)'")
        }
    }

    mutating func custom(_ name: String, _ arguments: [FilterExpression]) throws(ODataError) -> Evaluate {
        guard let entry = functions.entries[name] else { throw error("unknown function '\(name)'") }
        guard entry.arity.contains(arguments.count) else {
            throw error("function '\(name)' takes \(entry.arity.lowerBound)…\(entry.arity.upperBound) arguments, got \(arguments.count)")
        }
        let args = try arguments.map { (argument) throws(ODataError) in EvaluateBox(run: try value(argument)) }
        let evaluate = entry.evaluate
        return { root, extras in
            let call = FunctionCall(
                entity: root, this: EvaluationContext.this(root, extras), arguments: args.map { $0.run(root, extras).json }, navigation: extras?.navigation)
            return Value(evaluate(call))
        }
    }

    // MARK: Strings

    static func string(_ v: Value) -> String? {
        switch v {
        case .string(let s): return s
        case .enumMember(let s), .guid(let s): return s
        default: return nil
        }
    }

    static func characters(_ s: String) -> [Character] { Array(s) }

    static func substring(_ s: Value, _ start: Value, _ length: Value?) -> Value {
        guard let text = string(s), case .int(let from) = start else { return .null }
        let chars = Array(text)
        let begin = Int(clamping: max(0, min(from, Int64(chars.count))))
        var end = chars.count
        if let length {
            guard case .int(let n) = length, n >= 0 else { return .null }
            end = begin + Int(clamping: min(Int64(chars.count - begin), n))
        }
        return .string(String(chars[begin..<end]))
    }

    static let binary: [String: @Sendable (Value, Value) -> Value] = [
        "contains": { a, b in
            guard let s = string(a), let t = string(b) else { return .null }
            return .bool(t.isEmpty || s.contains(t))
        },
        "startswith": { a, b in
            guard let s = string(a), let t = string(b) else { return .null }
            return .bool(s.hasPrefix(t))
        },
        "endswith": { a, b in
            guard let s = string(a), let t = string(b) else { return .null }
            return .bool(s.hasSuffix(t))
        },
        "indexof": { a, b in
            guard let s = string(a), let t = string(b) else { return .null }
            guard let range = s.firstRange(of: t) else { return .int(-1) }
            return .int(Int64(s.distance(from: s.startIndex, to: range.lowerBound)))
        },
        "concat": { a, b in
            if a.isNull || b.isNull { return .null }
            if case .array(let x) = a, case .array(let y) = b { return .array(x + y) }
            guard let s = string(a) ?? display(a), let t = string(b) ?? display(b) else { return .null }
            return .string(s + t)
        },
        "hassubset": { a, b in
            guard case .array(let x) = a else { return .null }
            let wanted: [JSONValue]
            switch b {
            case .array(let y): wanted = y
            case .list(let y): wanted = y.map(\.json)
            default: return .null
            }
            return .bool(wanted.allSatisfy { w in x.contains { Value.equals(Value($0), Value(w)) } })
        },
        "hassubsequence": { a, b in
            guard case .array(let x) = a else { return .null }
            let wanted: [JSONValue]
            switch b {
            case .array(let y): wanted = y
            case .list(let y): wanted = y.map(\.json)
            default: return .null
            }
            var index = 0
            for element in x where index < wanted.count && Value.equals(Value(element), Value(wanted[index])) {
                index += 1
            }
            return .bool(index == wanted.count)
        },
    ]

    /// Text of a non-string primitive, for `concat`.
    static func display(_ v: Value) -> String? {
        switch v {
        case .int(let i): return String(i)
        case .bool(let b): return b ? "true" : "false"
        case .array, .object, .list, .null: return nil
        default:
            if case .string(let s) = v.json { return s }
            if case .double(let d) = v.json { return "\(d)" }
            return nil
        }
    }

    // MARK: Dates, numbers

    /// A date-time value from a typed value or an entity string.
    static func dateTime(_ v: Value) -> DateTimeOffset? {
        switch v {
        case .dateTimeOffset(let d): return d
        case .string(let s): return Temporal.dateTimeOffset(s)
        default: return nil
        }
    }

    static func dateDays(_ v: Value) -> Int64? {
        switch v {
        case .date(let d): return d
        case .dateTimeOffset(let d): return d.localDays
        case .string(let s):
            if let d = Temporal.date(s) { return d }
            return Temporal.dateTimeOffset(s)?.localDays
        default: return nil
        }
    }

    static func timeNanos(_ v: Value) -> Int64? {
        switch v {
        case .timeOfDay(let t): return t
        case .dateTimeOffset(let d): return d.localTimeNanos
        case .string(let s):
            if let t = Temporal.timeOfDay(s) { return t }
            return Temporal.dateTimeOffset(s)?.localTimeNanos
        default: return nil
        }
    }

    static func numeric(_ v: Value) -> Value? {
        switch v {
        case .int, .double: return v
        case .string(let s): return Value.number(s)
        default: return nil
        }
    }

    static let unary: [String: @Sendable (Value) -> Value] = [
        "length": { a in
            if case .array(let x) = a { return .int(Int64(x.count)) }
            guard let s = string(a) else { return .null }
            return .int(Int64(s.count))
        },
        "tolower": { a in string(a).map { .string($0.lowercased()) } ?? .null },
        "toupper": { a in string(a).map { .string($0.uppercased()) } ?? .null },
        "trim": { a in
            guard let s = string(a) else { return .null }
            return .string(String(s.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()))
        },
        "year": { a in dateDays(a).map { .int(Temporal.civil(days: $0).year) } ?? .null },
        "month": { a in dateDays(a).map { .int(Temporal.civil(days: $0).month) } ?? .null },
        "day": { a in dateDays(a).map { .int(Temporal.civil(days: $0).day) } ?? .null },
        "hour": { a in timeNanos(a).map { .int($0 / 3_600_000_000_000) } ?? .null },
        "minute": { a in timeNanos(a).map { .int($0 / 60_000_000_000 % 60) } ?? .null },
        "second": { a in timeNanos(a).map { .int($0 / 1_000_000_000 % 60) } ?? .null },
        "fractionalseconds": { a in
            timeNanos(a).map { .double(Double($0 % 1_000_000_000) / 1e9) } ?? .null
        },
        "totalseconds": { a in
            switch a {
            case .duration(let d): return .double(Double(d) / 1e9)
            case .string(let s): return Temporal.duration(s).map { .double(Double($0) / 1e9) } ?? .null
            default: return .null
            }
        },
        "date": { a in
            guard let d = dateTime(a) else { return .null }
            return .date(d.localDays)
        },
        "time": { a in
            guard let d = dateTime(a) else { return .null }
            return .timeOfDay(d.localTimeNanos)
        },
        "totaloffsetminutes": { a in
            guard let d = dateTime(a) else { return .null }
            return .int(Int64(d.offsetMinutes))
        },
        "round": { a in
            switch numeric(a) {
            case .int(let i)?: return .int(i)
            case .double(let d)?: return .double(d.rounded(.toNearestOrAwayFromZero))
            default: return .null
            }
        },
        "floor": { a in
            switch numeric(a) {
            case .int(let i)?: return .int(i)
            case .double(let d)?: return .double(d.rounded(.down))
            default: return .null
            }
        },
        "ceiling": { a in
            switch numeric(a) {
            case .int(let i)?: return .int(i)
            case .double(let d)?: return .double(d.rounded(.up))
            default: return .null
            }
        },
    ]

    // MARK: cast, isof

    mutating func typeFunction(_ name: String, _ arguments: [FilterExpression]) throws(ODataError) -> Evaluate {
        guard case .typeName(let type)? = arguments.last else {
            throw error("the last argument of '\(name)' must be a type name")
        }
        let operand: Evaluate
        if arguments.count == 2 {
            operand = try value(arguments[0])
        } else {
            operand = { root, extras in Value(EvaluationContext.this(root, extras)) }
        }
        if name == "isof" {
            return { root, extras in .bool(Compiler.isOf(operand(root, extras), type)) }
        }
        return { root, extras in Compiler.cast(operand(root, extras), type) }
    }

    static func isOf(_ v: Value, _ type: String) -> Bool {
        switch v {
        case .null: return false
        case .object(let o):
            guard case .string(let t)? = o["@odata.type"] else { return false }
            return t == "#" + type || t == type
        default: return !cast(v, type).isNull
        }
    }

    static func cast(_ v: Value, _ type: String) -> Value {
        if v.isNull { return .null }
        func integer(_ range: ClosedRange<Int64>) -> Value {
            switch v {
            case .int(let i): return range.contains(i) ? .int(i) : .null
            case .double(let d):
                guard let i = Int64(exactly: d), range.contains(i) else { return .null }
                return .int(i)
            case .string(let s):
                guard let i = Int64(s), range.contains(i) else { return .null }
                return .int(i)
            case .bool(let b): return .int(b ? 1 : 0)
            default: return .null
            }
        }
        switch type {
        case "Edm.String":
            if let s = string(v) { return .string(s) }
            if case .string(let s) = v.json { return .string(s) }
            return display(v).map(Value.string) ?? .null
        case "Edm.Int64": return integer(Int64.min...Int64.max)
        case "Edm.Int32": return integer(Int64(Int32.min)...Int64(Int32.max))
        case "Edm.Int16": return integer(Int64(Int16.min)...Int64(Int16.max))
        case "Edm.Byte": return integer(0...255)
        case "Edm.SByte": return integer(-128...127)
        case "Edm.Double", "Edm.Single", "Edm.Decimal":
            switch numeric(v) {
            case .int(let i)?: return .double(Double(i))
            case .double(let d)?: return .double(d)
            default: return .null
            }
        case "Edm.Boolean":
            switch v {
            case .bool: return v
            case .string("true"): return .bool(true)
            case .string("false"): return .bool(false)
            default: return .null
            }
        case "Edm.DateTimeOffset":
            if let d = dateTime(v) { return .dateTimeOffset(d) }
            if case .date(let d) = v { return .dateTimeOffset(DateTimeOffset(utcSeconds: d * 86_400, nanos: 0, offsetMinutes: 0)) }
            if case .string(let s) = v, let d = Temporal.date(s) {
                return .dateTimeOffset(DateTimeOffset(utcSeconds: d * 86_400, nanos: 0, offsetMinutes: 0))
            }
            return .null
        case "Edm.Date":
            switch v {
            case .date: return v
            case .string(let s): return Temporal.date(s).map(Value.date) ?? .null
            default: return .null
            }
        case "Edm.TimeOfDay":
            switch v {
            case .timeOfDay: return v
            case .string(let s): return Temporal.timeOfDay(s).map(Value.timeOfDay) ?? .null
            default: return .null
            }
        case "Edm.Duration":
            switch v {
            case .duration: return v
            case .string(let s): return Temporal.duration(s).map(Value.duration) ?? .null
            default: return .null
            }
        case "Edm.Guid":
            switch v {
            case .guid: return v
            case .string(let s):
                let ok = Temporal.parseWhole(s) { scanner in Lexer.isGUID(&scanner) } == true
                return ok ? .guid(s.lowercased()) : .null
            default: return .null
            }
        default:
            // A structured type: the value stays when its @odata.type matches (or is absent).
            if case .object(let o) = v {
                if case .string(let t)? = o["@odata.type"], t != "#" + type && t != type { return .null }
                return v
            }
            if case .enumMember = v { return v }
            if case .string(let s) = v, type.contains(".") && !type.hasPrefix("Edm.") { return .enumMember(s) }
            return .null
        }
    }
}
