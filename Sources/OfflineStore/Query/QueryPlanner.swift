import ODataQuery
import SQLCipher

/// How a local query over an entity set is answered: which rows SQL reads, in which order, and what is left to
/// `ODataQuery`'s evaluator.
struct QueryPlan {
    /// Who does what.
    enum Strategy: Equatable {
        /// SQL answers it all: the filter is exact and the order is SQL's; `$top`/`$skip` are `LIMIT`/`OFFSET`,
        /// `$count` is `count(*)`. Memory holds one page.
        case sql
        /// SQL reads the rows its condition keeps, in the query's order; the evaluator tests each and keeps the
        /// page (and counts). Memory holds one page.
        case stream
        /// SQL reads the rows its condition keeps in the natural order; the evaluator runs the whole query over
        /// them (an `$orderby` or `$search` SQL cannot express). Memory holds the rows SQL kept.
        case collect
    }

    /// The rows SQL reads: the visible entities the filter may hold for (exactly those when ``filterIsExact``).
    let condition: SQLCondition
    /// Whether ``condition`` is exactly the visible entities the filter holds for.
    let filterIsExact: Bool
    /// The `ORDER BY` terms of `$orderby` then the natural order; nil when SQL cannot order as the evaluator does.
    let order: [String]?
    /// The natural order's terms.
    let natural: [String]
    let strategy: Strategy
    /// Conjuncts of ``condition`` on one column each (``FilterTranslation/Result/terms``), for ``steered(_:)``.
    let terms: [(property: String, condition: SQLCondition)]

    /// The `ORDER BY` terms to run with, chosen with the table's indexes: when a conjunct on an indexed property
    /// keeps few rows (at most a tenth of the table or `fewest`, counted through its index up to that bound), the terms are
    /// written `+"Column"`, so SQLite reads that index and sorts the few rows instead of walking the whole table
    /// in an index of the order. (SQLite 3.15 without `STAT4` estimates every range alike; the count is what it
    /// cannot know.)
    func steered(_ reader: TableReader, fewest: Int = 1_000) throws -> [String] {
        let ordered = order ?? natural
        guard !terms.isEmpty else { return ordered }
        // (A term on the key's first property is left to SQLite: the natural-order index serves it and the order.)
        let indexed = try reader.indexedProperties()
        let candidates = terms.filter { indexed.contains($0.property) }
        guard !candidates.isEmpty else { return ordered }
        let bound = max(fewest, try reader.estimatedRows() / 10)
        for term in candidates.prefix(3) where try reader.count(where: term.condition, upTo: bound + 1) <= bound {
            return ordered.map { "+" + $0 }
        }
        return ordered
    }
}

/// Plans local queries: `$filter` through ``FilterTranslation``, `$orderby` on columns, the natural order, and
/// local state (rows of locally deleted entities are never read).
enum QueryPlanner {
    /// The rows of entities that are visible: all but local deletions not uploaded (`"$state"` `x`).
    static let visible = SQLCondition("\"$state\" <> 'x'")

    /// Plans `options` over the entities of a table.
    ///
    /// - Parameters:
    ///   - options: The parsed query options (only `$filter`, `$search` and `$orderby` matter here).
    ///   - table: The set's table.
    ///   - type: The set's entity type.
    ///   - isV2: Whether the service speaks OData V2 (its values are typed by `V2Values` for the evaluator).
    /// - Returns: The plan.
    static func plan(_ options: QueryOptions, table: EntityTable, type: ServiceModel.EntityType, isV2: Bool) -> QueryPlan {
        let translation = FilterTranslation(table: table, type: type, isV2: isV2)
        let filter = options.filter.map(translation.translate)
        let natural = table.naturalOrder(key: type.key)
        var order: [String]? = natural
        if let orderBy = options.orderBy {
            var terms: [String] = []
            for item in orderBy.items {
                // Text orders as the evaluator orders it only when every string is in NFC (byte order then is
                // code-point order, and equal means equal bytes); NULL comes first ascending, last descending, as there.
                guard let (name, column) = translation.usableColumn(item.expression),
                      column.kind != .text || !column.flags.contains(.nonNFC)
                else {
                    terms = []
                    order = nil
                    break
                }
                terms.append(name + (item.descending ? " DESC" : ""))
            }
            if order != nil { order = terms + natural }
        }
        let exact = filter?.exact ?? true
        let strategy: QueryPlan.Strategy
        if options.search != nil || order == nil {
            strategy = .collect
        } else {
            strategy = exact ? .sql : .stream
        }
        return QueryPlan(condition: visible && (filter?.whenTrue ?? .always), filterIsExact: exact, order: order, natural: natural,
                         strategy: strategy, terms: filter?.terms ?? [])
    }
}
