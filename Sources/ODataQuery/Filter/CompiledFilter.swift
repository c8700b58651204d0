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

    /// `any`/`all` over a collection member: the predicate sees each element as the lambda variable.
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
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
