import Foundation
import ODataCore
import ODataQuery

/// Reads of the local store: resolving paths and navigation over stored records, and running
/// query options through `ODataQuery` (the same evaluator the fixture producer uses).
struct LocalQuery: NavigationResolver {
    let store: EntityStore
    let model: ServiceModel
    /// The first failure met by ``related(_:navigationProperty:)``, which the evaluator calls and cannot be told of
    /// (a relationship whose links are unknown): ``apply(_:to:navigation:)`` throws it after the evaluation.
    let resolverFailure = LockedValue<OfflineODataError?>(nil)

    static let requestQueueSet = "RequestQueue"
    static let errorArchiveSet = "ErrorArchive"

    /// The custom functions local filters may call: `inErrorState()` is true for an entity whose
    /// uploaded request failed (until its ErrorArchive entry is deleted).
    static let functions: FunctionTable = {
        var table = FunctionTable()
        try? table.register("inErrorState", arity: 0...0) { call in
            .bool(call.entity[EntityRecord.inErrorStateAnnotation]?.boolValue == true)
        }
        try? table.register("isDeleteError", arity: 0...0) { call in
            .bool(call.entity[EntityRecord.isDeleteErrorAnnotation]?.boolValue == true)
        }
        // OData V2's `substringof(needle, haystack)`: V4's `contains(haystack, needle)`.
        try? table.register("substringof", arity: 2...2) { call in
            guard case .string(let needle) = call.arguments[0], case .string(let haystack) = call.arguments[1] else { return .null }
            return .bool(haystack.contains(needle))
        }
        return table
    }()

    /// Checks a `$filter` value's syntax (for defining queries).
    static func checkFilter(_ text: String) throws(OfflineODataError) {
        do { _ = try FilterExpression.parse(text) } catch {
            throw LocalRequest.invalid(error, "$filter '\(text)'")
        }
    }

    /// Parses query options with ODataQuery.
    ///
    /// OData V2's `$inlinecount=allpages` is read as `$count=true` (the count comes back as `@odata.count`) and
    /// `$inlinecount=none` as no count; any other value is refused.
    static func options(_ options: [LocalRequest.Option]) throws(OfflineODataError) -> QueryOptions {
        var options = options.filter { $0.name != "$skiptoken" }
        if let index = options.firstIndex(where: { $0.name == "$inlinecount" }) {
            switch options[index].value {
            case "allpages": options[index] = LocalRequest.Option(name: "$count", value: "true")
            case "none": options.remove(at: index)
            default: throw OfflineODataError(.invalidRequest, "$inlinecount must be 'allpages' or 'none', got '\(options[index].value)'")
            }
        }
        let raw = options
            .map { PercentEncoding.encodeQueryName($0.name) + "=" + PercentEncoding.encodeQueryValue($0.value) }
            .joined(separator: "&")
        do { return try QueryOptions.parse(raw) } catch {
            throw LocalRequest.invalid(error, "a query option")
        }
    }

    /// Runs options over entities.
    ///
    /// For an OData V2 service, `$filter`, `$search` and `$orderby` see each value as its Edm type says
    /// (`V2Values`): they choose and order the entities, which are then answered as stored.
    static func apply(_ options: QueryOptions, to entities: [JSONObject], navigation: LocalQuery?) throws(OfflineODataError) -> QueryResult {
        let result = try evaluate(options, to: entities, navigation: navigation)
        if let failure = navigation?.resolverFailure.withLock({ $0 }) { throw failure }
        return result
    }

    private static func evaluate(_ options: QueryOptions, to entities: [JSONObject], navigation: LocalQuery?) throws(OfflineODataError) -> QueryResult {
        do {
            guard let model = navigation?.model, model.isV2, options.filter != nil || options.orderBy != nil || options.search != nil else {
                return try QueryEvaluator.apply(options, to: entities, navigation: navigation, functions: functions)
            }
            var choosing = QueryOptions()
            choosing.filter = options.filter
            choosing.orderBy = options.orderBy
            choosing.search = options.search
            let typed = entities.enumerated().map { index, entity in
                var object = V2Values.typed(entity, model: model)
                object.append(.int(Int64(index)), forKey: V2Values.positionAnnotation)
                return object
            }
            let chosen = try QueryEvaluator.apply(choosing, to: typed, navigation: navigation, functions: functions).entities
                .compactMap { $0[V2Values.positionAnnotation]?.intValue.map { entities[Int($0)] } }
            var rest = options
            rest.filter = nil
            rest.orderBy = nil
            rest.search = nil
            return try QueryEvaluator.apply(rest, to: chosen, navigation: navigation, functions: functions)
        } catch {
            throw OfflineODataError(.invalidRequest, "the query cannot be evaluated: \(error.message)")
        }
    }

    // MARK: Records and their JSON

    /// The JSON an entity is read as.
    static func json(_ record: EntityRecord) -> JSONObject {
        record.json
    }

    /// The visible records of a set in their natural order (key order, as a producer gives them), read whole.
    func visibleRecords(in set: String) throws -> [EntityRecord] {
        guard let type = model.entityType(ofSet: set) else { return [] }
        return try store.visibleRecords(in: set, type: type)
    }

    /// `property eq value` for each pair: what SQL narrows a navigation's targets by; `matchesNothing` when a
    /// value is null or missing (the targets' foreign keys never equal it).
    private static func equalities(_ pairs: [(property: String, value: JSONValue?)]) -> (matchesNothing: Bool, filter: FilterExpression?) {
        var result: FilterExpression?
        for (property, value) in pairs {
            let literal: Literal
            switch value {
            case .string(let text)?: literal = .string(text)
            case .int(let number)?: literal = .int(number)
            case .double(let number)?: literal = .double(number)
            case .bool(let flag)?: literal = .bool(flag)
            case nil, .null?: return (true, nil)
            default: continue
            }
            let equality = FilterExpression.binary(.eq, .member([property]), .literal(literal))
            result = result.map { .binary(.and, $0, equality) } ?? equality
        }
        return (false, result)
    }

    func record(reference: String) throws -> EntityRecord? {
        guard let open = reference.firstIndex(of: "(") else { return nil }
        let record = try store.record(set: String(reference[..<open]), key: String(reference[open...]))
        return record?.isVisible == true ? record : nil
    }

    /// The records a navigation property of `record` leads to, with the target set.
    func related(_ record: EntityRecord, navigation name: String) throws -> (set: String, records: [EntityRecord], isCollection: Bool)? {
        guard let type = model.entityType(ofSet: record.set), let navigation = type.navigation[name],
              let targetSet = model.targetSet(from: record.set, navigation: name), let targetType = model.entityType(ofSet: targetSet)
        else { return nil }
        // This side holds the foreign key: build the target's key.
        if !navigation.constraints.isEmpty {
            var values: [(String, JSONValue)] = []
            for (property, referenced) in navigation.constraints {
                guard let value = record.entity[property], !value.isNull else { return (targetSet, [], navigation.isCollection) }
                values.append((referenced, value))
            }
            if Set(values.map(\.0)) == Set(targetType.key) {
                let ordered = targetType.key.compactMap { key in values.first { $0.0 == key } }
                let target = try store.record(set: targetSet, key: CanonicalKey.render(ordered, type: targetType))
                return (targetSet, target.flatMap { $0.isVisible ? [$0] : nil } ?? [], navigation.isCollection)
            }
        }
        // The other side holds the foreign key: find the targets that point here.
        if let partnerName = navigation.partner, let partner = targetType.navigation[partnerName], !partner.constraints.isEmpty {
            let narrowing = Self.equalities(partner.constraints.map { ($0.0, record.entity[$0.1]) })
            if narrowing.matchesNothing { return (targetSet, [], navigation.isCollection) }
            let matches = try visibleRecords(in: targetSet, narrowedBy: narrowing.filter).filter { candidate in
                partner.constraints.allSatisfy { property, referenced in
                    guard let value = candidate.entity[property], !value.isNull else { return false }
                    return value == record.entity[referenced]
                }
            }
            return (targetSet, matches, navigation.isCollection)
        }
        // OData V2, this side the principal: the targets hold the foreign key.
        if !navigation.targetConstraints.isEmpty {
            let narrowing = Self.equalities(navigation.targetConstraints.map { ($0.0, record.entity[$0.1]) })
            if narrowing.matchesNothing { return (targetSet, [], navigation.isCollection) }
            let matches = try visibleRecords(in: targetSet, narrowedBy: narrowing.filter).filter { candidate in
                navigation.targetConstraints.allSatisfy { property, referenced in
                    guard let value = candidate.entity[property], !value.isNull else { return false }
                    return value == record.entity[referenced]
                }
            }
            return (targetSet, matches, navigation.isCollection)
        }
        // Otherwise the links kept from `$expand`: known when a download expanded the navigation (empty included),
        // or the entity was created here (nothing links to it yet); else not known, and never read as empty.
        guard let links = record.links[name]?.arrayValue else {
            if record.state == .created { return (targetSet, [], navigation.isCollection) }
            let queries = record.queries.isEmpty ? "the defining query that downloads it" : record.queries.map { "'\($0)'" }.joined(separator: ", ")
            throw OfflineODataError(.relationshipNotDownloaded,
                                    "the links of \(record.reference) by '\(name)' were not downloaded: the service declares no referential constraint for '\(name)', so the store knows them only from $expand; add $expand=\(name) to \(queries) and download again",
                                    entitySet: record.set)
        }
        let references = links.compactMap(\.stringValue)
        var targets: [EntityRecord] = []
        for reference in references {
            if let target = try self.record(reference: reference) { targets.append(target) }
        }
        return (targetSet, targets, navigation.isCollection)
    }

    // MARK: NavigationResolver

    func related(_ entity: JSONObject, navigationProperty: String) -> JSONValue? {
        let found: (set: String, records: [EntityRecord], isCollection: Bool)?
        do {
            guard let reference = entity["@odata.id"]?.stringValue, let record = try record(reference: reference) else { return nil }
            found = try related(record, navigation: navigationProperty)
        } catch {
            // The evaluator cannot be told: kept for `apply`, which throws it.
            resolverFailure.withLock { first in
                if first == nil { first = error as? OfflineODataError ?? OfflineODataError(.storage, "reading a relationship failed: \(error)", underlying: error) }
            }
            return nil
        }
        guard let (_, records, isCollection) = found else { return nil }
        if isCollection { return .array(records.map { .object(Self.json($0)) }) }
        return records.first.map { .object(Self.json($0)) } ?? .null
    }
}
