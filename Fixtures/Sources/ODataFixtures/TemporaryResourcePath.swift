import Foundation
import ODataCore

// TEMPORARY: mirrors ODataQuery's `ResourcePath` / `KeyPredicate` API (branch `query`, not yet
// committed) so the producer builds and runs; deleted when ODataQuery is merged.

enum KeyPredicate: Sendable, Hashable, CustomStringConvertible {
    case single(JSONValue)
    case named([KeyProperty])

    struct KeyProperty: Sendable, Hashable {
        var name: String
        var value: JSONValue
    }

    var description: String {
        switch self {
        case .single(let value): return "(\(JSON.string(value)))"
        case .named(let parts): return "(" + parts.map { "\($0.name)=\(JSON.string($0.value))" }.joined(separator: ",") + ")"
        }
    }
}

struct ResourcePath: Sendable {
    struct Segment: Sendable {
        enum Kind: Sendable, Hashable { case name(String), count, ref, value, batch, metadata, entity, all }
        var kind: Kind
        var key: KeyPredicate?
        var name: String {
            switch kind {
            case .name(let n): return n
            case .count: return "$count"
            case .ref: return "$ref"
            case .value: return "$value"
            case .batch: return "$batch"
            case .metadata: return "$metadata"
            case .entity: return "$entity"
            case .all: return "$all"
            }
        }
    }

    var segments: [Segment]

    static func parse(_ path: String) throws(ODataError) -> ResourcePath {
        let text = path.removingPercentEncoding ?? path
        var segments: [Segment] = []
        var rest = Substring(text.hasPrefix("/") ? String(text.dropFirst()) : text)
        while !rest.isEmpty {
            var name = ""
            while let c = rest.first, c != "/", c != "(" { name.append(c); rest.removeFirst() }
            guard !name.isEmpty else { throw ODataError(.invalidURL, "empty path segment") }
            var key: KeyPredicate?
            if rest.first == "(" {
                rest.removeFirst()
                var inner = ""
                var inString = false
                while let c = rest.first {
                    rest.removeFirst()
                    if c == "'" { inString.toggle() }
                    if c == ")" && !inString { break }
                    inner.append(c)
                }
                key = try parseKey(inner)
            }
            let kind: Segment.Kind = switch name {
            case "$count": .count
            case "$value": .value
            case "$ref": .ref
            case "$batch": .batch
            case "$metadata": .metadata
            default: .name(name)
            }
            segments.append(Segment(kind: kind, key: key))
            if rest.first == "/" { rest.removeFirst() }
        }
        return ResourcePath(segments: segments)
    }

    private static func splitTopLevel(_ text: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var inString = false
        for c in text {
            if c == "'" { inString.toggle() }
            if c == "," && !inString { parts.append(current); current = ""; continue }
            current.append(c)
        }
        parts.append(current)
        return parts
    }

    private static func parseKey(_ text: String) throws(ODataError) -> KeyPredicate {
        let parts = splitTopLevel(text)
        if parts.count == 1, !(parts[0].contains("=") && !parts[0].hasPrefix("'")) {
            return .single(try literal(parts[0]))
        }
        var named: [KeyPredicate.KeyProperty] = []
        for part in parts {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { throw ODataError(.invalidKey, "bad key part '\(part)'") }
            named.append(KeyPredicate.KeyProperty(name: String(pair[0]), value: try literal(String(pair[1]))))
        }
        return .named(named)
    }

    private static func literal(_ text: String) throws(ODataError) -> JSONValue {
        if text.hasPrefix("'"), text.hasSuffix("'"), text.count >= 2 {
            return .string(String(text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'"))
        }
        if let int = Int64(text) { return .int(int) }
        if let double = Double(text) { return .double(double) }
        if text == "true" || text == "false" { return .bool(text == "true") }
        if text.count == 36 { return .string(text) }
        throw ODataError(.invalidKey, "bad key literal '\(text)'")
    }
}
