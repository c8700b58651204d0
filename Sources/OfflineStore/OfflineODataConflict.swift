import Foundation
import ODataCore

/// What an upload does with a local update or delete whose precondition failed: the back end answered
/// `412 Precondition Failed` (or a status of ``OfflineODataParameters/conflictStatuses``, such as a `409` some back
/// ends use for a version conflict) because another client changed the entity since it was downloaded.
///
/// Every policy but ``archive`` first reads the back end's current entity (`GET` of the entity, its `ETag` with it);
/// with the entity as last downloaded (the store keeps it for `undo`) and the local change, that makes the three
/// versions ``OfflineODataConflict`` holds. A re-sent request is new to the back end: it carries the current ETag as
/// `If-Match` and, with ``OfflineODataParameters/enableRepeatableRequests``, a new `Repeatability-Request-ID` and
/// `Repeatability-First-Sent` (a re-send of it after a lost answer keeps those). A request is resolved once: a
/// second conflict on its re-send is archived.
///
/// | Policy | update (`PATCH`, `MERGE`, `PUT`) | delete |
/// |---|---|---|
/// | ``archive`` | ErrorArchive, entity in error state | ErrorArchive, entity visible again in error state |
/// | ``serverWins`` | the back end's entity replaces the local copy; this and every later queued change of the entity are dropped | the same: the entity is back as the back end has it (gone if the back end deleted it) |
/// | ``clientWins`` | re-sent once with the current ETag (the back end deleted it: archived) | re-sent once with the current ETag (already deleted: done) |
/// | ``mergeFields`` | fields changed on one side only are merged: the local ones re-sent with the current ETag, the back end's kept in the local copy; a field changed on both sides to different values: archived with both | already deleted: done; changed on the back end: archived with the back end's values |
/// | ``custom(_:)`` | the closure's answer, one of the above or an entity to send | the closure's answer (an entity to send archives it) |
public enum OfflineODataConflictPolicy: Sendable {
    /// Archive the request (the reference's behaviour, the default): someone repairs it.
    case archive
    /// The back end's entity wins: the local change is dropped and the local copy becomes the back end's.
    case serverWins
    /// The local change wins: re-sent once with the back end's current ETag.
    case clientWins
    /// A three-way merge of the entity as downloaded, the local change and the back end's entity, field by field.
    case mergeFields
    /// The closure decides, given the three versions.
    case custom(@Sendable (OfflineODataConflict) async -> OfflineODataConflictResolution)
}

/// The three versions of an entity in conflict, for a resolver and for the report of a resolution.
public struct OfflineODataConflict: Sendable, Hashable {
    /// The queued request's ID.
    public var requestID: Int64
    /// Its HTTP method (`PATCH`, `MERGE`, `PUT`, `DELETE`).
    public var method: String
    /// The entity's reference, `Set(key)`.
    public var affectedEntity: String
    /// The status the back end answered (`412`, or a configured conflict status).
    public var statusCode: Int
    /// The entity as last downloaded (properties only); `nil` when the store holds no downloaded copy of it.
    public var base: JSONObject?
    /// The local change: the properties the request sets (all of them for a `PUT`); empty for a delete.
    public var local: JSONObject
    /// The back end's current entity (properties only); `nil` when the back end has it no more.
    public var remote: JSONObject?
    /// The back end's current ETag, if it gave one.
    public var remoteETag: String?

    /// Creates the versions of a conflict.
    ///
    /// - Parameters:
    ///   - requestID: The queued request's ID.
    ///   - method: Its HTTP method.
    ///   - affectedEntity: The entity's reference.
    ///   - statusCode: The back end's status.
    ///   - base: The entity as last downloaded.
    ///   - local: The local change.
    ///   - remote: The back end's entity.
    ///   - remoteETag: The back end's ETag.
    public init(requestID: Int64, method: String, affectedEntity: String, statusCode: Int, base: JSONObject?, local: JSONObject,
                remote: JSONObject?, remoteETag: String?) {
        self.requestID = requestID
        self.method = method
        self.affectedEntity = affectedEntity
        self.statusCode = statusCode
        self.base = base
        self.local = local
        self.remote = remote
        self.remoteETag = remoteETag
    }

    /// The properties the local change and the back end both changed from ``base``, to different values (every
    /// locally changed property the back end holds otherwise when there is no base), in name order.
    public var conflictingFields: [String] { ConflictMerge.conflicting(self) }
}

/// How one conflict is resolved: a policy's own decision, or a ``OfflineODataConflictPolicy/custom(_:)`` resolver's.
public enum OfflineODataConflictResolution: Sendable, Hashable {
    /// Archived: the request goes to the ErrorArchive, its entity into error state.
    case archive
    /// The back end's entity replaces the local copy; the local changes of the entity are dropped.
    case serverWins
    /// The request is re-sent once with the back end's current ETag.
    case clientWins
    /// Fields changed on one side only are merged (see ``OfflineODataConflictPolicy/mergeFields``).
    case mergeFields
    /// These properties are sent (as the request's method: a `PATCH`'s fields, a `PUT`'s whole entity) with the
    /// back end's current ETag, and the local copy takes them.
    case send(JSONObject)
}

/// A conflict an upload resolved without archiving it, as ``OfflineODataUploadResult/resolvedConflicts`` and
/// ``OfflineODataDelegate/offlineODataProvider(_:didResolveConflict:)`` report it.
public struct OfflineODataResolvedConflict: Sendable, Hashable {
    /// The three versions.
    public var conflict: OfflineODataConflict
    /// What was done.
    public var resolution: OfflineODataConflictResolution
    /// The later queued requests on the entity dropped with it (``OfflineODataConflictResolution/serverWins``).
    public var droppedRequestIDs: [Int64]

    /// Creates a report.
    ///
    /// - Parameters:
    ///   - conflict: The three versions.
    ///   - resolution: What was done.
    ///   - droppedRequestIDs: Later requests dropped with it.
    public init(conflict: OfflineODataConflict, resolution: OfflineODataConflictResolution, droppedRequestIDs: [Int64] = []) {
        self.conflict = conflict
        self.resolution = resolution
        self.droppedRequestIDs = droppedRequestIDs
    }
}
