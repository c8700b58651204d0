import Foundation
import ODataCore

// MARK: - Resolution

/// The `Edm` primitive types a property may have (besides the geography and geometry types).
let knownPrimitiveTypes: Set<String> = [
    "Edm.String", "Edm.Boolean", "Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Single",
    "Edm.Double", "Edm.Decimal", "Edm.Guid", "Edm.Binary", "Edm.DateTimeOffset", "Edm.DateTime", "Edm.Date",
    "Edm.TimeOfDay", "Edm.Time", "Edm.Duration", "Edm.Untyped", "Edm.Stream", "Edm.PrimitiveType",
    // The abstract types and the path types (CSDL 4.01, "Built-In Abstract Types", "Built-In Types for defining
    // Vocabulary Terms"): values of any shape, kept as JSON.
    "Edm.ComplexType", "Edm.EntityType", "Edm.AnnotationPath", "Edm.PropertyPath", "Edm.NavigationPropertyPath",
    "Edm.AnyPropertyPath", "Edm.ModelElementPath",
]

/// Whether `name` is an `Edm` primitive type.
func isKnownPrimitive(_ name: String) -> Bool {
    knownPrimitiveTypes.contains(name) || name.hasPrefix("Edm.Geography") || name.hasPrefix("Edm.Geometry")
}

extension CSDLDocument {
    /// Reads and resolves a `$metadata` document: EDMX 4.0/4.01, or EDMX 1.0 with OData V2 CSDL (its `sap:`
    /// annotations are read past).
    ///
    /// Resolution replaces aliases by namespaces, resolves every property type, base type and navigation target,
    /// resolves V2 navigation properties through their associations (target, multiplicity, referential constraint)
    /// and derives V2 navigation property bindings from the association sets.
    /// - Parameter data: the document's bytes (UTF-8).
    /// - Throws: ``MetadataError`` naming what was wrong, the element and its line: the document is not
    ///   well-formed, not EDMX, of an unsupported version, lacks a required attribute, or names a type, key
    ///   property or association end that is not there.
    public init(parsing data: Data) throws(MetadataError) {
        self = try CSDLParser.parse(data).resolved(allowingUnresolvedPropertyTypes: false)
    }

    /// Reads and resolves a `$metadata` document as ``init(parsing:)`` does, with the documents it includes through
    /// `edmx:Reference` (vocabularies such as `Org.OData.Core.V1`, or another service's types) given as bytes:
    /// their schemas are read too (``CSDLSchema/isReferenced``), so that a property of one of their types is typed.
    /// A type of a referenced namespace that none of them defines is kept untyped with a warning.
    /// - Parameters:
    ///   - data: the document's bytes (UTF-8).
    ///   - references: the referenced documents' bytes, in any order.
    ///   - allowingUnresolvedPropertyTypes: keep properties of types that none of them defines unresolved (as
    ///     ``init(parsing:allowingUnresolvedPropertyTypes:)``).
    /// - Throws: ``MetadataError`` as ``init(parsing:)``; an error in a referenced document names its element and
    ///   line in that document.
    public init(parsing data: Data, references: [Data], allowingUnresolvedPropertyTypes: Bool = false) throws(MetadataError) {
        var document = try CSDLParser.parse(data)
        for reference in references {
            let referenced = try CSDLParser.parse(reference)
            for var schema in referenced.schemas {
                schema.isReferenced = true
                if !document.schemas.contains(where: { $0.namespace == schema.namespace }) {
                    document.schemas.append(schema)
                }
            }
            for (alias, namespace) in referenced.aliases where document.aliases[alias] == nil {
                document.aliases[alias] = namespace
            }
            document.referencedNamespaces.formUnion(referenced.referencedNamespaces)
        }
        self = try document.resolved(allowingUnresolvedPropertyTypes: allowingUnresolvedPropertyTypes)
    }

    /// Reads and resolves a `$metadata` document as ``init(parsing:)`` does, except that a structural property whose
    /// type names nothing in the document (a type from a document the service includes with `edmx:Reference`)
    /// is kept with its written type and ``CSDLProperty/resolved`` `nil` instead of refusing the document: for a
    /// reader that keeps such values as they come (the offline store), unlike one that must type them (the proxy
    /// generator).
    /// - Parameters:
    ///   - data: the document's bytes (UTF-8).
    ///   - allowingUnresolvedPropertyTypes: keep properties of unknown types unresolved.
    /// - Throws: ``MetadataError`` as ``init(parsing:)``, apart from the properties' types.
    public init(parsing data: Data, allowingUnresolvedPropertyTypes: Bool) throws(MetadataError) {
        self = try CSDLParser.parse(data).resolved(allowingUnresolvedPropertyTypes: allowingUnresolvedPropertyTypes)
    }

    /// What a qualified name denotes.
    enum Definition {
        case entity, complex, enumeration, typeDefinition(String)
    }

    /// The definitions by qualified name; a name defined twice is an error at the second definition.
    func definitions() throws(MetadataError) -> [String: Definition] {
        var result: [String: Definition] = [:]
        func add(_ name: String, _ definition: Definition, _ location: CSDLLocation) throws(MetadataError) {
            guard result[name] == nil else {
                throw MetadataError(
                    .invalidDefinition, element: location.element, line: location.line,
                    "the type `\(name)` is defined twice")
            }
            result[name] = definition
        }
        for schema in schemas {
            for type in schema.entityTypes { try add(type.qualifiedName, .entity, type.location) }
            for type in schema.complexTypes { try add(type.qualifiedName, .complex, type.location) }
            for type in schema.enumTypes { try add(type.qualifiedName, .enumeration, type.location) }
            for type in schema.typeDefinitions {
                try add(type.qualifiedName, .typeDefinition(canonical(type.underlyingType)), type.location)
            }
        }
        return result
    }

    /// A resolved copy: every type reference checked and resolved, V2 navigation properties resolved.
    func resolved(allowingUnresolvedPropertyTypes: Bool) throws(MetadataError) -> CSDLDocument {
        var document = self
        let definitions = try definitions()
        var associations: [String: CSDLAssociation] = [:]
        for schema in schemas {
            for association in schema.associations {
                let name = association.namespace + "." + association.name
                if associations[name] == nil { associations[name] = association }
            }
            for definition in schema.typeDefinitions where !canonical(definition.underlyingType).hasPrefix("Edm.") {
                throw MetadataError(
                    .unknownType, element: definition.location.element, line: definition.location.line,
                    "the underlying type `\(definition.underlyingType)` is not an Edm primitive type")
            }
        }
        var warnings: [MetadataWarning] = []
        func warn(_ location: CSDLLocation, _ message: String) {
            warnings.append(MetadataWarning(element: location.element, line: location.line, message: message))
        }

        /// The type a written reference resolves to, and what the reader had to do to accept it (for a warning);
        /// nil when it names nothing the document defines or may leave to a referenced one.
        func resolveType(_ written: String) -> (type: CSDLTypeReference, weakened: String?)? {
            let trimmed = written.trimmedOfWhitespace
            if trimmed.hasPrefix("Collection("), trimmed.hasSuffix(")") {
                let inner = trimmed.dropFirst("Collection(".count).dropLast()
                return resolveType(String(inner)).map { (.collection($0.type), $0.weakened) }
            }
            let name = canonical(trimmed)
            if name == "Edm.Float" {
                return (.primitive("Edm.Double"), "`Edm.Float` is no OData type; read as Edm.Double (ABAP CDS services "
                    + "publish it for a binary floating-point number)")
            }
            if name.hasPrefix("Edm.") {
                if isKnownPrimitive(name) { return (.primitive(name), nil) }
                return (.primitive("Edm.Untyped"), "the primitive type `\(name)` is not one this reader knows; its "
                    + "values are kept as they come (JSON)")
            }
            switch definitions[name] {
            case .entity, .complex: return (.structured(name), nil)
            case .enumeration: return (.enumType(name), nil)
            case .typeDefinition(let underlying): return resolveType(underlying)
            case nil:
                guard let dot = name.lastIndex(of: "."), referencedNamespaces.contains(String(name[..<dot])) else {
                    return nil
                }
                return (.primitive("Edm.Untyped"), "the type `\(name)` is from the referenced namespace `"
                    + "\(name[..<dot])`, whose document was not given; its values are kept as they come (JSON)")
            }
        }

        /// V2: the entity type of the entity set that plays `role` in an association set of `association`.
        func entityTypeOfSet(playing role: String, in association: String) -> String? {
            let containers = schemas.flatMap(\.entityContainers)
            for container in containers {
                for associationSet in container.associationSets where canonical(associationSet.association) == association {
                    guard let setName = associationSet.ends.first(where: { $0.role == role })?.entitySet,
                        let set = container.entitySets.first(where: { $0.name == setName })
                    else { continue }
                    let type = canonical(set.entityType)
                    if case .entity = definitions[type] { return type }
                }
            }
            return nil
        }

        func resolveStructured(_ type: inout CSDLStructuredType) throws(MetadataError) {
            if let base = type.baseType {
                let name = canonical(base)
                switch definitions[name] {
                case .entity where type.isEntity, .complex where !type.isEntity:
                    type.baseType = name
                default:
                    throw MetadataError(
                        .unknownType, element: type.location.element, line: type.location.line,
                        "the base type `\(base)` names no \(type.isEntity ? "entity" : "complex") type in the document")
                }
            }
            var names: Set<String> = []
            for index in type.properties.indices {
                let property = type.properties[index]
                guard names.insert(property.name).inserted else {
                    throw MetadataError(
                        .invalidDefinition, element: property.location.element, line: property.location.line,
                        "`\(property.name)` is declared twice in `\(type.qualifiedName)`")
                }
                let resolved = resolveType(property.type)
                if resolved == nil, allowingUnresolvedPropertyTypes {
                    type.properties[index].type = canonicalTypeText(property.type)
                    continue
                }
                guard let resolved else {
                    throw MetadataError(
                        .unknownType, element: property.location.element, line: property.location.line,
                        "the type `\(property.type)` names no type in the document")
                }
                let text = canonicalTypeText(property.type)
                // `Edm.Float` is read as the type it means, for every reader of the model (the offline store's columns).
                type.properties[index].type =
                    switch text {
                    case "Edm.Float": "Edm.Double"
                    case "Collection(Edm.Float)": "Collection(Edm.Double)"
                    default: text
                    }
                type.properties[index].resolved = resolved.type
                if let weakened = resolved.weakened { warn(property.location, weakened) }
            }
            for index in type.navigationProperties.indices {
                var navigation = type.navigationProperties[index]
                let location = navigation.location
                guard names.insert(navigation.name).inserted else {
                    throw MetadataError(
                        .invalidDefinition, element: location.element, line: location.line,
                        "`\(navigation.name)` is declared twice in `\(type.qualifiedName)`")
                }
                if let written = navigation.type {
                    var target = written.trimmedOfWhitespace
                    if target.hasPrefix("Collection("), target.hasSuffix(")") {
                        navigation.isCollection = true
                        target = String(target.dropFirst("Collection(".count).dropLast())
                    }
                    target = canonical(target)
                    guard case .entity = definitions[target] else {
                        throw MetadataError(
                            .unknownType, element: location.element, line: location.line,
                            "the type `\(written)` names no entity type in the document")
                    }
                    navigation.target = target
                } else {
                    let relationship = canonical(navigation.relationship ?? "")
                    guard let association = associations[relationship] else {
                        throw MetadataError(
                            .unresolvedAssociation, element: location.element, line: location.line,
                            "the Relationship `\(navigation.relationship ?? "")` names no association in the document")
                    }
                    guard association.ends.contains(where: { $0.role == navigation.fromRole }) else {
                        throw MetadataError(
                            .unresolvedAssociation, element: location.element, line: location.line,
                            "the FromRole `\(navigation.fromRole ?? "")` is no end of `\(relationship)`")
                    }
                    guard let end = association.ends.first(where: { $0.role == navigation.toRole }) else {
                        throw MetadataError(
                            .unresolvedAssociation, element: location.element, line: location.line,
                            "the ToRole `\(navigation.toRole ?? "")` is no end of `\(relationship)`")
                    }
                    var target = canonical(end.type)
                    let isEntity = if case .entity = definitions[target] { true } else { false }
                    if isEntity {
                        // As declared.
                    } else if let viaSet = entityTypeOfSet(playing: end.role, in: relationship) {
                        // Some SAP services name the entity set where the End's type belongs; the association set
                        // says which set (and so which type) plays the role, as SAP's own tools read it.
                        warn(end.location, "the End's Type `\(end.type)` names no entity type; read as `\(viaSet)`, the "
                            + "type of the entity set that plays the role `\(end.role)` in the association set")
                        target = viaSet
                    } else {
                        throw MetadataError(
                            .unresolvedAssociation, element: location.element, line: location.line,
                            "the end `\(end.role)` of `\(relationship)` has the type `\(end.type)`, no entity type")
                    }
                    navigation.target = target
                    navigation.isCollection = end.multiplicity.trimmingCharacters(in: .whitespaces) == "*"
                    navigation.relationship = relationship
                    // This side the dependent, the target the principal: the association's constraint is this
                    // navigation property's foreign key, as a V4 `ReferentialConstraint` would say it.
                    if let constraint = association.referentialConstraint,
                        constraint.dependent.role == navigation.fromRole, constraint.principal.role == navigation.toRole,
                        constraint.dependent.properties.count == constraint.principal.properties.count
                    {
                        navigation.referentialConstraints = zip(
                            constraint.dependent.properties, constraint.principal.properties
                        ).map { CSDLReferentialConstraint(property: $0, referencedProperty: $1) }
                    }
                }
                type.navigationProperties[index] = navigation
            }
        }

        for schemaIndex in document.schemas.indices {
            for index in document.schemas[schemaIndex].entityTypes.indices {
                try resolveStructured(&document.schemas[schemaIndex].entityTypes[index])
            }
            for index in document.schemas[schemaIndex].complexTypes.indices {
                try resolveStructured(&document.schemas[schemaIndex].complexTypes[index])
            }
        }

        /// A parameter's or return type's reference, as a property's is resolved; one that names nothing leaves the
        /// operation untyped (nil, with a warning) rather than refusing the document for one operation (the SAP Cloud
        /// SDK's V4 test service has such a parameter).
        func resolveSignatureType(_ written: String, of operation: String, at location: CSDLLocation) -> CSDLTypeReference? {
            guard let resolved = resolveType(written) else {
                warn(location, "the type `\(written)` names no type in the document; the operation `\(operation)` cannot be typed")
                return nil
            }
            if let weakened = resolved.weakened { warn(location, weakened) }
            return resolved.type
        }
        func resolveSignature(_ operation: inout CSDLOperation) {
            for index in operation.parameters.indices {
                let parameter = operation.parameters[index]
                operation.parameters[index].resolved = resolveSignatureType(parameter.type, of: operation.name, at: parameter.location)
                operation.parameters[index].type = canonicalTypeText(parameter.type)
            }
            if let returnType = operation.returnType, let location = operation.location {
                operation.returnResolved = resolveSignatureType(returnType, of: operation.name, at: location)
                operation.returnType = canonicalTypeText(returnType)
            }
            operation.imports = operation.imports.map(canonical)
        }
        for schemaIndex in document.schemas.indices {
            for index in document.schemas[schemaIndex].operations.indices {
                resolveSignature(&document.schemas[schemaIndex].operations[index])
            }
            for containerIndex in document.schemas[schemaIndex].entityContainers.indices {
                for index in document.schemas[schemaIndex].entityContainers[containerIndex].operations.indices {
                    resolveSignature(&document.schemas[schemaIndex].entityContainers[containerIndex].operations[index])
                }
            }
        }

        // Base type chains: no cycles; flattened property names unique; every concrete entity type has a key.
        let structured = document.structuredTypesByName()
        for schema in document.schemas {
            for type in schema.entityTypes + schema.complexTypes {
                let chain = try document.baseChain(of: type, in: structured)
                var names: Set<String> = []
                for member in chain {
                    for name in member.properties.map(\.name) + member.navigationProperties.map(\.name)
                    where !names.insert(name).inserted {
                        throw MetadataError(
                            .invalidDefinition, element: type.location.element, line: type.location.line,
                            "`\(name)` is declared both in `\(type.qualifiedName)` and in a base type")
                    }
                }
                // A collection of contained entities is addressed by key (`Parent(1)/Items(7)`): its target type
                // needs one (CSDL 4.01, "Key"), and without it the document is not CSDL.
                for navigation in type.navigationProperties where navigation.containsTarget && navigation.isCollection {
                    if let target = structured[navigation.target], document.key(of: target).isEmpty {
                        throw MetadataError(
                            .missingKey, element: navigation.location.element, line: navigation.location.line,
                            "the contained collection's type `\(target.qualifiedName)` has no key, and no base type "
                                + "that has one (its members are addressed by key)")
                    }
                }
                guard type.isEntity else { continue }
                // An entity type without a key is valid where no key is needed (a singleton's type, a single-valued
                // or containment navigation's target, a base type: CSDL 4.01, "Key"); where one is needed, below.
                guard let key = chain.reversed().lazy.compactMap(\.key).first(where: { !$0.isEmpty }) else { continue }
                let properties = chain.flatMap(\.properties)
                for name in key where !properties.contains(where: { $0.name == name }) {
                    throw MetadataError(
                        .invalidDefinition, element: type.location.element, line: type.location.line,
                        "the key property `\(name)` is no structural property of `\(type.qualifiedName)`")
                }
            }
            for container in schema.entityContainers {
                for set in container.entitySets {
                    let name = canonical(set.entityType)
                    guard case .entity = definitions[name], let type = structured[name] else {
                        throw MetadataError(
                            .unknownEntitySetType, element: set.location.element, line: set.location.line,
                            "the entity type `\(set.entityType)` is not in the document")
                    }
                    // The members of an entity set are addressed by key; without one the set can still be read
                    // and added to (the SAP Cloud SDK's generator keeps such a set too). What needs the key refuses
                    // it there: the offline store's defining query, the generator's by-key methods.
                    if document.key(of: type).isEmpty {
                        warn(set.location, "the entity set's type `\(type.qualifiedName)` has no key: its members "
                            + "cannot be addressed by key (read, created and queried only)")
                    }
                }
            }
        }
        for schemaIndex in document.schemas.indices {
            for containerIndex in document.schemas[schemaIndex].entityContainers.indices {
                for setIndex in document.schemas[schemaIndex].entityContainers[containerIndex].entitySets.indices {
                    let written = document.schemas[schemaIndex].entityContainers[containerIndex].entitySets[setIndex]
                        .entityType
                    document.schemas[schemaIndex].entityContainers[containerIndex].entitySets[setIndex].entityType =
                        canonical(written)
                }
            }
        }
        document.deriveV2Bindings()
        document.warnings = warnings
        return document
    }
}

extension String {
    /// The text without leading and trailing white space and newlines; most names have none, and are returned
    /// as they are without Foundation's (slow) trimming.
    var trimmedOfWhitespace: String {
        guard let first = utf8.first, let last = utf8.last else { return self }
        // Printable ASCII at both ends (no space): nothing to trim.
        if first > 0x20, first < 0x80, last > 0x20, last < 0x80 { return self }
        return trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
