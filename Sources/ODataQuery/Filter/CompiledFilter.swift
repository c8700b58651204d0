public import ODataCore
import Synchronization

/// What a compiled closure sees: the entity, lambda variables and the navigation resolver.
struct EvaluationContext {
    let root: JSONObject
    var variables: [JSONValue]
    let navigation: (any NavigationResolver)?

    /// `$this`: the innermost lambda variable, or the entity.
    var this: JSONValue { variables.last ?? .object(root) }
}

typealias Evaluate = @Sendable (EvaluationContext) -> Value
typealias Test = @Sendable (EvaluationContext) -> Tri
typealias Fetch = @Sendable (EvaluationContext) -> JSONValue?

/// Remembers where a member was found last time: entities of one set share their member order,
/// so the lookup is usually one string comparison instead of a scan.
final class MemberSlot: Sendable {
    let name: String
    private let index = Atomic<Int>(0)

    init(_ name: String) { self.name = name }

    @inline(__always)
    func lookup(_ object: JSONObject) -> JSONValue? {
        let keys = object.keys
        let guess = index.load(ordering: .relaxed)
        if guess < keys.count && keys[guess] == name { return object.values[guess] }
        guard let found = keys.firstIndex(of: name) else { return nil }
        index.store(found, ordering: .relaxed)
        return object.values[found]
    }
}

/// A filter compiled once into a closure tree, evaluated many times without parsing.
///
/// `CompiledFilter` is `Sendable`: one instance can test entities from many tasks at once.
public struct CompiledFilter: Sendable {
    /// The expression this filter was compiled from.
    public let expression: FilterExpression
    let test: Test

    /// Compiles an expression.
    /// - Parameters:
    ///   - expression: the parsed expression.
    ///   - functions: custom functions the expression may call.
    /// - Throws: ``ODataError`` `.invalidQueryOption` for an unknown function, a custom function
    ///   called with the wrong number of arguments, an invalid `matchesPattern` pattern, or a
    ///   function that cannot be evaluated (geo functions).
    public init(_ expression: FilterExpression, functions: FunctionTable = .standard) throws(ODataError) {
        self.expression = expression
        var compiler = Compiler(functions: functions)
        test = try compiler.test(expression)
    }

    /// Parses and compiles a `$filter` value.
    /// - Parameters:
    ///   - text: the option value, percent-decoded.
    ///   - aliases: parameter alias values from the query.
    ///   - functions: custom functions the expression may call.
    /// - Throws: ``ODataError`` `.invalidQueryOption` as ``FilterExpression/parse(_:aliases:)`` and ``init(_:functions:)`` do.
    public init(parsing text: String, aliases: [String: String] = [:], functions: FunctionTable = .standard) throws(ODataError) {
        try self.init(FilterExpression.parse(text, aliases: aliases), functions: functions)
    }

    /// Whether an entity satisfies the filter (`null` counts as not satisfied).
    /// - Parameters:
    ///   - entity: the entity, as OData V4 JSON.
    ///   - navigation: resolves navigation properties the entity does not embed.
    /// - Returns: true when the expression evaluates to `true`.
    public func matches(_ entity: JSONObject, navigation: (any NavigationResolver)? = nil) -> Bool {
        test(EvaluationContext(root: entity, variables: [], navigation: navigation)) == .true
    }

    /// Evaluates the expression to a value (for example a computed `$orderby` key).
    /// - Parameters:
    ///   - entity: the entity.
    ///   - navigation: resolves navigation properties the entity does not embed.
    /// - Returns: `true`, `false` or `null` for a boolean expression.
    public func evaluate(_ entity: JSONObject, navigation: (any NavigationResolver)? = nil) -> JSONValue {
        test(EvaluationContext(root: entity, variables: [], navigation: navigation)).value.json
    }
}

/// A compiled expression of any type, evaluated to a JSON value (used for `$orderby` keys).
struct CompiledValue: Sendable {
    let evaluate: Evaluate

    init(_ expression: FilterExpression, functions: FunctionTable) throws(ODataError) {
        var compiler = Compiler(functions: functions)
        evaluate = try compiler.value(expression)
    }

    func callAsFunction(_ entity: JSONObject, navigation: (any NavigationResolver)?) -> Value {
        evaluate(EvaluationContext(root: entity, variables: [], navigation: navigation))
    }
}

/// Turns expression trees into closures.
struct Compiler {
    let functions: FunctionTable
    var scope: [String] = []

    init(functions: FunctionTable) {
        self.functions = functions
    }

    func error(_ message: String) -> ODataError {
        ODataError(.invalidQueryOption, message)
    }

    // MARK: Booleans

    mutating func test(_ expression: FilterExpression) throws(ODataError) -> Test {
        switch expression {
        case .binary(.and, let lhs, let rhs):
            let l = try test(lhs)
            let r = try test(rhs)
            return { ctx in
                let a = l(ctx)
                if a == .false { return .false }
                let b = r(ctx)
                if b == .false { return .false }
                return a == .true && b == .true ? .true : .null
            }
        case .binary(.or, let lhs, let rhs):
            let l = try test(lhs)
            let r = try test(rhs)
            return { ctx in
                let a = l(ctx)
                if a == .true { return .true }
                let b = r(ctx)
                if b == .true { return .true }
                return a == .false && b == .false ? .false : .null
            }
        case .unary(.not, let operand):
            let o = try test(operand)
            return { ctx in
                switch o(ctx) {
                case .true: return .false
                case .false: return .true
                case .null: return .null
                }
            }
        case .binary(let op, let lhs, let rhs) where [.eq, .ne, .gt, .ge, .lt, .le].contains(op):
            if let fast = try fastComparison(op, lhs, rhs) { return fast }
            let l = try value(lhs)
            let r = try value(rhs)
            return { ctx in Compiler.compare(op, l(ctx), r(ctx)) }
        case .binary(.in, let lhs, let rhs):
            let l = try value(lhs)
            if case .list(let items) = rhs {
                let values = try items.map { (item) throws(ODataError) in try value(item) }
                return { ctx in
                    let v = l(ctx)
                    for item in values where Value.equals(v, item(ctx)) { return .true }
                    return .false
                }
            }
            let r = try value(rhs)
            return { ctx in
                let v = l(ctx)
                switch r(ctx) {
                case .array(let elements):
                    for element in elements where Value.equals(v, Value(element)) { return .true }
                    return .false
                case .list(let elements):
                    for element in elements where Value.equals(v, element) { return .true }
                    return .false
                case .null: return .null
                default: return .false
                }
            }
        case .binary(.has, let lhs, let rhs):
            let l = try value(lhs)
            let r = try value(rhs)
            return { ctx in Compiler.has(l(ctx), r(ctx)) }
        case .lambda(let lambda):
            return try compileLambda(lambda)
        default:
            let v = try value(expression)
            return { ctx in Tri(v(ctx)) }
        }
    }

    static func compare(_ op: BinaryOperator, _ a: Value, _ b: Value) -> Tri {
        switch op {
        case .eq: return Tri(Value.equals(a, b))
        case .ne: return Tri(!Value.equals(a, b))
        default:
            if a.isNull || b.isNull { return .false }
            guard let order = Value.compare(a, b) else { return .false }
            return Tri(holds(op, order))
        }
    }

    @inline(__always)
    static func holds(_ op: BinaryOperator, _ order: Int) -> Bool {
        switch op {
        case .eq: return order == 0
        case .ne: return order != 0
        case .gt: return order > 0
        case .ge: return order >= 0
        case .lt: return order < 0
        case .le: return order <= 0
        default: return false
        }
    }

    static func mirrored(_ op: BinaryOperator) -> BinaryOperator {
        switch op {
        case .gt: return .lt
        case .ge: return .le
        case .lt: return .gt
        case .le: return .ge
        default: return op
        }
    }

    /// `member op literal` (or `literal op member`): fetch the JSON value and compare it with a
    /// pre-converted literal, skipping the general value machinery for the common shapes.
    mutating func fastComparison(_ op: BinaryOperator, _ lhs: FilterExpression, _ rhs: FilterExpression) throws(ODataError) -> Test? {
        var member = lhs
        var literal = rhs
        var swapped = false
        if case .literal = lhs, case .member = rhs {
            member = rhs
            literal = lhs
            swapped = true
        }
        let op = swapped ? Compiler.mirrored(op) : op
        guard case .member(let path) = member, case .literal(let lit) = literal, let fetch = try fetchPath(path) else {
            return nil
        }
        let constant = Value(lit)
        let nullResult: Tri = op == .ne ? .true : .false
        switch constant {
        case .null:
            return { ctx in
                let isNull = fetch(ctx).map { $0 == .null } ?? true
                if op == .eq { return Tri(isNull) }
                if op == .ne { return Tri(!isNull) }
                return .false
            }
        case .int(let k):
            let dk = Double(k)
            return { ctx in
                switch fetch(ctx) {
                case .int(let x)?: return Tri(Compiler.holds(op, x < k ? -1 : (x == k ? 0 : 1)))
                case .double(let x)?:
                    guard let order = Value.compareDoubles(x, dk) else { return nullResult }
                    return Tri(Compiler.holds(op, order))
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .double(let k):
            return { ctx in
                switch fetch(ctx) {
                case .int(let x)?:
                    guard let order = Value.compareDoubles(Double(x), k) else { return nullResult }
                    return Tri(Compiler.holds(op, order))
                case .double(let x)?:
                    guard let order = Value.compareDoubles(x, k) else { return nullResult }
                    return Tri(Compiler.holds(op, order))
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .string(let k):
            return { ctx in
                switch fetch(ctx) {
                case .string(let x)?: return Tri(Compiler.holds(op, Value.compareStrings(x, k)))
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .dateTimeOffset(let k):
            return { ctx in
                switch fetch(ctx) {
                case .string(let x)?:
                    guard let d = Temporal.dateTimeOffset(x) else { return nullResult }
                    return Tri(Compiler.holds(op, DateTimeOffset.compare(d, k)))
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        default:
            return { ctx in
                guard let v = fetch(ctx) else { return nullResult }
                return Compiler.compare(op, Value(v), constant)
            }
        }
    }

    static func has(_ a: Value, _ b: Value) -> Tri {
        switch (a, b) {
        case (.null, _), (_, .null): return .null
        case (.int(let x), .int(let y)): return Tri(x & y == y)
        case (.string(let s), .enumMember(let m)), (.enumMember(let s), .enumMember(let m)):
            let present = Set(s.split(separator: ",").map { $0.trimmingSpaces })
            let wanted = m.split(separator: ",").map { $0.trimmingSpaces }
            return Tri(wanted.allSatisfy(present.contains))
        default: return .false
        }
    }

    mutating func compileLambda(_ lambda: Lambda) throws(ODataError) -> Test {
        guard let collection = try fetchPath(lambda.path, forCollection: true) else {
            throw error("cannot apply \(lambda.kind.rawValue) to '\(lambda.path.joined(separator: "/"))'")
        }
        guard let variable = lambda.variable, let predicate = lambda.predicate else {
            return { ctx in
                guard case .array(let elements)? = collection(ctx) else { return .false }
                return Tri(!elements.isEmpty)
            }
        }
        scope.append(variable)
        let body = try test(predicate)
        scope.removeLast()
        let isAny = lambda.kind == .any
        return { ctx in
            guard case .array(let elements)? = collection(ctx) else { return isAny ? .false : .true }
            var inner = ctx
            inner.variables.append(.null)
            let slot = inner.variables.count - 1
            for element in elements {
                inner.variables[slot] = element
                let result = body(inner)
                if isAny && result == .true { return .true }
                if !isAny && result != .true { return .false }
            }
            return isAny ? .false : .true
        }
    }

    // MARK: Paths

    /// A closure fetching a member path's JSON value; nil (no closure) when the path is not plain.
    mutating func fetchPath(_ path: [String], forCollection: Bool = false) throws(ODataError) -> Fetch? {
        var segments = path[...]
        let base: Fetch
        guard let first = segments.first else { return nil }
        if first == "$it" {
            segments = segments.dropFirst()
            base = { ctx in .object(ctx.root) }
        } else if first == "$this" {
            segments = segments.dropFirst()
            base = { ctx in ctx.this }
        } else if let index = scope.lastIndex(of: first) {
            segments = segments.dropFirst()
            base = { ctx in ctx.variables[index] }
        } else {
            // The common case: a member of the entity itself.
            if segments.count == 1 && !first.contains(".") && first != "$count" {
                let slot = MemberSlot(first)
                return { ctx in
                    if let value = slot.lookup(ctx.root) { return value }
                    return ctx.navigation?.related(ctx.root, navigationProperty: slot.name)
                }
            }
            base = { ctx in .object(ctx.root) }
        }
        var fetch = base
        for segment in segments {
            let previous = fetch
            if segment == "$count" {
                fetch = { ctx in
                    guard case .array(let elements)? = previous(ctx) else { return nil }
                    return .int(Int64(elements.count))
                }
            } else if segment.contains(".") {
                // A type cast: keep the value when its @odata.type names the type (or has none).
                let typeName = segment
                let shortName = "#" + segment
                fetch = { ctx in
                    guard let value = previous(ctx) else { return nil }
                    if case .object(let object) = value, case .string(let type)? = object["@odata.type"],
                        type != shortName && type != typeName
                    {
                        return .null
                    }
                    return value
                }
            } else {
                let slot = MemberSlot(segment)
                fetch = { ctx in
                    guard case .object(let object)? = previous(ctx) else { return nil }
                    if let value = slot.lookup(object) { return value }
                    return ctx.navigation?.related(object, navigationProperty: slot.name)
                }
            }
        }
        return fetch
    }

    // MARK: Values

    mutating func value(_ expression: FilterExpression) throws(ODataError) -> Evaluate {
        switch expression {
        case .literal(let literal):
            let constant = Value(literal)
            return { _ in constant }
        case .member(let path):
            guard let fetch = try fetchPath(path) else { throw error("empty member path") }
            return { ctx in fetch(ctx).map(Value.init) ?? .null }
        case .alias:
            return { _ in .null }
        case .list(let items):
            let values = try items.map { (item) throws(ODataError) in try value(item) }
            return { ctx in .list(values.map { $0(ctx) }) }
        case .typeName(let name):
            throw error("type name '\(name)' is only allowed as an argument of cast or isof")
        case .unary(.negate, let operand):
            let o = try value(operand)
            return { ctx in Arithmetic.negate(o(ctx)) }
        case .binary(let op, let lhs, let rhs)
        where op == .add || op == .sub || op == .mul || op == .div || op == .divby || op == .mod:
            let l = try value(lhs)
            let r = try value(rhs)
            return { ctx in Arithmetic.apply(op, l(ctx), r(ctx)) }
        case .unary(.not, _), .binary, .lambda:
            let t = try test(expression)
            return { ctx in t(ctx).value }
        case .function(let name, let arguments):
            return try function(name, arguments)
        case .root(let path, let members):
            return { ctx in
                guard var current = ctx.navigation?.resource(at: path) else { return .null }
                for member in members {
                    guard case .object(let object) = current, let next = object[member] else { return .null }
                    current = next
                }
                return Value(current)
            }
        }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
