import ODataCore
import ODataQuery

extension FixtureService {
    /// The outcome of query options over a collection.
    struct Evaluated {
        var entities: [JSONObject]
        var count: Int?
    }

    /// The one call that applies OData query options (`$filter`, `$orderby`, `$count`, `$skip`,
    /// `$top`, `$expand`, `$select`) to entities: the plug-in point of ODataQuery's evaluator.
    /// - Parameters:
    ///   - pieces: the raw `name=value` query pieces (without `$skiptoken` / `$deltatoken`).
    ///   - entities: the entities, annotated.
    ///   - set: their entity set.
    ///   - data: the data, for navigation.
    ///   - allowCollectionOptions: whether `$filter`, `$orderby`, `$top`, `$skip`, `$count` may appear.
    func evaluate(
        pieces: [String], entities: [JSONObject], set: String, data: FixtureData, allowCollectionOptions: Bool
    ) throws -> Evaluated {
        var filter: String?
        var count = false
        var top: Int?
        var skip = 0
        var aliases: [String: String] = [:]
        for piece in pieces {
            let name = QueryString.name(of: piece)
            let value = QueryString.value(of: piece)
            if name.hasPrefix("@") {
                aliases[String(name.dropFirst())] = value
                continue
            }
            if ["$filter", "$top", "$skip", "$count", "$orderby"].contains(name), !allowCollectionOptions {
                throw ServiceFailure.badRequest("\(name) applies to collections, not to a single entity")
            }
            switch name {
            case "$filter":
                filter = value
            case "$top":
                guard let number = Int(value), number >= 0 else { throw ServiceFailure.badRequest("$top must be a non-negative integer, got '\(value)'") }
                top = number
            case "$skip":
                guard let number = Int(value), number >= 0 else { throw ServiceFailure.badRequest("$skip must be a non-negative integer, got '\(value)'") }
                skip = number
            case "$count":
                guard value == "true" || value == "false" else { throw ServiceFailure.badRequest("$count must be true or false, got '\(value)'") }
                count = value == "true"
            case "$format", "$search":
                continue
            case "$orderby", "$select", "$expand":
                // TEMPORARY: ODataQuery's QueryEvaluator takes these over when it lands.
                throw ServiceFailure(501, "NotImplemented", "\(name) is not evaluated by this build of the fixture yet")
            default:
                if name.hasPrefix("$") { throw ServiceFailure.badRequest("unknown system query option \(name)") }
            }
        }
        var result = entities
        if let filter {
            let compiled: CompiledFilter
            do { compiled = try CompiledFilter(parsing: filter, aliases: aliases) } catch {
                throw ServiceFailure.badRequest("$filter: \(error.message)")
            }
            let navigator = FixtureNavigator(service: self, data: data, set: set)
            result = result.filter { compiled.matches($0, navigation: navigator) }
        }
        let total = result.count
        if skip > 0 { result = Array(result.dropFirst(skip)) }
        if let top { result = Array(result.prefix(top)) }
        return Evaluated(entities: result, count: count ? total : nil)
    }
}

/// Resolves navigation properties over the fixture's data, for lambdas, member paths and `$expand`.
///
/// An entity does not say which set it belongs to; the resolver tries the set being queried
/// first, then any set whose type has the navigation property and holds an entity with the
/// same key.
struct FixtureNavigator: NavigationResolver {
    let service: FixtureService
    let data: FixtureData
    let set: String

    func related(_ entity: JSONObject, navigationProperty: String) -> JSONValue? {
        let candidates = [set] + data.model.entitySets.map(\.name).filter { $0 != set }
        for candidate in candidates {
            guard let type = try? data.entityType(of: candidate),
                let navigation = type.navigationProperty(navigationProperty),
                let predicate = EntityKey.predicate(of: entity, type: type),
                data.stored(in: candidate, predicate: predicate) != nil,
                let (targetSet, members) = try? service.related(of: entity, in: candidate, navigation: navigation, data: data),
                let storage = data.sets[targetSet]
            else { continue }
            let values = members.map { JSONValue.object(service.annotated(storage.entities[$0]!)) }
            return navigation.isCollection ? .array(values) : (values.first ?? .null)
        }
        return nil
    }
}
