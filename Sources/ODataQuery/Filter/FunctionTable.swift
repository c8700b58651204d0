public import ODataCore

/// Resolves navigation properties that an entity does not embed, for lambdas, member paths and `$expand`.
///
/// The offline store implements it over its local store; the fixture producer over its data.
public protocol NavigationResolver {
    /// The related entity (an object) or entities (an array) of a navigation property.
    /// - Parameters:
    ///   - entity: the entity (or nested object) the navigation starts from.
    ///   - navigationProperty: the navigation property's name.
    /// - Returns: the related value, or nil when this resolver does not know it.
    func related(_ entity: JSONObject, navigationProperty: String) -> JSONValue?

    /// The value addressed by a `$root/…` path in an expression.
    /// - Parameter path: the resource path after `$root/`.
    /// - Returns: the entity or value, or nil when unknown (the expression then sees `null`).
    func resource(at path: ResourcePath) -> JSONValue?
}

extension NavigationResolver {
    /// Resolves no `$root` paths.
    /// - Parameter path: the resource path after `$root/`.
    /// - Returns: nil.
    public func resource(at path: ResourcePath) -> JSONValue? { nil }
}

/// What a custom function receives when it is evaluated.
public struct FunctionCall {
    /// The entity being filtered (`$it`).
    public let entity: JSONObject
    /// The current instance (`$this`): the innermost lambda variable's value, or the entity.
    public let this: JSONValue
    /// The evaluated arguments, as OData JSON writes them.
    public let arguments: [JSONValue]
    /// The navigation resolver of this evaluation, if any.
    public let navigation: (any NavigationResolver)?

    /// Creates a call (the evaluator does; tests of custom functions may too).
    /// - Parameters:
    ///   - entity: the entity being filtered.
    ///   - this: the current instance.
    ///   - arguments: the evaluated arguments.
    ///   - navigation: the navigation resolver, if any.
    public init(entity: JSONObject, this: JSONValue, arguments: [JSONValue], navigation: (any NavigationResolver)?) {
        self.entity = entity
        self.this = this
        self.arguments = arguments
        self.navigation = navigation
    }
}

/// Functions beyond the canonical ones that expressions may call by name, such as the offline
/// store's `inErrorState()`.
///
/// The parser accepts any `name(args)` call; compiling an expression looks custom names up here
/// and fails with a typed error when a name is missing or called with the wrong argument count.
public struct FunctionTable: Sendable {
    /// The evaluator of one custom function.
    public typealias Evaluator = @Sendable (FunctionCall) -> JSONValue

    struct Entry: Sendable {
        var arity: ClosedRange<Int>
        var evaluate: Evaluator
    }

    var entries: [String: Entry] = [:]

    /// Creates an empty table (canonical functions are always available).
    public init() {}

    /// A table with no custom functions.
    public static let standard = FunctionTable()

    /// Adds or replaces a custom function.
    /// - Parameters:
    ///   - name: the name as written in expressions (`inErrorState`, `NS.isPreferred`); canonical
    ///     function names cannot be replaced.
    ///   - arity: how many arguments it takes.
    ///   - evaluate: computes the result; return `.null` for "unknown".
    /// - Throws: ``ODataError`` `.invalidQueryOption` when `name` is a canonical function.
    public mutating func register(
        _ name: String, arity: ClosedRange<Int> = 0...0, evaluate: @escaping Evaluator
    ) throws(ODataError) {
        guard ExpressionParser.canonicalFunctions[name] == nil else {
            throw ODataError(.invalidQueryOption, "'\(name)' is a canonical function and cannot be replaced")
        }
        entries[name] = Entry(arity: arity, evaluate: evaluate)
    }

    /// Whether a custom function of that name is registered.
    /// - Parameter name: the function name.
    /// - Returns: true when registered.
    public func contains(_ name: String) -> Bool { entries[name] != nil }
}
