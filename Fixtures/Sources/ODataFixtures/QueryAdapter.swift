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
        let options: QueryOptions
        do { options = try QueryOptions.parse(pieces.joined(separator: "&")) } catch {
            throw ServiceFailure.badRequest(error.message)
        }
        if !allowCollectionOptions {
            let collectionOnly: [(String, Bool)] = [
                ("$filter", options.filter != nil), ("$orderby", options.orderBy != nil), ("$top", options.top != nil),
                ("$skip", options.skip != nil), ("$count", options.count != nil), ("$search", options.search != nil),
            ]
            if let (name, _) = collectionOnly.first(where: \.1) {
                throw ServiceFailure.badRequest("\(name) applies to collections, not to a single entity")
            }
        }
        let navigator = FixtureNavigator(service: self, data: data, set: set)
        let result: QueryResult
        do { result = try QueryEvaluator.apply(options, to: entities, navigation: navigator) } catch {
            throw ServiceFailure.badRequest(error.message)
        }
        return Evaluated(entities: result.entities, count: result.count)
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
    /// A lambda over a navigation (`Order_Details/all(…)`) asks for the dependents of every entity of the set:
    /// indexed once per query, not scanned per entity.
    let dependents = DependentsIndex()

    func related(_ entity: JSONObject, navigationProperty: String) -> JSONValue? {
        let candidates = [set] + data.model.entitySets.map(\.name).filter { $0 != set }
        for candidate in candidates {
            guard let type = try? data.entityType(of: candidate),
                let navigation = type.navigationProperty(navigationProperty),
                let predicate = EntityKey.predicate(of: entity, type: type),
                data.stored(in: candidate, predicate: predicate) != nil,
                let (targetSet, members) = try? service.related(of: entity, in: candidate, navigation: navigation, data: data, dependents: dependents),
                let storage = data.sets[targetSet]
            else { continue }
            let values = members.map { JSONValue.object(service.annotated(storage.entities[$0]!, set: targetSet, predicate: $0)) }
            return navigation.isCollection ? .array(values) : (values.first ?? .null)
        }
        return nil
    }
}

/// The dependents of a target set grouped by the values of a partner's referential constraints, built on first use
/// and kept for one query's evaluation (the data does not change while a request is answered).
final class DependentsIndex {
    private var groups: [String: [[JSONValue]: [String]]] = [:]

    /// The predicates of `storage`'s entities grouped by their values of `partner`'s constrained properties.
    func members(of targetSet: String, partner: ServiceModel.NavigationProperty, storage: FixtureData.SetStorage) -> [[JSONValue]: [String]] {
        let name = targetSet + "/" + partner.name
        if let built = groups[name] { return built }
        var built: [[JSONValue]: [String]] = [:]
        for predicate in storage.order {
            let dependent = storage.entities[predicate]!.value
            built[partner.constraints.map { dependent[$0.property] ?? .null }, default: []].append(predicate)
        }
        groups[name] = built
        return built
    }
}
