import Foundation
import ODataCore
import ODataQuery

/// Canonical key rendering: `('ALFKI')`, `(10248)`, `(OrderID=10248,ProductID=11)` in the
/// key order of the entity type.
enum CanonicalKey {
    static func render(_ entity: JSONObject, type: ServiceModel.EntityType) throws(OfflineODataError) -> String {
        var values: [(String, JSONValue)] = []
        for name in type.key {
            guard let value = entity[name], !value.isNull else {
                throw OfflineODataError(.invalidRequest, "the entity has no value for its key property '\(name)'")
            }
            values.append((name, coerce(value, type: type.propertyTypes[name])))
        }
        return render(values, type: type)
    }

    static func render(_ values: [(String, JSONValue)], type: ServiceModel.EntityType) -> String {
        if values.count == 1 { return "(" + literal(values[0].1, type: type.propertyTypes[values[0].0]) + ")" }
        return "(" + values.map { "\($0.0)=" + literal($0.1, type: type.propertyTypes[$0.0]) }.joined(separator: ",") + ")"
    }

    /// Matches a parsed key predicate against the type's key and renders it canonically.
    static func render(predicate: KeyPredicate, type: ServiceModel.EntityType, set: String) throws(OfflineODataError) -> String {
        var values: [(String, JSONValue)] = []
        switch predicate {
        case .single(let value):
            guard type.key.count == 1 else {
                throw OfflineODataError(.invalidRequest, "'\(set)' has a composite key (\(type.key.joined(separator: ", "))); name every key property")
            }
            values = [(type.key[0], coerce(value, type: type.propertyTypes[type.key[0]]))]
        case .named(let parts):
            for name in type.key {
                guard let match = parts.first(where: { $0.name == name }) else {
                    throw OfflineODataError(.invalidRequest, "the key of '\(set)' lacks '\(name)'")
                }
                values.append((name, coerce(match.value, type: type.propertyTypes[name])))
            }
            guard parts.count == type.key.count else {
                throw OfflineODataError(.invalidRequest, "the key predicate for '\(set)' names properties that are not its key (\(type.key.joined(separator: ", ")))")
            }
        }
        return render(values, type: type)
    }

    /// A key value in the form its Edm type renders: an integer for a floating type becomes a double, and a
    /// number sent as a string (`IEEE754Compatible=true`, V2's Int64 and Decimal) becomes the number.
    static func coerce(_ value: JSONValue, type: String?) -> JSONValue {
        switch (value, type) {
        case (.int(let int), "Edm.Double"?), (.int(let int), "Edm.Decimal"?), (.int(let int), "Edm.Single"?): return .double(Double(int))
        case (.string(let text), "Edm.Int64"?), (.string(let text), "Edm.Int32"?), (.string(let text), "Edm.Int16"?),
             (.string(let text), "Edm.Byte"?), (.string(let text), "Edm.SByte"?):
            return Int64(text).map { .int($0) } ?? value
        case (.string(let text), "Edm.Decimal"?), (.string(let text), "Edm.Double"?), (.string(let text), "Edm.Single"?):
            return Double(text).map { .double($0) } ?? value
        default: return value
        }
    }

    static func literal(_ value: JSONValue, type: String?) -> String {
        switch value {
        case .string(let text):
            if type == "Edm.Guid" || type == "Edm.DateTimeOffset" || type == "Edm.Date" { return text }
            return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .int(let int): return String(int)
        case .double(let double): return double == double.rounded() && abs(double) < 1e15 ? String(Int64(double)) : String(double)
        case .bool(let bool): return bool ? "true" : "false"
        case .null: return "null"
        case .array, .object: return JSON.string(value)
        }
    }
}

extension KeyPredicate {
    /// The key's values in the order written, each with its name (`nil` for a single unnamed value).
    var parts: [(name: String?, value: JSONValue)] {
        switch self {
        case .single(let value): return [(nil, value)]
        case .named(let parts): return parts.map { ($0.name, $0.value) }
        }
    }
}
