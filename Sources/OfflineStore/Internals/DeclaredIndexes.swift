import Foundation

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
            guard let segments = try? ParsedQuery(query.query, serviceRoot: serviceRoot).path.segments, var set = segments.first?.name else { continue }
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
}
