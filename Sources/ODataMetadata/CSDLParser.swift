import Foundation
import ODataCore
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The package's one XML reader of `$metadata` (EDMX 4.0/4.01, or EDMX 1.0 with OData V2 CSDL): reads the document
/// into an unresolved ``CSDLDocument`` (``CSDLDocument/init(parsing:)`` then resolves it, in CSDLResolution.swift).
/// Every problem is a ``MetadataError`` naming the element and its line; the first one stops the parse.
final class CSDLParser: NSObject, XMLParserDelegate {
    private var document = CSDLDocument()
    private var failure: MetadataError?
    /// The local names of the open elements, outermost first.
    private(set) var stack: [String] = []
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
    /// The schema's function or action, or the container's import, whose parameters are being read.
    private var currentOperation: CSDLOperation?
    private var operationDepth = 0
    /// Inside a V2 association's `ReferentialConstraint`: whether in its `Principal` (else its `Dependent`).
    private var constraintIsPrincipal = false
    private var constraintPrincipal: (role: String, properties: [String])?
    private var constraintDependent: (role: String, properties: [String])?
    /// The document's bytes and the offsets where its lines start, to find the line where a start tag begins
    /// (XMLParser reports the position after the tag's name and attributes, which may be lines later).
    private(set) var bytes: [UInt8] = []
    private(set) var lineStarts: [Int] = [0]

    /// Parses a document (not yet resolved).
    static func parse(_ data: Data) throws(MetadataError) -> CSDLDocument {
        // FoundationXML (libxml2 underneath) can trap on names that are not UTF-8; $metadata is UTF-8, so anything
        // else is rejected before the XML parser sees it.
        if String(data: data, encoding: .utf8) == nil, let offset = invalidUTF8Offset(data) {
            let line = data.prefix(offset).reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
            throw MetadataError(
                .malformedXML, element: "document", line: line,
                "the document is not UTF-8 (an invalid byte at offset \(offset))")
        }
        let delegate = CSDLParser()
        delegate.bytes = Array(data)
        delegate.bytes.withUnsafeBufferPointer { buffer in
            for offset in buffer.indices where buffer[offset] == 0x0A { delegate.lineStarts.append(offset + 1) }
        }
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = false
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        parser.delegate = delegate
        let succeeded = parser.parse()
        if let failure = delegate.failure { throw failure }
        if !succeeded {
            throw delegate.malformed(code: (parser.parserError as NSError?)?.code ?? 0, line: parser.lineNumber)
        }
        if !delegate.sawRoot {
            throw MetadataError(.malformedXML, element: "document", line: 1, "the document has no root element")
        }
        return delegate.document
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
        } else if var association = currentAssociation, depth == associationDepth, let index = schemaIndex {
            if let principal = constraintPrincipal, let dependent = constraintDependent {
                association.referentialConstraint = CSDLAssociationConstraint(principal: principal, dependent: dependent)
            }
            constraintPrincipal = nil
            constraintDependent = nil
            document.schemas[index].associations.append(association)
            currentAssociation = nil
        } else if let container = currentContainer, depth == containerDepth, let index = schemaIndex {
            document.schemas[index].entityContainers.append(container)
            currentContainer = nil
        } else if let operation = currentOperation, depth == operationDepth {
            if operation.kind == "function" || operation.kind == "action", let index = schemaIndex {
                document.schemas[index].operations.append(operation)
            } else {
                currentContainer?.operations.append(operation)
            }
            currentOperation = nil
        } else if depth == keyDepth {
            keyDepth = 0
        } else if schemaIndex != nil, depth == schemaDepth {
            schemaIndex = nil
        }
        if !stack.isEmpty { stack.removeLast() }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        guard failure == nil else { return }
        failure = malformed(code: (parseError as NSError).code, line: parser.lineNumber)
        // Stop at the first error: libxml2 would recover and go on, and FoundationXML can trap on what follows.
        parser.abortParsing()
    }

    /// The line of the `<` that opens the start tag XMLParser is at (`line`, `column`: inside that tag).
    private func startLine(line: Int, column: Int) -> Int {
        guard line >= 1, line <= lineStarts.count, !bytes.isEmpty else { return line }
        let lineStart = lineStarts[line - 1]
        var offset = min(bytes.count - 1, lineStart + max(0, column - 1))
        var result = line
        bytes.withUnsafeBufferPointer { bytes in
            while offset >= 0, bytes[offset] != UInt8(ascii: "<") {
                if bytes[offset] == 0x0A, offset < lineStart { result -= 1 }
                offset -= 1
            }
        }
        return max(1, result)
    }

    // MARK: - Elements

    private func start(
        _ local: String, parent: String?, attributes: [String: String], at location: CSDLLocation
    ) throws(MetadataError) {
        guard sawRoot else {
            sawRoot = true
            guard local == "Edmx" else {
                throw MetadataError(
                    .notEDMX, element: location.element, line: location.line,
                    "the root element is \(location.element), not edmx:Edmx")
            }
            let version = try Self.required("Version", attributes, location)
            switch version {
            case "4.0", "4.01":
                document.version = .v4
                document.versionText = version
            case "1.0":
                document.version = .v2
                document.versionText = "2.0"
            default:
                throw MetadataError(
                    .unsupportedVersion, element: location.element, line: location.line,
                    "EDMX version \(version) is not supported (4.0, 4.01, or 1.0 with OData V2 are)")
            }
            return
        }
        let depth = stack.count
        switch (parent, local) {
        case ("Edmx", "DataServices"):
            if document.version == .v2, let version = Self.prefixed("DataServiceVersion", attributes) {
                guard ["1.0", "2.0", "3.0"].contains(version) else {
                    throw MetadataError(
                        .unsupportedVersion, element: location.element, line: location.line,
                        "data service version \(version) is not supported with EDMX 1.0 (1.0, 2.0 and 3.0 are)")
                }
                document.versionText = version
            }
        case ("Reference", "Include"):
            let namespace = try Self.required("Namespace", attributes, location)
            document.referencedNamespaces.insert(namespace)
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
            var operation = CSDLOperation(kind: local.lowercased(), name: "\(document.schemas[index].namespace).\(name)")
            operation.isBound = Self.bool(attributes["IsBound"]) ?? false
            operation.location = location
            currentOperation = operation
            operationDepth = depth
        case ("Function", "Parameter"), ("Action", "Parameter"), ("FunctionImport", "Parameter"):
            guard currentOperation != nil, depth == operationDepth + 1 else { return }
            let name = try Self.required("Name", attributes, location)
            let type = try Self.required("Type", attributes, location)
            currentOperation?.parameters.append(
                CSDLParameter(name: name, type: type, nullable: Self.bool(attributes["Nullable"]), location: location))
        case ("Function", "ReturnType"), ("Action", "ReturnType"):
            guard currentOperation != nil, depth == operationDepth + 1 else { return }
            currentOperation?.returnType = try Self.required("Type", attributes, location)
        case ("EntityType", "Key"):
            guard currentType != nil, depth == typeDepth + 1 else { return }
            guard currentType?.key == nil else {
                throw MetadataError(
                    .invalidDefinition, element: location.element, line: location.line,
                    "`\(currentType?.qualifiedName ?? "")` has a second Key element (an entity type has at most one)")
            }
            currentType?.key = []
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
                name: name, type: nil, nullable: Self.bool(attributes["Nullable"]),
                partner: attributes["Partner"].flatMap { $0.isEmpty ? nil : $0 }, location: location)
            if document.version == .v4 {
                navigation.type = try Self.required("Type", attributes, location)
                navigation.containsTarget = Self.bool(attributes["ContainsTarget"]) ?? false
            } else {
                navigation.relationship = try Self.required("Relationship", attributes, location)
                navigation.fromRole = try Self.required("FromRole", attributes, location)
                navigation.toRole = try Self.required("ToRole", attributes, location)
            }
            currentType?.navigationProperties.append(navigation)
        case ("NavigationProperty", "ReferentialConstraint"):
            guard depth == typeDepth + 2, document.version == .v4,
                let index = currentType?.navigationProperties.indices.last
            else { return }
            let property = try Self.required("Property", attributes, location)
            let referenced = try Self.required("ReferencedProperty", attributes, location)
            currentType?.navigationProperties[index].referentialConstraints
                .append(CSDLReferentialConstraint(property: property, referencedProperty: referenced))
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
        case ("Association", "ReferentialConstraint"):
            guard currentAssociation != nil, depth == associationDepth + 1 else { return }
            constraintPrincipal = nil
            constraintDependent = nil
        case ("ReferentialConstraint", "Principal"), ("ReferentialConstraint", "Dependent"):
            guard currentAssociation != nil, depth == associationDepth + 2 else { return }
            let role = try Self.required("Role", attributes, location)
            constraintIsPrincipal = local == "Principal"
            if constraintIsPrincipal {
                constraintPrincipal = (role, [])
            } else {
                constraintDependent = (role, [])
            }
        case ("Principal", "PropertyRef"), ("Dependent", "PropertyRef"):
            guard currentAssociation != nil, depth == associationDepth + 3 else { return }
            let name = try Self.required("Name", attributes, location)
            if constraintIsPrincipal {
                constraintPrincipal?.properties.append(name)
            } else {
                constraintDependent?.properties.append(name)
            }
        case ("EntityContainer", "AssociationSet"):
            guard currentContainer != nil, depth == containerDepth + 1 else { return }
            let name = try Self.required("Name", attributes, location)
            let association = try Self.required("Association", attributes, location)
            currentContainer?.associationSets.append(
                CSDLAssociationSet(name: name, association: association, location: location))
        case ("AssociationSet", "End"):
            guard depth == containerDepth + 2, let index = currentContainer?.associationSets.indices.last else { return }
            let set = try Self.required("EntitySet", attributes, location)
            let role = attributes["Role"].flatMap { $0.isEmpty ? nil : $0 }
            currentContainer?.associationSets[index].ends.append((role: role, entitySet: set))
        case ("EntitySet", "NavigationPropertyBinding"):
            guard depth == containerDepth + 2, let index = currentContainer?.entitySets.indices.last else { return }
            let path = try Self.required("Path", attributes, location)
            let target = try Self.required("Target", attributes, location)
            currentContainer?.entitySets[index].navigationPropertyBindings
                .append(CSDLNavigationPropertyBinding(path: path, target: target))
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
            var operation = CSDLOperation(kind: kind, name: name, type: local == "Singleton" ? attributes["Type"] : nil)
            operation.location = location
            guard local != "Singleton" else {
                currentContainer?.operations.append(operation)
                return
            }
            operation.imports = attributes[local == "FunctionImport" ? "Function" : "Action"].flatMap { $0.isEmpty ? nil : $0 }
            operation.entitySet = attributes["EntitySet"].flatMap { $0.isEmpty ? nil : $0 }
            if document.version == .v2 {
                operation.returnType = attributes["ReturnType"].flatMap { $0.isEmpty ? nil : $0 }
                operation.httpMethod = Self.prefixed("HttpMethod", attributes)?.uppercased() ?? "GET"
            } else if operation.imports == nil {
                throw MetadataError(
                    .missingAttribute, element: location.element, line: location.line,
                    "the required attribute \(local == "FunctionImport" ? "Function" : "Action") is missing or empty")
            }
            // Closed at its end tag (V2 function imports have Parameter children).
            currentOperation = operation
            operationDepth = depth
        default:
            break
        }
    }
}

