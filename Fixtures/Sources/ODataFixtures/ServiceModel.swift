import Foundation
import ODataCore

/// The entity model the fixture serves, read from its CSDL (`$metadata`) document: entity
/// types with keys, property types and navigation properties, and the entity sets of the
/// container with their navigation bindings.
public struct ServiceModel: Sendable {
    /// A structural property of an entity type.
    public struct Property: Sendable, Hashable {
        /// The property's name.
        public let name: String
        /// The EDM type name, such as `Edm.String` or `Edm.Int32`.
        public let type: String
        /// Whether `null` is allowed.
        public let isNullable: Bool
        /// The maximum length of a string, when the CSDL gives a number.
        public let maxLength: Int?
    }

    /// A navigation property of an entity type.
    public struct NavigationProperty: Sendable, Hashable {
        /// The navigation property's name.
        public let name: String
        /// The qualified name of the target entity type.
        public let targetType: String
        /// Whether the navigation leads to a collection.
        public let isCollection: Bool
        /// The partner navigation property on the target type, when declared.
        public let partner: String?
        /// Referential constraints declared on this side: dependent property → principal property.
        public let constraints: [(property: String, referencedProperty: String)]

        /// Whether two navigation properties are declared alike.
        /// - Parameters:
        ///   - lhs: one navigation property.
        ///   - rhs: the other.
        /// - Returns: true when name, target, cardinality, partner and constraints are equal.
        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.name == rhs.name && lhs.targetType == rhs.targetType && lhs.isCollection == rhs.isCollection
                && lhs.partner == rhs.partner
                && lhs.constraints.map { [$0.property, $0.referencedProperty] }
                    == rhs.constraints.map { [$0.property, $0.referencedProperty] }
        }

        /// Hashes the name and target type.
        /// - Parameter hasher: the hasher.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(name)
            hasher.combine(targetType)
        }
    }

    /// An entity type.
    public struct EntityType: Sendable {
        /// The qualified name (`NorthwindModel.Customer`).
        public let qualifiedName: String
        /// The key property names, in key order.
        public let keys: [String]
        /// The structural properties, in declaration order.
        public let properties: [Property]
        /// The navigation properties, in declaration order.
        public let navigationProperties: [NavigationProperty]

        /// The structural property with this name.
        /// - Parameter name: the property's name.
        /// - Returns: the property, or `nil` when the type has none of that name.
        public func property(_ name: String) -> Property? { properties.first { $0.name == name } }

        /// The navigation property with this name.
        /// - Parameter name: the navigation property's name.
        /// - Returns: the navigation property, or `nil` when the type has none of that name.
        public func navigationProperty(_ name: String) -> NavigationProperty? {
            navigationProperties.first { $0.name == name }
        }
    }

    /// An entity set of the container.
    public struct EntitySet: Sendable {
        /// The entity set's name.
        public let name: String
        /// The qualified name of its entity type.
        public let entityType: String
        /// Navigation property path → target entity set name.
        public let bindings: [String: String]
    }

    /// The entity types by qualified name.
    public let entityTypes: [String: EntityType]
    /// The entity sets in container order.
    public let entitySets: [EntitySet]
    /// The CSDL document itself, served as `$metadata`.
    public let csdl: String

    /// The entity set with this name.
    /// - Parameter name: the entity set's name.
    /// - Returns: the entity set, or `nil` when the container has none of that name.
    public func entitySet(_ name: String) -> EntitySet? { entitySets.first { $0.name == name } }

    /// The entity type of an entity set.
    /// - Parameter set: the entity set.
    /// - Returns: its entity type (the model guarantees it exists).
    func type(of set: EntitySet) -> EntityType {
        entityTypes[set.entityType]!
    }

    /// Reads a model from a CSDL XML document.
    /// - Parameter csdl: the `$metadata` document.
    /// - Throws: ``FixtureError`` with code `.invalidData` when the document has no container,
    ///   an entity set names an unknown type, or a type has no key.
    public init(csdl: String) throws(FixtureError) {
        self.csdl = csdl
        var types: [String: EntityType] = [:]
        var sets: [EntitySet] = []

        var namespace = ""
        var typeName: String?
        var keys: [String] = []
        var properties: [Property] = []
        var navigations: [NavigationProperty] = []
        var navigation: (name: String, type: String, partner: String?, constraints: [(String, String)])?
        var inKey = false
        var setName: String?
        var setType = ""
        var bindings: [String: String] = [:]
        var sawContainer = false

        func finishNavigation() {
            guard let current = navigation else { return }
            let isCollection = current.type.hasPrefix("Collection(") && current.type.hasSuffix(")")
            let target = isCollection ? String(current.type.dropFirst("Collection(".count).dropLast()) : current.type
            navigations.append(
                NavigationProperty(
                    name: current.name, targetType: target, isCollection: isCollection, partner: current.partner,
                    constraints: current.constraints.map { (property: $0.0, referencedProperty: $0.1) }))
            navigation = nil
        }

        for tag in XMLTagScanner(csdl) {
            switch (tag.name, tag.kind) {
            case ("Schema", .open):
                namespace = tag.attributes["Namespace"] ?? ""
            case ("EntityType", .open), ("EntityType", .selfClosing):
                typeName = tag.attributes["Name"]
                keys = []
                properties = []
                navigations = []
                if tag.kind == .selfClosing, let name = typeName {
                    types["\(namespace).\(name)"] = EntityType(
                        qualifiedName: "\(namespace).\(name)", keys: [], properties: [], navigationProperties: [])
                    typeName = nil
                }
            case ("Key", .open):
                inKey = true
            case ("Key", .close):
                inKey = false
            case ("PropertyRef", _) where inKey:
                if let name = tag.attributes["Name"] { keys.append(name) }
            case ("Property", _) where typeName != nil:
                guard let name = tag.attributes["Name"], let type = tag.attributes["Type"] else { continue }
                properties.append(
                    Property(
                        name: name, type: type, isNullable: tag.attributes["Nullable"] != "false",
                        maxLength: tag.attributes["MaxLength"].flatMap { Int($0) }))
            case ("NavigationProperty", .open), ("NavigationProperty", .selfClosing):
                guard let name = tag.attributes["Name"], let type = tag.attributes["Type"] else { continue }
                navigation = (name, type, tag.attributes["Partner"], [])
                if tag.kind == .selfClosing { finishNavigation() }
            case ("ReferentialConstraint", _):
                if let property = tag.attributes["Property"], let referenced = tag.attributes["ReferencedProperty"] {
                    navigation?.constraints.append((property, referenced))
                }
            case ("NavigationProperty", .close):
                finishNavigation()
            case ("EntityType", .close):
                if let name = typeName {
                    let qualified = "\(namespace).\(name)"
                    guard !keys.isEmpty else {
                        throw FixtureError(.invalidData, "entity type \(qualified) has no key in the CSDL")
                    }
                    types[qualified] = EntityType(
                        qualifiedName: qualified, keys: keys, properties: properties,
                        navigationProperties: navigations)
                }
                typeName = nil
            case ("EntityContainer", .open):
                sawContainer = true
            case ("EntitySet", .open), ("EntitySet", .selfClosing):
                setName = tag.attributes["Name"]
                setType = tag.attributes["EntityType"] ?? ""
                bindings = [:]
                if tag.kind == .selfClosing, let name = setName {
                    sets.append(EntitySet(name: name, entityType: setType, bindings: [:]))
                    setName = nil
                }
            case ("NavigationPropertyBinding", _):
                if let path = tag.attributes["Path"], let target = tag.attributes["Target"] { bindings[path] = target }
            case ("EntitySet", .close):
                if let name = setName { sets.append(EntitySet(name: name, entityType: setType, bindings: bindings)) }
                setName = nil
            default:
                continue
            }
        }
        guard sawContainer, !sets.isEmpty else {
            throw FixtureError(.invalidData, "the CSDL document has no EntityContainer with entity sets")
        }
        for set in sets where types[set.entityType] == nil {
            throw FixtureError(.invalidData, "entity set \(set.name) names unknown entity type \(set.entityType)")
        }
        for set in sets where types[set.entityType]!.keys.isEmpty {
            throw FixtureError(.invalidData, "entity type \(set.entityType) of entity set \(set.name) has no key")
        }
        self.entityTypes = types
        self.entitySets = sets
    }
}

/// A minimal scanner over the tags of an XML document: enough for CSDL, which is all
/// elements and attributes. Comments, processing instructions and text are skipped.
struct XMLTagScanner: Sequence, IteratorProtocol {
    enum Kind { case open, close, selfClosing }

    struct Tag {
        /// The local name (any `prefix:` removed).
        let name: String
        let kind: Kind
        let attributes: [String: String]
    }

    private let bytes: [UInt8]
    private var index = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    mutating func next() -> Tag? {
        while index < bytes.count {
            guard let open = bytes[index...].firstIndex(of: UInt8(ascii: "<")) else { return nil }
            index = open + 1
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "?") || bytes[index] == UInt8(ascii: "!") {
                // Processing instruction, comment or declaration: skip to its end.
                let terminator: [UInt8] = bytes[index...].starts(with: Array("!--".utf8)) ? Array("-->".utf8) : [UInt8(ascii: ">")]
                index = find(terminator, from: index).map { $0 + terminator.count } ?? bytes.count
                continue
            }
            return readTag()
        }
        return nil
    }

    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        var position = start
        while position + needle.count <= bytes.count {
            if bytes[position..<position + needle.count].elementsEqual(needle) { return position }
            position += 1
        }
        return nil
    }

    private mutating func readTag() -> Tag? {
        var kind = Kind.open
        if bytes[index] == UInt8(ascii: "/") {
            kind = .close
            index += 1
        }
        let nameStart = index
        while index < bytes.count, !isSpace(bytes[index]), bytes[index] != UInt8(ascii: ">"),
            bytes[index] != UInt8(ascii: "/")
        {
            index += 1
        }
        var name = String(decoding: bytes[nameStart..<index], as: UTF8.self)
        if let colon = name.lastIndex(of: ":") { name = String(name[name.index(after: colon)...]) }
        var attributes: [String: String] = [:]
        while index < bytes.count {
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count else { break }
            if bytes[index] == UInt8(ascii: ">") {
                index += 1
                break
            }
            if bytes[index] == UInt8(ascii: "/") {
                kind = .selfClosing
                index += 1
                continue
            }
            let attributeStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "="), !isSpace(bytes[index]),
                bytes[index] != UInt8(ascii: ">")
            {
                index += 1
            }
            let attribute = String(decoding: bytes[attributeStart..<index], as: UTF8.self)
            while index < bytes.count, isSpace(bytes[index]) || bytes[index] == UInt8(ascii: "=") { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                continue
            }
            let quote = bytes[index]
            index += 1
            let valueStart = index
            while index < bytes.count, bytes[index] != quote { index += 1 }
            attributes[attribute] = unescape(String(decoding: bytes[valueStart..<Swift.min(index, bytes.count)], as: UTF8.self))
            index += 1
        }
        return Tag(name: name, kind: kind, attributes: attributes)
    }

    private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

    private func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
