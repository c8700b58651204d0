import ODataMetadata

/// Which types the generator writes: every type of the document's own schemas, or, for `--only`, the closure of the
/// named entity sets and singletons (their types, base types, the types of their properties and the targets of
/// their navigation properties, transitively). A referenced document's types are written only when something
/// written uses them.
struct TypeClosure {
    /// The qualified names of the entity, complex and enum types to write.
    let included: Set<String>
    /// The entity sets to write per container name (nil: all of them whose type is written).
    let entitySets: Set<String>?

    init(document: CSDLDocument, only: [String]?) throws(GeneratorError) {
        let byName = document.structuredTypesByName()
        var roots: [String] = []
        if let only {
            var sets: Set<String> = []
            let containers = document.schemas.filter { !$0.isReferenced }.flatMap(\.entityContainers)
            for name in only {
                if let set = containers.lazy.flatMap(\.entitySets).first(where: { $0.name == name }) {
                    roots.append(set.entityType)
                    sets.insert(name)
                } else if let singleton = containers.lazy.flatMap(\.operations).first(where: {
                    $0.kind == "singleton" && $0.name == name
                }), let type = singleton.type {
                    roots.append(document.canonical(type))
                } else {
                    throw GeneratorError(
                        .invalidOption, element: "--only", line: 0,
                        "`\(name)` is no entity set or singleton of the document")
                }
            }
            entitySets = sets
        } else {
            for schema in document.schemas where !schema.isReferenced {
                roots += (schema.entityTypes + schema.complexTypes).map(\.qualifiedName)
                roots += schema.enumTypes.map(\.qualifiedName)
            }
            entitySets = nil
        }
        var seen: Set<String> = []
        var work = roots
        func add(_ reference: CSDLTypeReference?) {
            switch reference {
            case .enumType(let name), .structured(let name): work.append(name)
            case .collection(let element): add(element)
            case .primitive, nil: break
            }
        }
        while let name = work.popLast() {
            guard seen.insert(name).inserted, let type = byName[name] else { continue }
            if let base = type.baseType { work.append(base) }
            for property in type.properties { add(property.resolved) }
            for navigation in type.navigationProperties { work.append(navigation.target) }
        }
        included = seen
    }
}
