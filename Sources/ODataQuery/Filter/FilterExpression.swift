public import ODataCore

/// A parsed OData `$filter` (or `$orderby` key, or any common) expression: a `Sendable`, printable
/// tree whose ``description`` is the canonical query text that parses back to an equal tree.
///
/// ## Topics
/// - ``parse(_:aliases:)``
/// - ``CompiledFilter``
public indirect enum FilterExpression: Sendable, Hashable {
    /// A literal value.
    case literal(Literal)
    /// A member path: property names separated by `/`, starting at the entity (`$it`), at `$this`,
    /// or at a lambda's range variable (the first segment). Segments may be type casts
    /// (qualified names) or `$count`.
    case member([String])
    /// A parameter alias (`@p`) with no value in the query; it evaluates to `null`.
    case alias(String)
    /// A unary operator applied to an operand.
    case unary(UnaryOperator, FilterExpression)
    /// A binary operator; for `in` the right side is usually a ``list(_:)``.
    case binary(BinaryOperator, FilterExpression, FilterExpression)
    /// A parenthesized list of values, the right side of `in`.
    case list([FilterExpression])
    /// A function call: a canonical function (`contains`, `year`, …) or a custom one (`inErrorState`).
    case function(String, [FilterExpression])
    /// A type name, the argument of `cast` and `isof` (`Edm.String`, `NS.Customer`).
    case typeName(String)
    /// A lambda over a collection-valued path: `path/any(v:predicate)` / `path/all(v:predicate)`;
    /// `any()` without variable and predicate tests for a non-empty collection.
    case lambda(Lambda)
    /// A path from the service root: `$root/Customers('ALFKI')/CompanyName`.
    case root(ResourcePath, [String])
    /// A function bound to a path or with named parameters (`Products/Model.BestProduct()/Name`,
    /// `Model.PhoneticallySimilar(Word1=Name,Word2=Supplier/Name)`), or a path segment taking
    /// arguments (`Addresses/$filter(endswith(Street,'St'))/$count`, `Items/$count($filter=…)`).
    /// Parsed and printed; compiling one throws "not evaluable offline" (it needs the service).
    case call(OperationCall)

    /// Parses an expression.
    /// - Parameters:
    ///   - text: the option value, already percent-decoded (`Price gt 5 and contains(Name,'a')`).
    ///   - aliases: parameter alias values (`p` for `@p`) from the same query; aliases found here are
    ///     substituted by their parsed value, others stay ``alias(_:)`` and evaluate to `null`.
    /// - Returns: the expression tree.
    /// - Throws: ``ODataError`` `.invalidQueryOption`, a message saying what was expected,
    ///   and the UTF-8 offset in `text` where it was expected.
    public static func parse(_ text: String, aliases: [String: String] = [:]) throws(ODataError) -> FilterExpression {
        var parser = ExpressionParser(text, aliases: aliases)
        return try parser.parseWhole()
    }
}

/// `not` and unary minus.
public enum UnaryOperator: String, Sendable, Hashable, CaseIterable {
    /// Logical negation (`not x`).
    case not
    /// Arithmetic negation (`-x`).
    case negate = "-"
}

/// The binary operators of the expression language, named as written.
public enum BinaryOperator: String, Sendable, Hashable, CaseIterable {
    /// Logical and.
    case and
    /// Logical or.
    case or
    /// Equal.
    case eq
    /// Not equal.
    case ne
    /// Greater than.
    case gt
    /// Greater than or equal.
    case ge
    /// Less than.
    case lt
    /// Less than or equal.
    case le
    /// Enum flag test.
    case has
    /// Membership in a list.
    case `in`
    /// Addition (numbers, and date-times with durations).
    case add
    /// Subtraction.
    case sub
    /// Multiplication.
    case mul
    /// Division (integer division for integers).
    case div
    /// Decimal division.
    case divby
    /// Remainder.
    case mod

    /// Binding strength as OData orders it: `or` 1 … `mul` 6, `has`/`in` 8 (primary level; unary is 7).
    public var precedence: Int {
        switch self {
        case .or: return 1
        case .and: return 2
        case .eq, .ne: return 3
        case .gt, .ge, .lt, .le: return 4
        case .add, .sub: return 5
        case .mul, .div, .divby, .mod: return 6
        case .has, .in: return 8
        }
    }
}

/// A lambda operator application (`Orders/any(o:o/Freight gt 10)`).
public struct Lambda: Sendable, Hashable {
    /// `any` or `all`.
    public enum Kind: String, Sendable, Hashable {
        /// True when some member satisfies the predicate.
        case any
        /// True when every member satisfies the predicate.
        case all
    }

    /// The collection-valued path the lambda ranges over (its first segment may be an outer variable).
    public var path: [String]
    /// `any` or `all`.
    public var kind: Kind
    /// The range variable; nil for `any()`.
    public var variable: String?
    /// The predicate over the range variable; nil for `any()`.
    public var predicate: FilterExpression?
    /// A function call the path starts from (`Products/Model.BestProduct()/EmailAddresses/any()`); nil
    /// when the path starts at the entity or a range variable. Such a lambda is not evaluable offline.
    public var base: FilterExpression?

    /// Creates a lambda.
    /// - Parameters:
    ///   - path: the collection path.
    ///   - kind: `any` or `all`.
    ///   - variable: the range variable, nil for `any()`.
    ///   - predicate: the predicate, nil for `any()`.
    ///   - base: a function call the path starts from, nil for a path from the entity or a variable.
    public init(path: [String], kind: Kind, variable: String?, predicate: FilterExpression?, base: FilterExpression? = nil) {
        self.path = path
        self.kind = kind
        self.variable = variable
        self.predicate = predicate
        self.base = base
    }
}

/// A call of a function the service defines (bound or with named parameters), or a `$filter(…)` /
/// `$count(…)` path segment, as written in an expression: `base/name(arguments)/members`.
public struct OperationCall: Sendable, Hashable {
    /// One argument: named (`Word=Name`, `$filter=Price gt 5`) or positional (`$filter(Age gt 3)`).
    public struct Argument: Sendable, Hashable {
        /// The parameter's name; nil for a positional argument.
        public var name: String?
        /// The argument's value.
        public var value: FilterExpression

        /// Creates an argument.
        /// - Parameters:
        ///   - name: the parameter's name, nil for a positional argument.
        ///   - value: the value.
        public init(_ name: String?, _ value: FilterExpression) {
            self.name = name
            self.value = value
        }
    }

    /// What the function is bound to: a ``FilterExpression/member(_:)`` path or another call; nil
    /// for an unbound function.
    public var base: FilterExpression?
    /// The function's (usually namespace-qualified) name, or `$filter` / `$count`.
    public var name: String
    /// The arguments, in order.
    public var arguments: [Argument]
    /// A key predicate right after the call (`Products/$filter(Age gt 3)(ID='Sugar')`), if any.
    public var key: KeyPredicate?
    /// Member segments after the call (`Name` in `Products/Model.BestProduct()/Name`).
    public var members: [String]

    /// Creates a call.
    /// - Parameters:
    ///   - base: what the function is bound to, nil for an unbound function.
    ///   - name: the function's name.
    ///   - arguments: the arguments.
    ///   - key: a key predicate right after the call, if any.
    ///   - members: member segments after the call.
    public init(base: FilterExpression?, name: String, arguments: [Argument], key: KeyPredicate? = nil, members: [String] = []) {
        self.base = base
        self.name = name
        self.arguments = arguments
        self.key = key
        self.members = members
    }
}

/// A literal value as written in a query, typed as OData types it.
public enum Literal: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` / `false`.
    case bool(Bool)
    /// An integer (Edm.Int64 or smaller).
    case int(Int64)
    /// A decimal (`1.5`, or an integer too large for 64 bits), kept as its canonical text.
    case decimal(String)
    /// A double (`1.5e3`, `INF`, `-INF`, `NaN`).
    case double(Double)
    /// A string (unquoted, with `''` resolved).
    case string(String)
    /// A GUID, lowercase.
    case guid(String)
    /// A date (`2024-02-29`), canonical text.
    case date(String)
    /// A time of day (`13:20:00.5`), canonical text.
    case timeOfDay(String)
    /// A date-time with offset (`2024-02-29T13:20:00+01:00`), canonical text.
    case dateTimeOffset(String)
    /// A duration (`duration'P1DT2H'`), canonical ISO 8601 text without the prefix.
    case duration(String)
    /// Binary data, as its base64url text.
    case binary(String)
    /// An enum value: qualified type name and member list (`NS.Color`, `Red,Blue`).
    case enumMember(type: String, value: String)
    /// A geography or geometry literal, its prefix and its well-known text (`geography`, `SRID=0;Point(1 2)`).
    case geo(kind: String, text: String)
    /// A JSON array or object literal (`["a","b"]`).
    case json(JSONValue)
}

extension FilterExpression {
    /// The query text for a service of `version`: for V4 the same as ``description``; for V2 with V2's
    /// literal forms (`datetime'…'`, `guid'…'`, `time'PT…'`, `1.5M`), `substringof` for `contains`, and
    /// `in` written as equalities joined by `or`.
    /// - Parameter version: the service's OData version.
    /// - Returns: text that parses back to this tree (for V2, to the tree with those rewrites).
    /// - Throws: ``ODataError`` `.invalidQueryOption` naming what V2 cannot express (lambdas, `has`,
    ///   `divby`, enum and JSON literals, `$root`).
    public func text(for version: ODataVersion) throws(ODataError) -> String {
        var out = ""
        try ExpressionPrinter.print(self, version: version, into: &out)
        return out
    }
}

extension FilterExpression: CustomStringConvertible {
    /// The canonical query text: single spaces around operators, no optional parentheses.
    public var description: String {
        var out = ""
        ExpressionPrinter.print(self, into: &out)
        return out
    }
}

extension Literal {
    /// Equality as written, except that `NaN` equals `NaN` (of either sign): a parsed `NaN` literal
    /// must equal itself, or `parse(tree.description) == tree` and `Set`s of trees break.
    public static func == (lhs: Literal, rhs: Literal) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b || a.isNaN && b.isNaN
        case let (.decimal(a), .decimal(b)), let (.string(a), .string(b)), let (.guid(a), .guid(b)), let (.date(a), .date(b)),
            let (.timeOfDay(a), .timeOfDay(b)), let (.dateTimeOffset(a), .dateTimeOffset(b)), let (.duration(a), .duration(b)),
            let (.binary(a), .binary(b)):
            return a == b
        case let (.enumMember(typeA, valueA), .enumMember(typeB, valueB)), let (.geo(typeA, valueA), .geo(typeB, valueB)):
            return typeA == typeB && valueA == valueB
        case let (.json(a), .json(b)): return a == b
        default: return false
        }
    }

    /// Hashes consistently with ``==(_:_:)``: every `NaN` hashes alike.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(1); hasher.combine(value)
        case .int(let value): hasher.combine(2); hasher.combine(value)
        case .double(let value): hasher.combine(3); hasher.combine(value.isNaN ? Double.nan : value)
        case .decimal(let text): hasher.combine(4); hasher.combine(text)
        case .string(let text): hasher.combine(5); hasher.combine(text)
        case .guid(let text): hasher.combine(6); hasher.combine(text)
        case .date(let text): hasher.combine(7); hasher.combine(text)
        case .timeOfDay(let text): hasher.combine(8); hasher.combine(text)
        case .dateTimeOffset(let text): hasher.combine(9); hasher.combine(text)
        case .duration(let text): hasher.combine(10); hasher.combine(text)
        case .binary(let text): hasher.combine(11); hasher.combine(text)
        case .enumMember(let type, let value): hasher.combine(12); hasher.combine(type); hasher.combine(value)
        case .geo(let kind, let text): hasher.combine(13); hasher.combine(kind); hasher.combine(text)
        case .json(let value): hasher.combine(14); hasher.combine(value)
        }
    }
}
