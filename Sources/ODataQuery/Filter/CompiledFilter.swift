public import ODataCore
import Synchronization

/// What a compiled closure sees: the entity, plus (only when needed) lambda variables and the
/// navigation resolver.
///
/// Kept to three words so passing it through every closure call costs no retains; the rarely
/// needed parts live in ``EvaluationExtras``, allocated only for lambdas and resolvers.
enum EvaluationContext {
    /// `$this`: the innermost lambda variable, or the entity.
    static func this(_ root: JSONObject, _ extras: EvaluationExtras?) -> JSONValue {
        if let last = extras?.variables.last { return last }
        return .object(root)
    }
}

/// Lambda variables and the navigation resolver of one evaluation.
final class EvaluationExtras {
    var variables: [JSONValue] = []
    let navigation: (any NavigationResolver)?

    init(navigation: (any NavigationResolver)?) {
        self.navigation = navigation
    }
}

/// Closures wrapped in structs: a closure stored in an Optional or an Array would be called
/// through a reabstraction thunk.
struct TestBox {
    let run: Test
}

struct FetchBox {
    let run: Fetch
}

struct EvaluateBox {
    let run: Evaluate
}

/// Compiled closures take the entity and, only when lambdas or a resolver need them, extras:
/// passing the entity itself (not a struct holding it) costs no retains per call.
typealias Evaluate = @Sendable (JSONObject, EvaluationExtras?) -> Value
typealias Test = @Sendable (JSONObject, EvaluationExtras?) -> Tri
typealias Fetch = @Sendable (JSONObject, EvaluationExtras?) -> JSONValue?

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

/// Reads a value for the fast comparison paths.
protocol Fetcher: AnyObject, Sendable {
    func callAsFunction(_ root: JSONObject, _ extras: EvaluationExtras?) -> JSONValue?
}

extension MemberSlot: Fetcher {
    @inline(__always)
    func callAsFunction(_ root: JSONObject, _ extras: EvaluationExtras?) -> JSONValue? {
        if let value = lookup(root) { return value }
        return extras?.navigation?.related(root, navigationProperty: name)
    }
}

/// A compiled path as a ``Fetcher``.
final class PathFetcher: Fetcher {
    let run: Fetch
    init(_ run: @escaping Fetch) { self.run = run }
    func callAsFunction(_ root: JSONObject, _ extras: EvaluationExtras?) -> JSONValue? { run(root, extras) }
}

/// A filter compiled once into a closure tree, evaluated many times without parsing.
///
/// `CompiledFilter` is `Sendable`: one instance can test entities from many tasks at once.
public struct CompiledFilter: Sendable {
    /// The expression this filter was compiled from.
    public let expression: FilterExpression
    let test: Test
    let value: EvaluateBox

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
        value = EvaluateBox(run: try compiler.value(expression))
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
        test(entity, navigation.map { EvaluationExtras(navigation: $0) }) == .true
    }

    /// The entities that satisfy the filter, in their order; one evaluation context serves them all.
    /// - Parameters:
    ///   - entities: the entities to test.
    ///   - navigation: resolves navigation properties the entities do not embed.
    /// - Returns: the matching entities.
    public func filter(_ entities: [JSONObject], navigation: (any NavigationResolver)? = nil) -> [JSONObject] {
        let extras = navigation.map { EvaluationExtras(navigation: $0) }
        return entities.filter { test($0, extras) == .true }
    }

    /// Evaluates the expression to a value, as OData JSON writes it (`true`/`false`/`null` for a
    /// predicate, a number for `Price mul 2`, a string for a date-time).
    /// - Parameters:
    ///   - entity: the entity.
    ///   - navigation: resolves navigation properties the entity does not embed.
    /// - Returns: the value.
    public func evaluate(_ entity: JSONObject, navigation: (any NavigationResolver)? = nil) -> JSONValue {
        value.run(entity, navigation.map { EvaluationExtras(navigation: $0) }).json
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
        evaluate(entity, navigation.map { EvaluationExtras(navigation: $0) })
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
        case .binary(.and, _, _):
            var parts = Compiler.flatten(expression, .and)[...]
            var combined = try test(parts.removeFirst())
            for part in parts {
                let l = combined
                let r = try test(part)
                combined = { root, extras in
                    let a = l(root, extras)
                    if a == .false { return .false }
                    let b = r(root, extras)
                    if b == .false { return .false }
                    return a == .true && b == .true ? .true : .null
                }
            }
            return combined
        case .binary(.or, _, _):
            var parts = Compiler.flatten(expression, .or)[...]
            var combined = try test(parts.removeFirst())
            for part in parts {
                let l = combined
                let r = try test(part)
                combined = { root, extras in
                    let a = l(root, extras)
                    if a == .true { return .true }
                    let b = r(root, extras)
                    if b == .true { return .true }
                    return a == .false && b == .false ? .false : .null
                }
            }
            return combined
        case .unary(.not, let operand):
            let o = try test(operand)
            return { root, extras in
                switch o(root, extras) {
                case .true: return .false
                case .false: return .true
                case .null: return .null
                }
            }
        case .binary(let op, let lhs, let rhs) where [.eq, .ne, .gt, .ge, .lt, .le].contains(op):
            if let fast = try fastComparison(op, lhs, rhs) { return fast.run }
            let l = try value(lhs)
            let r = try value(rhs)
            return { root, extras in Compiler.compare(op, l(root, extras), r(root, extras)) }
        case .binary(.in, let lhs, let rhs):
            if case .list(let items) = rhs, !items.isEmpty, let fast = try fastIn(lhs, items) { return fast.run }
            let l = try value(lhs)
            if case .list(let items) = rhs {
                let values = try items.map { (item) throws(ODataError) in EvaluateBox(run: try value(item)) }
                return { root, extras in
                    let v = l(root, extras)
                    for item in values where Value.equals(v, item.run(root, extras)) { return .true }
                    return .false
                }
            }
            let r = try value(rhs)
            return { root, extras in
                let v = l(root, extras)
                switch r(root, extras) {
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
            return { root, extras in Compiler.has(l(root, extras), r(root, extras)) }
        case .lambda(let lambda):
            return try compileLambda(lambda)
        default:
            let v = try value(expression)
            return { root, extras in Tri(v(root, extras)) }
        }
    }

    /// The operands of a chain of one logical operator, left to right, without recursion limits
    /// beyond the parser's depth limit.
    static func flatten(_ expression: FilterExpression, _ op: BinaryOperator) -> [FilterExpression] {
        var result: [FilterExpression] = []
        var pending: [FilterExpression] = [expression]
        while let next = pending.popLast() {
            if case .binary(let o, let l, let r) = next, o == op {
                pending.append(r)
                pending.append(l)
            } else {
                result.append(next)
            }
        }
        return result
    }

    /// A comparison as a 3-bit mask over (less, equal, greater), so one closure serves every operator.
    static func mask(_ op: BinaryOperator) -> UInt8 {
        switch op {
        case .lt: return 0b001
        case .eq: return 0b010
        case .gt: return 0b100
        case .le: return 0b011
        case .ge: return 0b110
        case .ne: return 0b101
        default: return 0
        }
    }

    @inline(__always)
    static func holds(_ mask: UInt8, _ order: Int) -> Tri {
        Tri(rawValue: (mask >> UInt8(truncatingIfNeeded: order + 1)) & 1)!
    }

    @inline(__always)
    static func order<T: Comparable>(_ x: T, _ y: T) -> Int {
        (x > y ? 1 : 0) - (x < y ? 1 : 0)
    }

    static func compare(_ op: BinaryOperator, _ a: Value, _ b: Value) -> Tri {
        switch op {
        case .eq: return Tri(Value.equals(a, b))
        case .ne: return Tri(!Value.equals(a, b))
        default:
            if a.isNull || b.isNull { return .false }
            guard let order = Value.compare(a, b) else { return .false }
            return holds(mask(op), order)
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
    mutating func fastComparison(_ op: BinaryOperator, _ lhs: FilterExpression, _ rhs: FilterExpression) throws(ODataError) -> TestBox? {
        var member = lhs
        var literal = rhs
        var swapped = false
        if case .literal = lhs, case .member = rhs {
            member = rhs
            literal = lhs
            swapped = true
        }
        let op = swapped ? Compiler.mirrored(op) : op
        guard case .member(let path) = member, case .literal(let lit) = literal else { return nil }
        if let slot = rootSlot(path) {
            return TestBox(run: fastComparison(op, slot, Value(lit)))
        }
        return TestBox(run: fastComparison(op, PathFetcher(try fetchPath(path)), Value(lit)))
    }

    /// A slot for a plain member of the entity itself (`Price`), nil for any other path.
    func rootSlot(_ path: [String]) -> MemberSlot? {
        guard path.count == 1, let name = path.first, !name.contains("."), !name.hasPrefix("$"), !scope.contains(name)
        else { return nil }
        return MemberSlot(name)
    }

    /// Generic over the fetcher so each closure captures one class reference and calls it
    /// directly (a captured closure inside a closure costs retains on every call).
    func fastComparison<F: Fetcher>(_ op: BinaryOperator, _ fetcher: F, _ constant: Value) -> Test {
        let fetch = fetcher
        let nullResult: Tri = op == .ne ? .true : .false
        let mask = Compiler.mask(op)
        switch constant {
        case .null:
            return { root, extras in
                let isNull = fetch(root, extras).map { $0 == .null } ?? true
                if op == .eq { return Tri(isNull) }
                if op == .ne { return Tri(!isNull) }
                return .false
            }
        case .int(let k):
            let dk = Double(k)
            return { root, extras in
                switch fetch(root, extras) {
                case .int(let x)?: return Compiler.holds(mask, Compiler.order(x, k))
                case .double(let x)?:
                    guard let order = Value.compareDoubles(x, dk) else { return nullResult }
                    return Compiler.holds(mask, order)
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .double(let k):
            return { root, extras in
                switch fetch(root, extras) {
                case .int(let x)?:
                    guard let order = Value.compareDoubles(Double(x), k) else { return nullResult }
                    return Compiler.holds(mask, order)
                case .double(let x)?:
                    guard let order = Value.compareDoubles(x, k) else { return nullResult }
                    return Compiler.holds(mask, order)
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .string(let k) where op == .eq || op == .ne:
            let wanted: Tri = op == .eq ? .true : .false
            let unwanted: Tri = op == .eq ? .false : .true
            return { root, extras in
                switch fetch(root, extras) {
                case .string(let x)?: return x == k ? wanted : unwanted
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .string(let k):
            return { root, extras in
                switch fetch(root, extras) {
                case .string(let x)?: return Compiler.holds(mask, Value.compareStrings(x, k))
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .dateTimeOffset(let k):
            return { root, extras in
                switch fetch(root, extras) {
                case .string(let x)?:
                    guard let d = Temporal.dateTimeOffset(x) else { return nullResult }
                    return Compiler.holds(mask, DateTimeOffset.compare(d, k))
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        default:
            return { root, extras in
                guard let v = fetch(root, extras) else { return nullResult }
                return Compiler.compare(op, Value(v), constant)
            }
        }
    }

    /// `member in (literal, …)`: integers and strings checked without building values.
    mutating func fastIn(_ lhs: FilterExpression, _ items: [FilterExpression]) throws(ODataError) -> TestBox? {
        guard case .member(let path) = lhs else { return nil }
        var ints: [Int64] = []
        var strings: [String] = []
        for item in items {
            switch item {
            case .literal(.int(let i)): ints.append(i)
            case .literal(.string(let s)): strings.append(s)
            default: return nil
            }
        }
        guard ints.isEmpty || strings.isEmpty else { return nil }
        if let slot = rootSlot(path) { return fastIn(slot, ints, strings) }
        return fastIn(PathFetcher(try fetchPath(path)), ints, strings)
    }

    func fastIn<F: Fetcher>(_ fetch: F, _ ints: [Int64], _ strings: [String]) -> TestBox {
        let intList = ints
        let stringList = strings
        if !intList.isEmpty {
            let doubles = intList.map(Double.init)
            return TestBox { root, extras in
                switch fetch(root, extras) {
                case .int(let x)?: return Tri(intList.contains(x))
                case .double(let x)?: return Tri(doubles.contains(x))
                case .string(let s)?:
                    guard case .int(let x)? = Value.number(s) else { return .false }
                    return Tri(intList.contains(x))
                default: return .false
                }
            }
        }
        return TestBox { root, extras in
            guard case .string(let x)? = fetch(root, extras) else { return .false }
            return Tri(stringList.contains(x))
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
        if let base = lambda.base, case .call(let call) = base {
            throw error("'\(call.name)(…)' is not evaluable offline: it needs the service")
        }
        let collection = try fetchPath(lambda.path)
        guard let variable = lambda.variable, let predicate = lambda.predicate else {
            return { root, extras in
                guard case .array(let elements)? = collection(root, extras) else { return .false }
                return Tri(!elements.isEmpty)
            }
        }
        scope.append(variable)
        let body = try test(predicate)
        scope.removeLast()
        let isAny = lambda.kind == .any
        return { root, extras in
            guard case .array(let elements)? = collection(root, extras) else { return isAny ? .false : .true }
            let extras = extras ?? EvaluationExtras(navigation: nil)
            extras.variables.append(.null)
            defer { extras.variables.removeLast() }
            let slot = extras.variables.count - 1
            for element in elements {
                extras.variables[slot] = element
                let result = body(root, extras)
                if isAny && result == .true { return .true }
                if !isAny && result != .true { return .false }
            }
            return isAny ? .false : .true
        }
    }

    // MARK: Paths

    /// A closure fetching a member path's JSON value; nil (no closure) when the path is not plain.
    mutating func fetchPath(_ path: [String]) throws(ODataError) -> Fetch {
        var segments = path[...]
        let base: Fetch
        guard let first = segments.first else { throw error("empty member path") }
        if first == "$it" {
            segments = segments.dropFirst()
            base = { root, extras in .object(root) }
        } else if first == "$this" {
            segments = segments.dropFirst()
            base = { root, extras in EvaluationContext.this(root, extras) }
        } else if let index = scope.lastIndex(of: first) {
            segments = segments.dropFirst()
            base = { root, extras in extras!.variables[index] }
        } else {
            // The common case: a member of the entity itself.
            if segments.count == 1 && !first.contains(".") && first != "$count" {
                let slot = MemberSlot(first)
                return { root, extras in
                    if let value = slot.lookup(root) { return value }
                    return extras?.navigation?.related(root, navigationProperty: slot.name)
                }
            }
            base = { root, extras in .object(root) }
        }
        var fetch = base
        for segment in segments {
            let previous = fetch
            if segment == "$count" {
                fetch = { root, extras in
                    guard case .array(let elements)? = previous(root, extras) else { return nil }
                    return .int(Int64(elements.count))
                }
            } else if segment.contains(".") {
                // A type cast: keep the value when its @odata.type names the type (or has none).
                let typeName = segment
                let shortName = "#" + segment
                fetch = { root, extras in
                    guard let value = previous(root, extras) else { return nil }
                    if case .object(let object) = value, case .string(let type)? = object["@odata.type"],
                        type != shortName && type != typeName
                    {
                        return .null
                    }
                    return value
                }
            } else {
                let slot = MemberSlot(segment)
                fetch = { root, extras in
                    guard case .object(let object)? = previous(root, extras) else { return nil }
                    if let value = slot.lookup(object) { return value }
                    return extras?.navigation?.related(object, navigationProperty: slot.name)
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
            return { _, _ in constant }
        case .member(let path):
            let fetch = try fetchPath(path)
            return { root, extras in fetch(root, extras).map(Value.init) ?? .null }
        case .alias:
            return { _, _ in .null }
        case .list(let items):
            let values = try items.map { (item) throws(ODataError) in EvaluateBox(run: try value(item)) }
            return { root, extras in .list(values.map { $0.run(root, extras) }) }
        case .typeName(let name):
            throw error("type name '\(name)' is only allowed as an argument of cast or isof")
        case .unary(.negate, let operand):
            let o = try value(operand)
            return { root, extras in Arithmetic.negate(o(root, extras)) }
        case .binary(let op, let lhs, let rhs)
        where op == .add || op == .sub || op == .mul || op == .div || op == .divby || op == .mod:
            let l = try value(lhs)
            let r = try value(rhs)
            return { root, extras in Arithmetic.apply(op, l(root, extras), r(root, extras)) }
        case .unary(.not, _), .binary, .lambda:
            let t = try test(expression)
            return { root, extras in t(root, extras).value }
        case .function(let name, let arguments):
            return try function(name, arguments)
        case .call(let call):
            throw error("'\(call.name)(…)' is not evaluable offline: it needs the service")
        case .root(let path, let members):
            return { root, extras in
                guard var current = extras?.navigation?.resource(at: path) else { return .null }
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
