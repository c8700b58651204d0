import Foundation
import ODataCore
import ODataQuery

/// An entity-id as a payload carries it (`@id`, `@odata.id`, the `id` of an OData 4.0 deleted entity, V2
/// `__metadata.uri`), resolved to the entity set and key it names through the service's `$metadata` — never
/// by guessing: the key predicate is matched against the entity type's key properties and their types.
///
/// Accepted: absolute (`http://host/service/Orders(5)`, under the service root or any URL whose path ends in
/// the resource path), relative to the service root or the context URL (`Orders(5)`, `/service/Orders(5)`),
/// single and composite keys (`Order_Details(OrderID=1,ProductID=2)`), percent-encoded key values, and paths
/// through navigation or containment (`Customers('ALFKI')/Orders(5)`: the set the navigation leads to).
struct EntityID: Sendable, Hashable {
    /// The entity set.
    var set: String
    /// The canonical key, `('ALFKI')` or `(OrderID=1,ProductID=2)`.
    var key: String
    /// The key properties and their values, in the type's key order.
    var values: [(String, JSONValue)]

    var reference: String { self.set + self.key }

    static func == (lhs: EntityID, rhs: EntityID) -> Bool { lhs.set == rhs.set && lhs.key == rhs.key }
    func hash(into hasher: inout Hasher) { hasher.combine(reference) }

    /// Resolves `id`.
    ///
    /// - Parameters:
    ///   - id: The entity-id.
    ///   - serviceRoot: The service root, ending with `/`.
    ///   - model: The service's model.
    /// - Throws: `OfflineODataError.downloadFailed` naming the id and what is wrong with it.
    static func resolve(_ id: String, serviceRoot: String, model: ServiceModel) throws(OfflineODataError) -> EntityID {
        func failure(_ reason: String) -> OfflineODataError {
            OfflineODataError(.downloadFailed, "the entity-id '\(id)' \(reason)")
        }
        var text = id
        if let cut = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = String(text[..<cut]) }
        let rootPath = URL(string: serviceRoot)?.path ?? "/"
        if text.hasPrefix(serviceRoot) {
            text = String(text.dropFirst(serviceRoot.count))
        } else if let scheme = text.range(of: "://") {
            // Another spelling of the host: keep the path, then drop the root's path when it starts with it.
            let afterHost = text[scheme.upperBound...]
            text = afterHost.firstIndex(of: "/").map { String(afterHost[$0...]) } ?? ""
        }
        let normalizedRoot = rootPath.hasSuffix("/") ? rootPath : rootPath + "/"
        if text.hasPrefix("/") {
            guard text.hasPrefix(normalizedRoot) else { throw failure("is not under the service root \(serviceRoot)") }
            text = String(text.dropFirst(normalizedRoot.count))
        }
        guard !text.isEmpty else { throw failure("names no entity") }
        let path: ResourcePath
        do { path = try LocalRequest.path(text) } catch {
            throw failure("is not a resource path: \(error.message)")
        }
        guard let first = path.segments.first, model.entitySets[first.name] != nil else {
            throw failure("does not start with an entity set of the service")
        }
        var set = first.name
        for segment in path.segments.dropFirst() {
            guard let next = model.targetSet(from: set, navigation: segment.name) else {
                throw failure("has '\(segment.name)', which is no navigation property of '\(set)'")
            }
            set = next
        }
        guard let predicate = path.segments.last?.key else { throw failure("has no key predicate") }
        guard let type = model.entityType(ofSet: set) else { throw failure("names '\(set)', whose entity type is unknown") }
        let key: String
        do { key = try CanonicalKey.render(predicate: predicate, type: type, set: set) } catch {
            throw failure("does not fit the key of '\(set)': \(error.message)")
        }
        var values: [(String, JSONValue)] = []
        switch predicate {
        case .single(let value):
            values = [(type.key[0], CanonicalKey.coerce(value, type: type.propertyTypes[type.key[0]]))]
        case .named(let parts):
            for name in type.key {
                if let match = parts.first(where: { $0.name == name }) {
                    values.append((name, CanonicalKey.coerce(match.value, type: type.propertyTypes[name])))
                }
            }
        }
        return EntityID(set: set, key: key, values: values)
    }
}
