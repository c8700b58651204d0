import ODataCore

/// Keys and literals: the one place that turns key values into the canonical key predicate
/// (`('ALFKI')`, `(OrderID=10248,ProductID=11)`, `(615f74a5-…)`) used both as the storage
/// index and in URLs (`Location`, `@id`).
enum EntityKey {
    /// Coerces a value to a property's EDM type, as a key or a property value must be stored.
    /// - Parameters:
    ///   - value: the value as it arrived (from JSON or a URL literal).
    ///   - type: the EDM type name.
    /// - Returns: the stored form, or `nil` when the value does not fit the type.
    static func coerce(_ value: JSONValue, to type: String) -> JSONValue? {
        if value.isNull { return .null }
        switch type {
        case "Edm.String":
            return value.stringValue.map(JSONValue.string)
        case "Edm.Guid":
            guard let text = value.stringValue, isGUID(text) else { return nil }
            return .string(text.lowercased())
        case "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte", "Edm.SByte":
            guard let number = value.intValue else {
                // A string form of an integer (IEEE754Compatible) is accepted too.
                if let text = value.stringValue, let number = Int64(text) { return .int(number) }
                return nil
            }
            return .int(number)
        case "Edm.Decimal", "Edm.Double", "Edm.Single":
            switch value {
            case .int, .double: return value
            case .string(let text):
                if let number = Double(text) { return .double(number) }
                if ["NaN", "INF", "-INF"].contains(text) { return value }
                return nil
            default: return nil
            }
        case "Edm.Boolean":
            return value.boolValue.map(JSONValue.bool)
        case "Edm.DateTimeOffset", "Edm.Date", "Edm.TimeOfDay", "Edm.Duration", "Edm.Binary":
            return value.stringValue.map(JSONValue.string)
        default:
            return value
        }
    }

    /// Whether a text is a GUID in the 8-4-4-4-12 hex form.
    static func isGUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return false }
        return groups.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }

    /// The URL literal of a key value (`'O''Brien'`, `42`, `615f74a5-…`).
    static func literal(_ value: JSONValue, type: String) -> String {
        switch value {
        case .string(let text):
            if type == "Edm.Guid" { return text }
            return "'" + text.replacingAll("'", with: "''") + "'"
        case .int(let number): return String(number)
        case .double(let number): return String(number)
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        default: return JSON.string(value)
        }
    }

    /// The canonical key predicate of an entity, or `nil` when a key property is missing or
    /// does not fit its type.
    /// - Parameters:
    ///   - entity: the entity (or an object holding only its key properties).
    ///   - type: its entity type.
    static func predicate(of entity: JSONObject, type: ServiceModel.EntityType) -> String? {
        var parts: [String] = []
        for name in type.keys {
            guard let raw = entity[name], let property = type.property(name),
                let value = coerce(raw, to: property.type), !value.isNull
            else { return nil }
            parts.append((type.keys.count == 1 ? "" : name + "=") + literal(value, type: property.type))
        }
        return "(" + parts.joined(separator: ",") + ")"
    }
}

extension String {
    /// Replaces every occurrence of a substring (without Foundation).
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty, contains(target) else { return self }
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        result += rest
        return result
    }
}
