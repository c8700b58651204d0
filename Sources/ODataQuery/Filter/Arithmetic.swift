/// OData arithmetic: integers stay exact (overflow gives null), mixed numbers promote to double,
/// date-times and dates move by durations; any null operand gives null.
enum Arithmetic {
    static func negate(_ v: Value) -> Value {
        switch v {
        case .int(let i): return i == .min ? .null : .int(-i)
        case .double(let d): return .double(-d)
        case .duration(let d): return d == .min ? .null : .duration(-d)
        case .string(let s):
            if let n = Value.number(s) { return negate(n) }
            if let d = Temporal.duration(s) { return .duration(-d) }
            return .null
        default: return .null
        }
    }

    /// Coerces string operands (entity values) to the other operand's kind.
    static func coerced(_ a: Value, _ b: Value) -> (Value, Value) {
        switch (a, b) {
        case (.string(let s), .string(let t)):
            if let x = Value.number(s), let y = Value.number(t) { return (x, y) }
            if let x = Temporal.dateTimeOffset(s), let y = Temporal.dateTimeOffset(t) {
                return (.dateTimeOffset(x), .dateTimeOffset(y))
            }
            if let x = Temporal.date(s), let y = Temporal.date(t) { return (.date(x), .date(y)) }
            if let x = Temporal.duration(s), let y = Temporal.duration(t) { return (.duration(x), .duration(y)) }
            return (a, b)
        case (.string(let s), .duration):
            if let x = Temporal.dateTimeOffset(s) { return (.dateTimeOffset(x), b) }
            if let x = Temporal.date(s) { return (.date(x), b) }
            if let x = Temporal.duration(s) { return (.duration(x), b) }
            return (a, b)
        case (.duration, .string(let s)):
            if let x = Temporal.duration(s) { return (a, .duration(x)) }
            return (a, b)
        case (.string(let s), .int), (.string(let s), .double):
            if let n = Value.number(s) { return (n, b) }
            if let d = Temporal.duration(s) { return (.duration(d), b) }
            return (a, b)
        case (.string(let s), _): return (Value.coerce(s, like: b) ?? a, b)
        case (_, .string(let s)): return (a, Value.coerce(s, like: a) ?? b)
        default: return (a, b)
        }
    }

    static func apply(_ op: BinaryOperator, _ a: Value, _ b: Value) -> Value {
        if a.isNull || b.isNull { return .null }
        let (x, y) = coerced(a, b)
        switch (x, y) {
        case (.int(let p), .int(let q)):
            switch op {
            case .add: return checked(p.addingReportingOverflow(q))
            case .sub: return checked(p.subtractingReportingOverflow(q))
            case .mul: return checked(p.multipliedReportingOverflow(by: q))
            case .div:
                if q == 0 || (p == .min && q == -1) { return .null }
                return .int(p / q)
            case .divby:
                if q == 0 { return .null }
                return .double(Double(p) / Double(q))
            case .mod:
                if q == 0 || (p == .min && q == -1) { return .null }
                return .int(p % q)
            default: return .null
            }
        case (.int, .double), (.double, .int), (.double, .double):
            let p = number(x)
            let q = number(y)
            switch op {
            case .add: return .double(p + q)
            case .sub: return .double(p - q)
            case .mul: return .double(p * q)
            case .div, .divby: return q == 0 ? .null : .double(p / q)
            case .mod: return q == 0 ? .null : .double(p.truncatingRemainder(dividingBy: q))
            default: return .null
            }
        case (.dateTimeOffset(let d), .duration(let n)):
            switch op {
            case .add: return d.adding(nanoseconds: n).map(Value.dateTimeOffset) ?? .null
            case .sub: return n == .min ? .null : d.adding(nanoseconds: -n).map(Value.dateTimeOffset) ?? .null
            default: return .null
            }
        case (.duration(let n), .dateTimeOffset(let d)) where op == .add:
            return d.adding(nanoseconds: n).map(Value.dateTimeOffset) ?? .null
        case (.dateTimeOffset(let d), .dateTimeOffset(let e)) where op == .sub:
            let seconds = d.utcSeconds.subtractingReportingOverflow(e.utcSeconds)
            guard !seconds.overflow else { return .null }
            let nanos = seconds.partialValue.multipliedReportingOverflow(by: 1_000_000_000)
            guard !nanos.overflow else { return .null }
            return checkedDuration(nanos.partialValue.addingReportingOverflow(Int64(d.nanos) - Int64(e.nanos)))
        case (.date(let d), .duration(let n)):
            // Only whole days move a date.
            guard n % 86_400_000_000_000 == 0 else { return .null }
            let days = n / 86_400_000_000_000
            switch op {
            case .add: return .date(d + days)
            case .sub: return .date(d - days)
            default: return .null
            }
        case (.date(let d), .date(let e)) where op == .sub:
            return checkedDuration((d - e).multipliedReportingOverflow(by: 86_400_000_000_000))
        case (.duration(let m), .duration(let n)):
            switch op {
            case .add: return checkedDuration(m.addingReportingOverflow(n))
            case .sub: return checkedDuration(m.subtractingReportingOverflow(n))
            default: return .null
            }
        case (.duration(let m), .int(let k)):
            switch op {
            case .mul: return checkedDuration(m.multipliedReportingOverflow(by: k))
            case .div, .divby: return k == 0 ? .null : .duration(m / k)
            default: return .null
            }
        default:
            return .null
        }
    }

    static func number(_ v: Value) -> Double {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return .nan
        }
    }

    static func checked(_ r: (partialValue: Int64, overflow: Bool)) -> Value {
        r.overflow ? .null : .int(r.partialValue)
    }

    static func checkedDuration(_ r: (partialValue: Int64, overflow: Bool)) -> Value {
        r.overflow ? .null : .duration(r.partialValue)
    }
}
