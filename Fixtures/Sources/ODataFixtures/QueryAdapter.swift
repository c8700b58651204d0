import ODataCore

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
        // TEMPORARY until ODataQuery lands: $top, $skip and $count only.
        var result = entities
        var count: Int?
        var top: Int?
        var skip = 0
        for piece in pieces {
            let name = QueryString.name(of: piece)
            let value = QueryString.value(of: piece)
            switch name {
            case "$top": top = Int(value)
            case "$skip": skip = Int(value) ?? 0
            case "$count": if value == "true" { count = entities.count }
            case "$format": continue
            default:
                if name.hasPrefix("$") {
                    throw ServiceFailure(501, "NotImplemented", "\(name) is not evaluated yet")
                }
            }
        }
        result = Array(result.dropFirst(skip))
        if let top { result = Array(result.prefix(top)) }
        return Evaluated(entities: result, count: count)
    }
}
