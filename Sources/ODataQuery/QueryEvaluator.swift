public import ODataCore

/// The entities a query selects, and the total count when `$count=true` asked for it.
public struct QueryResult: Sendable, Hashable {
    /// The entities after filtering, ordering, paging, expansion and projection.
    public var entities: [JSONObject]
    /// The number of entities that matched `$filter` and `$search`, before `$skip` and `$top`;
    /// nil unless `$count=true`.
    public var count: Int?
    /// The same number, always known (for paging decisions); ``count`` is what the response shows.
    public var matchedCount: Int
    /// With server-driven paging: the options that fetch the next page (`$skip` advanced, `$top`
    /// reduced), or nil when this page is the last.
    public var nextPage: QueryOptions?

    /// Creates a result.
    /// - Parameters:
    ///   - entities: the entities.
    ///   - count: the total count, if asked for.
    ///   - matchedCount: the number of matching entities before paging.
    ///   - nextPage: the options of the next page, if any.
    public init(entities: [JSONObject], count: Int?, matchedCount: Int? = nil, nextPage: QueryOptions? = nil) {
        self.entities = entities
        self.count = count
        self.matchedCount = matchedCount ?? count ?? entities.count
        self.nextPage = nextPage
    }
}

/// Runs a whole query over a collection of entities, the way an OData service would:
/// `$filter` → `$search` → `$orderby` → `$count` → `$skip` → `$top` → `$expand` → `$select`.
public enum QueryEvaluator {
    /// How deep `$levels=max` expands.
    public static let maximumLevels = 8

    /// Applies query options to entities.
    /// - Parameters:
    ///   - options: the parsed options (`$skiptoken`, `$deltatoken` and custom options are left to the caller).
    ///   - entities: the entity set's entities, in their natural (key) order.
    ///   - navigation: resolves navigation properties the entities do not embed (for `$expand`,
    ///     lambdas and paths); nil when everything needed is embedded.
    ///   - functions: custom functions expressions may call (`inErrorState`).
    ///   - pageSize: server-driven paging: at most this many entities are returned and
    ///     ``QueryResult/nextPage`` holds the options of the next page; nil returns all.
    /// - Returns: the selected entities and the count.
    /// - Throws: ``ODataError`` `.invalidQueryOption` when an expression cannot be compiled.
    public static func apply(
        _ options: QueryOptions, to entities: [JSONObject], navigation: (any NavigationResolver)? = nil,
        functions: FunctionTable = .standard, pageSize: Int? = nil
    ) throws(ODataError) -> QueryResult {
        guard let pageSize, pageSize > 0 else {
            return try apply(options, to: entities, navigation: navigation, functions: functions, depth: 0)
        }
        var page = options
        let skip = options.skip ?? 0
        let wanted = options.top
        page.top = min(wanted ?? pageSize, pageSize)
        var result = try apply(page, to: entities, navigation: navigation, functions: functions, depth: 0)
        let delivered = skip + result.entities.count
        let end = wanted.map { skip + $0 } ?? Int.max
        if result.entities.count == pageSize && delivered < result.matchedCount && delivered < end {
            var next = options
            next.skip = delivered
            next.top = wanted.map { $0 - result.entities.count }
            next.skipToken = nil
            result.nextPage = next
        }
        return result
    }

    static func apply(
        _ options: QueryOptions, to entities: [JSONObject], navigation: (any NavigationResolver)?,
        functions: FunctionTable, depth: Int
    ) throws(ODataError) -> QueryResult {
        var selected = entities
        if let filter = options.filter {
            let compiled = try CompiledFilter(filter, functions: functions)
            selected = compiled.filter(selected, navigation: navigation)
        }
        if let search = options.search {
            selected = selected.filter { search.matches($0) }
        }
        if let orderBy = options.orderBy {
            selected = try orderBy.compile(functions: functions).sorted(selected, navigation: navigation)
        }
        let matched = selected.count
        let count = options.count == true ? matched : nil
        if let skip = options.skip {
            selected = Array(selected.dropFirst(skip))
        }
        if let top = options.top {
            selected = Array(selected.prefix(top))
        }
        var expandedNames: Set<String> = []
        if let expand = options.expand {
            for item in expand.items {
                if let first = item.path.first(where: { !$0.contains(".") || $0 == "*" }) {
                    expandedNames.insert(item.isCount ? first + "@odata.count" : first)
                }
            }
            var expanded: [JSONObject] = []
            expanded.reserveCapacity(selected.count)
            for entity in selected {
                expanded.append(
                    try self.expand(entity, expand, navigation: navigation, functions: functions, depth: depth))
            }
            selected = expanded
        }
        if let select = options.select {
            selected = selected.map { select.apply(to: $0, keeping: expandedNames) }
        }
        return QueryResult(entities: selected, count: count, matchedCount: matched)
    }

    /// Expands one entity's navigation properties.
    static func expand(
        _ entity: JSONObject, _ expand: Expand, navigation: (any NavigationResolver)?, functions: FunctionTable,
        depth: Int
    ) throws(ODataError) -> JSONObject {
        guard depth < maximumLevels * 4 else { return entity }
        var result = entity
        for item in expand.items {
            var path = item.path.filter { !$0.contains(".") }  // type casts do not move
            guard let name = path.first else { continue }
            if name == "*" {
                // Every embedded object or array member is taken as a navigation property.
                for (key, value) in entity where !key.contains("@") {
                    switch value {
                    case .object, .array:
                        var single = item
                        single.path = [key]
                        result = try self.expand(result, Expand([single]), navigation: navigation, functions: functions, depth: depth)
                    default: break
                    }
                }
                continue
            }
            path.removeFirst()
            guard let related = entity[name] ?? navigation?.related(entity, navigationProperty: name) else { continue }
            if !path.isEmpty {
                // A multi-segment path expands through a single-valued navigation or complex property.
                guard case .object(let inner) = related else { continue }
                var rest = item
                rest.path = path
                result[name] = .object(try self.expand(inner, Expand([rest]), navigation: navigation, functions: functions, depth: depth + 1))
                continue
            }
            var nested = item.options
            // $levels: expand the same property again inside each related entity.
            if let levels = nested.levels {
                let remaining: Int
                switch levels {
                case .max: remaining = maximumLevels - 1 - depth
                case .count(let n): remaining = n - 1
                }
                nested.levels = nil
                if remaining > 0 {
                    var again = item
                    again.options.levels = .count(remaining)
                    var inner = nested.expand ?? Expand([])
                    inner.items.append(again)
                    nested.expand = inner
                }
            }
            switch related {
            case .array(let elements):
                let objects = elements.compactMap(\.objectValue)
                if item.isCount {
                    var counted = nested
                    counted.select = nil
                    counted.expand = nil
                    counted.top = nil
                    counted.skip = nil
                    let matching = try apply(counted, to: objects, navigation: navigation, functions: functions, depth: depth + 1)
                    result[name] = nil
                    result[name + "@odata.count"] = .int(Int64(matching.entities.count))
                    continue
                }
                let inner = try apply(nested, to: objects, navigation: navigation, functions: functions, depth: depth + 1)
                let values: [JSONValue] = inner.entities.map { item.isRef ? .object(reference($0)) : .object($0) }
                result[name] = .array(values)
                if let count = inner.count { result[name + "@odata.count"] = .int(Int64(count)) }
            case .object(let object):
                if item.isCount { continue }
                // A single related entity: $filter decides whether it shows (null otherwise).
                let inner = try apply(nested, to: [object], navigation: navigation, functions: functions, depth: depth + 1)
                if let first = inner.entities.first {
                    result[name] = .object(item.isRef ? reference(first) : first)
                } else {
                    result[name] = .null
                }
            default:
                result[name] = related
            }
        }
        return result
    }

    /// The reference form of an entity for `$ref`: its `@odata.id` (or `@id`) annotation only.
    static func reference(_ entity: JSONObject) -> JSONObject {
        var reference = JSONObject()
        if let id = entity["@odata.id"] ?? entity["@id"] { reference.append(id, forKey: "@odata.id") }
        return reference
    }
}
