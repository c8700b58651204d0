// Writes the Swift source of the contract for a resolved CSDL document: one struct per entity and complex type,
// one enum per enum type (types sorted by qualified name), one service struct per entity container, and a closing
// comment listing what is not generated. Output depends on the document and the options only.

import ODataCore
import ODataMetadata

/// Writes Swift source for a resolved ``CSDLDocument``.
struct SwiftEmitter {
    let document: CSDLDocument
    let serviceName: String?
    let sourceName: String
    /// What to write (every type of the document's own schemas, or `--only`'s closure).
    let closure: TypeClosure

    /// One generated member of a structured type.
    struct Member {
        enum Kind {
            case property(CSDLProperty, CSDLTypeReference)
            case navigation(CSDLNavigationProperty)
        }
        var kind: Kind
        var odataName: String
        /// The Swift name, unquoted.
        var name: String
        /// The storage of a to-one navigation property (`_customer`).
        var storage: String?
        var swiftType: String
        /// The static path's value type.
        var pathType: String
        var defaultValue: String
        var isKey: Bool
        /// The declaring type when inherited.
        var inheritedFrom: String?
        /// A structural property whose value contains its own type: stored boxed in ``storage``.
        var isBoxed = false
        var quoted: String { Naming.quoted(name) }
        /// The name as an argument label in a call (only `inout`, `var` and `let` need back-quotes there).
        var label: String { ["inout", "var", "let"].contains(name) ? "`\(name)`" : name }
    }

    var typeNames: [String: String] = [:]
    var emptyEnums: Set<String> = []
    /// The document's entity and complex types by qualified name.
    let structuredByName: [String: CSDLStructuredType]

    init(document: CSDLDocument, serviceName: String?, sourceName: String, closure: TypeClosure) {
        self.document = document
        self.serviceName = serviceName
        self.sourceName = sourceName
        self.closure = closure
        self.structuredByName = document.structuredTypesByName()
    }

    /// The generated source in pieces: the header (comment and imports), one block per type and service, and the
    /// closing comment; a file is the header, some blocks, and (in the last file) the closing comment.
    struct Output {
        var header: String
        var blocks: [String]
        var footer: String
    }

    // MARK: - Entry

    func emit() throws(GeneratorError) -> Output {
        var emitter = self
        return try emitter.run()
    }

    /// The type and its base types, the root first (resolution rejected cycles already).
    func chain(
        of type: CSDLStructuredType, in byName: [String: CSDLStructuredType]
    ) throws(GeneratorError) -> [CSDLStructuredType] {
        do {
            return try document.baseChain(of: type, in: byName)
        } catch {
            throw GeneratorError(metadata: error)
        }
    }

    mutating func run() throws(GeneratorError) -> Output {
        var uniquer = Naming.Uniquer.types()
        // A referenced document's containers are another service's: not generated.
        let containers = document.schemas.filter { !$0.isReferenced }.flatMap(\.entityContainers).filter { container in
            closure.entitySets == nil || container.entitySets.contains { closure.entitySets?.contains($0.name) == true }
        }
        let primary = containers.firstIndex(where: \.isDefault) ?? 0
        var serviceNames: [String] = []
        for index in containers.indices {
            if index == primary, let serviceName {
                guard Self.isIdentifier(serviceName), !Naming.keywords.contains(serviceName),
                    !Naming.reservedTypes.contains(serviceName)
                else {
                    throw GeneratorError(
                        .invalidOption, element: "--service-name", line: 0,
                        "`\(serviceName)` is not usable as a Swift type name")
                }
                uniquer.take(serviceName)
                serviceNames.append(serviceName)
            } else {
                serviceNames.append("")
            }
        }
        for (index, container) in containers.enumerated() where serviceNames[index].isEmpty {
            serviceNames[index] = uniquer.unique(Naming.upperCamel(container.name) + "Service")
        }

        let structured = document.schemas.flatMap { $0.entityTypes + $0.complexTypes }
            .filter { closure.included.contains($0.qualifiedName) }
        let enums = document.schemas.flatMap(\.enumTypes).filter { closure.included.contains($0.qualifiedName) }
        for type in enums where type.members.isEmpty { emptyEnums.insert(type.qualifiedName) }
        var qualifiedNames = structured.map(\.qualifiedName)
        qualifiedNames += enums.filter { !$0.members.isEmpty }.map(\.qualifiedName)
        qualifiedNames.sort()
        for name in qualifiedNames {
            let simple = String(name[(name.lastIndex(of: ".").map { name.index(after: $0) } ?? name.startIndex)...])
            typeNames[name] = uniquer.unique(Naming.upperCamel(simple))
        }

        var header = "// Generated by odata-proxygen from \(Self.line(sourceName)) (OData \(Self.line(document.versionText))). "
        header += "Do not edit: regenerate.\nimport Foundation\nimport ODataCore\nimport ODataTyped\n"
        var blocks: [String] = []
        let byName = document.structuredTypesByName()
        var enumsByName: [String: CSDLEnumType] = [:]
        for type in enums where enumsByName[type.qualifiedName] == nil { enumsByName[type.qualifiedName] = type }
        var emptyNotes: [String] = []
        for name in qualifiedNames {
            if let type = byName[name] {
                blocks.append(try structuredType(type, byName: byName))
            } else if let type = enumsByName[name] {
                blocks.append(enumType(type))
            }
        }
        for type in enums where type.members.isEmpty {
            emptyNotes.append("enum type `\(Self.line(type.qualifiedName))` (no members: its properties are `String`)")
        }
        var notGenerated: [String] = []
        for (index, container) in containers.enumerated() {
            let (source, left) = try service(container, named: serviceNames[index], bound: index == primary, byName: byName)
            blocks.append(source)
            notGenerated += left
        }
        // An unbound function or action is called through an import; one that no import names cannot be called.
        let imported = Set(containers.flatMap(\.operations).compactMap(\.imports))
        for operation in document.schemas.filter({ !$0.isReferenced }).flatMap(\.operations)
        where !operation.isBound && !imported.contains(operation.name) {
            notGenerated.append("\(operation.kind) `\(Self.line(operation.name))` (unbound, and no import names it)")
        }
        notGenerated += emptyNotes
        var out = ""
        if !notGenerated.isEmpty {
            out += "\n// Not generated (use `dataService` for these):\n"
            for item in notGenerated { out += "//   \(item)\n" }
        }
        return Output(header: header, blocks: blocks, footer: out)
    }

    // MARK: - Types

    func swiftType(_ reference: CSDLTypeReference) -> String {
        switch reference {
        case .primitive(let name): Self.primitiveType(name)
        case .enumType(let name): emptyEnums.contains(name) ? "String" : typeNames[name] ?? "String"
        case .structured(let name): typeNames[name] ?? "JSONValue"
        case .collection(let element): "[\(swiftType(element))]"
        }
    }

    static func primitiveType(_ name: String) -> String {
        switch name {
        case "Edm.String": "String"
        case "Edm.Boolean": "Bool"
        case "Edm.Byte": "UInt8"
        case "Edm.SByte": "Int8"
        case "Edm.Int16": "Int16"
        case "Edm.Int32": "Int32"
        case "Edm.Int64": "Int64"
        case "Edm.Single": "Float"
        case "Edm.Double": "Double"
        case "Edm.Decimal": "Decimal"
        case "Edm.Guid": "UUID"
        case "Edm.Binary": "Data"
        case "Edm.DateTimeOffset", "Edm.DateTime": "Date"
        case "Edm.Date": "ODataDate"
        case "Edm.TimeOfDay", "Edm.Time": "ODataTimeOfDay"
        case "Edm.Duration": "Duration"
        default: "JSONValue"
        }
    }

    func defaultValue(_ reference: CSDLTypeReference) -> String {
        switch reference {
        case .primitive(let name):
            switch Self.primitiveType(name) {
            case "String": "\"\""
            case "Bool": "false"
            case "UInt8", "Int8", "Int16", "Int32", "Int64", "Float", "Double", "Decimal": "0"
            case "UUID": "ODataDefaults.guid"
            case "Data": "Data()"
            case "Date": "ODataDefaults.date"
            case "ODataDate": "ODataDate()"
            case "ODataTimeOfDay": "ODataTimeOfDay()"
            case "Duration": ".zero"
            default: ".null"
            }
        case .enumType(let name):
            if emptyEnums.contains(name) {
                "\"\""
            } else if let first = enumCaseNames(name).first {
                "." + Naming.quoted(first)
            } else {
                "\"\""
            }
        case .structured(let name): "\(typeNames[name] ?? "JSONValue")()"
        case .collection: "[]"
        }
    }

    func enumCaseNames(_ qualifiedName: String) -> [String] {
        guard let type = document.schemas.lazy.flatMap(\.enumTypes).first(where: { $0.qualifiedName == qualifiedName })
        else { return [] }
        var uniquer = Naming.Uniquer.enumCases()
        return type.members.map { uniquer.unique(Naming.lowerCamel($0.name)) }
    }

    func isStream(_ reference: CSDLTypeReference) -> Bool {
        if case .primitive("Edm.Stream") = reference { return true }
        return false
    }

    // MARK: - Service

    /// A container's service struct, and what of the container it leaves out (singletons, operations it cannot type).
    /// - Parameter bound: whether the document's bound operations are written here (in the primary service only).
    func service(
        _ container: CSDLEntityContainer, named name: String, bound: Bool, byName: [String: CSDLStructuredType]
    ) throws(GeneratorError) -> (source: String, notGenerated: [String]) {
        var statics = Naming.Uniquer.members(reserving: ["entitySets", "dataService"])
        var methods = Naming.Uniquer.methods(reserving: ["init", "dataService"])
        var typeCounts: [String: Int] = [:]
        let sets = container.entitySets.filter { closure.entitySets?.contains($0.name) ?? closure.included.contains($0.entityType) }
        for set in sets { typeCounts[set.entityType, default: 0] += 1 }

        var out = "/// The entity container `\(Self.line(container.name))`: one typed method family per entity set, and a method per action and function.\n"
        out += "public struct \(name): Sendable {\n"
        out += "    /// The untyped service underneath (raw requests, batches, any query).\n"
        out += "    public let dataService: DataService\n\n"
        var staticNames: [String] = []
        for set in sets {
            let type = typeNames[set.entityType] ?? "JSONValue"
            let staticName = statics.unique(Naming.lowerCamel(set.name))
            staticNames.append(staticName)
            out += "    /// The entity set `\(Self.line(set.name))` of `\(Self.line(set.entityType))`.\n"
            out += "    public static let \(Naming.quoted(staticName)) = EntitySet<\(type)>(\(Self.literal(set.name)))\n"
        }
        out += "    /// Every entity set, for reading polymorphic results (ErrorArchive's AffectedEntity).\n"
        out += "    public static let entitySets: [any EntitySetProtocol] = ["
        out += staticNames.map(Naming.quoted).joined(separator: ", ") + "]\n\n"
        out += "    /// Creates the service over a store (an `OnlineODataStore` or an `OfflineODataProvider`).\n"
        out += "    public init(provider: any DataServiceProvider) {\n"
        let version = document.version == .v2 ? ".v2" : ".v4"
        out += "        dataService = DataService(provider: provider, version: \(version), entitySets: Self.entitySets)\n"
        out += "    }\n"

        for (set, staticName) in zip(sets, staticNames) {
            guard let entity = byName[set.entityType] else { continue }
            let type = typeNames[set.entityType] ?? entity.name
            let setReference = "Self.\(Naming.quoted(staticName))"
            let setName = Self.line(set.name)
            let singular = (typeCounts[set.entityType] ?? 0) > 1 ? Naming.upperCamel(set.name) + "Entity" : type
            let chain = try chain(of: entity, in: byName)
            let key = chain.reversed().compactMap(\.key).first(where: { !$0.isEmpty }) ?? []
            let keyMembers = members(of: entity, chain: chain, key: key).members.filter(\.isKey)
            let ordered = key.compactMap { name in keyMembers.first { $0.odataName == name } }

            out += "\n"
            out += "    /// Reads `\(setName)` matching a query (filter, order, paging, expand, select).\n"
            out += "    public func \(methods.unique("fetch" + Naming.upperCamel(set.name)))"
            out += "(matching query: DataQuery<\(type)> = DataQuery()) async throws -> [\(type)] {\n"
            out += "        try await dataService.fetch(\(setReference), matching: query)\n"
            out += "    }\n"
            if !ordered.isEmpty {
                let service = ordered.contains { $0.name == "dataService" } ? "self.dataService" : "dataService"
                let parameters = ordered.map { "\($0.quoted): \($0.swiftType)" }.joined(separator: ", ")
                out += "    /// Reads one `\(Self.line(type))` by key.\n"
                out += "    public func \(methods.unique("fetch" + singular))(\(parameters)) async throws -> \(type) {\n"
                out += "        try await \(service).fetchEntity(\(setReference), key: "
                out += "\(entityKeyExpression(key, members: ordered)))\n"
                out += "    }\n"
            }
            out += "    /// Creates a `\(Self.line(type))`; returns it as the service stored it.\n"
            out += "    public func \(methods.unique("create" + singular))(_ entity: \(type)) async throws -> \(type) {\n"
            out += "        try await dataService.createEntity(entity, in: \(setReference))\n"
            out += "    }\n"
            // A set whose type has no key: read and created only (its members cannot be addressed).
            guard !ordered.isEmpty else { continue }
            out += "    /// Updates the properties `changes` sets (a PATCH of those only, with If-Match of the ETag).\n"
            out += "    public func \(methods.unique("update" + singular))"
            out += "(_ entity: \(type), changes: (inout \(type)) throws -> Void) async throws -> \(type) {\n"
            out += "        try await dataService.updateEntity(entity, in: \(setReference), changes: changes)\n"
            out += "    }\n"
            out += "    /// Deletes a `\(Self.line(type))` (with If-Match of its ETag).\n"
            out += "    public func \(methods.unique("delete" + singular))(_ entity: \(type)) async throws {\n"
            out += "        try await dataService.deleteEntity(entity, in: \(setReference))\n"
            out += "    }\n"
        }
        let operations = operationMethods(
            of: container, bound: bound, setStatics: Array(zip(sets, staticNames)).map { (set: $0.0, name: $0.1) }, methods: &methods)
        out += operations.source
        out += "}\n"
        let singletons = container.operations.filter { $0.kind == "singleton" }.map {
            "singleton `\(Self.line($0.name))` in `\(Self.line(container.name))`"
        }
        return (out, singletons + operations.notGenerated)
    }

    // MARK: - Text

    /// A Swift string literal.
    static func literal(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Text for a comment: on one line, no back-quote that would end a code span.
    static func line(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    scalar.value < 0x20 || scalar == "`" || scalar.value == 0x7F || scalar.value == 0x2028
                        || scalar.value == 0x2029 ? " " : scalar
                }))
    }

    /// Whether `text` is a plain Swift identifier (letters, digits, `_`; not starting with a digit).
    static func isIdentifier(_ text: String) -> Bool {
        guard let first = text.first, first.isLetter || first == "_" else { return false }
        return text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
    }
}
