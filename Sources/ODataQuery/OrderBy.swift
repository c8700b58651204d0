public import ODataCore

/// An `$orderby` option: expressions with a direction, most significant first.
public struct OrderBy: Sendable, Hashable, CustomStringConvertible {
    /// One sort key.
    public struct Item: Sendable, Hashable {
        /// The expression whose value is compared (usually a property path).
        public var expression: FilterExpression
        /// Whether larger values come first.
        public var descending: Bool

        /// Creates a sort key.
        /// - Parameters:
        ///   - expression: the expression to compare.
        ///   - descending: true for `desc`.
        public init(_ expression: FilterExpression, descending: Bool = false) {
            self.expression = expression
            self.descending = descending
        }
    }

    /// The sort keys, most significant first.
    public var items: [Item]

    /// Creates an ordering.
    /// - Parameter items: the sort keys, most significant first.
    public init(_ items: [Item]) {
        self.items = items
    }

    /// The canonical option value (`Country desc,Name`).
    public var description: String {
        items.map { $0.expression.description + ($0.descending ? " desc" : "") }.joined(separator: ",")
    }

    /// Parses an `$orderby` value.
    /// - Parameters:
    ///   - text: the option value, percent-decoded (`Country desc, Name asc`).
    ///   - aliases: parameter alias values from the query.
    /// - Returns: the ordering.
    /// - Throws: ``ODataError`` `.invalidQueryOption` with the offset in `text` of what was wrong.
    public static func parse(_ text: String, aliases: [String: String] = [:]) throws(ODataError) -> OrderBy {
        var parser = ExpressionParser(text, aliases: aliases)
        try parser.advance()
        var items: [Item] = []
        while true {
            if parser.token.kind == .end || parser.token.kind == .comma {
                throw parser.error("expected an expression in $orderby", at: parser.token.start)
            }
            let (expression, _) = try parser.parseExpression(minimum: 0, depth: 0)
            var descending = false
            // `asc` / `desc`, any case (OData 4.01).
            if case .identifier(let text) = parser.token.kind, text.utf8.count <= 4,
                case let word = text.lowercased(), word == "asc" || word == "desc"
            {
                guard parser.token.spaceBefore else {
                    throw parser.error("expected whitespace before '\(text)'", at: parser.token.start)
                }
                descending = word == "desc"
                try parser.advance()
            }
            items.append(Item(expression, descending: descending))
            if parser.token.kind == .comma {
                try parser.advance()
                continue
            }
            guard parser.token.kind == .end else {
                throw parser.error(
                    "expected 'asc', 'desc', ',' or the end of $orderby, found \(parser.describe(parser.token))",
                    at: parser.token.start)
            }
            return OrderBy(items)
        }
    }

    /// Compiles the ordering into a comparator.
    /// - Parameter functions: custom functions the sort expressions may call.
    /// - Returns: the compiled comparator.
    /// - Throws: ``ODataError`` `.invalidQueryOption` when an expression cannot be compiled.
    public func compile(functions: FunctionTable = .standard) throws(ODataError) -> CompiledOrderBy {
        try CompiledOrderBy(self, functions: functions)
    }
}

/// A compiled `$orderby`: compares entities, and sorts stably (ties keep their input order).
///
/// Nulls (and missing values) sort first in ascending order and last in descending order; values
/// of different kinds that cannot be compared keep their relative order.
public struct CompiledOrderBy: Sendable {
    let keys: [(value: CompiledValue, descending: Bool)]

    init(_ orderBy: OrderBy, functions: FunctionTable) throws(ODataError) {
        var keys: [(CompiledValue, Bool)] = []
        for item in orderBy.items {
            keys.append((try CompiledValue(item.expression, functions: functions), item.descending))
        }
        self.keys = keys
    }

    /// Orders two entities.
    /// - Parameters:
    ///   - lhs: the first entity.
    ///   - rhs: the second entity.
    ///   - navigation: resolves navigation properties used by sort expressions.
    /// - Returns: a negative number when `lhs` sorts first, zero for a tie, positive otherwise.
    public func compare(_ lhs: JSONObject, _ rhs: JSONObject, navigation: (any NavigationResolver)? = nil) -> Int {
        for key in keys {
            let order = CompiledOrderBy.order(key.value(lhs, navigation: navigation), key.value(rhs, navigation: navigation))
            if order != 0 { return key.descending ? -order : order }
        }
        return 0
    }

    /// Sorts entities stably, evaluating each sort key once per entity.
    /// - Parameters:
    ///   - entities: the entities in their input order.
    ///   - navigation: resolves navigation properties used by sort expressions.
    /// - Returns: the entities in order.
    public func sorted(_ entities: [JSONObject], navigation: (any NavigationResolver)? = nil) -> [JSONObject] {
        guard !keys.isEmpty, entities.count > 1 else { return entities }
        let values: [[Value]] = entities.map { entity in keys.map { $0.value(entity, navigation: navigation) } }
        let indices = (0..<entities.count).sorted { a, b in
            for (k, key) in keys.enumerated() {
                let order = CompiledOrderBy.order(values[a][k], values[b][k])
                if order != 0 { return key.descending ? order > 0 : order < 0 }
            }
            return a < b
        }
        return indices.map { entities[$0] }
    }

    /// A total-enough order for sorting: null first, comparable values by value.
    static func order(_ a: Value, _ b: Value) -> Int {
        switch (a.isNull, b.isNull) {
        case (true, true): return 0
        case (true, false): return -1
        case (false, true): return 1
        default: return Value.compare(a, b) ?? 0
        }
    }
}
