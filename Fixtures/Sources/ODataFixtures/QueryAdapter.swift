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
