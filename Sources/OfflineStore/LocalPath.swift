import Foundation
import ODataCore

/// A resource path addressed to the local store: an entity set, optionally a key predicate, then
/// navigation properties (each optionally with a key): `Customers('ALFKI')/Orders(10643)`.
struct LocalPath: Sendable, Hashable {
    struct Segment: Sendable, Hashable {
        var name: String
        /// The key predicate's values: a single unnamed value (`nil` name) or named values.
        var key: [(name: String?, value: JSONValue)]?

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.name == rhs.name && lhs.key?.map { "\($0.name ?? "")=\($0.value)" } == rhs.key?.map { "\($0.name ?? "")=\($0.value)" }
        }

        func hash(into hasher: inout Hasher) { hasher.combine(name) }
    }

    var segments: [Segment]

    /// Parses `Set`, `Set(key)`, `Set(key)/Nav`, `Set(key)/Nav(key)`…
    ///
    /// - Throws: `OfflineODataError.invalidRequest` naming the offending piece.
    static func parse(_ text: String) throws(OfflineODataError) -> LocalPath {
        var path = text
        if path.hasPrefix("/") { path.removeFirst() }
        if path.hasSuffix("/") { path.removeLast() }
        if path.contains("%") { path = path.removingPercentEncoding ?? path }
        guard !path.isEmpty else { throw OfflineODataError(.invalidRequest, "the resource path is empty") }
        var segments: [Segment] = []
        var index = path.startIndex
        while index < path.endIndex {
            var nameEnd = index
            while nameEnd < path.endIndex, path[nameEnd] != "(", path[nameEnd] != "/" { nameEnd = path.index(after: nameEnd) }
            let name = String(path[index..<nameEnd])
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." || $0 == "$" }) else {
                throw OfflineODataError(.invalidRequest, "'\(name)' in '\(text)' is not a valid path segment")
            }
            var segment = Segment(name: name, key: nil)
            index = nameEnd
            if index < path.endIndex, path[index] == "(" {
                // Find the closing parenthesis outside string literals.
                var cursor = path.index(after: index)
                var inString = false
                var close: String.Index?
                while cursor < path.endIndex {
                    let character = path[cursor]
                    if character == "'" {
                        let next = path.index(after: cursor)
                        if inString, next < path.endIndex, path[next] == "'" { cursor = path.index(after: next); continue }
                        inString.toggle()
                    } else if character == ")" && !inString {
                        close = cursor
                        break
                    }
                    cursor = path.index(after: cursor)
                }
                guard let close else { throw OfflineODataError(.invalidRequest, "unclosed key predicate in '\(text)'") }
                segment.key = try parseKey(String(path[path.index(after: index)..<close]), in: text)
                index = path.index(after: close)
            }
            segments.append(segment)
            if index < path.endIndex {
                guard path[index] == "/" else { throw OfflineODataError(.invalidRequest, "unexpected '\(path[index])' in '\(text)'") }
                index = path.index(after: index)
            }
        }
        return LocalPath(segments: segments)
    }

    private static func parseKey(_ text: String, in path: String) throws(OfflineODataError) -> [(name: String?, value: JSONValue)] {
        // The usual single integer key: `(10248)`.
        if let int = Int64(text) { return [(nil, .int(int))] }
        var parts: [String] = []
        var current = ""
        var inString = false
        for character in text {
            if character == "'" { inString.toggle() }
            if character == "," && !inString {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current)
        var result: [(name: String?, value: JSONValue)] = []
        for part in parts {
            let trimmed = trimmedSpaces(part)
            if let equals = trimmed.firstIndex(of: "="), !trimmed.hasPrefix("'") {
                let name = trimmedSpaces(String(trimmed[..<equals]))
                result.append((name, try literal(String(trimmed[trimmed.index(after: equals)...]), in: path)))
            } else {
                result.append((nil, try literal(trimmed, in: path)))
            }
        }
        if result.count > 1 && result.contains(where: { $0.name == nil }) {
            throw OfflineODataError(.invalidRequest, "a composite key in '\(path)' must name every property")
        }
        return result
    }

    private static func literal(_ raw: String, in path: String) throws(OfflineODataError) -> JSONValue {
        let text = trimmedSpaces(raw)
        guard !text.isEmpty else { throw OfflineODataError(.invalidRequest, "empty key value in '\(path)'") }
        if let int = Int64(text) { return .int(int) }
        if text.hasPrefix("'") {
            guard text.count >= 2, text.hasSuffix("'") else { throw OfflineODataError(.invalidRequest, "unterminated string key \(text) in '\(path)'") }
            return .string(String(text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'"))
        }
        // OData V2 forms (in V2 ids and keys): guid'…', datetime'…', datetimeoffset'…', 12L, 1.5M/m/D/d/F/f.
        if text.hasSuffix("'") {
            let lowered = text.lowercased()
            for prefix in ["guid'", "datetime'", "datetimeoffset'", "time'"] where lowered.hasPrefix(prefix) {
                return .string(String(text.dropFirst(prefix.count).dropLast()))
            }
        }
        if let last = text.last, "LlMmDdFf".contains(last), text.count > 1 {
            let digits = String(text.dropLast())
            if "Ll".contains(last), let int = Int64(digits) { return .int(int) }
            if !"Ll".contains(last), let double = Double(digits) { return .double(double) }
        }
        if let double = Double(text), text.contains(".") { return .double(double) }
        if text == "true" || text == "false" { return .bool(text == "true") }
        if text.count == 36, UUID(uuidString: text) != nil { return .string(text) }
        throw OfflineODataError(.invalidRequest, "key value \(text) in '\(path)' is not a literal")
    }
}

/// `text` without leading and trailing spaces and tabs (as `trimmingCharacters(in: .whitespaces)`, without
/// Foundation's bridging when there is nothing to trim).
private func trimmedSpaces(_ text: String) -> String {
    guard let first = text.first, let last = text.last, first.isWhitespace || last.isWhitespace else { return text }
    return text.trimmingCharacters(in: .whitespaces)
}

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
    static func render(predicate: [(name: String?, value: JSONValue)], type: ServiceModel.EntityType, set: String) throws(OfflineODataError) -> String {
        var values: [(String, JSONValue)] = []
        if predicate.count == 1, predicate[0].name == nil {
            guard type.key.count == 1 else {
                throw OfflineODataError(.invalidRequest, "'\(set)' has a composite key (\(type.key.joined(separator: ", "))); name every key property")
            }
            values = [(type.key[0], coerce(predicate[0].value, type: type.propertyTypes[type.key[0]]))]
        } else {
            for name in type.key {
                guard let match = predicate.first(where: { $0.name == name }) else {
                    throw OfflineODataError(.invalidRequest, "the key of '\(set)' lacks '\(name)'")
                }
                values.append((name, coerce(match.value, type: type.propertyTypes[name])))
            }
            guard predicate.count == type.key.count else {
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
