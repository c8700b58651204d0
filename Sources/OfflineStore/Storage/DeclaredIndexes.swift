import Foundation
import ODataQuery

/// The secondary indexes the defining queries declare (``OfflineODataDefiningQuery/indexes``), by entity set.
enum DeclaredIndexes {
    /// The properties to index per entity set: each defining query's set is its path's first segment, or where
    /// its navigation leads.
    ///
    /// - Parameters:
    ///   - queries: The defining queries.
    ///   - model: The service's model; without one nothing can be checked and nothing is declared.
    ///   - serviceRoot: The service root the queries are relative to.
    /// - Returns: Entity set → properties, each once, in the order declared.
    /// - Throws: `OfflineODataError.invalidRequest` for an index that names no primitive property of its set.
    static func wanted(_ queries: [OfflineODataDefiningQuery], model: ServiceModel?, serviceRoot: String) throws(OfflineODataError) -> [String: [String]] {
        guard let model else { return [:] }
        var result: [String: [String]] = [:]
        for query in queries where !query.indexes.isEmpty {
            guard let segments = try? LocalRequest(query.query, serviceRoot: serviceRoot).path.segments, var set = segments.first?.name else { continue }
            for segment in segments.dropFirst() {
                guard let next = model.targetSet(from: set, navigation: segment.name) else { break }
                set = next
            }
            guard let type = model.entityType(ofSet: set) else { continue }
            for property in query.indexes {
                guard let edm = type.propertyTypes[property], EntityTable.Kind(edmType: edm) != nil else {
                    throw OfflineODataError(.invalidRequest, "the index '\(property)' of defining query '\(query.name)' names no primitive property of \(set)")
                }
                if !(result[set] ?? []).contains(property) { result[set, default: []].append(property) }
            }
        }
        return result
    }

    /// The foreign keys of a set's entity type that navigation narrows its entities by (``LocalQuery``'s
    /// `related`): the properties of its own referential constraints, and those a principal's OData V2
    /// navigation names. They are indexed with the table, so `$expand` and a navigation path read an index.
    ///
    /// - Parameters:
    ///   - set: The entity set.
    ///   - model: The service's model.
    /// - Returns: The properties, each once, the first of each constraint (an index on it serves the rest).
    static func foreignKeys(of set: String, model: ServiceModel?) -> [String] {
        guard let model, let type = model.entityType(ofSet: set) else { return [] }
        var result: [String] = []
        func add(_ property: String?) {
            if let property, !result.contains(property), !(type.key.first == property) { result.append(property) }
        }
        for navigation in type.navigation.values.sorted(by: { $0.name < $1.name }) { add(navigation.constraints.first?.0) }
        for (name, _) in model.entitySets.sorted(by: { $0.key < $1.key }) {
            guard let source = model.entityType(ofSet: name) else { continue }
            for navigation in source.navigation.values.sorted(by: { $0.name < $1.name })
            where !navigation.targetConstraints.isEmpty && model.targetSet(from: name, navigation: navigation.name) == set {
                add(navigation.targetConstraints.first?.0)
            }
        }
        return result
    }
}
