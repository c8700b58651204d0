import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads a `$metadata` document (EDMX 4.0/4.01, or EDMX 1.0 with OData V2 CSDL) into a ``CSDLDocument``, then
/// resolves it: aliases replaced by namespaces, type references checked, V2 navigation properties resolved through
/// their associations. Every problem is a ``GeneratorError`` naming the element and its line.
final class CSDLParser: NSObject, XMLParserDelegate {
    private var document = CSDLDocument()
    private var failure: GeneratorError?
    /// The local names of the open elements, outermost first.
    private var stack: [String] = []
    private var sawRoot = false
    private var schemaIndex: Int?
    private var schemaDepth = 0
    private var currentType: CSDLStructuredType?
    private var typeDepth = 0
    private var currentEnum: CSDLEnumType?
    private var enumDepth = 0
    private var currentAssociation: CSDLAssociation?
    private var associationDepth = 0
    private var currentContainer: CSDLEntityContainer?
    private var containerDepth = 0
    private var keyDepth = 0
    /// The document's bytes and the offsets where its lines start, to find the line where a start tag begins
    /// (XMLParser reports the position after the tag's name and attributes, which may be lines later).
    private var bytes: [UInt8] = []
    private var lineStarts: [Int] = [0]

    /// Parses and resolves a document.
    static func parse(_ data: Data) throws(GeneratorError) -> CSDLDocument {
        // FoundationXML (libxml2 underneath) can trap on names that are not UTF-8; $metadata is UTF-8, so anything
        // else is rejected before the XML parser sees it.
        if let offset = invalidUTF8Offset(data) {
            let line = data.prefix(offset).reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
            throw GeneratorError(
                .malformedXML, element: "document", line: line,
                "the document is not UTF-8 (an invalid byte at offset \(offset))")
        }
        let delegate = CSDLParser()
        delegate.bytes = Array(data)
        for (offset, byte) in delegate.bytes.enumerated() where byte == 0x0A { delegate.lineStarts.append(offset + 1) }
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = false
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        parser.delegate = delegate
        let succeeded = parser.parse()
        if let failure = delegate.failure { throw failure }
        if !succeeded {
            let code = (parser.parserError as NSError?)?.code ?? 0
            throw GeneratorError(
                .malformedXML, element: delegate.stack.last.map { "<\($0)>" } ?? "document", line: parser.lineNumber,
                "the XML parser failed (XMLParser error \(code))")
        }
        if !delegate.sawRoot {
            throw GeneratorError(.malformedXML, element: "document", line: 1, "the document has no root element")
        }
        return try delegate.document.resolved()
    }

    // MARK: - XMLParserDelegate

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
    ) {
        guard failure == nil else { return }
        let local = Self.localName(elementName)
        let parent = stack.last
        stack.append(local)
        let line = startLine(line: parser.lineNumber, column: parser.columnNumber)
        let text = attributeDict["Name"].map { "<\(elementName) Name=\"\($0)\">" } ?? "<\(elementName)>"
        let location = CSDLLocation(element: text, line: line)
        do {
            try start(local, parent: parent, attributes: attributeDict, at: location)
        } catch {
            failure = error
            parser.abortParsing()
        }
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
    ) {
        guard failure == nil else { return }
        let depth = stack.count
        if let type = currentType, depth == typeDepth, let index = schemaIndex {
            if type.isEntity {
                document.schemas[index].entityTypes.append(type)
            } else {
                document.schemas[index].complexTypes.append(type)
            }
            currentType = nil
        } else if let enumType = currentEnum, depth == enumDepth, let index = schemaIndex {
            document.schemas[index].enumTypes.append(enumType)
            currentEnum = nil
        } else if let association = currentAssociation, depth == associationDepth, let index = schemaIndex {
            document.schemas[index].associations.append(association)
            currentAssociation = nil
        } else if let container = currentContainer, depth == containerDepth, let index = schemaIndex {
            document.schemas[index].entityContainers.append(container)
            currentContainer = nil
        } else if depth == keyDepth {
            keyDepth = 0
        } else if schemaIndex != nil, depth == schemaDepth {
            schemaIndex = nil
        }
        if !stack.isEmpty { stack.removeLast() }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        guard failure == nil else { return }
        let code = (parseError as NSError).code
        failure = GeneratorError(
            .malformedXML, element: stack.last.map { "<\($0)>" } ?? "document", line: parser.lineNumber,
            "the XML parser failed (XMLParser error \(code))")
        // Stop at the first error: libxml2 would recover and go on, and FoundationXML can trap on what follows.
        parser.abortParsing()
    }

    /// The line of the `<` that opens the start tag XMLParser is at (`line`, `column`: inside that tag).
    private func startLine(line: Int, column: Int) -> Int {
        guard line >= 1, line <= lineStarts.count, !bytes.isEmpty else { return line }
        var offset = min(bytes.count - 1, lineStarts[line - 1] + max(0, column - 1))
        var result = line
        while offset >= 0, bytes[offset] != UInt8(ascii: "<") {
            if bytes[offset] == 0x0A, offset < lineStarts[line - 1] { result -= 1 }
            offset -= 1
        }
        return max(1, result)
    }

    /// The offset of the first byte that is not valid UTF-8, or nil.
    private static func invalidUTF8Offset(_ data: Data) -> Int? {
        var decoder = UTF8()
        var iterator = data.makeIterator()
        var offset = 0
        var consumed = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                offset += UTF8.width(scalar)
                consumed = offset
            case .emptyInput:
                return nil
            case .error:
                return consumed
            }
        }
    }

    // MARK: - Elements

    private static func localName(_ name: String) -> String {
        guard let colon = name.lastIndex(of: ":") else { return name }
        return String(name[name.index(after: colon)...])
    }

    /// An attribute by its local name, whatever its prefix (`m:DataServiceVersion`).
    private static func prefixed(_ local: String, _ attributes: [String: String]) -> String? {
        if let value = attributes[local] { return value }
        for key in attributes.keys.sorted() where localName(key) == local { return attributes[key] }
        return nil
    }

    private static func required(
        _ name: String, _ attributes: [String: String], _ location: CSDLLocation
    ) throws(GeneratorError) -> String {
        guard let value = attributes[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            throw GeneratorError(
                .missingAttribute, element: location.element, line: location.line,
                "the required attribute \(name) is missing or empty")
        }
        return value
    }

    private static func bool(_ value: String?) -> Bool? {
        switch value?.lowercased() {
        case "true", "1": true
        case "false", "0": false
        default: nil
        }
    }

    private func start(
        _ local: String, parent: String?, attributes: [String: String], at location: CSDLLocation
    ) throws(GeneratorError) {
        guard sawRoot else {
            sawRoot = true
            guard local == "Edmx" else {
                throw GeneratorError(
                    .notEDMX, element: location.element, line: location.line,
                    "the root element is \(location.element), not edmx:Edmx")
            }
            let version = try Self.required("Version", attributes, location)
            switch version {
            case "4.0", "4.01":
                document.family = .v4
                document.versionText = version
            case "1.0":
                document.family = .v2
                document.versionText = "2.0"
            default:
                throw GeneratorError(
                    .unsupportedVersion, element: location.element, line: location.line,
                    "EDMX version \(version) is not supported (4.0, 4.01, or 1.0 with OData V2 are)")
            }
            return
        }
        let depth = stack.count
        switch (parent, local) {
        case ("Edmx", "DataServices"):
            if document.family == .v2, let version = Self.prefixed("DataServiceVersion", attributes) {
                guard ["1.0", "2.0", "3.0"].contains(version) else {
                    throw GeneratorError(
                        .unsupportedVersion, element: location.element, line: location.line,
                        "data service version \(version) is not supported with EDMX 1.0 (1.0, 2.0 and 3.0 are)")
                }
                document.versionText = version
            }
        case ("Reference", "Include"):
            let namespace = try Self.required("Namespace", attributes, location)
            if let alias = attributes["Alias"], !alias.isEmpty { document.aliases[alias] = namespace }
        case ("DataServices", "Schema"):
            let namespace = try Self.required("Namespace", attributes, location)
            let alias = attributes["Alias"].flatMap { $0.isEmpty ? nil : $0 }
            if let alias { document.aliases[alias] = namespace }
            document.schemas.append(CSDLSchema(namespace: namespace, alias: alias, location: location))
            schemaIndex = document.schemas.count - 1
            schemaDepth = depth
        case ("Schema", "EntityType"), ("Schema", "ComplexType"):
            guard let index = schemaIndex else { return }
            let name = try Self.required("Name", attributes, location)
            currentType = CSDLStructuredType(
                isEntity: local == "EntityType", namespace: document.schemas[index].namespace, name: name,
                baseType: attributes["BaseType"].flatMap { $0.isEmpty ? nil : $0 },
                isAbstract: Self.bool(attributes["Abstract"]) ?? false,
                hasStream: Self.bool(Self.prefixed("HasStream", attributes)) ?? false,
                location: location)
            typeDepth = depth
        case ("Schema", "EnumType"):
            guard let index = schemaIndex else { return }
            let name = try Self.required("Name", attributes, location)
            currentEnum = CSDLEnumType(
                namespace: document.schemas[index].namespace, name: name, underlyingType: attributes["UnderlyingType"],
                isFlags: Self.bool(attributes["IsFlags"]) ?? false, location: location)
            enumDepth = depth
        case ("Schema", "TypeDefinition"):
            guard let index = schemaIndex else { return }
            let name = try Self.required("Name", attributes, location)
            let underlying = try Self.required("UnderlyingType", attributes, location)
            document.schemas[index].typeDefinitions.append(
                CSDLTypeDefinition(
                    namespace: document.schemas[index].namespace, name: name, underlyingType: underlying,
                    location: location))
        case ("Schema", "Association"):
            guard let index = schemaIndex else { return }
            let name = try Self.required("Name", attributes, location)
            currentAssociation = CSDLAssociation(
                namespace: document.schemas[index].namespace, name: name, location: location)
            associationDepth = depth
        case ("Schema", "EntityContainer"):
            guard schemaIndex != nil else { return }
            let name = try Self.required("Name", attributes, location)
            currentContainer = CSDLEntityContainer(
                name: name, isDefault: Self.bool(Self.prefixed("IsDefaultEntityContainer", attributes)) ?? false,
                location: location)
            containerDepth = depth
        case ("Schema", "Function"), ("Schema", "Action"):
            guard let index = schemaIndex else { return }
            let name = try Self.required("Name", attributes, location)
            let operation = CSDLNotGenerated(
                kind: local.lowercased(), name: "\(document.schemas[index].namespace).\(name)")
            if !document.schemas[index].operations.contains(operation) {
                document.schemas[index].operations.append(operation)
            }
        case ("EntityType", "Key"):
            guard currentType != nil, depth == typeDepth + 1 else { return }
            if currentType?.key == nil { currentType?.key = [] }
            keyDepth = depth
        case ("Key", "PropertyRef"):
            guard currentType != nil, keyDepth != 0, depth == keyDepth + 1 else { return }
            let name = try Self.required("Name", attributes, location)
            currentType?.key?.append(name)
        case ("EntityType", "Property"), ("ComplexType", "Property"):
            guard currentType != nil, depth == typeDepth + 1 else { return }
            let name = try Self.required("Name", attributes, location)
            let type = try Self.required("Type", attributes, location)
            currentType?.properties.append(
                CSDLProperty(
                    name: name, type: type, nullable: Self.bool(attributes["Nullable"]),
                    maxLength: attributes["MaxLength"], precision: attributes["Precision"], scale: attributes["Scale"],
                    location: location))
        case ("EntityType", "NavigationProperty"), ("ComplexType", "NavigationProperty"):
            guard currentType != nil, depth == typeDepth + 1 else { return }
            let name = try Self.required("Name", attributes, location)
            var navigation = CSDLNavigationProperty(
                name: name, type: nil, nullable: Self.bool(attributes["Nullable"]), location: location)
            if document.family == .v4 {
                navigation.type = try Self.required("Type", attributes, location)
            } else {
                navigation.relationship = try Self.required("Relationship", attributes, location)
                navigation.fromRole = try Self.required("FromRole", attributes, location)
                navigation.toRole = try Self.required("ToRole", attributes, location)
            }
            currentType?.navigationProperties.append(navigation)
        case ("EnumType", "Member"):
            guard currentEnum != nil, depth == enumDepth + 1 else { return }
            let name = try Self.required("Name", attributes, location)
            currentEnum?.members.append(CSDLEnumMember(name: name, value: attributes["Value"], location: location))
        case ("Association", "End"):
            guard currentAssociation != nil, depth == associationDepth + 1 else { return }
            let role = try Self.required("Role", attributes, location)
            let type = try Self.required("Type", attributes, location)
            let multiplicity = try Self.required("Multiplicity", attributes, location)
            currentAssociation?.ends.append(
                CSDLAssociationEnd(role: role, type: type, multiplicity: multiplicity, location: location))
        case ("EntityContainer", "EntitySet"):
            guard currentContainer != nil, depth == containerDepth + 1 else { return }
            let name = try Self.required("Name", attributes, location)
            let type = try Self.required("EntityType", attributes, location)
            currentContainer?.entitySets.append(CSDLEntitySet(name: name, entityType: type, location: location))
        case ("EntityContainer", "FunctionImport"), ("EntityContainer", "ActionImport"),
            ("EntityContainer", "Singleton"):
            guard currentContainer != nil, depth == containerDepth + 1 else { return }
            let name = try Self.required("Name", attributes, location)
            let kind =
                switch local {
                case "FunctionImport": "function import"
                case "ActionImport": "action import"
                default: "singleton"
                }
            currentContainer?.notGenerated.append(CSDLNotGenerated(kind: kind, name: name))
        default:
            break
        }
    }
}

// MARK: - Resolution

/// The `Edm` primitive types the generator maps (see the contract's table).
let knownPrimitiveTypes: Set<String> = [
    "Edm.String", "Edm.Boolean", "Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Single",
    "Edm.Double", "Edm.Decimal", "Edm.Guid", "Edm.Binary", "Edm.DateTimeOffset", "Edm.DateTime", "Edm.Date",
    "Edm.TimeOfDay", "Edm.Time", "Edm.Duration", "Edm.Untyped", "Edm.Stream", "Edm.PrimitiveType",
]

/// Whether `name` is an `Edm` primitive the generator maps.
func isKnownPrimitive(_ name: String) -> Bool {
    knownPrimitiveTypes.contains(name) || name.hasPrefix("Edm.Geography") || name.hasPrefix("Edm.Geometry")
}

extension CSDLDocument {
    /// What a qualified name denotes.
    enum Definition {
        case entity, complex, enumeration, typeDefinition(String)
    }

    /// `Alias.Name` → `Namespace.Name`; other names unchanged.
    func canonical(_ name: String) -> String {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let dot = trimmed.lastIndex(of: ".") else { return trimmed }
        let prefix = String(trimmed[..<dot])
        guard let namespace = aliases[prefix] else { return trimmed }
        return namespace + trimmed[dot...]
    }

    /// The definitions by qualified name; a name defined twice is an error at the second definition.
    func definitions() throws(GeneratorError) -> [String: Definition] {
        var result: [String: Definition] = [:]
        func add(_ name: String, _ definition: Definition, _ location: CSDLLocation) throws(GeneratorError) {
            guard result[name] == nil else {
                throw GeneratorError(
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
    func resolved() throws(GeneratorError) -> CSDLDocument {
        var document = self
        let definitions = try definitions()
        var associations: [String: CSDLAssociation] = [:]
        for schema in schemas {
            for association in schema.associations {
                let name = association.namespace + "." + association.name
                if associations[name] == nil { associations[name] = association }
            }
            for definition in schema.typeDefinitions where !isKnownPrimitive(canonical(definition.underlyingType)) {
                throw GeneratorError(
                    .unknownType, element: definition.location.element, line: definition.location.line,
                    "the underlying type `\(definition.underlyingType)` is not an Edm primitive type")
            }
        }

        func resolveType(_ written: String) -> CSDLTypeReference? {
            let trimmed = written.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.hasPrefix("Collection("), trimmed.hasSuffix(")") {
                let inner = trimmed.dropFirst("Collection(".count).dropLast()
                return resolveType(String(inner)).map { .collection($0) }
            }
            let name = canonical(trimmed)
            if name.hasPrefix("Edm.") { return isKnownPrimitive(name) ? .primitive(name) : nil }
            switch definitions[name] {
            case .entity, .complex: return .structured(name)
            case .enumeration: return .enumType(name)
            case .typeDefinition(let underlying): return .primitive(underlying)
            case nil: return nil
            }
        }

        func resolveStructured(_ type: inout CSDLStructuredType) throws(GeneratorError) {
            if let base = type.baseType {
                let name = canonical(base)
                switch definitions[name] {
                case .entity where type.isEntity, .complex where !type.isEntity:
                    type.baseType = name
                default:
                    throw GeneratorError(
                        .unknownType, element: type.location.element, line: type.location.line,
                        "the base type `\(base)` names no \(type.isEntity ? "entity" : "complex") type in the document")
                }
            }
            var names: Set<String> = []
            for index in type.properties.indices {
                let property = type.properties[index]
                guard names.insert(property.name).inserted else {
                    throw GeneratorError(
                        .invalidDefinition, element: property.location.element, line: property.location.line,
                        "`\(property.name)` is declared twice in `\(type.qualifiedName)`")
                }
                guard let resolved = resolveType(property.type) else {
                    throw GeneratorError(
                        .unknownType, element: property.location.element, line: property.location.line,
                        "the type `\(property.type)` names no type in the document")
                }
                type.properties[index].type = canonicalTypeText(property.type)
                type.properties[index].resolved = resolved
            }
            for index in type.navigationProperties.indices {
                var navigation = type.navigationProperties[index]
                let location = navigation.location
                guard names.insert(navigation.name).inserted else {
                    throw GeneratorError(
                        .invalidDefinition, element: location.element, line: location.line,
                        "`\(navigation.name)` is declared twice in `\(type.qualifiedName)`")
                }
                if let written = navigation.type {
                    var target = written.trimmingCharacters(in: .whitespacesAndNewlines)
                    if target.hasPrefix("Collection("), target.hasSuffix(")") {
                        navigation.isCollection = true
                        target = String(target.dropFirst("Collection(".count).dropLast())
                    }
                    target = canonical(target)
                    guard case .entity = definitions[target] else {
                        throw GeneratorError(
                            .unknownType, element: location.element, line: location.line,
                            "the type `\(written)` names no entity type in the document")
                    }
                    navigation.target = target
                } else {
                    let relationship = canonical(navigation.relationship ?? "")
                    guard let association = associations[relationship] else {
                        throw GeneratorError(
                            .unresolvedAssociation, element: location.element, line: location.line,
                            "the Relationship `\(navigation.relationship ?? "")` names no association in the document")
                    }
                    guard association.ends.contains(where: { $0.role == navigation.fromRole }) else {
                        throw GeneratorError(
                            .unresolvedAssociation, element: location.element, line: location.line,
                            "the FromRole `\(navigation.fromRole ?? "")` is no end of `\(relationship)`")
                    }
                    guard let end = association.ends.first(where: { $0.role == navigation.toRole }) else {
                        throw GeneratorError(
                            .unresolvedAssociation, element: location.element, line: location.line,
                            "the ToRole `\(navigation.toRole ?? "")` is no end of `\(relationship)`")
                    }
                    let target = canonical(end.type)
                    guard case .entity = definitions[target] else {
                        throw GeneratorError(
                            .unresolvedAssociation, element: location.element, line: location.line,
                            "the end `\(end.role)` of `\(relationship)` has the type `\(end.type)`, no entity type")
                    }
                    navigation.target = target
                    navigation.isCollection = end.multiplicity.trimmingCharacters(in: .whitespaces) == "*"
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

        // Base type chains: no cycles; flattened property names unique; every concrete entity type has a key.
        let structured = document.structuredTypesByName()
        for schema in document.schemas {
            for type in schema.entityTypes + schema.complexTypes {
                let chain = try document.baseChain(of: type, in: structured)
                var names: Set<String> = []
                for member in chain {
                    for name in member.properties.map(\.name) + member.navigationProperties.map(\.name)
                    where !names.insert(name).inserted {
                        throw GeneratorError(
                            .invalidDefinition, element: type.location.element, line: type.location.line,
                            "`\(name)` is declared both in `\(type.qualifiedName)` and in a base type")
                    }
                }
                guard type.isEntity else { continue }
                guard let key = chain.reversed().lazy.compactMap(\.key).first(where: { !$0.isEmpty }) else {
                    if type.isAbstract { continue }
                    throw GeneratorError(
                        .missingKey, element: type.location.element, line: type.location.line,
                        "the entity type `\(type.qualifiedName)` has no key, and no base type that has one")
                }
                let properties = chain.flatMap(\.properties)
                for name in key where !properties.contains(where: { $0.name == name }) {
                    throw GeneratorError(
                        .invalidDefinition, element: type.location.element, line: type.location.line,
                        "the key property `\(name)` is no structural property of `\(type.qualifiedName)`")
                }
            }
            for container in schema.entityContainers {
                for set in container.entitySets {
                    guard case .entity = definitions[canonical(set.entityType)] else {
                        throw GeneratorError(
                            .unknownEntitySetType, element: set.location.element, line: set.location.line,
                            "the entity type `\(set.entityType)` is not in the document")
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
        return document
    }

    /// A type text with aliases replaced (`Collection(Alias.T)` → `Collection(Namespace.T)`), for doc comments.
    func canonicalTypeText(_ written: String) -> String {
        let trimmed = written.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("Collection("), trimmed.hasSuffix(")") {
            return "Collection(" + canonicalTypeText(String(trimmed.dropFirst("Collection(".count).dropLast())) + ")"
        }
        return canonical(trimmed)
    }

    /// Entity and complex types by qualified name (the first definition wins; duplicates were rejected).
    func structuredTypesByName() -> [String: CSDLStructuredType] {
        var result: [String: CSDLStructuredType] = [:]
        for schema in schemas {
            for type in schema.entityTypes + schema.complexTypes where result[type.qualifiedName] == nil {
                result[type.qualifiedName] = type
            }
        }
        return result
    }

    /// The type and its base types, the root first; a cycle is an error.
    func baseChain(
        of type: CSDLStructuredType, in types: [String: CSDLStructuredType]
    ) throws(GeneratorError) -> [CSDLStructuredType] {
        var chain = [type]
        var seen: Set<String> = [type.qualifiedName]
        var current = type
        while let base = current.baseType {
            guard let next = types[base] else { break }
            guard seen.insert(next.qualifiedName).inserted else {
                throw GeneratorError(
                    .invalidDefinition, element: type.location.element, line: type.location.line,
                    "the base types of `\(type.qualifiedName)` form a cycle")
            }
            chain.append(next)
            current = next
        }
        return chain.reversed()
    }
}
