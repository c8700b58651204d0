import ODataCore
public import ODataQuery

/// Something a typed query can compare, compute with or order by: a property path of `Root` with values
/// of type `Value`, or an expression built from one.
public protocol QueryOperand<Root, Value>: Sendable {
    /// The entity (or complex) type the expression starts at.
    associatedtype Root
    /// The type of the expression's values.
    associatedtype Value
    /// The expression, as the query language's tree.
    var expression: FilterExpression { get }
}

/// A typed property path of `Root`: generated types declare one per property (`Customer.city`), so a
/// misspelt property is a compile error, not a `400` from the back end.
public struct Property<Root, Value>: QueryOperand {
    /// The path's segments as OData names them (`["Address", "City"]`).
    public let path: [String]
    /// Where a navigation property's value lives in `Root`, for ``DataService`` `loadProperty`.
    public let keyPath: (any WritableKeyPath<Root, Value?> & Sendable)?

    /// A property of `Root`.
    /// - Parameter name: its OData name.
    public init(_ name: String) {
        path = [name]
        keyPath = nil
    }

    /// A navigation property of `Root`, with the stored property that holds its value once loaded.
    /// - Parameters:
    ///   - name: its OData name.
    ///   - keyPath: where `DataService.loadProperty` puts the loaded value.
    public init(_ name: String, _ keyPath: any WritableKeyPath<Root, Value?> & Sendable) {
        path = [name]
        self.keyPath = keyPath
    }

    private init(path: [String]) {
        self.path = path
        keyPath = nil
    }

    /// The property's OData name (the last segment).
    public var name: String { path[path.count - 1] }

    /// The path as `$select` and `$expand` write it (`Address/City`).
    public var pathText: String { path.joined(separator: "/") }

    /// A member path.
    public var expression: FilterExpression { .member(path) }

    /// A property of a complex property: `Customer.address.then(Address.city)` is `Address/City`.
    /// - Parameter next: the property of the complex type.
    /// - Returns: the longer path.
    public func then<Next>(_ next: Property<Value, Next>) -> Property<Root, Next> { Property<Root, Next>(path: path + next.path) }

    /// A property of an optional complex property.
    /// - Parameter next: the property of the complex type.
    /// - Returns: the longer path.
    public func then<Wrapped, Next>(_ next: Property<Wrapped, Next>) -> Property<Root, Next> where Value == Wrapped? {
        Property<Root, Next>(path: path + next.path)
    }
}

/// A computed expression of `Root` with values of type `Value` (`Customer.city.toLower()`, `Product.price * 2`).
public struct QueryValue<Root, Value>: QueryOperand {
    /// The expression.
    public let expression: FilterExpression

    /// Wraps an expression.
    /// - Parameter expression: the expression tree.
    public init(_ expression: FilterExpression) { self.expression = expression }

    /// A literal value.
    /// - Parameter value: the value.
    /// - Returns: the literal as an expression.
    public static func literal(_ value: Value) -> QueryValue where Value: ODataValue { QueryValue(.literal(value.literal)) }
}

/// A Boolean condition over `Root`: the value of `$filter` (`Customer.country == "Germany" && …`).
public struct QueryFilter<Root>: Sendable, CustomStringConvertible {
    /// The condition, as the query language's tree.
    public let expression: FilterExpression

    /// Wraps a condition.
    /// - Parameter expression: the Boolean expression tree.
    public init(_ expression: FilterExpression) { self.expression = expression }

    /// A Boolean property or expression used as a condition (`QueryFilter(Product.discontinued)`).
    /// - Parameter operand: the Boolean operand.
    public init<O: QueryOperand>(_ operand: O) where O.Root == Root, O.Value == Bool { expression = operand.expression }

    /// A Boolean property or expression used as a condition.
    /// - Parameter operand: the optional Boolean operand.
    public init<O: QueryOperand>(_ operand: O) where O.Root == Root, O.Value == Bool? { expression = operand.expression }

    /// The V4 `$filter` text.
    public var description: String { expression.description }
}

/// Conditions every entity type can use in a local query of the offline store.
public enum OfflineQueryFunction {
    /// True for an entity whose uploaded request failed, until its ErrorArchive entry is deleted.
    /// - Returns: `inErrorState()`.
    public static func inErrorState<Root>() -> QueryFilter<Root> { QueryFilter(.function("inErrorState", [])) }
    /// True for an entity whose uploaded delete failed (it reappeared, in error state).
    /// - Returns: `isDeleteError()`.
    public static func isDeleteError<Root>() -> QueryFilter<Root> { QueryFilter(.function("isDeleteError", [])) }
}
