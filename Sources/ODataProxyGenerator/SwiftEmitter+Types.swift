import ODataCore
import ODataMetadata

/// The generated types: a structured type's members (inherited ones first, streams apart), the struct with its
/// key, paths and coding, a property's doc comment, and an enum type.
extension SwiftEmitter {
    func members(
        of type: CSDLStructuredType, chain: [CSDLStructuredType], key: [String]
    ) -> (members: [Member], streams: [String]) {
        var members: [Member] = []
        var streams: [String] = []
        var uniquer = Naming.Uniquer.members()
        for declaring in chain {
            let inherited = declaring.qualifiedName == type.qualifiedName ? nil : declaring.qualifiedName
            for property in declaring.properties {
                guard let reference = property.resolved else { continue }
                if isStream(reference) {
                    streams.append(property.name)
                    continue
                }
                let isKey = key.contains(property.name)
                var swift = swiftType(reference)
                var isOptional = property.nullable ?? true
                if case .collection = reference { isOptional = false }
                if isKey { isOptional = false }
                // A value that contains a value of its own type (Graph's `workbookOperationError.innerError`) is
                // boxed, as a to-one navigation is, and optional: a struct cannot contain itself.
                let recursive = isRecursive(reference, in: type.qualifiedName)
                if recursive { isOptional = true }
                if isOptional { swift += "?" }
                members.append(
                    Member(
                        kind: .property(property, reference), odataName: property.name,
                        name: uniquer.unique(Naming.lowerCamel(property.name)), swiftType: swift, pathType: swift,
                        defaultValue: isOptional ? "nil" : defaultValue(reference), isKey: isKey,
                        inheritedFrom: inherited, isBoxed: recursive))
            }
            for navigation in declaring.navigationProperties {
                let target = typeNames[navigation.target] ?? "JSONValue"
                members.append(
                    Member(
                        kind: .navigation(navigation), odataName: navigation.name,
                        name: uniquer.unique(Naming.lowerCamel(navigation.name)),
                        swiftType: navigation.isCollection ? "[\(target)]?" : "\(target)?",
                        pathType: navigation.isCollection ? "[\(target)]" : target, defaultValue: "nil", isKey: false,
                        inheritedFrom: inherited))
            }
        }
        for index in members.indices {
            if case .navigation(let navigation) = members[index].kind, !navigation.isCollection {
                members[index].storage = uniquer.unique("_" + members[index].name)
            } else if members[index].isBoxed {
                members[index].storage = uniquer.unique("_" + members[index].name)
            }
        }
        return (members, streams)
    }

    /// Whether a single value of `reference` contains, through single-valued structured properties (its base types'
    /// included), a value of the type `declaring`: the property must be boxed.
    func isRecursive(_ reference: CSDLTypeReference, in declaring: String) -> Bool {
        guard case .structured(let start) = reference else { return false }
        var seen: Set<String> = []
        var work = [start]
        while let name = work.popLast() {
            if name == declaring { return true }
            guard seen.insert(name).inserted, let type = structuredByName[name],
                // (Resolution refused base types that form a cycle, so the chain is always there.)
                let chain = try? document.baseChain(of: type, in: structuredByName)
            else { continue }
            for property in chain.flatMap(\.properties) {
                if case .structured(let next) = property.resolved { work.append(next) }
            }
        }
        return false
    }

    func structuredType(
        _ type: CSDLStructuredType, byName: [String: CSDLStructuredType]
    ) throws(GeneratorError) -> String {
        let chain = try chain(of: type, in: byName)
        let key = type.isEntity ? chain.reversed().compactMap(\.key).first(where: { !$0.isEmpty }) ?? [] : []
        let (members, streams) = members(of: type, chain: chain, key: key)
        let name = typeNames[type.qualifiedName] ?? type.name
        let qualified = Self.line(type.qualifiedName)

        var kind = type.isEntity ? "entity type" : "complex type"
        if type.isAbstract { kind = "abstract " + kind }
        var summary = "/// `\(qualified)` (\(kind))."
        if type.isEntity {
            summary += key.isEmpty ? " No key (abstract)." : " Key: \(key.map { "`\(Self.line($0))`" }.joined(separator: ", "))."
        }
        var out = summary + "\n"
        if let base = type.baseType {
            out += "///\n/// Derived from `\(Self.line(base))`: the properties of its base types are included.\n"
        }
        if !streams.isEmpty {
            out += "///\n/// Stream properties are not generated: \(streams.map { "`\(Self.line($0))`" }.joined(separator: ", ")).\n"
        }
        if type.hasStream {
            out += "///\n/// A media entity (`HasStream`): its media stream is not generated.\n"
        }
        out += "public struct \(name): \(type.isEntity ? "EntityValue" : "StructuredValue") {\n"
        out += "    /// The qualified type name.\n"
        out += "    public static let odataTypeName = \(Self.literal(type.qualifiedName))\n"
        if type.isEntity {
            out += "    /// The key properties, as OData names them.\n"
            out += "    public static let keyPropertyNames"
            out += key.isEmpty ? ": [String] = []\n" : " = [\(key.map(Self.literal).joined(separator: ", "))]\n"
        }
        out += "\n"
        for member in members {
            switch member.kind {
            case .property(let property, _):
                out += "    /// \(propertyDoc(property, member: member))\n"
                if let storage = member.storage {
                    out += boxed(member, storage: storage)
                } else {
                    out += "    public var \(member.quoted): \(member.swiftType)\n"
                }
                out += "    /// The path of `\(Self.line(member.odataName))`, for ``DataQuery``.\n"
            case .navigation(let navigation):
                let many = navigation.isCollection ? "many" : "one"
                out += "    /// `\(Self.line(member.odataName))`: navigation to \(many) `\(Self.line(navigation.target))`; "
                out += "nil until expanded or loaded."
                out += member.inheritedFrom.map { " From `\(Self.line($0))`." } ?? ""
                out += "\n"
                if let storage = member.storage {
                    out += boxed(member, storage: storage)
                    out += "    /// The path of `\(Self.line(member.odataName))`, for ``DataQuery`` and `loadProperty`.\n"
                } else {
                    out += "    public var \(member.quoted): \(member.swiftType)\n"
                    out += "    /// The path of `\(Self.line(member.odataName))`, for ``DataQuery`` (`$expand`, lambdas) "
                    out += "and `loadProperty`.\n"
                }
            }
            out += "    public static let \(member.quoted) = Property<\(name), \(member.pathType)>"
            // A navigation property's path knows where its value lives, so `loadProperty` can fill it in.
            if case .navigation = member.kind {
                out += "(\(Self.literal(member.odataName)), \\.\(member.quoted))\n"
            } else {
                out += "(\(Self.literal(member.odataName)))\n"
            }
        }
        out += "    /// OData metadata: ETag, ids, annotations, and properties this type does not declare (kept on update).\n"
        out += "    public var odata = ODataMetadata()\n\n"

        // Initializers.
        if members.isEmpty {
            out += "    /// Creates a value.\n"
            out += "    public init() {}\n\n"
        } else {
            out += "    /// Creates a value with every property at its default.\n"
            out += "    public init() {\n"
            out += "        self.init(\(members.map { "\($0.label): \($0.defaultValue)" }.joined(separator: ", ")))\n"
            out += "    }\n\n"
            out += "    /// Creates a value; every property has a default.\n"
            let parameters = members.map { "\($0.quoted): \($0.swiftType) = \($0.defaultValue)" }
            out += "    public init(\(parameters.joined(separator: ", "))) {\n"
            for member in members {
                if let storage = member.storage {
                    // The box directly: a setter may not run before every stored property is set (an inherited
                    // to-one navigation comes before the derived type's properties).
                    out += "        self.\(storage) = \(member.quoted).map(Indirect.init)\n"
                } else {
                    out += "        self.\(member.quoted) = \(member.quoted)\n"
                }
            }
            out += "    }\n\n"
        }

        out += "    /// Reads a value from OData JSON (V4 or V2); members the type does not declare are kept in ``odata``.\n"
        out += "    public init(from reader: inout EntityReader) throws(DataServiceError) {\n"
        out += "        self.init()\n"
        out += "        try reader.beginObject(Self.odataTypeName)\n"
        out += "        while let name = try reader.nextMember() {\n"
        out += "            switch name {\n"
        for member in members {
            let target = ["name", "reader"].contains(member.name) ? "self.\(member.quoted)" : member.quoted
            out += "            case \(Self.literal(member.odataName)): \(target) = try reader.read(\(member.swiftType).self)\n"
        }
        out += "            default: try reader.readOther(name, into: &odata)\n"
        out += "            }\n"
        out += "        }\n"
        out += "    }\n\n"

        out += "    /// Writes the structural properties (not navigation properties) and the kept unknown ones.\n"
        out += "    public func write(to writer: inout EntityWriter) {\n"
        for member in members {
            guard case .property = member.kind else { continue }
            let value = member.name == "writer" ? "self.\(member.quoted)" : member.quoted
            out += "        writer.write(\(Self.literal(member.odataName)), \(value))\n"
        }
        out += "        writer.writeOther(odata)\n"
        out += "    }\n"

        if type.isEntity {
            out += "\n    /// The key, for URLs (`\(Self.line(type.name))(…)`).\n"
            out += "    public var entityKey: EntityKey { \(entityKeyExpression(key, members: members)) }\n"
        }

        if members.isEmpty {
            out += "\n    /// Decodes a value (the type declares no properties).\n"
            out += "    public init(from decoder: any Decoder) throws { self.init() }\n"
            out += "    /// Encodes nothing (the type declares no properties).\n"
            out += "    public func encode(to encoder: any Encoder) throws {}\n"
        } else {
            out += "\n    private enum CodingKeys: String, CodingKey {\n"
            for member in members {
                out += "        case \(member.storage ?? member.quoted) = \(Self.literal(member.odataName))\n"
            }
            out += "    }\n"
        }
        out += "}\n"
        return out
    }

    /// An optional member stored in an `Indirect` box (a to-one navigation, a value that contains its own type):
    /// the public accessors and the private box.
    func boxed(_ member: Member, storage: String) -> String {
        var out = "    public var \(member.quoted): \(member.swiftType) {\n"
        out += "        get { \(storage)?.value }\n"
        out += "        set { \(storage) = newValue.map(Indirect.init) }\n"
        out += "    }\n"
        out += "    private var \(storage): Indirect<\(member.swiftType.dropLast())>?\n"
        return out
    }

    func entityKeyExpression(_ key: [String], members: [Member]) -> String {
        let parts = key.compactMap { name -> String? in
            guard let member = members.first(where: { $0.odataName == name && $0.isKey }) else { return nil }
            return "(\(Self.literal(name)), \(member.quoted))"
        }
        return "EntityKey(\(parts.joined(separator: ", ")))"
    }

    func propertyDoc(_ property: CSDLProperty, member: Member) -> String {
        var parts = ["`\(Self.line(property.name))`: \(Self.line(property.type))"]
        if member.isKey { parts.append("key") }
        if member.swiftType.hasSuffix("?") { parts.append("nullable") }
        if let maxLength = property.maxLength { parts.append("max length \(Self.line(maxLength))") }
        if let precision = property.precision { parts.append("precision \(Self.line(precision))") }
        if let scale = property.scale { parts.append("scale \(Self.line(scale))") }
        var text = parts.joined(separator: ", ") + "."
        if let inherited = member.inheritedFrom { text += " From `\(Self.line(inherited))`." }
        return text
    }

    func enumType(_ type: CSDLEnumType) -> String {
        let name = typeNames[type.qualifiedName] ?? type.name
        var out = "/// `\(Self.line(type.qualifiedName))` (enum type"
        out += type.isFlags ? ", flags: a value that combines several members is not representable).\n" : ").\n"
        out += "public enum \(name): String, ODataEnum {\n"
        out += "    /// The qualified type name.\n"
        out += "    public static let odataTypeName = \(Self.literal(type.qualifiedName))\n"
        var seen: Set<String> = []
        for (member, caseName) in zip(type.members, enumCaseNames(type.qualifiedName))
        where seen.insert(member.name).inserted {
            out += "    case \(Naming.quoted(caseName)) = \(Self.literal(member.name))\n"
        }
        out += "}\n"
        return out
    }
}
