import SQLCipher

/// A condition over the rows of an entity table: SQL text with `?` parameters and their values, in order.
///
/// Conditions are only combined with `AND` and `OR`, never negated in SQL (the planner negates an OData
/// expression by translating it into the rows where it is *false*), so a comparison with a `NULL` column,
/// which SQL makes `NULL`, acts as false wherever it stands.
struct SQLCondition: Sendable, Hashable {
    var sql: String
    var arguments: [SQLCipherValue]

    init(_ sql: String, _ arguments: [SQLCipherValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    /// Every row.
    static let always = SQLCondition("1")
    /// No row.
    static let never = SQLCondition("0")

    var isAlways: Bool { sql == "1" }
    var isNever: Bool { sql == "0" }

    /// Rows both conditions hold for.
    static func && (lhs: SQLCondition, rhs: SQLCondition) -> SQLCondition {
        if lhs.isAlways || rhs.isNever { return rhs }
        if rhs.isAlways || lhs.isNever { return lhs }
        return SQLCondition("(\(lhs.sql) AND \(rhs.sql))", lhs.arguments + rhs.arguments)
    }

    /// Rows either condition holds for.
    static func || (lhs: SQLCondition, rhs: SQLCondition) -> SQLCondition {
        if lhs.isAlways || rhs.isNever { return lhs }
        if rhs.isAlways || lhs.isNever { return rhs }
        return SQLCondition("(\(lhs.sql) OR \(rhs.sql))", lhs.arguments + rhs.arguments)
    }
}
