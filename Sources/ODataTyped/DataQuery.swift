public import ODataCore
import ODataQuery

/// A typed query of entities of type `E`: filter, order, paging, projection and expansion built from
/// the type's property paths, written as exact OData text for the service's version.
///
/// ```swift
/// let query = DataQuery<Customer>()
///     .filter(Customer.country == "Germany" && Customer.city.startsWith("B"))
///     .orderBy(Customer.companyName)
///     .expand(Customer.orders) { $0.filter(Order.freight > 10).top(2) }
///     .top(5)
/// ```
public struct DataQuery<E: EntityValue>: Sendable {
    /// The entity set the query reads, when given with ``from(_:)``.
    public private(set) var entitySet: String?
    var options = QueryParts()

    /// An empty query: every entity of the set.
    public init() {}

    /// The entity set to read (needed by ``DataService/executeQuery(_:)``; the typed `fetch…` methods set it).
    /// - Parameter set: the entity set.
    /// - Returns: the query reading from `set`.
    public func from(_ set: EntitySet<E>) -> DataQuery {
        var copy = self
        copy.entitySet = set.name
        return copy
    }

    /// Adds a condition; several are joined with `and`.
    /// - Parameter condition: the condition.
    /// - Returns: the narrower query.
    public func filter(_ condition: QueryFilter<E>) -> DataQuery {
        var copy = self
        copy.options.filter = copy.options.filter.map { .binary(.and, $0, condition.expression) } ?? condition.expression
        return copy
    }

    /// Adds an ordering key after those given before.
    /// - Parameters:
    ///   - operand: a property or expression.
    ///   - order: ascending (default) or descending.
    /// - Returns: the ordered query.
    public func orderBy<O: QueryOperand>(_ operand: O, _ order: QuerySortOrder = .ascending) -> DataQuery where O.Root == E {
        var copy = self
        copy.options.orderBy.append((operand.expression, order))
        return copy
    }

    /// Selects properties (`$select`); navigation properties expanded are kept as well.
    /// - Parameter properties: the properties.
    /// - Returns: the projected query.
    public func select<each V>(_ properties: repeat Property<E, each V>) -> DataQuery {
        var copy = self
        for property in repeat each properties { copy.options.select.append(property.pathText) }
        return copy
    }

    /// Expands a to-many navigation property, with nested options.
    /// - Parameters:
    ///   - property: the navigation property.
    ///   - nested: the options of the expanded entities (filter, order, top, select, a further expand).
    /// - Returns: the query with the expansion.
    public func expand<T: EntityValue>(_ property: Property<E, [T]>, _ nested: (DataQuery<T>) -> DataQuery<T> = { $0 }) -> DataQuery {
        var copy = self
        copy.options.expand.append((property.pathText, nested(DataQuery<T>()).options))
        return copy
    }

    /// Expands a to-one navigation property, with nested options.
    /// - Parameters:
    ///   - property: the navigation property.
    ///   - nested: the options of the expanded entity (select, a further expand).
    /// - Returns: the query with the expansion.
    public func expand<T: EntityValue>(_ property: Property<E, T>, _ nested: (DataQuery<T>) -> DataQuery<T> = { $0 }) -> DataQuery {
        var copy = self
        copy.options.expand.append((property.pathText, nested(DataQuery<T>()).options))
        return copy
    }

    /// At most `count` entities (`$top`).
    /// - Parameter count: the limit.
    /// - Returns: the limited query.
    public func top(_ count: Int) -> DataQuery {
        var copy = self
        copy.options.top = count
        return copy
    }

    /// Skips the first `count` entities (`$skip`).
    /// - Parameter count: how many.
    /// - Returns: the query.
    public func skip(_ count: Int) -> DataQuery {
        var copy = self
        copy.options.skip = count
        return copy
    }

    /// Asks for the total count of matches with the result (`$count=true`; V2 `$inlinecount=allpages`),
    /// read with ``QueryResult/count()``.
    /// - Returns: the query.
    public func count() -> DataQuery {
        var copy = self
        copy.options.count = true
        return copy
    }

    /// A free-text search (`$search`; V2 services take SAP's `search` option).
    /// - Parameter text: the search expression.
    /// - Returns: the query.
    public func search(_ text: String) -> DataQuery {
        var copy = self
        copy.options.search = text
        return copy
    }

    /// A custom query option (`sap-client=100`).
    /// - Parameters:
    ///   - name: the option's name.
    ///   - value: its value, unencoded.
    /// - Returns: the query.
    public func custom(_ name: String, _ value: String) -> DataQuery {
        var copy = self
        copy.options.custom.append((name, value))
        return copy
    }

    /// The query options as the request model takes them, in OData's text for `version`.
    /// - Parameter version: the service's version.
    /// - Returns: the options.
    /// - Throws: ``DataServiceError`` `.invalidQuery` for what `version` cannot express (a lambda or nested
    ///   options of an expansion for V2).
    public func queryOptions(for version: ODataVersion) throws(DataServiceError) -> [QueryOption] {
        try options.queryOptions(for: version)
    }

    /// The `$filter` text for `version`, or nil without a condition.
    /// - Parameter version: the service's version.
    /// - Throws: ``DataServiceError`` `.invalidQuery` as ``queryOptions(for:)``.
    public func filterText(for version: ODataVersion) throws(DataServiceError) -> String? {
        try options.filter.map { (expression) throws(DataServiceError) in try QueryParts.text(expression, version) }
    }
}

/// The direction of an ordering key.
public enum QuerySortOrder: String, Sendable, Hashable {
    /// Smallest first (`asc`).
    case ascending = "asc"
    /// Largest first (`desc`).
    case descending = "desc"
}

/// The options of a query or of an expansion, independent of the entity type.
struct QueryParts: Sendable {
    var filter: FilterExpression?
    var orderBy: [(FilterExpression, QuerySortOrder)] = []
    var select: [String] = []
    var expand: [(String, QueryParts)] = []
    var top: Int?
    var skip: Int?
    var count = false
    var search: String?
    var custom: [(String, String)] = []

    var isEmpty: Bool {
        filter == nil && orderBy.isEmpty && select.isEmpty && expand.isEmpty && top == nil && skip == nil && !count && search == nil
    }

    static func text(_ expression: FilterExpression, _ version: ODataVersion) throws(DataServiceError) -> String {
        do { return try expression.text(for: version) } catch { throw DataServiceError(.invalidQuery, error.message) }
    }

    func orderByText(_ version: ODataVersion) throws(DataServiceError) -> [String] {
        var keys: [String] = []
        for (expression, order) in orderBy {
            let key = try Self.text(expression, version)
            keys.append(order == .descending ? key + " desc" : key)
        }
        return keys
    }

    func queryOptions(for version: ODataVersion) throws(DataServiceError) -> [QueryOption] {
        var result: [QueryOption] = []
        if let filter { result.append(.filter(try Self.text(filter, version))) }
        if !orderBy.isEmpty { result.append(.orderBy(try orderByText(version))) }
        if !select.isEmpty { result.append(.select(select)) }
        if !expand.isEmpty { result.append(.expand(try expandItems(version))) }
        if let skip { result.append(.skip(skip)) }
        if let top { result.append(.top(top)) }
        if count { result.append(version == .v2 ? .custom(name: "$inlinecount", value: "allpages") : .count(true)) }
        if let search { result.append(version == .v2 ? .custom(name: "search", value: search) : .search(search)) }
        for (name, value) in custom { result.append(.custom(name: name, value: value)) }
        return result
    }

    /// `$expand` items: V4 `Orders($filter=…;$top=2)`; V2 has paths only (`Orders/Order_Details`), so options
    /// inside an expansion are refused for V2.
    private func expandItems(_ version: ODataVersion) throws(DataServiceError) -> [String] {
        var items: [String] = []
        for (path, nested) in expand {
            if version == .v2 {
                guard nested.filter == nil, nested.orderBy.isEmpty, nested.select.isEmpty, nested.top == nil, nested.skip == nil,
                      !nested.count, nested.search == nil else {
                    throw DataServiceError(.invalidQuery, "OData V2 has no options inside $expand (expanding '\(path)'); this query can only be sent to a V4 service")
                }
                items.append(path)
                for deeper in try nested.expandItems(version) { items.append(path + "/" + deeper) }
                continue
            }
            guard !nested.isEmpty else { items.append(path); continue }
            var parts: [String] = []
            if let filter = nested.filter { parts.append("$filter=" + (try Self.text(filter, version))) }
            if !nested.orderBy.isEmpty { parts.append("$orderby=" + (try nested.orderByText(version)).joined(separator: ",")) }
            if !nested.select.isEmpty { parts.append("$select=" + nested.select.joined(separator: ",")) }
            if !nested.expand.isEmpty { parts.append("$expand=" + (try nested.expandItems(version)).joined(separator: ",")) }
            if let skip = nested.skip { parts.append("$skip=\(skip)") }
            if let top = nested.top { parts.append("$top=\(top)") }
            if nested.count { parts.append("$count=true") }
            if let search = nested.search { parts.append("$search=" + search) }
            items.append(path + "(" + parts.joined(separator: ";") + ")")
        }
        return items
    }
}
