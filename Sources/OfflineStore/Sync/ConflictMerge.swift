import Foundation
import ODataCore

/// The field-by-field rules of a conflict (``OfflineODataConflict``): what each side changed from the entity as
/// downloaded, what conflicts, what a merge sends and what the local copy takes from the back end. Pure.
enum ConflictMerge {
    /// What resolving a conflict comes to.
    enum Decision: Sendable, Hashable {
        /// Archived, and why.
        case archive(String)
        /// The back end's entity replaces the local copy.
        case serverWins
        /// Nothing left to send: a delete of an entity the back end deleted too.
        case done
        /// Re-sent with the current ETag; with these properties as its body, or its own body when `nil`.
        case resend(JSONObject?)
    }

    /// The table of ``OfflineODataConflictPolicy``: what `resolution` does with `conflict`.
    static func decision(_ resolution: OfflineODataConflictResolution, _ conflict: OfflineODataConflict) -> Decision {
        let isDelete = conflict.method == "DELETE"
        switch resolution {
        case .archive:
            return .archive("the resolver archived it")
        case .serverWins:
            return .serverWins
        case .send where isDelete:
            return .archive("a resolver's entity to send answers no delete")
        case _ where conflict.remote == nil:
            // A delete of what the back end deleted too is done; a change of it has nothing left to change.
            return isDelete ? .done : .archive("the back end has the entity no more (another client deleted it)")
        case .send(let entity):
            return .resend(properties(entity))
        case .mergeFields where isDelete:
            let changed = remotelyChanged(conflict).keys.sorted()
            return changed.isEmpty ? .resend(nil) : .archive("deleted here, changed on the back end (\(changed.joined(separator: ", ")))")
        case .mergeFields:
            return conflict.conflictingFields.isEmpty ? .resend(mergedBody(conflict)) : .archive("changed here and on the back end")
        case .clientWins:
            return .resend(nil)
        }
    }

    /// An entity's properties: annotations (`@odata.etag`, `Name@odata.mediaEtag`, `Nav@odata.bind`) left out.
    static func properties(_ object: JSONObject) -> JSONObject {
        var properties = JSONObject()
        for (name, value) in object where !name.contains("@") { properties.append(value, forKey: name) }
        return properties
    }

    /// The properties a queued update sets (its body's); empty for a delete or a body that is not an object.
    static func localChange(of entry: QueuedRequest) -> JSONObject {
        guard entry.method != "DELETE", let body = entry.body, case .object(let object)? = try? JSON.parse(Array(body.utf8)) else {
            return JSONObject()
        }
        return properties(object)
    }

    /// The local change's properties that differ from the base (every one of them without a base).
    static func locallyChanged(_ conflict: OfflineODataConflict) -> JSONObject {
        var changed = JSONObject()
        for (name, value) in conflict.local where conflict.base?[name] != value { changed.append(value, forKey: name) }
        return changed
    }

    /// The back end's properties that differ from the base; without a base, those that differ from the local change.
    static func remotelyChanged(_ conflict: OfflineODataConflict) -> JSONObject {
        var changed = JSONObject()
        for (name, value) in conflict.remote ?? JSONObject() {
            let before = conflict.base.map { $0[name] } ?? conflict.local[name]
            if let before, before == value { continue }
            if conflict.base == nil && conflict.local[name] == nil { continue }
            changed.append(value, forKey: name)
        }
        return changed
    }

    /// The properties both sides changed, to different values, in name order.
    static func conflicting(_ conflict: OfflineODataConflict) -> [String] {
        let remote = remotelyChanged(conflict)
        return locallyChanged(conflict).compactMap { name, value in
            remote[name].map { $0 == value ? nil : name } ?? nil
        }.sorted()
    }

    /// What a merge sends: a `PATCH`'s (`MERGE`'s) locally changed properties only, so the back end keeps its own
    /// changes; a `PUT`'s whole entity, the back end's with the local changes over it.
    static func mergedBody(_ conflict: OfflineODataConflict) -> JSONObject {
        let local = locallyChanged(conflict)
        guard conflict.method == "PUT", var entity = conflict.remote else { return local }
        for (name, value) in local { entity[name] = value }
        return entity
    }

    /// What the local copy takes once a re-send that resolved a conflict is accepted: the back end's entity now (a
    /// `PUT`'s body, or the back end's entity with the `PATCH`'s `sent` properties over it), each property that was sent
    /// or that the local copy still holds as downloaded (a later local change keeps its value).
    static func kept(_ report: OfflineODataResolvedConflict, sent: JSONObject, localEntity: JSONObject) -> JSONObject {
        let conflict = report.conflict
        var server = conflict.method == "PUT" ? JSONObject() : conflict.remote ?? JSONObject()
        for (name, value) in sent { server[name] = value }
        var kept = JSONObject()
        for (name, value) in server where sent[name] != nil || (conflict.base != nil && localEntity[name] == conflict.base?[name]) {
            kept.append(value, forKey: name)
        }
        return kept
    }

    /// The archived message of a conflict a policy could not resolve: each conflicting field with its three values.
    static func unresolvedMessage(_ conflict: OfflineODataConflict, original: String, why: String) -> String {
        let fields = conflict.conflictingFields.map { name in
            "\(name): here \(text(conflict.local[name])), on the back end \(text(conflict.remote?[name])), downloaded \(text(conflict.base?[name]))"
        }
        return original + " (conflict not resolved: \(why)" + (fields.isEmpty ? "" : "; " + fields.joined(separator: "; ")) + ")"
    }

    /// The ErrorArchive's inner error of an unresolved conflict: the three versions
    /// (`{"conflict":{"fields":[…],"local":{…},"remote":{…}|null,"base":{…}|null,"remoteETag":…},"backEnd":…}`), with the
    /// back end's own inner error, if any.
    static func innerError(_ conflict: OfflineODataConflict, backEnd: JSONValue?) -> JSONValue {
        let object: JSONObject = [
            "conflict": .object([
                "fields": .array(conflict.conflictingFields.map(JSONValue.string)),
                "local": .object(conflict.local),
                "remote": conflict.remote.map(JSONValue.object) ?? .null,
                "base": conflict.base.map(JSONValue.object) ?? .null,
                "remoteETag": conflict.remoteETag.map(JSONValue.string) ?? .null,
            ]),
            "backEnd": backEnd ?? .null,
        ]
        return .object(object)
    }

    private static func text(_ value: JSONValue?) -> String {
        value.map { String(decoding: JSON.serialize($0), as: UTF8.self) } ?? "(absent)"
    }
}
