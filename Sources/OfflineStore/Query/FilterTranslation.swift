import Foundation
import ODataQuery
import SQLCipher

/// Translates a `$filter` tree into SQL over an entity table, where SQL says exactly what `ODataQuery`'s evaluator
/// says, and into a condition that keeps every row the evaluator could keep where it cannot.
///
/// The evaluator's logic has three values (`and`, `or` and `not` propagate null as Kleene's logic does; a
/// comparison is never null: `null lt 5` is false, `null ne 5` true). Each node is therefore translated twice:
/// into the rows where it is true and into the rows where it is false; `not` swaps the two and `and`/`or` combine
/// them by De Morgan, so SQL never negates a condition that may be `NULL`. A node SQL cannot express (a function,
/// arithmetic, a lambda, a navigation path, a column whose values are not all exact) becomes "every row" on both
/// sides and makes the translation inexact: the evaluator then decides over the rows SQL kept.
///
/// What a column answers exactly (``EntityTable/Flags``): its values are the entity's (no `.inexact` value was
/// written); strings compare as the evaluator compares them (byte order, which is code-point order, with
/// equality by canonical equivalence) when the column's strings and the literal are all in NFC (`.nonNFC`);
/// `startswith` is a byte range when they are all ASCII (`.nonASCII`). A number compares as a double against a
/// double literal (both sides); integers exactly. For an OData V2 service the evaluator sees values typed by
/// their Edm type (`V2Values`): the columns of `Edm.Guid`, `Edm.DateTime`, `Edm.DateTimeOffset` and `Edm.Time`
/// hold the producer's text, not those values, and are not used.
struct FilterTranslation {
    let table: EntityTable
    let type: ServiceModel.EntityType
    let isV2: Bool

    /// The rows where an expression is true, where it is false, and whether both are exact.
    struct Result {
        var whenTrue: SQLCondition
        var whenFalse: SQLCondition
        var exact: Bool
        /// Conditions on one column each that every row of ``whenTrue`` meets (the conjuncts an index can serve:
        /// equality, range, `in`, `startswith`), with the column's property.
        var terms: [(property: String, condition: SQLCondition)] = []

        static let unknown = Result(whenTrue: .always, whenFalse: .always, exact: false)
    }

    func translate(_ expression: FilterExpression) -> Result {
        switch expression {
        case .binary(.and, let lhs, let rhs):
            let (a, b) = (translate(lhs), translate(rhs))
            return Result(whenTrue: a.whenTrue && b.whenTrue, whenFalse: a.whenFalse || b.whenFalse, exact: a.exact && b.exact,
                          terms: a.terms + b.terms)
        case .binary(.or, let lhs, let rhs):
            let (a, b) = (translate(lhs), translate(rhs))
            return Result(whenTrue: a.whenTrue || b.whenTrue, whenFalse: a.whenFalse && b.whenFalse, exact: a.exact && b.exact)
        case .unary(.not, let operand):
            let a = translate(operand)
            return Result(whenTrue: a.whenFalse, whenFalse: a.whenTrue, exact: a.exact)
        case .binary(let op, let lhs, let rhs) where Self.comparisons.contains(op):
            if case .member = lhs, case .literal(let literal) = rhs { return indexable(comparison(op, lhs, literal), lhs, op != .ne) }
            if case .literal(let literal) = lhs, case .member = rhs { return indexable(comparison(Self.mirrored(op), rhs, literal), rhs, op != .ne) }
            return .unknown
        case .binary(.in, let lhs, .list(let items)):
            return indexable(membership(lhs, items), lhs, true)
        case .function("startswith", let arguments):
            guard arguments.count == 2, case .literal(.string(let prefix)) = arguments[1] else { return .unknown }
            return indexable(startsWith(arguments[0], prefix), arguments[0], true)
        case .literal(.bool(let value)):
            return Result(whenTrue: value ? .always : .never, whenFalse: value ? .never : .always, exact: true)
        case .member:
            // A Boolean property as a predicate: true, false, or null (neither).
            guard let (name, column) = usableColumn(expression), column.kind == .boolean else { return .unknown }
            return Result(whenTrue: SQLCondition("\(name) = 1"), whenFalse: SQLCondition("\(name) = 0"), exact: true)
        default:
            return .unknown
        }
    }

    private static let comparisons: Set<BinaryOperator> = [.eq, .ne, .lt, .le, .gt, .ge]

    /// `result` with its true side as the one index term of `member`'s property, when an index can serve it.
    private func indexable(_ result: Result, _ member: FilterExpression, _ servable: Bool) -> Result {
        guard servable, result.exact, !result.whenTrue.isAlways, !result.whenTrue.isNever, case .member(let path) = member,
              let property = path.first, !result.whenTrue.sql.contains(" IS NULL")
        else { return result }
        var indexed = result
        indexed.terms = [(property, result.whenTrue)]
        return indexed
    }

    private static func mirrored(_ op: BinaryOperator) -> BinaryOperator {
        switch op {
        case .lt: return .gt
        case .le: return .ge
        case .gt: return .lt
        case .ge: return .le
        default: return op
        }
    }

    /// The quoted column of a plain member path (`Price`), when its values are the entity's.
    func usableColumn(_ expression: FilterExpression) -> (String, EntityTable.Column)? {
        guard case .member(let path) = expression, path.count == 1, let property = path.first,
              let column = table.column(property), !column.flags.contains(.inexact)
        else { return nil }
        if isV2, let edm = type.propertyTypes[property], ["Edm.Guid", "Edm.DateTime", "Edm.DateTimeOffset", "Edm.Time"].contains(edm) {
            return nil
        }
        return (EntityTable.quote(property), column)
    }

    /// The SQL value a literal compares as against a column, when SQL compares it exactly as the evaluator does.
    private func sqlValue(_ literal: Literal, for column: EntityTable.Column) -> SQLCipherValue? {
        switch (column.kind, literal) {
        case (.text, .string(let text)):
            guard !column.flags.contains(.nonNFC), Self.isNFC(text) else { return nil }
            return .text(text)
        case (.integer, .int(let number)):
            return .integer(number)
        case (.integer, .double), (.integer, .decimal), (.real, .double), (.real, .decimal), (.real, .int):
            // The evaluator compares a double with the other side as a double; so does SQLite. Integers beyond ±2⁵³
            // (which a double rounds) are compared exactly by the evaluator when both sides are integers.
            guard let number = Self.double(literal), number.isFinite else { return nil }
            if case .int = literal, column.kind == .real, number.magnitude > 9_007_199_254_740_992 { return nil }
            if column.kind == .integer, number.magnitude >= 9_007_199_254_740_992 { return nil }
            return .real(number)
        case (.boolean, .bool(let flag)):
            return .integer(flag ? 1 : 0)
        default:
            return nil
        }
    }

    private static func double(_ literal: Literal) -> Double? {
        switch literal {
        case .int(let number): return Double(number)
        case .double(let number): return number
        case .decimal(let text): return Double(text)
        default: return nil
        }
    }

    static func isNFC(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 < 0x80 } || text.utf8.elementsEqual(text.precomposedStringWithCanonicalMapping.utf8)
    }

    private func comparison(_ op: BinaryOperator, _ member: FilterExpression, _ literal: Literal) -> Result {
        guard let (name, column) = usableColumn(member) else { return .unknown }
        let isNull = SQLCondition("\(name) IS NULL"), notNull = SQLCondition("\(name) IS NOT NULL")
        if case .null = literal {
            switch op {
            case .eq: return Result(whenTrue: isNull, whenFalse: notNull, exact: true)
            case .ne: return Result(whenTrue: notNull, whenFalse: isNull, exact: true)
            default: return Result(whenTrue: .never, whenFalse: .always, exact: true)
            }
        }
        guard let value = sqlValue(literal, for: column) else { return .unknown }
        func holds(_ sqlOperator: String) -> SQLCondition { SQLCondition("\(name) \(sqlOperator) ?", [value]) }
        // A null value (or a missing member) makes every comparison false but `ne`.
        switch op {
        case .eq: return Result(whenTrue: holds("="), whenFalse: isNull || holds("<>"), exact: true)
        case .ne: return Result(whenTrue: isNull || holds("<>"), whenFalse: holds("="), exact: true)
        case .lt: return Result(whenTrue: holds("<"), whenFalse: isNull || holds(">="), exact: true)
        case .le: return Result(whenTrue: holds("<="), whenFalse: isNull || holds(">"), exact: true)
        case .gt: return Result(whenTrue: holds(">"), whenFalse: isNull || holds("<="), exact: true)
        case .ge: return Result(whenTrue: holds(">="), whenFalse: isNull || holds("<"), exact: true)
        default: return .unknown
        }
    }

    /// `member in (literal, …)`: true when the value equals an item (`null` equals `null`), false otherwise.
    private func membership(_ member: FilterExpression, _ items: [FilterExpression]) -> Result {
        guard !items.isEmpty, let (name, column) = usableColumn(member) else { return .unknown }
        var values: [SQLCipherValue] = []
        var hasNull = false
        for item in items {
            guard case .literal(let literal) = item else { return .unknown }
            if case .null = literal {
                hasNull = true
            } else {
                guard let value = sqlValue(literal, for: column) else { return .unknown }
                values.append(value)
            }
        }
        let list = values.map { _ in "?" }.joined(separator: ", ")
        let inList = values.isEmpty ? SQLCondition.never : SQLCondition("\(name) IN (\(list))", values)
        let notInList = values.isEmpty ? SQLCondition.always : SQLCondition("\(name) NOT IN (\(list))", values)
        let isNull = SQLCondition("\(name) IS NULL"), notNull = SQLCondition("\(name) IS NOT NULL")
        if hasNull {
            return Result(whenTrue: isNull || inList, whenFalse: notNull && notInList, exact: true)
        }
        return Result(whenTrue: inList, whenFalse: isNull || notInList, exact: true)
    }

    /// `startswith(member, 'prefix')`: a range of the column (so an index serves it), for ASCII strings, where a
    /// character prefix is a byte prefix; null (neither true nor false) for a null value.
    private func startsWith(_ member: FilterExpression, _ prefix: String) -> Result {
        guard let (name, column) = usableColumn(member), column.kind == .text, !column.flags.contains(.nonASCII),
              prefix.utf8.allSatisfy({ $0 < 0x80 })
        else { return .unknown }
        guard !prefix.isEmpty else {
            return Result(whenTrue: SQLCondition("\(name) IS NOT NULL"), whenFalse: .never, exact: true)
        }
        let from = SQLCondition("\(name) >= ?", [.text(prefix)])
        guard let end = Self.successor(ofASCII: prefix) else {
            return Result(whenTrue: from, whenFalse: SQLCondition("\(name) < ?", [.text(prefix)]), exact: true)
        }
        let below = SQLCondition("\(name) < ?", [.text(end)])
        return Result(whenTrue: from && below, whenFalse: SQLCondition("\(name) < ?", [.text(prefix)]) || SQLCondition("\(name) >= ?", [.text(end)]),
                      exact: true)
    }

    /// The least ASCII string above every ASCII string that starts with `prefix`; nil when there is none
    /// (`prefix` is all U+007F).
    static func successor(ofASCII prefix: String) -> String? {
        var bytes = Array(prefix.utf8)
        while let last = bytes.last, last >= 0x7F { bytes.removeLast() }
        guard let last = bytes.popLast() else { return nil }
        bytes.append(last + 1)
        return String(decoding: bytes, as: UTF8.self)
    }
}
