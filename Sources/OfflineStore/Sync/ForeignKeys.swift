import Foundation
import ODataCore

/// The foreign keys that follow a create's new key.
enum ForeignKeys {
    /// After a create got the server's key: the foreign keys (referential constraints) in other local entities,
    /// in the bodies of later queued requests and in their relationship records (``LinkChange``) that hold the
    /// temporary key value get the server's value. A
    /// foreign key that is part of the dependent's own key (an order item keyed by its order's ID) changes that
    /// entity's key too: it moves to the new key, and the later queued requests on it are renamed. Read inside
    /// the transaction that writes the result.
    ///
    /// - Returns: The changed records, the keys they moved away from, and the queued requests.
    static func rewritten(to principalSet: String, changedKeys: [String: (JSONValue, JSONValue)], model: ServiceModel,
                          changes: EntityStore.Changes,
                          queued: [QueuedRequest]) throws -> (records: [EntityRecord], movedFrom: [(set: String, key: String)], queued: [QueuedRequest]) {
        guard !changedKeys.isEmpty else { return ([], [], queued) }
        var records: [String: EntityRecord] = [:]
        var movedFrom: [(set: String, key: String)] = []
        var renames: [(from: String, to: String)] = []
        var queued = queued
        for (setName, set) in model.entitySets.sorted(by: { $0.key < $1.key }) {
            guard let type = model.entityTypes[set.entityType] else { continue }
            var columns: [String: (JSONValue, JSONValue)] = [:]
            for navigation in type.navigation.values where model.targetSet(from: setName, navigation: navigation.name) == principalSet {
                for (dependent, principal) in navigation.constraints {
                    if let change = changedKeys[principal] { columns[dependent] = change }
                }
            }
            guard !columns.isEmpty else { continue }
            // The dependents holding a temporary value, read through the foreign keys' columns (indexed).
            var holding: [String: EntityRecord] = [:]
            for (column, change) in columns.sorted(by: { $0.key < $1.key }) {
                for record in try changes.records(in: setName, property: column, equalTo: change.0) { holding[record.key] = record }
            }
            for var record in holding.values.sorted(by: { $0.order < $1.order }) {
                var changed = false
                for (column, change) in columns where record.entity[column] == change.0 {
                    record.entity[column] = change.1
                    changed = true
                }
                guard changed else { continue }
                // A dependent whose new values make no key keeps its key (its foreign key is still rewritten).
                if let newKey = try? CanonicalKey.render(record.entity, type: type), newKey != record.key {
                    movedFrom.append((record.set, record.key))
                    renames.append((record.reference, record.set + newKey))
                    record.key = newKey
                }
                records[record.reference] = record
            }
            for index in queued.indices where queued[index].entity.hasPrefix(setName + "(") {
                // A body that is not a JSON object has no foreign key to rewrite.
                guard let text = queued[index].body, var body = (try? JSON.parse(Array(text.utf8)))?.objectValue else { continue }
                var changed = false
                for (column, change) in columns where body[column] == change.0 {
                    body[column] = change.1
                    changed = true
                }
                if changed { queued[index].body = String(decoding: JSON.serialize(.object(body)), as: UTF8.self) }
            }
            // A queued relationship request whose holder is in this set keeps what it wrote and what it found in the
            // new values, so that a failure still puts the relationship back.
            for index in queued.indices {
                guard var link = queued[index].link, link.holder.hasPrefix(setName + "(") else { continue }
                for (column, change) in columns {
                    if link.after[column] == change.0 { link.after[column] = change.1 }
                    if link.before[column] == change.0 { link.before[column] = change.1 }
                }
                queued[index].link = link
            }
        }
        for rename in renames {
            queued = queued.map { UploadSteps.renamed($0, from: rename.from, to: rename.to) }
        }
        return (Array(records.values), movedFrom, queued)
    }
}
