import Foundation
import ODataCore
import SQLCipher

/// A record as a row of its table, and back: the columns bound in order, the rest of the record kept as one blob.
extension EntityTable {
    /// Binds `record` to the parameters of ``insertSQL``.
    ///
    /// - Returns: What the record's values say of each column (by position), to be added to the catalog.
    @discardableResult
    func bind(_ record: EntityRecord, to statement: SQLCipherStatement) throws -> [Flags] {
        var values = [SQLCipherValue](repeating: .null, count: columns.count)
        var flags = [Flags](repeating: [], count: columns.count)
        var entity = JSONObject()
        entity.reserveCapacity(record.entity.count)
        for (name, value) in record.entity {
            guard let position = columnIndex[name] else {
                entity.append(value, forKey: name)
                continue
            }
            let (column, exact) = Self.columnValue(value, kind: columns[position].kind)
            values[position] = column
            entity.append(exact ? .null : value, forKey: name)
            if !exact && !Self.comparesAlike(value, kind: columns[position].kind) { flags[position].insert(.inexact) }
            if case .text(let text) = column { flags[position].formUnion(Self.textFlags(text)) }
        }
        if let integerKey, let position = columnIndex[integerKey] {
            // The row ID: never `NULL` (SQLite would choose one), always the integer of the canonical key.
            guard let number = Self.integer(ofKey: record.key) else {
                throw OfflineODataError(.invalidRequest, "the key \(record.key) of an entity of \(set) is not an integer, as its key property \(integerKey) is")
            }
            if values[position] != .integer(number) {
                // The entity lacks its key property or holds another value: the record keeps what it holds, SQL
                // cannot stand in for it, and the column holds the key.
                if let value = record.entity[integerKey] { entity[integerKey] = value }
                values[position] = .integer(number)
                flags[position].insert(.inexact)
            }
        }
        try statement.bind(.text(record.key), at: 1)
        try statement.bind(.integer(record.order), at: 2)
        try statement.bind(.text(record.state.rawValue), at: 3)
        // Every member in its column, in the columns' order, after an ETag or not (a downloaded entity of the model,
        // mostly): `"$record"` keeps the ETag alone, not the entity (format 3), so the row is smaller and reads back
        // from its columns.
        var etag: JSONValue?
        var members = entity.makeIterator()
        var member = members.next()
        if let (name, value) = member, name == Self.etagMember, case .string = value {
            etag = value
            member = members.next()
        }
        var columnsOnly = entity.count == columns.count + (etag == nil ? 0 : 1)
        if columnsOnly {
            for column in columns {
                guard let (name, value) = member, name == column.property, value.isNull else {
                    columnsOnly = false
                    break
                }
                member = members.next()
            }
        }
        try statement.bind(.blob(record.encodedRest(entity: columnsOnly ? nil : entity, etag: etag)), at: 4)
        for (position, value) in values.enumerated() { try statement.bind(value, at: Int32(position + 5)) }
        return flags
    }

    /// Whether a value kept in `"$record"` compares as its column does: an integer in a `REAL` column (a Decimal
    /// property written `18`) compares with any number as the double the column holds while it is within ±2⁵³.
    fileprivate static func comparesAlike(_ value: JSONValue, kind: Kind) -> Bool {
        guard kind == .real, case .int(let number) = value else { return false }
        return number.magnitude <= 1 << 53
    }

    /// `.nonASCII` and `.nonNFC` as `text` calls for them.
    static func textFlags(_ text: String) -> Flags {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return [] }
        // Swift's `==` is canonical equivalence: compare the bytes.
        return text.utf8.elementsEqual(text.precomposedStringWithCanonicalMapping.utf8) ? [.nonASCII] : [.nonASCII, .nonNFC]
    }

    /// The column value of `value`, and whether it gives `value` back exactly.
    static func columnValue(_ value: JSONValue, kind: Kind) -> (SQLCipherValue, exact: Bool) {
        switch (kind, value) {
        case (_, .null): return (.null, true)
        case (.text, .string(let text)): return (.text(text), true)
        case (.integer, .int(let number)): return (.integer(number), true)
        case (.integer, .string(let text)): return (Int64(text).map(SQLCipherValue.integer) ?? .null, false)
        case (.real, .double(let number)) where number.isFinite: return (.real(number), true)
        case (.real, .int(let number)): return (.real(Double(number)), false)
        case (.real, .string(let text)): return (Double(text).flatMap { $0.isFinite ? SQLCipherValue.real($0) : nil } ?? .null, false)
        case (.boolean, .bool(let flag)): return (.integer(flag ? 1 : 0), true)
        default: return (.null, false)
        }
    }

    /// The record of the current row of a statement made from ``selectSQL``.
    func record(from statement: SQLCipherStatement) throws(OfflineODataError) -> EntityRecord {
        guard let state = EntityState(rawValue: statement.text(at: 2)) else {
            throw OfflineODataError(.storage, "a stored entity of \(set) has an unknown state")
        }
        var (record, kept, etag) = try EntityRecord.decodeRest(statement.blob(at: 3), set: set, key: statement.text(at: 0), order: statement.integer(at: 1), state: state)
        var entity = JSONObject()
        guard let kept else {
            // The entity is its columns, in their order, after the ETag when there is one.
            entity.reserveCapacity(columns.count + 1)
            if let etag { entity.append(etag, forKey: Self.etagMember) }
            for (position, column) in columns.enumerated() {
                entity.append(Self.value(of: statement, at: Int32(position + 4), kind: column.kind), forKey: column.property)
            }
            record.entity = entity
            return record
        }
        entity.reserveCapacity(kept.count)
        for (name, value) in kept {
            if case .null = value, let position = columnIndex[name] {
                entity.append(Self.value(of: statement, at: Int32(position + 4), kind: columns[position].kind), forKey: name)
            } else {
                entity.append(value, forKey: name)
            }
        }
        record.entity = entity
        return record
    }

    /// The member of an entity that holds its ETag.
    static let etagMember = "@odata.etag"

    static func value(of statement: SQLCipherStatement, at index: Int32, kind: Kind) -> JSONValue {
        if statement.isNull(at: index) { return .null }
        switch kind {
        case .text: return .string(statement.text(at: index))
        case .integer: return .int(statement.integer(at: index))
        case .real: return .double(statement.real(at: index))
        case .boolean: return .bool(statement.integer(at: index) != 0)
        }
    }
}

extension EntityRecord {
    /// What a row keeps beyond its columns, as JSON: the entity (with `null` where a column holds the value;
    /// `nil`, left out, when the entity is its columns in their order after `etag`, which is then kept alone), the
    /// original, links, flags and defining queries.
    func encodedRest(entity: JSONObject?, etag: JSONValue? = nil) -> [UInt8] {
        var object = JSONObject()
        if let entity {
            object.append(.object(entity), forKey: "e")
        } else if let etag {
            object.append(etag, forKey: "t")
        }
        if let original { object.append(.object(original), forKey: "g") }
        if !links.isEmpty { object.append(.object(links), forKey: "n") }
        if inErrorState { object.append(.bool(true), forKey: "er") }
        if isDeleteError { object.append(.bool(true), forKey: "de") }
        if !queries.isEmpty { object.append(.array(queries.map(JSONValue.string)), forKey: "q") }
        if needsRefresh { object.append(.bool(true), forKey: "rf") }
        return JSON.serialize(.object(object))
    }

    /// The record of ``encodedRest(entity:etag:)``'s bytes, its entity empty, and the entity they keep (`nil`: the
    /// entity is the row's columns in their order, after the ETag they keep, if any).
    static func decodeRest(_ bytes: [UInt8], set: String, key: String, order: Int64, state: EntityState) throws(OfflineODataError)
        -> (record: EntityRecord, entity: JSONObject?, etag: JSONValue?) {
        guard let object = (try? JSON.parse(bytes))?.objectValue else {
            throw OfflineODataError(.storage, "a stored entity record of \(set) is malformed")
        }
        let entity: JSONObject?
        switch object["e"] {
        case .object(let kept)?: entity = kept
        case nil: entity = nil
        default: throw OfflineODataError(.storage, "a stored entity record of \(set) is malformed")
        }
        let record = EntityRecord(set: set, key: key, order: order, state: state, entity: JSONObject(),
                            original: object["g"]?.objectValue, links: object["n"]?.objectValue ?? JSONObject(),
                            inErrorState: object["er"]?.boolValue ?? false, isDeleteError: object["de"]?.boolValue ?? false,
                            queries: object["q"]?.arrayValue?.compactMap(\.stringValue) ?? [], needsRefresh: object["rf"]?.boolValue ?? false)
        return (record, entity, entity == nil ? object["t"] : nil)
    }
}
