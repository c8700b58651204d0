public import Foundation
import ODataCore
import ODataQuery

/// Types whose values are text (`String`, `String?`): the string functions apply to them.
public protocol ODataTextValue {}
extension String: ODataTextValue {}
extension Optional: ODataTextValue where Wrapped: ODataTextValue {}

/// Types with a date part (`Date`, ``ODataDate``, and their optionals).
public protocol ODataDateValue {}
extension Date: ODataDateValue {}
extension ODataDate: ODataDateValue {}
extension Optional: ODataDateValue where Wrapped: ODataDateValue {}

/// Types with a time part (`Date`, ``ODataTimeOfDay``, and their optionals).
public protocol ODataTimeValue {}
extension Date: ODataTimeValue {}
extension ODataTimeOfDay: ODataTimeValue {}
extension Optional: ODataTimeValue where Wrapped: ODataTimeValue {}

/// Types `round`, `floor` and `ceiling` apply to (`Double`, `Float`, `Decimal`, and their optionals).
public protocol ODataFractionalValue {}
extension Double: ODataFractionalValue {}
extension Float: ODataFractionalValue {}
extension Decimal: ODataFractionalValue {}
extension Optional: ODataFractionalValue where Wrapped: ODataFractionalValue {}

private func call(_ name: String, _ arguments: FilterExpression...) -> FilterExpression { .function(name, arguments) }
private func text(_ value: String) -> FilterExpression { .literal(.string(value)) }

// MARK: String functions

extension QueryOperand where Value: ODataTextValue {
    /// `contains(Prop,'text')` (V2: `substringof('text',Prop)`).
    public func contains(_ text: String) -> QueryFilter<Root> { QueryFilter(call("contains", expression, ODataTyped.text(text))) }
    /// `startswith(Prop,'text')`.
    public func startsWith(_ text: String) -> QueryFilter<Root> { QueryFilter(call("startswith", expression, ODataTyped.text(text))) }
    /// `endswith(Prop,'text')`.
    public func endsWith(_ text: String) -> QueryFilter<Root> { QueryFilter(call("endswith", expression, ODataTyped.text(text))) }
    /// `matchesPattern(Prop,'regex')` (V4.01).
    public func matchesPattern(_ pattern: String) -> QueryFilter<Root> {
        QueryFilter(call("matchesPattern", expression, ODataTyped.text(pattern)))
    }
    /// `length(Prop)`.
    public func length() -> QueryValue<Root, Int32> { QueryValue(call("length", expression)) }
    /// `indexof(Prop,'text')`: the zero-based position, or -1.
    public func indexOf(_ text: String) -> QueryValue<Root, Int32> { QueryValue(call("indexof", expression, ODataTyped.text(text))) }
    /// `substring(Prop,start)` or `substring(Prop,start,length)`.
    public func substring(_ start: Int, _ length: Int? = nil) -> QueryValue<Root, String> {
        if let length { return QueryValue(call("substring", expression, .literal(.int(Int64(start))), .literal(.int(Int64(length))))) }
        return QueryValue(call("substring", expression, .literal(.int(Int64(start)))))
    }
    /// `tolower(Prop)`.
    public func toLower() -> QueryValue<Root, String> { QueryValue(call("tolower", expression)) }
    /// `toupper(Prop)`.
    public func toUpper() -> QueryValue<Root, String> { QueryValue(call("toupper", expression)) }
    /// `trim(Prop)`.
    public func trim() -> QueryValue<Root, String> { QueryValue(call("trim", expression)) }
    /// `concat(Prop,'text')`.
    public func concat(_ text: String) -> QueryValue<Root, String> { QueryValue(call("concat", expression, ODataTyped.text(text))) }
    /// `concat(Prop,Other)`.
    public func concat<O: QueryOperand>(_ other: O) -> QueryValue<Root, String> where O.Root == Root, O.Value: ODataTextValue {
        QueryValue(call("concat", expression, other.expression))
    }
}

// MARK: Date and time functions

extension QueryOperand where Value: ODataDateValue {
    /// `year(Prop)`.
    public func year() -> QueryValue<Root, Int32> { QueryValue(call("year", expression)) }
    /// `month(Prop)`.
    public func month() -> QueryValue<Root, Int32> { QueryValue(call("month", expression)) }
    /// `day(Prop)`.
    public func day() -> QueryValue<Root, Int32> { QueryValue(call("day", expression)) }
}

extension QueryOperand where Value: ODataTimeValue {
    /// `hour(Prop)`.
    public func hour() -> QueryValue<Root, Int32> { QueryValue(call("hour", expression)) }
    /// `minute(Prop)`.
    public func minute() -> QueryValue<Root, Int32> { QueryValue(call("minute", expression)) }
    /// `second(Prop)`.
    public func second() -> QueryValue<Root, Int32> { QueryValue(call("second", expression)) }
    /// `fractionalseconds(Prop)`.
    public func fractionalSeconds() -> QueryValue<Root, Decimal> { QueryValue(call("fractionalseconds", expression)) }
}

extension QueryOperand where Value == Date {
    /// `date(Prop)`: the date part.
    public func date() -> QueryValue<Root, ODataDate> { QueryValue(call("date", expression)) }
    /// `time(Prop)`: the time-of-day part.
    public func time() -> QueryValue<Root, ODataTimeOfDay> { QueryValue(call("time", expression)) }
    /// `totaloffsetminutes(Prop)`.
    public func totalOffsetMinutes() -> QueryValue<Root, Int32> { QueryValue(call("totaloffsetminutes", expression)) }
}

extension QueryOperand where Value == Date? {
    /// `date(Prop)`: the date part.
    public func date() -> QueryValue<Root, ODataDate?> { QueryValue(call("date", expression)) }
    /// `time(Prop)`: the time-of-day part.
    public func time() -> QueryValue<Root, ODataTimeOfDay?> { QueryValue(call("time", expression)) }
    /// `totaloffsetminutes(Prop)`.
    public func totalOffsetMinutes() -> QueryValue<Root, Int32?> { QueryValue(call("totaloffsetminutes", expression)) }
}

extension QueryOperand where Value == Duration {
    /// `totalseconds(Prop)`.
    public func totalSeconds() -> QueryValue<Root, Decimal> { QueryValue(call("totalseconds", expression)) }
}

/// Values the query language computes without a property.
public enum QueryFunction {
    /// `now()`: the current instant.
    public static func now<Root>() -> QueryValue<Root, Date> { QueryValue(call("now")) }
    /// `mindatetime()`.
    public static func minDateTime<Root>() -> QueryValue<Root, Date> { QueryValue(call("mindatetime")) }
    /// `maxdatetime()`.
    public static func maxDateTime<Root>() -> QueryValue<Root, Date> { QueryValue(call("maxdatetime")) }
}

// MARK: Arithmetic functions

extension QueryOperand where Value: ODataFractionalValue {
    /// `round(Prop)`.
    public func round() -> QueryValue<Root, Value> { QueryValue(call("round", expression)) }
    /// `floor(Prop)`.
    public func floor() -> QueryValue<Root, Value> { QueryValue(call("floor", expression)) }
    /// `ceiling(Prop)`.
    public func ceiling() -> QueryValue<Root, Value> { QueryValue(call("ceiling", expression)) }
}

// MARK: Types

extension QueryOperand {
    /// `isof(Prop,Type)`.
    /// - Parameter typeName: a qualified type name (`Edm.String`, `NS.SpecialCustomer`).
    public func isOf(_ typeName: String) -> QueryFilter<Root> { QueryFilter(call("isof", expression, .typeName(typeName))) }
    /// `cast(Prop,Type)`.
    /// - Parameters:
    ///   - type: the Swift type of the result.
    ///   - typeName: the qualified type name.
    public func cast<T>(to type: T.Type, _ typeName: String) -> QueryValue<Root, T> {
        QueryValue(call("cast", expression, .typeName(typeName)))
    }
}

// MARK: Collections and lambdas

/// The range variable of a lambda (`o` in `Orders/any(o:o/Freight gt 100)`): subscript it with the
/// element type's property paths.
public struct LambdaVariable<Root, Element>: Sendable {
    /// The variable's name in the rendered query.
    public let name: String

    /// A property of the element.
    /// - Parameter property: the element type's property path.
    public subscript<V>(_ property: Property<Element, V>) -> QueryValue<Root, V> { QueryValue(.member([name] + property.path)) }
}

extension QueryOperand {
    private var lambdaVariable: String {
        // Nested lambdas need distinct names: one more level than any variable the path starts with.
        var depth = 0
        if case .member(let path) = expression, let first = path.first, first.hasPrefix("x"), let n = Int(first.dropFirst()) {
            depth = n + 1
        }
        return "x\(depth)"
    }

    private var memberPath: [String] {
        if case .member(let path) = expression { return path }
        return []
    }

    /// `Prop/any(x:…)`: some element satisfies `predicate`.
    /// - Parameter predicate: builds the condition from the range variable.
    /// - Returns: the lambda.
    public func any<Element>(_ predicate: (LambdaVariable<Root, Element>) -> QueryFilter<Root>) -> QueryFilter<Root>
    where Value == [Element] {
        let variable = LambdaVariable<Root, Element>(name: lambdaVariable)
        return QueryFilter(.lambda(Lambda(path: memberPath, kind: .any, variable: variable.name, predicate: predicate(variable).expression)))
    }

    /// `Prop/all(x:…)`: every element satisfies `predicate`.
    /// - Parameter predicate: builds the condition from the range variable.
    /// - Returns: the lambda.
    public func all<Element>(_ predicate: (LambdaVariable<Root, Element>) -> QueryFilter<Root>) -> QueryFilter<Root>
    where Value == [Element] {
        let variable = LambdaVariable<Root, Element>(name: lambdaVariable)
        return QueryFilter(.lambda(Lambda(path: memberPath, kind: .all, variable: variable.name, predicate: predicate(variable).expression)))
    }

    /// `Prop/any()`: the collection is not empty.
    /// - Returns: the lambda.
    public func isNotEmpty<Element>() -> QueryFilter<Root> where Value == [Element] {
        QueryFilter(.lambda(Lambda(path: memberPath, kind: .any, variable: nil, predicate: nil)))
    }

    /// `Prop/$count`: the number of elements.
    /// - Returns: the count.
    public func count<Element>() -> QueryValue<Root, Int32> where Value == [Element] { QueryValue(.member(memberPath + ["$count"])) }

    /// `hassubset(Prop,[…])`: the collection contains every value given.
    /// - Parameter values: the values.
    public func hasSubset<Element: ODataValue>(_ values: [Element]) -> QueryFilter<Root> where Value == [Element] {
        QueryFilter(call("hassubset", expression, .literal(values.literal)))
    }

    /// `hassubsequence(Prop,[…])`: the collection contains the values given in this order.
    /// - Parameter values: the values.
    public func hasSubsequence<Element: ODataValue>(_ values: [Element]) -> QueryFilter<Root> where Value == [Element] {
        QueryFilter(call("hassubsequence", expression, .literal(values.literal)))
    }
}
