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
        /// OData V2, this type the principal of the association: `(property of the target type,
        /// referenced property of this type)`, the foreign key the targets hold.
        var targetConstraints: [(String, String)] = []

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.name == rhs.name && lhs.targetType == rhs.targetType && lhs.isCollection == rhs.isCollection
                && lhs.partner == rhs.partner && lhs.constraints.map { [$0.0, $0.1] } == rhs.constraints.map { [$0.0, $0.1] }
                && lhs.targetConstraints.map { [$0.0, $0.1] } == rhs.targetConstraints.map { [$0.0, $0.1] }
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

    /// Parses CSDL XML: V4 `edmx:Edmx`, and V2 (EDMX 1.0) with its property types (`Edm.DateTime`,
    /// `Edm.Decimal`, …) and its associations, which give navigation properties their targets,
    /// multiplicities, referential constraints and, through association sets, their entity sets.
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
        try delegate.resolveAssociations(into: &model)
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

    // OData V2: navigation properties name an association and roles; associations are read after.
    private struct PendingNavigation { var type: String; var name: String; var relationship: String; var from: String; var to: String }
    private struct Association {
        var ends: [String: (type: String, many: Bool)] = [:]
        var principal: (role: String, properties: [String])?
        var dependent: (role: String, properties: [String])?
    }
    private var pending: [PendingNavigation] = []
    private var associations: [String: Association] = [:]
    /// Association name → role → entity set.
    private var associationSets: [String: [String: String]] = [:]
    private var currentAssociation: (name: String, value: Association)?
    private var currentAssociationSet: String?
    private var constraintRole: (role: String, isPrincipal: Bool)?
    private var constraintProperties: [String] = []

    func resolveAssociations(into model: inout ServiceModel) throws(OfflineODataError) {
        for navigation in pending {
            let short = navigation.relationship.split(separator: ".").last.map(String.init) ?? navigation.relationship
            guard let association = associations[navigation.relationship] ?? associations.first(where: { $0.key.hasSuffix("." + short) })?.value,
                  let to = association.ends[navigation.to], association.ends[navigation.from] != nil
            else {
                throw OfflineODataError(.invalidMetadata, "navigation property '\(navigation.name)' of '\(navigation.type)' names the unknown association or role '\(navigation.relationship)'")
            }
            var property = ServiceModel.NavigationProperty(name: navigation.name, targetType: to.type, isCollection: to.many, partner: nil, constraints: [])
            if let principal = association.principal, let dependent = association.dependent, principal.properties.count == dependent.properties.count {
                let pairs = Array(zip(dependent.properties, principal.properties))
                if navigation.from == dependent.role && navigation.to == principal.role {
                    property.constraints = pairs
                } else if navigation.from == principal.role && navigation.to == dependent.role {
                    property.targetConstraints = pairs
                }
            }
            model.entityTypes[navigation.type]?.navigation[navigation.name] = property
            let name = associations[navigation.relationship] != nil ? navigation.relationship : (associations.first { $0.key.hasSuffix("." + short) }?.key ?? "")
            if let roles = associationSets[name] ?? associationSets[short], let source = roles[navigation.from], let target = roles[navigation.to],
               model.entitySets[source]?.bindings[navigation.name] == nil {
                model.entitySets[source]?.bindings[navigation.name] = target
            }
        }
    }

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
            if constraintRole != nil, let name = attributes["Name"] { constraintProperties.append(name) }
        case "Association":
            currentAssociation = (namespace + "." + (attributes["Name"] ?? ""), Association())
        case "AssociationSet":
            currentAssociationSet = attributes["Association"]
        case "End":
            guard let role = attributes["Role"] else { return }
            if let type = attributes["Type"], currentAssociation != nil {
                currentAssociation?.value.ends[role] = (type, attributes["Multiplicity"] == "*")
            } else if let set = attributes["EntitySet"], let association = currentAssociationSet {
                associationSets[association, default: [:]][role] = set
                let short = association.split(separator: ".").last.map(String.init) ?? association
                associationSets[short, default: [:]][role] = set
            }
        case "Principal", "Dependent":
            if currentAssociation != nil, let role = attributes["Role"] {
                constraintRole = (role, local == "Principal")
                constraintProperties = []
            }
        case "Property":
            if let name = attributes["Name"], currentType != nil {
                currentType?.propertyTypes[name] = attributes["Type"] ?? "Edm.String"
                currentType?.propertyOrder.append(name)
            }
        case "NavigationProperty":
            guard let name = attributes["Name"], let typeName = currentType?.name else { return }
            if attributes["Type"] == nil, let relationship = attributes["Relationship"], let from = attributes["FromRole"], let to = attributes["ToRole"] {
                pending.append(PendingNavigation(type: typeName, name: name, relationship: relationship, from: from, to: to))
                return
            }
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
        case "Association":
            if let (name, association) = currentAssociation { associations[name] = association }
            currentAssociation = nil
        case "AssociationSet":
            currentAssociationSet = nil
        case "Principal", "Dependent":
            if let (role, isPrincipal) = constraintRole {
                if isPrincipal {
                    currentAssociation?.value.principal = (role, constraintProperties)
                } else {
                    currentAssociation?.value.dependent = (role, constraintProperties)
                }
            }
            constraintRole = nil
        default:
            break
        }
    }
}
