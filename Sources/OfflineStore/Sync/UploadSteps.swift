import Foundation
import ODataCore
import ODataTyped

/// One settled request's changes to the store, run inside a write transaction: every read that decides what is
/// written happens in that transaction, so a local change made meanwhile is seen, never overwritten.
typealias UploadStep = @Sendable (EntityStore.Changes) throws -> Void

/// The store changes of the upload's outcomes (``UploadMachine/Outcome``).
enum UploadSteps {
    /// The step of one outcome. An accepted create's step returns nothing here: see ``created(_:reply:model:changes:)``.
    static func step(_ outcome: UploadMachine.Outcome, model: ServiceModel) -> UploadStep {
        switch outcome {
        case .accepted(let entry, let reply, let laterInSnapshot, let snapshotEnd):
            return accepted(entry, etag: reply.etag, laterInSnapshot: laterInSnapshot, snapshotEnd: snapshotEnd)
        case .created(let entry, let reply):
            return { changes in _ = try created(entry, reply: reply, model: model, changes: changes) }
        case .failed(let entry, let failure, _):
            return failed(entry, failure)
        case .serverWon(let entry, let resolved):
            return { changes in _ = try serverWon(entry, resolved, changes: changes) }
        case .resolved(let entry, let reply, _, let keep, let laterInSnapshot, let snapshotEnd):
            let accept = accepted(entry, etag: reply.etag, laterInSnapshot: laterInSnapshot, snapshotEnd: snapshotEnd)
            let (set, key) = split(entry.entity)
            return { changes in
                if !keep.isEmpty, var record = try changes.current(set: set, key: key) {
                    for (name, value) in keep { record.entity[name] = value }
                    try changes.put(record)
                }
                try accept(changes)
            }
        }
    }

    /// A conflict the back end's entity won: the local copy becomes it (goes when the back end has none, comes back when
    /// deleted locally), and this and every later queued update or delete of the entity are dropped. The entity stays in
    /// error state only while an ErrorArchive entry affects it.
    ///
    /// - Returns: The IDs of the later requests dropped.
    static func serverWon(_ entry: QueuedRequest, _ resolved: OfflineODataResolvedConflict, changes: EntityStore.Changes) throws -> [Int64] {
        let dropped = try changes.queuedRequests(after: entry.id).filter { $0.entity == entry.entity && UploadMachine.resolvable($0) }.map(\.id)
        for id in dropped { try changes.dequeue(id) }
        let (set, key) = split(entry.entity)
        if var record = try changes.current(set: set, key: key) {
            if let remote = resolved.conflict.remote {
                for (name, value) in remote { record.entity[name] = value }
                if let etag = resolved.conflict.remoteETag { record.entity["@odata.etag"] = .string(etag) }
                record.state = .downloaded
                record.original = nil
                record.isDeleteError = false
                record.inErrorState = try !changes.errorEntries(affecting: record.reference).isEmpty
                try changes.put(record)
            } else {
                try changes.remove(set: record.set, key: record.key)
            }
        }
        try changes.dequeue(entry.id)
        return dropped
    }

    /// An accepted update or delete. An update's new ETag goes to the later queued requests on the entity.
    ///
    /// - Parameters:
    ///   - laterInSnapshot: Whether a later request of the upload's queue snapshot is on the same entity.
    ///   - snapshotEnd: The last request ID of that snapshot; requests queued after it are looked up in the transaction.
    static func accepted(_ entry: QueuedRequest, etag: String?, laterInSnapshot: Bool, snapshotEnd: Int64) -> UploadStep {
        if let link = entry.link { return acceptedLink(entry, link, snapshotEnd: snapshotEnd) }
        let (set, key) = split(entry.entity)
        if entry.isMedia { return acceptedMedia(entry, etag: etag) }
        return { changes in
            let laterOnEntity = try laterInSnapshot || changes.queuedRequests(after: snapshotEnd).contains { $0.changes(entry.entity) }
            if var record = try changes.current(set: set, key: key) {
                if entry.method == "DELETE" {
                    if !laterOnEntity && record.state == .deleted { try changes.remove(set: record.set, key: record.key) }
                } else {
                    if let etag { record.entity["@odata.etag"] = .string(etag) }
                    if laterOnEntity {
                        for updated in OfflineODataProvider.withNewETag(try changes.queuedRequests(after: entry.id), after: entry, etag: etag) {
                            try changes.enqueue(updated)
                        }
                    }
                    if !laterOnEntity && record.state != .deleted && !record.inErrorState {
                        record.state = .downloaded
                        record.original = nil
                    }
                    try changes.put(record)
                }
            }
            try changes.dequeue(entry.id)
        }
    }

    /// An accepted media replace: the media resource (`$value` or a stream property) is no longer local and has the
    /// back end's new media ETag (also the entity's `@odata.mediaEtag`, or `Name@odata.mediaEtag`); a later queued
    /// replace of the same media gets it as its `If-Match`. The entity's own state and ETag are not the media's: they
    /// stay.
    static func acceptedMedia(_ entry: QueuedRequest, etag: String?) -> UploadStep {
        let (set, key) = split(entry.entity)
        return { changes in
            let later = try changes.queuedRequests(after: entry.id)
            let stillLocal = later.contains { $0.isMedia && $0.entity == entry.entity && $0.mediaProperty == entry.mediaProperty }
            try changes.markMediaUploaded(set: set, key: key, property: entry.mediaProperty ?? "", etag: etag, stillLocal: stillLocal)
            for updated in OfflineODataProvider.withNewETag(later, after: entry, etag: etag) { try changes.enqueue(updated) }
            if let etag, var record = try changes.current(set: set, key: key) {
                record.entity[(entry.mediaProperty ?? "") + "@odata.mediaEtag"] = .string(etag)
                try changes.put(record)
            }
            try changes.dequeue(entry.id)
        }
    }

    /// A failed request: ErrorArchive entry, entity in error state (a failed delete makes it visible again with
    /// `isDeleteError`), request dequeued.
    static func failed(_ entry: QueuedRequest, _ archived: ErrorArchiveEntry) -> UploadStep {
        if let link = entry.link { return failedLink(entry, link, archived: archived) }
        let (set, key) = split(entry.entity)
        return { changes in
            try changes.archiveError(archived)
            if var record = try changes.current(set: set, key: key) {
                record.inErrorState = true
                if entry.method == "DELETE" {
                    record.isDeleteError = true
                    if record.state == .deleted { record.state = record.original == nil ? .created : .updated }
                }
                try changes.put(record)
            }
            try changes.dequeue(entry.id)
        }
    }

    /// `Set(key)` split into the set and the key.
    static func split(_ reference: String) -> (set: String, key: String) {
        (String(reference.prefix { $0 != "(" }), String(reference.drop { $0 != "(" }))
    }

    /// An accepted create, in one transaction that reads what it changes: the server's key and ETag replace the
    /// local ones, and a changed key goes into every later queued request and into the foreign keys that held
    /// the temporary value.
    ///
    /// - Returns: Whether later queued requests were rewritten with a new key (the upload reads the queue again), and
    ///   whether the back end's key values made no key (the local key was kept).
    static func created(_ entry: QueuedRequest, reply: UploadReply, model: ServiceModel,
                        changes: EntityStore.Changes) throws -> (keyChanged: Bool, keyUnreadable: Bool) {
        let later = try changes.queuedRequests(after: entry.id)
        let laterOnEntity = later.contains { $0.changes(entry.entity) }
        let (set, key) = split(entry.entity)
        guard var record = try changes.current(set: set, key: key), let type = model.entityType(ofSet: record.set) else {
            try changes.dequeue(entry.id)
            return (false, false)
        }
        var serverEntity = JSONObject()
        let answered = UploadMachine.createdEntity(reply)
        // An answer that is not an entity reaches here only when the key was not made locally (the machine archives
        // the others): the key stays, and so does the rest of the local entity.
        if let object = answered {
            for (name, value) in object where !name.contains("@") && type.propertyTypes[name] != nil { serverEntity[name] = value }
            if let bodyETag = object["@odata.etag"] { serverEntity["@odata.etag"] = bodyETag }
        }
        var entity = record.entity
        let oldEntity = record.entity
        for name in type.key { if let value = serverEntity[name] { entity[name] = value } }
        // A media entity's answer says where its media is and which version the back end holds.
        for name in Ingest.mediaAnnotations { if let value = answered?[name] { entity[name] = value } }
        if let tag = reply.etag ?? serverEntity["@odata.etag"]?.stringValue { entity["@odata.etag"] = .string(tag) }
        // A key value of the server's that makes no key keeps the local key, and is told (`keyUnreadable`).
        let newKey: String
        var keyUnreadable = false
        do { newKey = try CanonicalKey.render(entity, type: type) } catch {
            newKey = record.key
            for name in type.key { entity[name] = oldEntity[name] }
            keyUnreadable = true
        }
        let oldReference = record.reference
        let oldKey = record.key
        record.key = newKey
        record.entity = entity
        if record.state != .deleted { record.state = laterOnEntity ? .updated : .downloaded }
        record.original = laterOnEntity ? (serverEntity.isEmpty ? entity : serverEntity) : nil
        let newReference = record.reference
        var rewritten = later.map { renamed($0, from: oldReference, to: newReference) }
        if entry.isMedia {
            // A media entity created from its bytes: its media follows the key and is the back end's now (local still
            // while a later replace of it is queued).
            if oldKey != newKey { try changes.renameMedia(set: record.set, from: oldKey, to: newKey) }
            let laterReplace = later.contains { $0.isMedia && $0.entity == entry.entity && $0.mediaProperty == nil }
            try changes.markMediaUploaded(set: record.set, key: newKey, property: "", etag: entity["@odata.mediaEtag"]?.stringValue,
                                          stillLocal: laterReplace)
        }
        if oldKey != newKey {
            var changedKeys: [String: (JSONValue, JSONValue)] = [:]
            for name in type.key {
                if let old = oldEntity[name], let new = entity[name], old != new { changedKeys[name] = (old, new) }
            }
            let dependents = try ForeignKeys.rewritten(to: record.set, changedKeys: changedKeys, model: model, changes: changes, queued: rewritten)
            rewritten = dependents.queued
            try changes.remove(set: record.set, key: oldKey)
            for old in dependents.movedFrom { try changes.remove(set: old.set, key: old.key) }
            try changes.put(record)
            for dependent in dependents.records { try changes.put(dependent) }
        } else {
            try changes.put(record)
        }
        for updated in rewritten where later.first(where: { $0.id == updated.id }) != updated { try changes.enqueue(updated) }
        try changes.dequeue(entry.id)
        return (oldReference != newReference, keyUnreadable)
    }

    /// A queued request on `old` (or under its URL) moved to `new`; a relationship request's "to" end and holder too
    /// (its body names the "to" end, its URL does for a delete from a collection).
    static func renamed(_ entry: QueuedRequest, from old: String, to new: String) -> QueuedRequest {
        var entry = entry
        if entry.entity == old { entry.entity = new }
        if var link = entry.link {
            if link.holder == old { link.holder = new }
            if link.target == old {
                link.target = new
                let (oldKey, newKey) = (PercentEncoding.encodePath(split(old).key), PercentEncoding.encodePath(split(new).key))
                for form in ["/" + link.navigation + oldKey + "/$ref", "/$links/" + link.navigation + oldKey] where entry.url.hasSuffix(form) {
                    entry.url = entry.url.dropLast(form.count) + form.replacingOccurrences(of: oldKey, with: newKey)
                }
                // The body is the store's own `{"@odata.id": …}` (V2: `{"uri": …}`); one that does not parse names nothing to rename.
                if let text = entry.body, var body = (try? JSON.parse(Array(text.utf8)))?.objectValue {
                    for name in ["@odata.id", "uri"] {
                        if let value = body[name]?.stringValue, value.hasSuffix(PercentEncoding.encodePath(old)) {
                            body[name] = .string(value.dropLast(PercentEncoding.encodePath(old).count) + PercentEncoding.encodePath(new))
                        }
                    }
                    entry.body = String(decoding: JSON.serialize(.object(body)), as: UTF8.self)
                }
            }
            entry.link = link
        }
        let encodedOld = PercentEncoding.encodePath(old)
        if entry.url == encodedOld || entry.url.hasPrefix(encodedOld + "/") {
            entry.url = PercentEncoding.encodePath(new) + entry.url.dropFirst(encodedOld.count)
        }
        return entry
    }
}
