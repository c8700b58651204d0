import Foundation
import ODataCore
import ODataMetadata

/// What the offline store needs to know of a service's CSDL (`$metadata`, read by `ODataMetadata`): entity sets,
/// their types' keys and property types, and navigation properties with their targets.
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
        /// A media entity type (`HasStream`): each entity has a media resource (`$value`).
        var hasStream = false

        /// The stream properties (`Edm.Stream`), in declaration order: each a media resource of its own
        /// (`Set(key)/Name`), kept apart from the entity's data.
        var streamProperties: [String] { propertyOrder.filter { propertyTypes[$0] == "Edm.Stream" } }
    }

    struct EntitySet: Sendable, Hashable {
        var name: String
        var entityType: String
        var bindings: [String: String]
    }

    var entityTypes: [String: EntityType] = [:]
    var entitySets: [String: EntitySet] = [:]
    /// What the `$metadata` reader accepted in a weaker form than written (`line N: <Element>: warning: …`), logged
    /// at the initial download.
    var metadataWarnings: [String] = []
    /// The entity sets whose type has no key, with that type: not in ``entitySets`` (see ``definingQueryProblem(set:)``).
    var keylessSets: [String: String] = [:]
    /// The action and function imports (V2 function imports): a path that starts with one calls an operation.
    var importNames: Set<String> = []
    /// The bound actions and functions, qualified by namespace and by alias: a path segment after the first that
    /// names one calls an operation. A local request that calls one is refused (``OfflineODataError/operationNotAvailableOffline``).
    var boundOperationNames: Set<String> = []
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

    /// An empty model (no store configured yet).
    init() {}

    /// Reads `$metadata` through `ODataMetadata` (V4, and V2 with its associations, which give navigation
    /// properties their targets, multiplicities, referential constraints and, through association sets, their
    /// entity sets) and keeps the offline store's view of it.
    ///
    /// - Throws: `OfflineODataError.invalidMetadata` naming what was wrong (the element and its line).
    /// - Parameter references: the documents the service includes with `edmx:Reference` that the user gave
    ///   (``OfflineODataParameters/metadataReferences``): their types type the properties that use them.
    static func parse(_ data: Data, references: [Data] = []) throws(OfflineODataError) -> ServiceModel {
        let document: CSDLDocument
        do {
            // A property typed from a referenced document not given is stored as it comes, as before this reader.
            document = try CSDLDocument(parsing: data, references: references, allowingUnresolvedPropertyTypes: true)
        } catch {
            throw OfflineODataError(.invalidMetadata, "the $metadata document is not usable: \(error)", underlying: error)
        }
        var model = try ServiceModel(document)
        model.metadataWarnings = document.warnings.map(\.description)
        return model
    }

    /// The view of a resolved document: entity types with their base types' keys and properties flattened in.
    init(_ document: CSDLDocument) throws(OfflineODataError) {
        isV2 = document.version == .v2
        let byName = document.structuredTypesByName()
        for schema in document.schemas {
            for type in schema.entityTypes {
                var chain = [type]
                while let base = chain[0].baseType, let next = byName[base], !chain.contains(where: { $0.qualifiedName == next.qualifiedName }) {
                    chain.insert(next, at: 0)
                }
                var entityType = EntityType(name: type.qualifiedName, key: document.key(of: type), propertyTypes: [:], propertyOrder: [], navigation: [:])
                for property in chain.flatMap(\.properties) {
                    entityType.propertyTypes[property.name] = Self.storedType(property)
                    entityType.propertyOrder.append(property.name)
                }
                for navigation in chain.flatMap(\.navigationProperties) {
                    var view = NavigationProperty(name: navigation.name, targetType: navigation.target, isCollection: navigation.isCollection,
                                                  partner: navigation.partner,
                                                  constraints: navigation.referentialConstraints.map { ($0.property, $0.referencedProperty) })
                    // V2, this type the principal: the association's constraint is the foreign key the targets hold.
                    if let relationship = navigation.relationship, let constraint = document.association(named: relationship)?.referentialConstraint,
                       constraint.principal.role == navigation.fromRole, constraint.dependent.role == navigation.toRole,
                       constraint.principal.properties.count == constraint.dependent.properties.count {
                        view.targetConstraints = Array(zip(constraint.dependent.properties, constraint.principal.properties))
                    }
                    entityType.navigation[navigation.name] = view
                }
                entityType.hasStream = chain.contains { $0.hasStream }
                entityTypes[entityType.name] = entityType
            }
        }
        for container in document.schemas.flatMap(\.entityContainers) {
            for operation in container.operations where operation.kind != "singleton" { importNames.insert(operation.name) }
        }
        for schema in document.schemas {
            for operation in schema.operations where operation.isBound {
                boundOperationNames.insert(operation.name)
                if let alias = schema.alias { boundOperationNames.insert(alias + operation.name.dropFirst(schema.namespace.count)) }
            }
        }
        for set in document.entitySets {
            guard let type = entityTypes[set.entityType] else { continue }
            // The store keeps entities by key: a set whose type has none (valid CSDL, read with a warning) cannot be
            // downloaded, and a defining query over it says so (`definingQueryProblem`); the rest of the service can.
            guard !type.key.isEmpty else {
                keylessSets[set.name] = type.name
                continue
            }
            var bindings: [String: String] = [:]
            for binding in set.navigationPropertyBindings where bindings[binding.path] == nil { bindings[binding.path] = binding.targetSetName }
            entitySets[set.name] = EntitySet(name: set.name, entityType: set.entityType, bindings: bindings)
        }
        guard !entitySets.isEmpty else { throw OfflineODataError(.invalidMetadata, "the $metadata document has no entity set with a key") }
    }

    /// The type a property's values are read by in local queries: a type definition's underlying primitive type (of the
    /// document, or of a referenced document given in ``OfflineODataParameters/metadataReferences``), else the type as
    /// written (an enum, a complex type, a type of a referenced document not given: kept as it comes).
    static func storedType(_ property: CSDLProperty) -> String {
        guard !property.type.hasPrefix("Edm."), !property.type.hasPrefix("Collection(Edm.") else { return property.type }
        switch property.resolved {
        case .primitive(let name)? where name != "Edm.Untyped": return name
        case .collection(.primitive(let name))? where name != "Edm.Untyped": return "Collection(\(name))"
        default: return property.type
        }
    }

    /// Refuses a local request whose path calls an operation of the service (an import first, or a bound operation after
    /// an entity or collection): the back end computes its effect, so the store neither answers nor queues it.
    /// The path is looked at as text: a call's parameters (`Name(P=@p)`, `Name()`) are no key predicate.
    func refuseOperation(_ resourcePath: String, method: String) throws(OfflineODataError) {
        guard !importNames.isEmpty || !boundOperationNames.isEmpty else { return }
        for (index, segment) in resourcePath.split(separator: "/").enumerated() {
            let name = String(segment.prefix { $0 != "(" })
            guard index == 0 ? importNames.contains(name) : boundOperationNames.contains(name) else { continue }
            throw OfflineODataError(
                .operationNotAvailableOffline,
                "\(method) '\(name)' calls an operation of the service; the offline store neither answers nor queues operations: call it through an online store")
        }
    }

    /// Why a defining query over `set` cannot be downloaded, or nil when it can.
    func definingQueryProblem(set: String) -> String? {
        if entitySets[set] != nil { return nil }
        if let type = keylessSets[set] {
            return "the entity set '\(set)' has the type '\(type)', which has no key: the offline store keeps entities by key"
        }
        return "'\(set)' is not an entity set of the service"
    }
}
