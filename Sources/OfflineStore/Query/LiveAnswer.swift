import Foundation
import ODataCore
import ODataQuery
import SQLCipher

/// The answer of an observed read kept row by row (``OfflineODataProvider/observe(_:)``), so that a commit that wrote
/// a few rows changes the answer by those rows instead of running the query again: each written row is read by its
/// key, tested against the filter and placed in the natural order, and the payload is the rows' JSON joined.
///
/// Only a read whose answer is a function of each row alone keeps one: a whole entity set (no key, no navigation
/// segment), with `$filter` (on the entity's own properties: no navigation, lambda or `$root`) and `$select` and
/// nothing else, without paging (``OfflineODataParameters/pageSize`` 0). Its payload is byte for byte the one
/// ``OfflineODataProvider/read(_:)`` answers; every other read runs again after a matching commit.
struct LiveAnswer {
    /// An observed read a ``LiveAnswer`` can keep.
    struct Shape {
        let set: String
        let key: [String]
        let filter: CompiledFilter?
        /// The read's `$select` alone, applied to each row.
        let projection: QueryOptions
        /// The payload's bytes before the first row and after the last.
        let prefix: [UInt8]
        let suffix: [UInt8] = Array("]}".utf8)
    }

    /// One entity of the answer: where it sorts, its key, its JSON.
    private struct Row {
        var order: [SQLCipherValue]
        var key: String
        var bytes: [UInt8]
    }

    let shape: Shape
    /// The entities in the natural order, by key too.
    private var rows: [Row] = []
    private var positions: [String: [SQLCipherValue]] = [:]

    /// The shape of `parsed` when a live answer can keep it, else `nil`.
    static func shape(_ parsed: LocalRequest, model: ServiceModel, serviceRoot: String, pageSize: Int) throws -> Shape? {
        guard pageSize == 0, parsed.path.segments.count == 1, let segment = parsed.path.segments.first, segment.key == nil,
              let type = model.entityType(ofSet: segment.name),
              parsed.options.allSatisfy({ $0.name == "$filter" || $0.name == "$select" })
        else { return nil }
        let options = try LocalQuery.options(parsed.options)
        if let filter = options.filter, !readsItsRowOnly(filter, navigation: Set(type.navigation.keys)) { return nil }
        let filter: CompiledFilter?
        do {
            filter = try options.filter.map { expression throws(ODataError) in try CompiledFilter(expression, functions: LocalQuery.functions) }
        } catch {
            return nil  // the read reports it
        }
        var projection = QueryOptions()
        projection.select = options.select
        var empty = JSONObject()
        empty.append(.string(serviceRoot + "$metadata#" + segment.name), forKey: "@odata.context")
        empty.append(.array([]), forKey: "value")
        let prefix = Array(JSON.serialize(.object(empty)).dropLast(2))  // up to `[`
        return Shape(set: segment.name, key: type.key, filter: filter, projection: projection, prefix: prefix)
    }

    /// Whether a filter reads the entity's own properties only (`navigation`: the names of its navigation properties).
    static func readsItsRowOnly(_ expression: FilterExpression, navigation: Set<String>) -> Bool {
        switch expression {
        case .literal, .alias, .typeName: return true
        case .member(let path): return path.first.map { !navigation.contains($0) && !$0.hasPrefix("$") } ?? true
        case .unary(_, let operand): return readsItsRowOnly(operand, navigation: navigation)
        case .binary(_, let left, let right): return readsItsRowOnly(left, navigation: navigation) && readsItsRowOnly(right, navigation: navigation)
        case .list(let items), .function(_, let items): return items.allSatisfy { readsItsRowOnly($0, navigation: navigation) }
        case .lambda, .root, .call: return false
        }
    }

    /// Reads the whole answer: every visible entity of the set SQL narrows to, tested and projected.
    init(shape: Shape, query: LocalQuery) throws {
        self.shape = shape
        for record in try query.visibleRecords(in: shape.set, narrowedBy: shape.filter?.expression) {
            guard let row = try row(record, query: query) else { continue }
            rows.append(row)
            positions[row.key] = row.order
        }
    }

    /// Applies the rows of `keys` as the store holds them now, read in one transaction.
    ///
    /// - Returns: Whether the answer changed.
    mutating func apply(_ keys: Set<String>, store: EntityStore, query: LocalQuery) throws -> Bool {
        guard let table = store.table(shape.set) else { return false }
        let records = try store.reading("the entities of \(shape.set)") { connection in
            try keys.map { key in (key, try EntityStore.record(key: key, table: table, connection)) }
        }
        var changed = false
        for (key, record) in records {
            let row = try record.flatMap { try self.row($0, query: query) }
            if let order = positions[key], let index = index(of: order) {
                if let row, row.order == order {
                    if rows[index].bytes != row.bytes { rows[index] = row; changed = true }
                    continue
                }
                rows.remove(at: index)
                positions[key] = nil
                changed = true
            }
            guard let row else { continue }
            rows.insert(row, at: insertion(of: row.order))
            positions[key] = row.order
            changed = true
        }
        return changed
    }

    /// The answer, as ``OfflineODataProvider/read(_:)`` gives it.
    var response: ODataResponse {
        var payload = shape.prefix
        payload.reserveCapacity(shape.prefix.count + rows.reduce(2) { $0 + $1.bytes.count + 1 })
        for (offset, row) in rows.enumerated() {
            if offset > 0 { payload.append(UInt8(ascii: ",")) }
            payload.append(contentsOf: row.bytes)
        }
        payload.append(contentsOf: shape.suffix)
        return OfflineODataProvider.jsonResponse(payload: payload, status: 200)
    }

    /// The row of a record when it is in the answer.
    private func row(_ record: EntityRecord, query: LocalQuery) throws -> Row? {
        guard record.isVisible, let table = query.store.table(shape.set) else { return nil }
        let json = record.json
        if let filter = shape.filter, !filter.matches(query.model.isV2 ? V2Values.typed(json, model: query.model) : json, navigation: query) {
            return nil
        }
        // Through the evaluator as a read's page goes (`$select`, and nothing else).
        let entity = try LocalQuery.apply(shape.projection, to: [json], navigation: query).entities.first ?? json
        return Row(order: table.naturalOrderValues(of: record, key: shape.key), key: record.key, bytes: JSON.serialize(.object(entity)))
    }

    /// The index of the row that sorts at `order`.
    private func index(of order: [SQLCipherValue]) -> Int? {
        let index = insertion(of: order)
        return index < rows.count && rows[index].order == order ? index : nil
    }

    /// The first index whose row does not sort before `order`.
    private func insertion(of order: [SQLCipherValue]) -> Int {
        var low = 0, high = rows.count
        while low < high {
            let middle = (low + high) / 2
            if SQLCipherValue.sortsBefore(rows[middle].order, order) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
