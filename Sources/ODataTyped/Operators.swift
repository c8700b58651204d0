import ODataCore
import ODataQuery

// MARK: Comparisons

/// `eq` with a value (`Customer.city == "Berlin"`, `Customer.region == nil`).
public func == <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryFilter<O.Root> where O.Value: ODataValue { compare(.eq, lhs, rhs) }
/// `ne` with a value.
public func != <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryFilter<O.Root> where O.Value: ODataValue { compare(.ne, lhs, rhs) }
/// `lt` with a value.
public func < <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryFilter<O.Root> where O.Value: ODataValue { compare(.lt, lhs, rhs) }
/// `le` with a value.
public func <= <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryFilter<O.Root> where O.Value: ODataValue { compare(.le, lhs, rhs) }
/// `gt` with a value.
public func > <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryFilter<O.Root> where O.Value: ODataValue { compare(.gt, lhs, rhs) }
/// `ge` with a value.
public func >= <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryFilter<O.Root> where O.Value: ODataValue { compare(.ge, lhs, rhs) }

/// `eq` between two expressions of the same type (`Order.shippedDate == Order.requiredDate`).
public func == <L: QueryOperand, R: QueryOperand>(lhs: L, rhs: R) -> QueryFilter<L.Root> where L.Root == R.Root, L.Value == R.Value {
    QueryFilter(.binary(.eq, lhs.expression, rhs.expression))
}
/// `ne` between two expressions of the same type.
public func != <L: QueryOperand, R: QueryOperand>(lhs: L, rhs: R) -> QueryFilter<L.Root> where L.Root == R.Root, L.Value == R.Value {
    QueryFilter(.binary(.ne, lhs.expression, rhs.expression))
}
/// `lt` between two expressions of the same type.
public func < <L: QueryOperand, R: QueryOperand>(lhs: L, rhs: R) -> QueryFilter<L.Root> where L.Root == R.Root, L.Value == R.Value {
    QueryFilter(.binary(.lt, lhs.expression, rhs.expression))
}
/// `le` between two expressions of the same type.
public func <= <L: QueryOperand, R: QueryOperand>(lhs: L, rhs: R) -> QueryFilter<L.Root> where L.Root == R.Root, L.Value == R.Value {
    QueryFilter(.binary(.le, lhs.expression, rhs.expression))
}
/// `gt` between two expressions of the same type.
public func > <L: QueryOperand, R: QueryOperand>(lhs: L, rhs: R) -> QueryFilter<L.Root> where L.Root == R.Root, L.Value == R.Value {
    QueryFilter(.binary(.gt, lhs.expression, rhs.expression))
}
/// `ge` between two expressions of the same type.
public func >= <L: QueryOperand, R: QueryOperand>(lhs: L, rhs: R) -> QueryFilter<L.Root> where L.Root == R.Root, L.Value == R.Value {
    QueryFilter(.binary(.ge, lhs.expression, rhs.expression))
}

private func compare<O: QueryOperand>(_ op: BinaryOperator, _ lhs: O, _ rhs: O.Value) -> QueryFilter<O.Root> where O.Value: ODataValue {
    QueryFilter(.binary(op, lhs.expression, .literal(rhs.literal)))
}

// MARK: Logic

/// `and`.
public func && <Root>(lhs: QueryFilter<Root>, rhs: QueryFilter<Root>) -> QueryFilter<Root> {
    QueryFilter(.binary(.and, lhs.expression, rhs.expression))
}
/// `or`.
public func || <Root>(lhs: QueryFilter<Root>, rhs: QueryFilter<Root>) -> QueryFilter<Root> {
    QueryFilter(.binary(.or, lhs.expression, rhs.expression))
}
/// `not`.
public prefix func ! <Root>(operand: QueryFilter<Root>) -> QueryFilter<Root> { QueryFilter(.unary(.not, operand.expression)) }

// MARK: Arithmetic

/// `add` with a value.
public func + <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryValue<O.Root, O.Value> where O.Value: ODataValue { arithmetic(.add, lhs, rhs) }
/// `sub` with a value.
public func - <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryValue<O.Root, O.Value> where O.Value: ODataValue { arithmetic(.sub, lhs, rhs) }
/// `mul` with a value.
public func * <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryValue<O.Root, O.Value> where O.Value: ODataValue { arithmetic(.mul, lhs, rhs) }
/// `div` with a value (integer division for integers).
public func / <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryValue<O.Root, O.Value> where O.Value: ODataValue { arithmetic(.div, lhs, rhs) }
/// `mod` with a value.
public func % <O: QueryOperand>(lhs: O, rhs: O.Value) -> QueryValue<O.Root, O.Value> where O.Value: ODataValue { arithmetic(.mod, lhs, rhs) }
/// `add` of two expressions.
public func + <L: QueryOperand, R: QueryOperand>(lhs: L, rhs: R) -> QueryValue<L.Root, L.Value> where L.Root == R.Root {
    QueryValue(.binary(.add, lhs.expression, rhs.expression))
}
/// `sub` of two expressions.
public func - <L: QueryOperand, R: QueryOperand>(lhs: L, rhs: R) -> QueryValue<L.Root, L.Value> where L.Root == R.Root {
    QueryValue(.binary(.sub, lhs.expression, rhs.expression))
}
/// `mul` of two expressions.
public func * <L: QueryOperand, R: QueryOperand>(lhs: L, rhs: R) -> QueryValue<L.Root, L.Value> where L.Root == R.Root {
    QueryValue(.binary(.mul, lhs.expression, rhs.expression))
}
/// Arithmetic negation.
public prefix func - <O: QueryOperand>(operand: O) -> QueryValue<O.Root, O.Value> { QueryValue(.unary(.negate, operand.expression)) }

private func arithmetic<O: QueryOperand>(_ op: BinaryOperator, _ lhs: O, _ rhs: O.Value) -> QueryValue<O.Root, O.Value> where O.Value: ODataValue {
    QueryValue(.binary(op, lhs.expression, .literal(rhs.literal)))
}

extension QueryOperand where Value: ODataValue {
    /// `in`: the value is one of `values`.
    /// - Parameter values: the candidates.
    /// - Returns: `Prop in (a,b,…)` (V2: equalities joined by `or`).
    public func `in`(_ values: [Value]) -> QueryFilter<Root> {
        QueryFilter(.binary(.in, expression, .list(values.map { .literal($0.literal) })))
    }

    /// `divby`: decimal division by a value.
    /// - Parameter value: the divisor.
    /// - Returns: the quotient.
    public func dividedBy(_ value: Value) -> QueryValue<Root, Value> { QueryValue(.binary(.divby, expression, .literal(value.literal))) }
}
