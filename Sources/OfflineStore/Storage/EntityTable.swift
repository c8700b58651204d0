import Foundation
import ODataCore
import SQLCipher

/// The table of one entity set and how an ``EntityRecord`` becomes a row and back.
///
/// Columns: `"$key"` (the canonical key), `"$order"`, `"$state"`, `"$record"` (the rest of the
/// record as JSON: annotations, links, the original for undo, local flags, and the entity's members that have
/// no column), then one column per primitive property of the entity type in `$metadata`, named as the
/// property, so SQL can filter, sort and index them. OData identifiers never hold `$`, so the fixed columns
/// never meet a property.
///
/// Two layouts, by how a key finds its row (``integerKey``): when the entity type's key is one integer property
/// (format 3), that property's column is the table's `INTEGER PRIMARY KEY` — SQLite's row ID — so a key lookup is
/// one descent of the table's B-tree; otherwise (and in every table a format-2 store made) `"$key"` is the
/// `TEXT PRIMARY KEY`, an index of its own, and a key lookup descends that index, then the table.
///
/// A property's value sits in its column when the column's type holds it exactly (a string in a `TEXT`
/// column, an integer in an `INTEGER` one, a double in a `REAL` one, a boolean in a `BOOLEAN` one); the
/// entity in `"$record"` then keeps the property's place with a `null`, so the order of members and their
/// presence survive. A value the column cannot hold exactly (an integer in a `Double` property, a decimal
/// given as a string) is kept in `"$record"` as it came, and the column holds its comparable form (the
/// number) or `NULL`.
struct EntityTable: Sendable, Hashable {
    /// How a column stores a property.
    enum Kind: String, Sendable, Hashable {
        case text = "t", integer = "i", real = "r", boolean = "b"

        var sqlType: String {
            switch self {
            case .text: return "TEXT"
            case .integer: return "INTEGER"
            case .real: return "REAL"
            case .boolean: return "BOOLEAN"
            }
        }

        /// The column kind of an EDM primitive type; `nil` for types kept in `"$record"` only.
        init?(edmType: String) {
            switch edmType {
            case "Edm.String", "Edm.Guid", "Edm.Date", "Edm.DateTimeOffset", "Edm.TimeOfDay", "Edm.Duration",
                 "Edm.DateTime", "Edm.Time", "Edm.Binary":
                self = .text
            case "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte", "Edm.SByte": self = .integer
            case "Edm.Double", "Edm.Single", "Edm.Decimal": self = .real
            case "Edm.Boolean": self = .boolean
            default: return nil
            }
        }
    }

    /// What the values written to a column so far say about it: the planner translates a comparison to SQL only
    /// where SQL compares exactly as the evaluator does. Flags are only ever added (until the table is dropped).
    struct Flags: OptionSet, Sendable, Hashable {
        let rawValue: UInt8
        /// A value the column holds inexactly (or as `NULL`) sits in `"$record"` and compares otherwise than the column
        /// (a decimal or an Int64 written as a string, an object in a text column): SQL cannot stand in for it.
        static let inexact = Flags(rawValue: 1)
        /// A string beyond ASCII: `startswith` on characters is not a byte prefix.
        static let nonASCII = Flags(rawValue: 2)
        /// A string not in Unicode normalization form C: Swift compares strings by canonical equivalence, SQL by bytes.
        static let nonNFC = Flags(rawValue: 4)
        /// What is assumed of a column whose values were written without tracking.
        static let all: Flags = [.inexact, .nonASCII, .nonNFC]

        /// The catalog's letters for the flags.
        var letters: String {
            (contains(.inexact) ? "i" : "") + (contains(.nonASCII) ? "a" : "") + (contains(.nonNFC) ? "n" : "")
        }

        init(rawValue: UInt8) { self.rawValue = rawValue }

        init(letters: String) {
            var flags: Flags = []
            if letters.contains("i") { flags.insert(.inexact) }
            if letters.contains("a") { flags.insert(.nonASCII) }
            if letters.contains("n") { flags.insert(.nonNFC) }
            self = flags
        }
    }

    struct Column: Sendable, Hashable {
        var property: String
        var kind: Kind
        var flags: Flags = []
    }

    /// The entity set.
    let set: String
    /// The table's name (unquoted).
    let name: String
    let columns: [Column]
    /// The key property whose column is the row ID (`INTEGER PRIMARY KEY`), when the table has that layout: its
    /// value in every row is the integer the canonical key `(n)` names (a write whose key is not an integer is
    /// refused), and rows are found by it. `nil`: rows are found by `"$key"`.
    let integerKey: String?
    /// The position in ``columns`` of each property's column.
    let columnIndex: [String: Int]

    /// The column of a property, if it has one.
    func column(_ property: String) -> Column? { columnIndex[property].map { columns[$0] } }

    /// This table with `flags` added to its columns' (by position); `nil` when nothing changes.
    func adding(_ flags: [Flags]) -> EntityTable? {
        var changed = columns
        var any = false
        for (position, flag) in flags.enumerated() where !changed[position].flags.isSuperset(of: flag) {
            changed[position].flags.formUnion(flag)
            any = true
        }
        return any ? EntityTable(set: set, name: name, columns: changed, integerKey: integerKey) : nil
    }

    init(set: String, name: String, columns: [Column], integerKey: String? = nil) {
        self.set = set
        self.name = name
        self.columns = columns
        var index: [String: Int] = [:]
        for (position, column) in columns.enumerated() { index[column.property] = position }
        columnIndex = index
        self.integerKey = integerKey.flatMap { index[$0] == nil ? nil : $0 }
        let quotedColumns = columns.map { Self.quote($0.property) }
        let all = ["\"$key\"", "\"$order\"", "\"$state\"", "\"$record\""] + quotedColumns
        let values = "(\(all.joined(separator: ", "))) VALUES (\(all.map { _ in "?" }.joined(separator: ", ")))"
        insertSQL = "INSERT OR REPLACE INTO \(Self.quote(name)) " + values
        insertNewSQL = "INSERT OR IGNORE INTO \(Self.quote(name)) " + values
        selectSQL = "SELECT \(all.joined(separator: ", ")) FROM \(Self.quote(name))"
        let keyColumn = self.integerKey.map(Self.quote) ?? "\"$key\""
        selectKeySQL = selectSQL + " WHERE \(keyColumn) = ?"
        deleteSQL = "DELETE FROM \(Self.quote(name)) WHERE \(keyColumn) = ?"
    }

    let insertSQL: String
    /// ``insertSQL`` that leaves a row whose key is stored already as it is (the connection's `changes` is then 0).
    let insertNewSQL: String
    let selectSQL: String
    /// ``selectSQL`` of the row of one key (bound with ``bindKey(_:to:)``).
    let selectKeySQL: String
    /// Deletes the row of one key (bound with ``bindKey(_:to:)``).
    let deleteSQL: String

    /// Binds a canonical key to the parameter of ``selectKeySQL`` or ``deleteSQL``: the text, or with an ``integerKey``
    /// the integer of `(n)` (`NULL`, which finds no row, for a key that names none: no row can hold it).
    func bindKey(_ key: String, to statement: SQLCipherStatement) throws {
        guard integerKey != nil else { return try statement.bind(.text(key), at: 1) }
        try statement.bind(Self.integer(ofKey: key).map(SQLCipherValue.integer) ?? .null, at: 1)
    }

    /// The integer a canonical key of one integer property names: `n` of `(n)`, written as ``CanonicalKey`` renders
    /// integers (so each integer has one key); `nil` for any other key.
    static func integer(ofKey key: String) -> Int64? {
        let utf8 = key.utf8
        guard utf8.count >= 3, utf8.first == UInt8(ascii: "("), utf8.last == UInt8(ascii: ")") else { return nil }
        let inner = key.dropFirst().dropLast()
        guard let number = Int64(inner), String(number) == inner else { return nil }
        return number
    }

    /// The table for `set` with a column per primitive property of its entity type (none without a model).
    /// `taken` holds the tables' names in lower case (SQL names ignore case, OData names do not).
    static func make(set: String, model: ServiceModel?, taken: Set<String>) -> EntityTable {
        var name = "entities:" + set
        var suffix = 2
        while taken.contains(name.lowercased()) {
            name = "entities:\(set)#\(suffix)"
            suffix += 1
        }
        var columns: [Column] = []
        var seen: Set<String> = []
        if let type = model?.entityType(ofSet: set) {
            for property in type.propertyOrder {
                guard let edm = type.propertyTypes[property], let kind = Kind(edmType: edm), seen.insert(property.lowercased()).inserted else { continue }
                columns.append(Column(property: property, kind: kind))
            }
        }
        // One integer key property: its column is the row ID (a lookup is one descent of the table).
        var integerKey: String?
        if let type = model?.entityType(ofSet: set), type.key.count == 1,
           columns.contains(where: { $0.property == type.key[0] && $0.kind == .integer }) {
            integerKey = type.key[0]
        }
        return EntityTable(set: set, name: name, columns: columns, integerKey: integerKey)
    }

    var createSQL: String {
        let properties = columns.map { column in
            ", \(Self.quote(column.property)) " + (column.property == integerKey ? "INTEGER PRIMARY KEY" : column.kind.sqlType)
        }.joined()
        let key = integerKey == nil ? "TEXT PRIMARY KEY NOT NULL" : "TEXT NOT NULL"
        return "CREATE TABLE \(Self.quote(name)) (\"$key\" \(key), \"$order\" INTEGER NOT NULL, \"$state\" TEXT NOT NULL, \"$record\" BLOB NOT NULL\(properties))"
    }

    var dropSQL: String { "DROP TABLE IF EXISTS \(Self.quote(name))" }

    /// The columns of the natural order (the order of the set without `$orderby`): the entity type's key
    /// properties when each has a column, else the canonical key; then `"$order"`, which ties never reach.
    func naturalOrder(key: [String]) -> [String] {
        let keyColumns = key.compactMap { column($0) == nil ? nil : Self.quote($0) }
        return (keyColumns.count == key.count && !key.isEmpty ? keyColumns : ["\"$key\""]) + ["\"$order\""]
    }

    /// The values of ``naturalOrder(key:)``'s columns in the row of `record`: where it sorts among the rows of a read
    /// in the natural order (as `SQLCipherValue.sortsBefore` compares them).
    func naturalOrderValues(of record: EntityRecord, key: [String]) -> [SQLCipherValue] {
        let keyColumns = key.compactMap(column)
        var values: [SQLCipherValue] = []
        if keyColumns.count == key.count && !key.isEmpty {
            for column in keyColumns {
                if column.property == integerKey, let number = Self.integer(ofKey: record.key) {
                    values.append(.integer(number))  // the row ID, as ``bind(_:to:)`` writes it
                } else {
                    values.append(Self.columnValue(record.entity[column.property] ?? .null, kind: column.kind).0)
                }
            }
        } else {
            values.append(.text(record.key))
        }
        values.append(.integer(record.order))
        return values
    }

    /// The index of the natural order (so a page of a set without `$orderby` is read, not sorted). Every index
    /// ends with `"$state"`, so counting the visible entities it finds needs no row.
    func naturalIndexSQL(key: [String]) -> String {
        "CREATE INDEX IF NOT EXISTS \(Self.quote(naturalIndexName)) ON \(Self.quote(name)) (\((naturalOrder(key: key) + ["\"$state\""]).joined(separator: ", ")))"
    }

    /// The secondary index of a property (then the natural order, so equal values come in that order, then
    /// `"$state"`); `nil` for a property without a column.
    func indexSQL(property: String, key: [String]) -> String? {
        guard column(property) != nil else { return nil }
        let columns = [Self.quote(property)] + naturalOrder(key: key) + ["\"$state\""]
        return "CREATE INDEX IF NOT EXISTS \(Self.quote(indexName(property))) ON \(Self.quote(name)) (\(columns.joined(separator: ", ")))"
    }

    /// The name of the natural order's index.
    var naturalIndexName: String { name + ":$natural" }

    /// The rows a download or an undo looks for (``flaggedIndexSQL``): those with a local change (`"$state"` other
    /// than downloaded) and those whose local copy may be behind (`"rf":true` in `"$record"`; an object member of
    /// that name inside the entity matches too, so a reader checks the decoded record). A query must repeat this
    /// condition word for word for SQLite to use the partial index.
    static let flaggedCondition = "(\"$state\" <> 'd' OR instr(\"$record\", '\"rf\":true') > 0)"

    /// The name of the flagged rows' index.
    var flaggedIndexName: String { name + ":$flagged" }

    /// The partial index of the flagged rows (``flaggedCondition``): small (downloaded rows are not in it), so
    /// finding the local changes or the entities to read again reads those rows only, whatever the set's size.
    var flaggedIndexSQL: String {
        "CREATE INDEX IF NOT EXISTS \(Self.quote(flaggedIndexName)) ON \(Self.quote(name)) (\"$state\") WHERE \(Self.flaggedCondition)"
    }

    /// A condition that holds for every row whose record has `value` for `property` (and maybe for a few more: the
    /// caller compares the decoded records), through the property's column (and its index, where there is one):
    /// the column holds ``columnValue(_:kind:)`` of what the record holds, so equal values have equal column
    /// values, `NULL` included. `nil` for a property without a column.
    func equalityCondition(property: String, value: JSONValue) -> (sql: String, arguments: [SQLCipherValue])? {
        guard let column = column(property) else { return nil }
        let (sqlValue, _) = Self.columnValue(value, kind: column.kind)
        if case .null = sqlValue { return ("\(Self.quote(property)) IS NULL", []) }
        return ("\(Self.quote(property)) = ?", [sqlValue])
    }

    /// The name of a property's secondary index.
    func indexName(_ property: String) -> String { name + ":" + property }

    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: The catalog row

    /// The catalog's `columns`: the list of `[property, kind, flags]`; with an ``integerKey``, the object
    /// `{"c": list, "k": property}` (format 3; a list alone is the `"$key"` layout, the only one of format 2).
    var encodedColumns: [UInt8] {
        let list = JSONValue.array(columns.map { .array([.string($0.property), .string($0.kind.rawValue), .string($0.flags.letters)]) })
        guard let integerKey else { return JSON.serialize(list) }
        return JSON.serialize(.object(JSONObject([("c", list), ("k", .string(integerKey))])))
    }

    static func decode(set: String, name: String, columns bytes: [UInt8]) throws(OfflineODataError) -> EntityTable {
        let parsed = try? JSON.parse(bytes)
        let integerKey = parsed?.objectValue?["k"]?.stringValue
        guard let list = parsed?.arrayValue ?? parsed?.objectValue?["c"]?.arrayValue, parsed?.arrayValue != nil || integerKey != nil else {
            throw OfflineODataError(.storage, "the catalog row of entity set \(set) is malformed")
        }
        var columns: [Column] = []
        for item in list {
            guard let pair = item.arrayValue, pair.count == 2 || pair.count == 3, let property = pair[0].stringValue,
                  let kind = pair[1].stringValue.flatMap(Kind.init(rawValue:))
            else { throw OfflineODataError(.storage, "the catalog row of entity set \(set) is malformed") }
            // A catalog written before columns were tracked says nothing of their values: assume the worst.
            let flags = pair.count == 3 ? pair[2].stringValue.map(Flags.init(letters:)) : Flags.all
            guard let flags else { throw OfflineODataError(.storage, "the catalog row of entity set \(set) is malformed") }
            columns.append(Column(property: property, kind: kind, flags: flags))
        }
        guard integerKey.map({ key in columns.contains { $0.property == key && $0.kind == .integer } }) ?? true else {
            throw OfflineODataError(.storage, "the catalog row of entity set \(set) is malformed")
        }
        return EntityTable(set: set, name: name, columns: columns, integerKey: integerKey)
    }
}
