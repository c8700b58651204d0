import Foundation
import ODataCore

/// One HTTP answer to an uploaded request (or to a `$batch` part): what the upload's rules look at.
struct UploadReply: Sendable, Hashable {
    /// The HTTP status.
    var status: Int
    /// The `ETag` header, if any.
    var etag: String?
    /// The body.
    var body: Data
    /// The `Retry-After` header, if any (read by the retry policy on `429` and `503`).
    var retryAfter: String? = nil
}

/// Why a request (or a `$batch`) got no HTTP answer.
enum UploadSendFailure: Sendable, Hashable {
    /// The session did not send it (a CSRF token it could not fetch, or one the back end keeps rejecting):
    /// never executed. `retryable` is the session's word on whether a later try may succeed.
    case session(retryable: Bool, statusCode: Int?, description: String)
    /// No answer came (`NoAnswer`): the back end could not be reached. `neverReached` when the failure
    /// proves the back end never got the request (connection refused, a name that does not resolve, a session step
    /// that got no answer); otherwise it may have executed it. Once the retry policy gives up, the upload stops here.
    case transport(neverReached: Bool, description: String)
    /// Something came back that gives no answer to use (a malformed or over-large response, an unusable request):
    /// archived like an error answer.
    case unusable(String)
    /// A `$batch` answer that gives no readable outcome for the request.
    case unreadableBatchAnswer(String)
}

/// The outcome of one send: an answer, or no answer.
enum UploadAnswer: Sendable, Hashable {
    /// The back end answered.
    case reply(UploadReply)
    /// No answer came.
    case failure(UploadSendFailure)
}

/// Where a failed request's failure comes from, as the ErrorArchive's `Domain` column names it.
enum UploadFailureDomain: String, Sendable, Hashable, CaseIterable {
    /// The back end answered with an error status (or an accepted create gave no usable entity).
    case oData = "OData"
    /// Not sent: it depends on a create that failed.
    case dependency = "Dependency"
    /// The session refused to send it.
    case session = "Session"
    /// No usable answer came.
    case transport = "Transport"
}

/// What the owner read for a request in conflict (``UploadMachine/Action/readConflict(_:)``).
enum ConflictRead: Sendable, Hashable {
    /// The entity as last downloaded and as the store holds it now, the back end's current entity (`nil`: `404`) and ETag.
    case versions(base: JSONObject?, localEntity: JSONObject?, remote: JSONObject?, remoteETag: String?)
    /// The back end gave no answer (``UploadSendFailure/transport(neverReached:description:)``): the request stays queued.
    case unanswered(String)
    /// The back end answered the read with an error, or with what is no entity: the conflict is archived.
    case failed(String)
}
