/// Lookups in a resolved document: types, associations, keys and names by their qualified form.
extension CSDLDocument {
    /// The entity or complex type with this qualified name (or alias-qualified name).
    /// - Parameter name: `Namespace.Name` or `Alias.Name`.
    /// - Returns: the type, or nil when the document has none of that name.
    public func structuredType(named name: String) -> CSDLStructuredType? {
        let qualified = canonical(name)
        for schema in schemas {
            if let type = (schema.entityTypes + schema.complexTypes).first(where: { $0.qualifiedName == qualified }) {
                return type
            }
        }
        return nil
    }

    /// The V2 association with this qualified name (or alias-qualified name).
    /// - Parameter name: `Namespace.Name` or `Alias.Name`.
    /// - Returns: the association, or nil when the document has none of that name.
    public func association(named name: String) -> CSDLAssociation? {
        let qualified = canonical(name)
        return schemas.lazy.flatMap(\.associations).first { $0.qualifiedName == qualified }
    }

    /// The entity sets of every container, in document order.
    public var entitySets: [CSDLEntitySet] {
        schemas.flatMap(\.entityContainers).flatMap(\.entitySets)
    }

    /// The key of an entity type: its own `Key`, or the nearest base type's.
    /// - Parameter type: an entity type of this (resolved) document.
    /// - Returns: the key's property names; empty for an abstract type without one.
    public func key(of type: CSDLStructuredType) -> [String] {
        var current = type
        var seen: Set<String> = [type.qualifiedName]
        while true {
            if let key = current.key, !key.isEmpty { return key }
            guard let base = current.baseType, let next = structuredType(named: base),
                seen.insert(next.qualifiedName).inserted
            else { return [] }
            current = next
        }
    }

    /// `Alias.Name` → `Namespace.Name`; other names unchanged.
    /// - Parameter name: a qualified name, perhaps alias-qualified.
    /// - Returns: the namespace-qualified name.
    public func canonical(_ name: String) -> String {
        let trimmed = name.trimmedOfWhitespace
        guard !aliases.isEmpty, let dot = trimmed.utf8.lastIndex(of: UInt8(ascii: ".")) else { return trimmed }
        guard let namespace = aliases[String(trimmed[..<dot])] else { return trimmed }
        return namespace + trimmed[dot...]
    }

    /// A type text with aliases replaced (`Collection(Alias.T)` → `Collection(Namespace.T)`), for doc comments.
    func canonicalTypeText(_ written: String) -> String {
        let trimmed = written.trimmedOfWhitespace
        if trimmed.hasPrefix("Collection("), trimmed.hasSuffix(")") {
            return "Collection(" + canonicalTypeText(String(trimmed.dropFirst("Collection(".count).dropLast())) + ")"
        }
        return canonical(trimmed)
    }

    /// Entity and complex types by qualified name (the first definition wins; duplicates were rejected).
    /// - Returns: the types by `Namespace.Name`.
    public func structuredTypesByName() -> [String: CSDLStructuredType] {
        var result: [String: CSDLStructuredType] = [:]
        for schema in schemas {
            for type in schema.entityTypes + schema.complexTypes where result[type.qualifiedName] == nil {
                result[type.qualifiedName] = type
            }
        }
        return result
    }

    /// The type and its base types, the root first; a cycle is an error.
    /// - Parameters:
    ///   - type: an entity or complex type.
    ///   - types: the document's types by qualified name (``structuredTypesByName()``).
    /// - Returns: the chain, the root first and `type` last.
    /// - Throws: ``MetadataError`` when the base types form a cycle (resolution already rejects that).
    public func baseChain(
        of type: CSDLStructuredType, in types: [String: CSDLStructuredType]
    ) throws(MetadataError) -> [CSDLStructuredType] {
        var chain = [type]
        var seen: Set<String> = [type.qualifiedName]
        var current = type
        while let base = current.baseType {
            guard let next = types[base] else { break }
            guard seen.insert(next.qualifiedName).inserted else {
                throw MetadataError(
                    .invalidDefinition, element: type.location.element, line: type.location.line,
                    "the base types of `\(type.qualifiedName)` form a cycle")
            }
            chain.append(next)
            current = next
        }
        return chain.reversed()
    }
}
