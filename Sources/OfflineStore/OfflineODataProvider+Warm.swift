import ODataCore
import ODataQuery

extension OfflineODataProvider {
    /// Runs, once at open, a filtered read, a key lookup and an ordered read of one entity set through the same code
    /// as an application's reads, so that the first of those does not pay for first use: the query parser, the
    /// filter's type check, the planner, the first statements of the reading connection, decoding a row and writing
    /// it as JSON, the runtime's first use of the generic code on that path (measured: most of what a first query
    /// after open cost beyond a later one; BENCHMARKS.md). They read a key's path through an index and at most one
    /// entity each: the cost does not grow with the data. What they answer, and any error, is dropped.
    func warmReads() {
        guard let set = warmSet(), let type = model.entityType(ofSet: set) else { return }
        if type.key.count == 1, let literal = Self.warmLiteral(type.propertyTypes[type.key[0]]) {
            _ = try? read(ODataRequest(resourcePath: set, queryOptions: [.filter("\(type.key[0]) eq \(literal)"), .top(1)]))
            _ = try? read(ODataRequest(resourcePath: "\(set)(\(literal))"))
        }
        // One entity, decoded and written: through the first declared index when there is one (its walk is what
        // `$orderby` + `$top` reads), else the first in the natural order.
        let indexed = store?.wantedIndexes.withLock { $0[set]?.first }
        _ = try? read(ODataRequest(resourcePath: set, queryOptions: (indexed.map { [.orderBy([$0])] } ?? []) + [.top(1)]))
    }

    /// The entity set of the first defining query that has a table, else the first set with one.
    private func warmSet() -> String? {
        guard let store else { return nil }
        let stored = Set(store.storedSets())
        for query in definingQueryList {
            if let parsed = try? LocalRequest(query.query, serviceRoot: serviceRoot), let first = parsed.path.segments.first?.name,
               stored.contains(first) {
                return first
            }
        }
        return stored.min()
    }

    /// A literal of the key's type no entity is likely to have (the answer is dropped either way).
    private static func warmLiteral(_ edmType: String?) -> String? {
        switch edmType {
        case "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte", "Edm.SByte": return "0"
        case "Edm.String": return "''"
        default: return nil
        }
    }
}
