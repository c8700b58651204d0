import ODataCore
import ODataQuery

extension LocalQuery {
    /// Answers query options over the visible entities of an entity set as ``LocalQuery/apply(_:to:navigation:)``
    /// answers them over the whole set in its natural order, reading only what the plan (``QueryPlanner``) needs.
    ///
    /// - Parameters:
    ///   - options: The parsed options.
    ///   - set: The entity set (one of the model's).
    ///   - entitiesNeeded: False for `/$count`: only the count is wanted.
    /// - Returns: The entities (after `$select` and `$expand`) and the count when `$count=true`.
    /// - Throws: `OfflineODataError.invalidRequest` when the query cannot be evaluated, `.storage`.
    func answer(_ options: QueryOptions, set: String, entitiesNeeded: Bool = true) throws -> QueryResult {
        guard let type = model.entityType(ofSet: set), let table = store.table(set) else {
            return try Self.apply(options, to: [], navigation: self)
        }
        let plan = QueryPlanner.plan(options, table: table, type: type, isV2: model.isV2)
        let wantsCount = options.count == true
        var rest = options
        rest.filter = nil
        rest.search = nil
        rest.orderBy = nil
        rest.skip = nil
        rest.top = nil
        rest.count = nil
        let page: (entities: [JSONObject], count: Int?)
        switch plan.strategy {
        case .collect:
            var entities: [JSONObject] = []
            _ = try store.withTable(set) { reader in
                try reader.forEach(where: plan.condition, orderBy: plan.natural) { record in
                    entities.append(record.json)
                    return true
                }
            }
            return try Self.apply(options, to: entities, navigation: self)
        case .sql:
            page = try store.withTable(set) { reader in
                let count = wantsCount ? try reader.count(where: plan.condition) : nil
                var entities: [JSONObject] = []
                if entitiesNeeded && options.top != 0 {
                    try reader.forEach(where: plan.condition, orderBy: try plan.steered(reader), limit: options.top, offset: options.skip) { record in
                        entities.append(record.json)
                        return true
                    }
                }
                return (entities, count)
            } ?? ([], wantsCount ? 0 : nil)
        case .stream:
            let filter: CompiledFilter?
            do {
                filter = try options.filter.map { expression throws(ODataError) in try CompiledFilter(expression, functions: Self.functions) }
            } catch {
                throw OfflineODataError(.invalidRequest, "the query cannot be evaluated: \(error.message)")
            }
            let skip = options.skip ?? 0
            let top = entitiesNeeded ? (options.top ?? Int.max) : 0
            page = try store.withTable(set) { reader in
                var matched = 0
                var entities: [JSONObject] = []
                try reader.forEach(where: plan.condition, orderBy: try plan.steered(reader)) { record in
                    let json = record.json
                    if let filter, !filter.matches(model.isV2 ? V2Values.typed(json, model: model) : json, navigation: self) { return true }
                    matched += 1
                    if matched > skip && entities.count < top { entities.append(json) }
                    return wantsCount || entities.count < top
                }
                return (entities, wantsCount ? matched : nil)
            } ?? ([], wantsCount ? 0 : nil)
        }
        var result = try Self.apply(rest, to: page.entities, navigation: self)
        result.count = page.count
        if let count = page.count { result.matchedCount = count }
        return result
    }

    /// The visible records of a set a filter may hold for, in the natural order: SQL narrows the set as far as
    /// it can say exactly (``FilterTranslation``), the caller tests the rest.
    ///
    /// - Parameters:
    ///   - set: The entity set.
    ///   - filter: What the caller looks for (nil: every visible record).
    /// - Returns: At least every visible record `filter` holds for.
    func visibleRecords(in set: String, narrowedBy filter: FilterExpression?) throws -> [EntityRecord] {
        guard let type = model.entityType(ofSet: set), let table = store.table(set) else { return [] }
        let translation = FilterTranslation(table: table, type: type, isV2: model.isV2)
        let condition = QueryPlanner.visible && (filter.map { translation.translate($0).whenTrue } ?? .always)
        var records: [EntityRecord] = []
        _ = try store.withTable(set) { reader in
            try reader.forEach(where: condition, orderBy: table.naturalOrder(key: type.key)) { record in
                records.append(record)
                return true
            }
        }
        return records
    }
}
