import Foundation
import HTTPTypes
import ODataCore
import ODataQuery

/// Local relationship requests: `POST`/`PUT`/`DELETE` of `Set(key)/Nav/$ref` (V4; a delete may name the "to" end as
/// `Nav(key)/$ref` or with `$id`) and of `Set(key)/$links/Nav` (V2). A relationship is changed over the foreign key
/// its referential constraint names: a single-valued navigation sets the "from" end's foreign key, a collection
/// navigation the "to" end's. The request is queued in the service's own form, the "from" end its affected entity.
extension OfflineODataProvider {
    /// Whether a parsed local request addresses a relationship (its path ends in `$ref`, or was written with `$links`).
    static func isRelationship(_ parsed: LocalRequest) -> Bool {
        parsed.path.segments.last?.kind == .ref
    }

    /// Changes a relationship locally and queues its request, in one transaction.
    func changeLink(_ parsed: LocalRequest, method: String, body: Data?, customTag: String?, store: EntityStore) async throws -> ODataResponse {
        let model = self.model
        let counters = try await store.write { changes in
            try self.linkChange(parsed, method: method, body: body, customTag: customTag, model: model, store: store, changes: changes)
        }
        noteCounters(counters)
        return ODataResponse(statusCode: 204)
    }

    /// The entity `reference` (absolute under the service root, or relative to it) names in `set`, visible in the
    /// local store; `naming` says in messages where the reference came from.
    nonisolated func localEntity(_ reference: String, in set: String, model: ServiceModel, lookup: Lookup,
                                 naming: String) throws -> EntityRecord {
        let path = try LocalRequest.path(reference.hasPrefix(serviceRoot) ? String(reference.dropFirst(serviceRoot.count)) : reference)
        guard path.segments.count == 1, path.segments[0].name == set, let key = path.segments[0].key, let type = model.entityType(ofSet: set) else {
            throw OfflineODataError(.invalidRequest, "'\(reference)' (\(naming)) is not an entity of \(set)")
        }
        let canonical = try CanonicalKey.render(predicate: key, type: type, set: set)
        guard let target = try lookup(set, canonical), target.isVisible else {
            throw OfflineODataError(.entityNotFound, "\(set)\(canonical) (\(naming)) is not in the local store")
        }
        return target
    }

    /// The foreign key of a navigation as `(property of the "from" end, property of the "to" end)` pairs, and
    /// whether the "from" end holds it: its own constraint, its partner's, or (V2) the association's constraint
    /// seen from its principal. A single-valued navigation whose pairs name the whole key of the "to" end is held by
    /// the "from" end (SAP's V2 services model a to-one link with the "from" end as the principal).
    nonisolated static func foreignKey(_ navigation: ServiceModel.NavigationProperty, targetType: ServiceModel.EntityType)
        -> (pairs: [(from: String, to: String)], fromHolds: Bool)? {
        var pairs: [(from: String, to: String)] = navigation.constraints.map { ($0.0, $0.1) }
        if pairs.isEmpty, let partnerName = navigation.partner, let partner = targetType.navigation[partnerName] {
            pairs = partner.constraints.map { ($0.1, $0.0) }
        }
        if pairs.isEmpty { pairs = navigation.targetConstraints.map { ($0.1, $0.0) } }
        guard !pairs.isEmpty else { return nil }
        let fromHolds = !navigation.constraints.isEmpty || (!navigation.isCollection && Set(pairs.map(\.to)) == Set(targetType.key))
        return (pairs, fromHolds)
    }

    /// A relationship change, decided and written in one transaction.
    private nonisolated func linkChange(_ parsed: LocalRequest, method: String, body: Data?, customTag: String?, model: ServiceModel,
                                        store: EntityStore, changes: EntityStore.Changes) throws -> StoreCounters {
        let lookup: Lookup = { try changes.current(set: $0, key: $1) }
        let segments = parsed.path.segments
        guard segments.count == 3, let fromKey = segments[0].key, case .name(let navigationName) = segments[1].kind,
              let fromType = model.entityType(ofSet: segments[0].name)
        else { throw OfflineODataError(.invalidRequest, "'\(parsed.rawPath)' is not a relationship of one entity (Set(key)/Nav/$ref or Set(key)/$links/Nav)") }
        let fromSet = segments[0].name
        let fromCanonical = try CanonicalKey.render(predicate: fromKey, type: fromType, set: fromSet)
        guard let from = try lookup(fromSet, fromCanonical), from.isVisible else {
            throw OfflineODataError(.entityNotFound, "\(fromSet)\(fromCanonical) is not in the local store")
        }
        guard let navigation = fromType.navigation[navigationName], let targetSet = model.targetSet(from: fromSet, navigation: navigationName),
              let targetType = model.entityType(ofSet: targetSet)
        else { throw OfflineODataError(.invalidRequest, "'\(navigationName)' is not a navigation property of \(fromSet)") }
        guard let (pairs, fromHolds) = Self.foreignKey(navigation, targetType: targetType) else {
            throw OfflineODataError(.invalidRequest, "'\(navigationName)' of \(fromSet) has no referential constraint: the offline store changes relationships over a foreign key only")
        }
        let related = try LocalQuery(store: store, model: model).related(from, navigation: navigationName)?.records ?? []
        let named: EntityRecord
        switch method {
        case "POST", "PUT":
            guard (method == "POST") == navigation.isCollection else {
                throw OfflineODataError(.invalidRequest, navigation.isCollection
                    ? "'\(navigationName)' is a collection: POST adds a link to it" : "'\(navigationName)' is single-valued: PUT sets its link")
            }
            let object = try Self.bodyObject(body)
            guard let reference = (object["@odata.id"] ?? object["uri"] ?? object["d"]?.objectValue?["uri"])?.stringValue else {
                throw OfflineODataError(.invalidRequest, "a relationship body names the entity to link: {\"@odata.id\": \"Set(key)\"} (V2: {\"uri\": …})")
            }
            named = try localEntity(reference, in: targetSet, model: model, lookup: lookup, naming: "linked by '\(navigationName)'")
        case "DELETE":
            if let key = segments[1].key {
                let canonical = try CanonicalKey.render(predicate: key, type: targetType, set: targetSet)
                guard let match = related.first(where: { $0.key == canonical }) else {
                    throw OfflineODataError(.entityNotFound, "\(targetSet)\(canonical) is not linked to \(from.reference) by '\(navigationName)'")
                }
                named = match
            } else if let id = parsed.value(of: "$id") {
                let identified = try localEntity(id, in: targetSet, model: model, lookup: lookup, naming: "the $id")
                guard related.contains(where: { $0.key == identified.key }) else {
                    throw OfflineODataError(.entityNotFound, "\(identified.reference) is not linked to \(from.reference) by '\(navigationName)'")
                }
                named = identified
            } else {
                guard !navigation.isCollection else {
                    throw OfflineODataError(.invalidRequest, "deleting a link of the collection '\(navigationName)' names the entity: \(navigationName)(key)/$ref or $id")
                }
                guard let single = related.first else {
                    throw OfflineODataError(.entityNotFound, "\(from.reference)/\(navigationName) links to no entity")
                }
                named = single
            }
        default:
            throw OfflineODataError(.invalidRequest, "a relationship is created with POST (collection) or PUT (single-valued) and deleted with DELETE, not \(method)")
        }
        // The "to" end as this transaction reads it (the relationship was found through the reading connection).
        let target = try lookup(named.set, named.key) ?? named
        // The holder gets the other end's values (or nulls); a foreign key that is part of its key cannot change.
        var holder = fromHolds ? from : target
        let other = fromHolds ? target : from
        guard let holderType = model.entityType(ofSet: holder.set) else { throw OfflineODataError(.invalidRequest, "unknown set \(holder.set)") }
        var before = JSONObject()
        var after = JSONObject()
        for pair in pairs {
            let (property, source) = fromHolds ? (pair.from, pair.to) : (pair.to, pair.from)
            guard !holderType.key.contains(property) else {
                throw OfflineODataError(.invalidRequest, "linking by '\(navigationName)' would change \(property), part of the key of \(holder.reference)")
            }
            before[property] = holder.entity[property] ?? .null
            after[property] = method == "DELETE" ? .null : (other.entity[source] ?? .null)
        }
        if holder.state == .downloaded {
            holder.original = holder.entity
            holder.state = .updated
        }
        for (property, value) in after { holder.entity[property] = value }
        let change = LinkChange(navigation: navigationName, target: target.reference, holder: holder.reference, before: before, after: after)
        let targetKey = method == "DELETE" && navigation.isCollection ? target.key : ""
        let url = model.isV2 ? from.reference + "/$links/" + navigationName + targetKey : from.reference + "/" + navigationName + targetKey + "/$ref"
        let linked = serviceRoot + PercentEncoding.encodePath(target.reference)
        let requestBody = JSON.serialize(.object([model.isV2 ? "uri" : "@odata.id": .string(linked)]))
        return try queueChange(holder, method: method, url: PercentEncoding.encodePath(url), body: Data(requestBody), headers: HTTPFields(),
                               customTag: customTag, link: (from.reference, change), changes: changes)
    }
}
