import Foundation
import ODataCore
import ODataMetadata

/// The entity model the fixture serves, read from its CSDL (`$metadata`) document by `ODataMetadata`:
/// entity types with keys, property types and navigation properties, and the entity sets of the
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
        /// Whether the type is a media entity type (`HasStream="true"`): each entity has a media resource, `$value`.
        public let hasStream: Bool

        /// The names of the stream properties (`Edm.Stream`), in declaration order: each is read with
        /// `GET Set(key)/Name` and replaced with `PUT`, like a media resource.
        public var streamProperties: [String] { properties.filter { $0.type == "Edm.Stream" }.map(\.name) }

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

    /// An operation the service declares: an action or function import (`name` the import's), or a bound action or
    /// function (`name` qualified, as a URL names it).
    public struct Operation: Sendable {
        /// The name in the URL.
        public let name: String
        /// An action (`POST`) rather than a function (`GET`).
        public let isAction: Bool
        /// Bound to an entity or collection (its binding parameter is not among ``parameters``).
        public let isBound: Bool
        /// The parameters' names and types in order.
        public let parameters: [(name: String, type: String)]
        /// The return type as written, nil when nothing is returned.
        public let returnType: String?
        /// The entity set of an import's results.
        public let entitySet: String?
    }

    /// The entity types by qualified name.
    public let entityTypes: [String: EntityType]
    /// The operations, imports first, by URL name.
    public let operations: [String: Operation]
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

    /// Reads a model from a CSDL XML document (through `ODataMetadata`).
    /// - Parameter csdl: the `$metadata` document.
    /// - Throws: ``FixtureError`` with code `.invalidData` when the document does not read (the reader's
    ///   error, with the element and its line, is in the message) or has no container with entity sets.
    public init(csdl: String) throws(FixtureError) {
        let document: CSDLDocument
        do {
            document = try CSDLDocument(parsing: Data(csdl.utf8))
        } catch {
            throw FixtureError(.invalidData, "the CSDL document does not read: \(error)")
        }
        var types: [String: EntityType] = [:]
        let byName = document.structuredTypesByName()
        for type in document.schemas.flatMap(\.entityTypes) {
            var chain = [type]
            while let base = chain[0].baseType, let next = byName[base], !chain.contains(where: { $0.qualifiedName == next.qualifiedName }) {
                chain.insert(next, at: 0)
            }
            types[type.qualifiedName] = EntityType(
                qualifiedName: type.qualifiedName, keys: document.key(of: type),
                properties: chain.flatMap(\.properties).map {
                    Property(name: $0.name, type: $0.type, isNullable: $0.nullable != false, maxLength: $0.maxLength.flatMap { Int($0) })
                },
                navigationProperties: chain.flatMap(\.navigationProperties).map {
                    NavigationProperty(
                        name: $0.name, targetType: $0.target, isCollection: $0.isCollection, partner: $0.partner,
                        constraints: $0.referentialConstraints.map { (property: $0.property, referencedProperty: $0.referencedProperty) })
                },
                hasStream: chain.contains { $0.hasStream })
        }
        let sets = document.entitySets.map { set in
            var bindings: [String: String] = [:]
            for binding in set.navigationPropertyBindings where bindings[binding.path] == nil { bindings[binding.path] = binding.targetSetName }
            return EntitySet(name: set.name, entityType: set.entityType, bindings: bindings)
        }
        guard !sets.isEmpty else {
            throw FixtureError(.invalidData, "the CSDL document has no EntityContainer with entity sets")
        }
        for set in sets where types[set.entityType]?.keys.isEmpty ?? true {
            throw FixtureError(.invalidData, "entity type \(set.entityType) of entity set \(set.name) has no key")
        }
        var operations: [String: Operation] = [:]
        let declared = document.schemas.flatMap(\.operations)
        for item in document.schemas.flatMap(\.entityContainers).flatMap(\.operations) where item.kind != "singleton" {
            guard let imported = declared.first(where: { $0.name == item.imports && !$0.isBound }) else { continue }
            operations[item.name] = Operation(
                name: item.name, isAction: item.kind == "action import", isBound: false,
                parameters: imported.parameters.map { ($0.name, $0.type) }, returnType: imported.returnType, entitySet: item.entitySet)
        }
        for operation in declared where operation.isBound {
            operations[operation.name] = Operation(
                name: operation.name, isAction: operation.kind == "action", isBound: true,
                parameters: operation.parameters.dropFirst().map { ($0.name, $0.type) }, returnType: operation.returnType, entitySet: nil)
        }
        self.operations = operations
        self.csdl = csdl
        self.entityTypes = types
        self.entitySets = sets
    }
}
