import Foundation
import ODataCore
import ODataQuery

/// Relationship requests (OData V4 `$ref`) over the foreign keys the fixture's referential constraints name.
extension FixtureService {
    /// Answers `POST`/`PUT`/`DELETE` of `Set(key)/Nav/$ref` (a collection's delete: `Nav(key)/$ref` or `Nav/$ref?$id=…`)
    /// and `GET` of it; `nil` for a path that does not end in `/$ref`.
    ///
    /// A single-valued navigation with a referential constraint sets (`PUT`) or clears (`DELETE`) this entity's
    /// foreign key; a collection navigation whose partner has one sets (`POST`) or clears (`DELETE`) the foreign key of
    /// the linked entity. The body of a `POST`/`PUT` is `{"@odata.id": "…"}`, absolute or relative to the service root.
    /// Answers 204; 404 for an entity or link that is not there, 400 for a navigation without a foreign key.
    func reference(_ request: IncomingRequest, state: inout State) throws -> OutgoingResponse? {
        guard request.path.hasSuffix("/$ref") else { return nil }
        let parsed: ResourcePath
        do { parsed = try ResourcePath.parse(String(request.path.dropLast("/$ref".count))) } catch {
            throw ServiceFailure.badRequest("the resource path '\(request.decodedPath)' is invalid: \(error.message)")
        }
        let data = state.data
        guard parsed.segments.count == 2, let fromKey = parsed.segments[0].key, case .name(let set) = parsed.segments[0].kind,
              case .name(let navigationName) = parsed.segments[1].kind
        else { throw ServiceFailure.badRequest("$ref follows one navigation property of one entity, as in Set(key)/Nav/$ref") }
        guard model.entitySet(set) != nil else { throw ServiceFailure.notFound("no entity set named \(set)") }
        let predicate = try entityPredicate(fromKey, set: set, members: nil, data: data)
        let entity = data.stored(in: set, predicate: predicate)!.value
        guard let navigation = try data.entityType(of: set).navigationProperty(navigationName) else {
            throw ServiceFailure.notFound("\(set) has no navigation property named \(navigationName)")
        }
        let (targetSet, related) = try self.related(of: entity, in: set, navigation: navigation, data: data)
        if request.method == "GET" {
            let ids = related.map { JSONValue.object(["@odata.id": .string(serviceRoot + targetSet + $0)]) }
            var body = JSONObject()
            body.append(.string(serviceRoot + "$metadata#Collection($ref)"), forKey: "@odata.context")
            body.append(.array(ids), forKey: "value")
            return .json(200, .object(body))
        }
        // The other end: named by the body, the segment's key or `$id`, or (single-valued delete) the current one.
        var other: String?
        switch request.method {
        case "POST", "PUT":
            guard (request.method == "POST") == navigation.isCollection else {
                throw ServiceFailure(405, "MethodNotAllowed", navigation.isCollection
                    ? "POST adds a link to the collection \(navigationName)" : "PUT sets the single-valued link \(navigationName)")
            }
            guard var id = try bodyObject(request)["@odata.id"]?.stringValue else {
                throw ServiceFailure.badRequest("the body must name the entity to link: {\"@odata.id\": \"…\"}")
            }
            if id.hasPrefix(serviceRoot) { id = String(id.dropFirst(serviceRoot.count)) }
            guard case .entity(targetSet, let named) = try resolve(id, data: data) else {
                throw ServiceFailure.badRequest("'\(id)' is not an entity of \(targetSet)")
            }
            other = named
        case "DELETE":
            if let key = parsed.segments[1].key {
                other = try entityPredicate(key, set: targetSet, members: related, data: data)
            } else if let id = try QueryOptions.decodedPairs(request.query).first(where: { $0.name == "$id" })?.value {
                let relative = id.hasPrefix(serviceRoot) ? String(id.dropFirst(serviceRoot.count)) : id
                guard case .entity(targetSet, let named) = try resolve(PercentEncoding.encodePath(relative), data: data),
                      related.contains(named)
                else { throw ServiceFailure.notFound("'\(id)' is not linked to \(set)\(predicate) by \(navigationName)") }
                other = named
            } else if navigation.isCollection {
                throw ServiceFailure.badRequest("deleting a link of the collection \(navigationName) names it: \(navigationName)(key)/$ref or $id")
            } else {
                guard let current = related.first else { throw ServiceFailure.notFound("\(set)\(predicate)/\(navigationName) links to nothing") }
                other = current
            }
        default:
            throw ServiceFailure(405, "MethodNotAllowed", "\(request.method) is not allowed on a $ref")
        }
        guard let other, let otherEntity = data.stored(in: targetSet, predicate: other)?.value else {
            throw ServiceFailure.notFound("no entity \(targetSet) to link")
        }
        let clear = request.method == "DELETE"
        if !navigation.constraints.isEmpty {
            var changes = JSONObject()
            for constraint in navigation.constraints {
                changes[constraint.property] = clear ? .null : (otherEntity[constraint.referencedProperty] ?? .null)
            }
            try state.data.update(in: set, key: try keyObject(entity, set: set, data: data), changes: changes)
        } else if let partnerName = navigation.partner,
                  let partner = try data.entityType(of: targetSet).navigationProperty(partnerName), !partner.constraints.isEmpty {
            var changes = JSONObject()
            for constraint in partner.constraints {
                changes[constraint.property] = clear ? .null : (entity[constraint.referencedProperty] ?? .null)
            }
            try state.data.update(in: targetSet, key: try keyObject(otherEntity, set: targetSet, data: data), changes: changes)
        } else {
            throw ServiceFailure.badRequest("\(set)/\(navigationName) has no referential constraint to link by")
        }
        return OutgoingResponse(status: 204)
    }

    private func keyObject(_ entity: JSONObject, set: String, data: FixtureData) throws -> JSONObject {
        var key = JSONObject()
        for name in try data.entityType(of: set).keys { key[name] = entity[name] }
        return key
    }
}
