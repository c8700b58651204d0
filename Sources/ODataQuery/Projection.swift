public import ODataCore

/// A `$select` option: the properties to keep.
public struct Select: Sendable, Hashable, CustomStringConvertible {
    /// One selected path (`Name`, `Address/City`, `*`, `NS.*`), with nested options (4.01).
    public struct Item: Sendable, Hashable {
        /// The path segments; `["*"]` selects all structural properties.
        public var path: [String]
        /// Options nested in parentheses after the path (`Addresses($filter=…)`), if any.
        public var options: QueryOptions?

        /// Creates a selected path.
        /// - Parameters:
        ///   - path: the path segments.
        ///   - options: nested options, if any.
        public init(_ path: [String], options: QueryOptions? = nil) {
            self.path = path
            self.options = options
        }
    }

    /// The selected paths, in order.
    public var items: [Item]

    /// Creates a selection.
    /// - Parameter items: the selected paths.
    public init(_ items: [Item]) {
        self.items = items
    }

    /// Whether `*` is selected (every property stays).
    public var selectsAll: Bool { items.contains { $0.path == ["*"] } }

    /// The canonical option value.
    public var description: String {
        items.map { item in
            item.path.joined(separator: "/") + (item.options.map { "(" + $0.nestedDescription + ")" } ?? "")
        }.joined(separator: ",")
    }

    /// Parses a `$select` value.
    /// - Parameter text: the option value, percent-decoded.
    /// - Returns: the selection.
    /// - Throws: ``ODataError`` `.invalidQueryOption` with the offset of what was wrong.
    public static func parse(_ text: String) throws(ODataError) -> Select {
        try Select(OptionSyntax.items(text, base: 0, option: "$select", allowsRef: false).map { parsed in
            Item(parsed.path, options: parsed.options)
        })
    }

    /// Projects an entity: annotations stay, selected properties stay (complex ones trimmed to the
    /// selected sub-paths), and so do the names in `keeping` (expanded navigation properties).
    /// - Parameters:
    ///   - entity: the entity.
    ///   - keeping: member names to keep in any case.
    /// - Returns: the projected entity.
    public func apply(to entity: JSONObject, keeping: Set<String> = []) -> JSONObject {
        if selectsAll { return entity }
        var result = JSONObject()
        let tree = SelectionTree(items.map(\.path))
        for (key, value) in entity {
            if key.hasPrefix("@") || keeping.contains(key) {
                result.append(value, forKey: key)
                continue
            }
            // `Name@odata.type`-style annotations follow their property.
            let base = key.split(separator: "@", maxSplits: 1).first.map(String.init) ?? key
            if base != key {
                if tree.children[base] != nil || keeping.contains(base) { result.append(value, forKey: key) }
                continue
            }
            guard let child = tree.children[key] else { continue }
            result.append(child.project(value), forKey: key)
        }
        return result
    }
}

/// The selected paths as a tree: a leaf keeps the whole value.
struct SelectionTree {
    var children: [String: SelectionTree] = [:]
    var isLeaf = false

    init() {}

    init(_ paths: [[String]]) {
        for path in paths { insert(path[...]) }
    }

    mutating func insert(_ path: ArraySlice<String>) {
        guard let first = path.first else {
            isLeaf = true
            return
        }
        if first.contains(".") && !first.hasSuffix(".*") {
            // A type cast segment: select the rest on the same level.
            insert(path.dropFirst())
            return
        }
        if first.hasSuffix(".*") { return }  // all operations of a namespace: nothing structural
        children[first, default: SelectionTree()].insert(path.dropFirst())
    }

    func project(_ value: JSONValue) -> JSONValue {
        if isLeaf || children.isEmpty { return value }
        switch value {
        case .object(let object):
            var result = JSONObject()
            for (key, v) in object {
                if key.hasPrefix("@") {
                    result.append(v, forKey: key)
                } else if let child = children[key] {
                    result.append(child.project(v), forKey: key)
                }
            }
            return .object(result)
        case .array(let elements):
            return .array(elements.map(project))
        default:
            return value
        }
    }
}

/// A `$expand` option: navigation properties to include, each with nested options.
public struct Expand: Sendable, Hashable, CustomStringConvertible {
    /// One expanded navigation path.
    public struct Item: Sendable, Hashable {
        /// The navigation path (`Orders`, `Customer/NS.VIP/Orders`), or `["*"]`.
        public var path: [String]
        /// `/$ref`: expand references only.
        public var isRef: Bool
        /// `/$count`: expand the count only.
        public var isCount: Bool
        /// Nested options (`$filter`, `$select`, `$orderby`, `$top`, `$skip`, `$count`, `$search`,
        /// `$expand`, `$levels`).
        public var options: QueryOptions

        /// Creates an expanded path.
        /// - Parameters:
        ///   - path: the navigation path.
        ///   - isRef: true for `/$ref`.
        ///   - isCount: true for `/$count`.
        ///   - options: nested options.
        public init(_ path: [String], isRef: Bool = false, isCount: Bool = false, options: QueryOptions = QueryOptions()) {
            self.path = path
            self.isRef = isRef
            self.isCount = isCount
            self.options = options
        }
    }

    /// The expanded paths, in order.
    public var items: [Item]

    /// Creates an expansion.
    /// - Parameter items: the expanded paths.
    public init(_ items: [Item]) {
        self.items = items
    }

    /// The canonical option value.
    public var description: String {
        items.map { item in
            var text = item.path.joined(separator: "/")
            if item.isRef { text += "/$ref" }
            if item.isCount { text += "/$count" }
            let nested = item.options.nestedDescription
            if !nested.isEmpty { text += "(" + nested + ")" }
            return text
        }.joined(separator: ",")
    }

    /// Parses an `$expand` value.
    /// - Parameter text: the option value, percent-decoded.
    /// - Returns: the expansion.
    /// - Throws: ``ODataError`` `.invalidQueryOption` with the offset of what was wrong.
    public static func parse(_ text: String) throws(ODataError) -> Expand {
        try Expand(OptionSyntax.items(text, base: 0, option: "$expand", allowsRef: true).map { parsed in
            Item(parsed.path, isRef: parsed.isRef, isCount: parsed.isCount, options: parsed.options ?? QueryOptions())
        })
    }
}

/// `$levels`: a number or `max`.
public enum ExpandLevels: Sendable, Hashable, CustomStringConvertible {
    /// Expand this many levels.
    case count(Int)
    /// Expand as deep as the data goes (capped by ``QueryEvaluator/maximumLevels``).
    case max

    /// The option value (`2`, `max`).
    public var description: String {
        switch self {
        case .count(let n): return String(n)
        case .max: return "max"
        }
    }
}
