import Foundation
import ODataCore
import ODataTyped
import ODataSession

/// The values the upload's rules take and give: their settings, the owner's actions, the store changes and why an
/// upload stops.
extension UploadMachine {
    /// The settings that decide the rules.
    struct Configuration {
        /// Requests per `$batch`; `nil` sends one by one.
        var batchLimit: Int?
        /// When one request (or `$batch`) is re-sent, and after how long.
        var retry: RetryPolicy
        /// Whether requests carry `Repeatability-*` headers (a re-send is then never executed twice).
        var repeatable: Bool
        /// Whether a create's key was made up locally, so only the back end's answer can tell the real one.
        var keyMadeLocally: @Sendable (QueuedRequest) -> Bool = { _ in true }
        /// The seed of the retry policy's jitter (and of a conflict re-send's new repeatability ID).
        var seed: UInt64 = UInt64.random(in: 0...UInt64.max)
        /// What a conflict gets: a policy's fixed resolution, or the custom resolver's (``Action/resolve(_:)``).
        var conflictRule = ConflictRule.fixed(.archive)
        /// The statuses that mean a conflict on an update or delete.
        var conflictStatuses: Set<Int> = [412]
    }

    /// How the machine resolves a conflict.
    enum ConflictRule: Sendable, Hashable {
        /// Always so.
        case fixed(OfflineODataConflictResolution)
        /// As the custom resolver answers (``Action/resolve(_:)``, ``resolverAnswered(_:at:)``).
        case custom
    }

    /// A settled request's store change, applied in a ``Action/commit(_:)`` transaction.
    enum Outcome: Sendable, Equatable {
        /// An accepted update or delete; `laterInSnapshot` when a later request of the snapshot is on the same
        /// entity (its `If-Match` gets this answer's ETag); `snapshotEnd` is the snapshot's last request ID.
        case accepted(QueuedRequest, UploadReply, laterInSnapshot: Bool, snapshotEnd: Int64)
        /// An accepted create: the back end's key and ETag replace the local ones (committed alone).
        case created(QueuedRequest, UploadReply)
        /// A failed request, archived with its domain.
        case failed(QueuedRequest, ErrorArchiveEntry, UploadFailureDomain)
        /// A conflict the back end's entity won: the local copy becomes the report's remote entity (goes when the
        /// back end has none), and this and every later queued change of the entity are dropped (committed alone:
        /// ``committed(keyChanged:dropped:)`` gets their IDs).
        case serverWon(QueuedRequest, OfflineODataResolvedConflict)
        /// A conflict resolved by a re-send the back end accepted (or a delete of an entity the back end deleted too):
        /// as ``accepted``, and the local copy takes `keep`, the back end's values it did not change.
        case resolved(QueuedRequest, UploadReply, OfflineODataResolvedConflict, keep: JSONObject, laterInSnapshot: Bool, snapshotEnd: Int64)
    }

    /// What the owner does next.
    enum Action: Sendable, Equatable {
        /// Read the queued requests with an ID above this one, then call ``queueRead(_:)``.
        case readQueue(after: Int64)
        /// Send one request (after this pause, for a re-send), then call ``answered(_:)``.
        case send(QueuedRequest, after: Duration?)
        /// Send these requests in one `$batch`, each its own change set, then call ``batchAnswered(_:)``.
        case sendBatch([QueuedRequest], after: Duration?)
        /// Apply these outcomes in one transaction, report their failures, then call ``committed(keyChanged:dropped:)``.
        case commit([Outcome])
        /// A request met a conflict: read the back end's current entity (`GET`, with its `ETag`) and the store's copy,
        /// then call ``conflictRead(_:at:)``.
        case readConflict(QueuedRequest)
        /// Ask the custom resolver about these versions, then call ``resolverAnswered(_:at:)``.
        case resolve(OfflineODataConflict)
        /// Tell the delegate.
        case reportProgress(OfflineODataUploadProgress)
        /// The upload is over.
        case finish(OfflineODataUploadResult)
        /// The caller stopped the upload: what was answered is committed, the rest stays queued.
        case stopped
        /// The upload cannot go on (``Halt``): what settled before is committed, the request it stopped at and
        /// every later one stay queued as they were. The result so far, and why.
        case halted(OfflineODataUploadResult, Halt)
    }

    /// Why an upload stops with requests still queued.
    enum Halt: Sendable, Hashable {
        /// The back end could not be reached: the retry policy gave up on a request without an answer; what the
        /// last try got.
        case unreachable(String)
        /// The back end refused the credentials (`401`, after the session's renewal): no later request can succeed
        /// until a person fixes them, so none is sent or archived.
        case unauthorized(String)
    }

    /// What a `$batch` brought back.
    enum BatchAnswer: Sendable, Hashable {
        /// No usable answer for the `$batch` as a whole (a transport failure, or an error status).
        case whole(UploadAnswer)
        /// The answer of each request, by request ID.
        case parts([Int64: UploadAnswer])
    }

}

extension UploadMachine.Outcome {
    /// Whether this is an accepted create.
    var isCreate: Bool { if case .created = self { true } else { false } }
}
