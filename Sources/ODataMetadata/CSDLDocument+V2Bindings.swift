import ODataCore

/// V2 navigation property bindings, derived from the association sets as V4 declares them.
extension CSDLDocument {
    /// V2: every navigation property whose association has an association set gets, on the set playing its
    /// `FromRole`, the binding to the set playing its `ToRole` (a binding declared already is kept).
    mutating func deriveV2Bindings() {
        guard version == .v2 else { return }
        var navigations: [String: [CSDLNavigationProperty]] = [:]
        for schema in schemas {
            for type in schema.entityTypes {
                for navigation in type.navigationProperties {
                    if let relationship = navigation.relationship { navigations[relationship, default: []].append(navigation) }
                }
            }
        }
        for schemaIndex in schemas.indices {
            for containerIndex in schemas[schemaIndex].entityContainers.indices {
                var container = schemas[schemaIndex].entityContainers[containerIndex]
                for setIndex in container.associationSets.indices {
                    container.associationSets[setIndex].association = canonical(container.associationSets[setIndex].association)
                }
                for associationSet in container.associationSets {
                    func set(playing role: String?) -> String? {
                        associationSet.ends.first { $0.role != nil && $0.role == role }?.entitySet
                    }
                    for navigation in navigations[associationSet.association] ?? [] {
                        guard let source = set(playing: navigation.fromRole), let target = set(playing: navigation.toRole),
                            let sourceIndex = container.entitySets.firstIndex(where: { $0.name == source }),
                            !container.entitySets[sourceIndex].navigationPropertyBindings.contains(where: {
                                $0.path == navigation.name
                            })
                        else { continue }
                        container.entitySets[sourceIndex].navigationPropertyBindings.append(
                            CSDLNavigationPropertyBinding(path: navigation.name, target: target))
                    }
                }
                schemas[schemaIndex].entityContainers[containerIndex] = container
            }
        }
    }
}
