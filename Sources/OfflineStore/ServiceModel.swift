import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// What the offline store needs to know of a service's CSDL (`$metadata`): entity sets, their
/// types' keys and property types, and navigation properties with their targets.
struct ServiceModel: Sendable, Hashable {
    struct NavigationProperty: Sendable, Hashable {
        var name: String
        var targetType: String
        var isCollection: Bool
        var partner: String?
        /// `(property of this type, referenced property of the target type)`.
        var constraints: [(String, String)]

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.name == rhs.name && lhs.targetType == rhs.targetType && lhs.isCollection == rhs.isCollection
                && lhs.partner == rhs.partner && lhs.constraints.map { [$0.0, $0.1] } == rhs.constraints.map { [$0.0, $0.1] }
        }

        func hash(into hasher: inout Hasher) { hasher.combine(name) }
    }

    struct EntityType: Sendable, Hashable {
        var name: String
        var key: [String]
        var propertyTypes: [String: String]
        var propertyOrder: [String]
        var navigation: [String: NavigationProperty]
    }

    struct EntitySet: Sendable, Hashable {
        var name: String
        var entityType: String
        var bindings: [String: String]
    }

    var entityTypes: [String: EntityType] = [:]
    var entitySets: [String: EntitySet] = [:]
    /// Whether the document is OData V2 (`edmx:Edmx Version="1.0"`): its JSON values are written in V2's forms
    /// (`/Date(…)/`, decimals and Int64 as strings), which local queries read by their Edm types.
    var isV2 = false

    func entityType(ofSet set: String) -> EntityType? {
        entitySets[set].flatMap { entityTypes[$0.entityType] }
    }

    /// The entity set a navigation property of `set` leads to.
    func targetSet(from set: String, navigation: String) -> String? {
        guard let source = entitySets[set] else { return nil }
        if let bound = source.bindings[navigation] { return bound }
        guard let type = entityTypes[source.entityType], let nav = type.navigation[navigation] else { return nil }
        return entitySets.values.filter { $0.entityType == nav.targetType }.map(\.name).sorted().first
    }

    /// Parses CSDL XML (V4 `edmx:Edmx`; V2 associations are read for keys and sets only).
    ///
    /// - Throws: `OfflineODataError.invalidMetadata` naming what was wrong.
    static func parse(_ data: Data) throws(OfflineODataError) -> ServiceModel {
        let delegate = CSDLReader()
        let parser = XMLParser(data: data)
        parser.delegate = delegate
        guard parser.parse() else {
            throw OfflineODataError(.invalidMetadata, "the $metadata document is not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "unknown error")")
        }
        var model = delegate.model
        // Resolve alias- or namespace-qualified type names to the qualified names used as keys.
        for (name, set) in model.entitySets where model.entityTypes[set.entityType] == nil {
            let short = set.entityType.split(separator: ".").last.map(String.init) ?? set.entityType
            if let match = model.entityTypes.keys.first(where: { $0.hasSuffix("." + short) }) {
                model.entitySets[name]?.entityType = match
            } else {
                throw OfflineODataError(.invalidMetadata, "entity set '\(name)' has the unknown type '\(set.entityType)'")
            }
        }
        for (name, type) in model.entityTypes where type.key.isEmpty {
            throw OfflineODataError(.invalidMetadata, "entity type '\(name)' has no key")
        }
        guard !model.entitySets.isEmpty else { throw OfflineODataError(.invalidMetadata, "the $metadata document has no entity set") }
        return model
    }
}

private final class CSDLReader: NSObject, XMLParserDelegate {
    var model = ServiceModel()
    private var namespace = ""
    private var currentType: ServiceModel.EntityType?
    private var currentNavigation: ServiceModel.NavigationProperty?
    private var currentSet: ServiceModel.EntitySet?
    private var inKey = false

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?, attributes: [String: String] = [:]) {
        let local = elementName.split(separator: ":").last.map(String.init) ?? elementName
        switch local {
        case "Edmx":
            if attributes["Version"] == "1.0" { model.isV2 = true }
        case "Schema":
            namespace = attributes["Namespace"] ?? ""
        case "EntityType":
            let name = attributes["Name"] ?? ""
            currentType = ServiceModel.EntityType(name: namespace + "." + name, key: [], propertyTypes: [:], propertyOrder: [], navigation: [:])
        case "Key":
            inKey = true
        case "PropertyRef":
            if inKey, let name = attributes["Name"] { currentType?.key.append(name) }
        case "Property":
            if let name = attributes["Name"], currentType != nil {
                currentType?.propertyTypes[name] = attributes["Type"] ?? "Edm.String"
                currentType?.propertyOrder.append(name)
            }
        case "NavigationProperty":
            guard let name = attributes["Name"], currentType != nil else { return }
            var type = attributes["Type"] ?? ""
            var collection = false
            if type.hasPrefix("Collection(") && type.hasSuffix(")") {
                collection = true
                type = String(type.dropFirst("Collection(".count).dropLast())
            }
            currentNavigation = ServiceModel.NavigationProperty(name: name, targetType: type, isCollection: collection, partner: attributes["Partner"], constraints: [])
        case "ReferentialConstraint":
            if let property = attributes["Property"], let referenced = attributes["ReferencedProperty"] {
                currentNavigation?.constraints.append((property, referenced))
            }
        case "EntitySet":
            guard let name = attributes["Name"], let type = attributes["EntityType"] else { return }
            currentSet = ServiceModel.EntitySet(name: name, entityType: type, bindings: [:])
        case "NavigationPropertyBinding":
            if let path = attributes["Path"], let target = attributes["Target"] {
                currentSet?.bindings[path] = target.split(separator: "/").last.map(String.init) ?? target
            }
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        let local = elementName.split(separator: ":").last.map(String.init) ?? elementName
        switch local {
        case "Key":
            inKey = false
        case "NavigationProperty":
            if let navigation = currentNavigation { currentType?.navigation[navigation.name] = navigation }
            currentNavigation = nil
        case "EntityType":
            if let type = currentType { model.entityTypes[type.name] = type }
            currentType = nil
        case "EntitySet":
            if let set = currentSet { model.entitySets[set.name] = set }
            currentSet = nil
        default:
            break
        }
    }
}
