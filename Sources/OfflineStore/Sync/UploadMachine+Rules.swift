import Foundation
import HTTPTypes
import ODataCore
import ODataSession

/// The upload's rules that need no state: idempotence, re-sends, `$batch` groups, a create's answer.
extension UploadMachine {
    /// Whether HTTP promises that sending `method` twice does what sending it once does. `PATCH` and `MERGE`
    /// apply a change relative to the entity (and a `POST` creates): not idempotent.
    static func isIdempotent(_ method: String) -> Bool {
        ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"].contains(method.uppercased())
    }

    /// Whether the transport may re-send a request (a `$batch` of `methods`) on its own: libcurl does after a
    /// reused connection died before any answer, which the rule below forbids for one that is not idempotent
    /// without repeatable requests (`TransportRequest.allowsAutomaticResend`).
    static func allowsAutomaticResend(_ methods: [String], repeatable: Bool) -> Bool {
        repeatable || methods.allSatisfy(isIdempotent)
    }

    /// Whether a failure may be re-sent: a status the policy retries (by default 408, 429 and 5xx), no answer or an
    /// unusable one (when the policy retries those), or a token the session could not fetch. Without `repeatable`,
    /// a request that is not idempotent (a `$batch` holding one) is re-sent only when the failure proves the back end
    /// never got it. When and whether the policy's attempts and budget allow it is ``RetryPolicy/decision(after:attempts:sinceFirstFailure:now:random:)``'s word.
    static func retryable(_ answer: UploadAnswer, methods: [String], repeatable: Bool, policy: RetryPolicy) -> Bool {
        let safe = repeatable || methods.allSatisfy(isIdempotent)
        switch answer {
        case .reply(let reply):
            return safe && policy.retryableStatuses.contains(reply.status)
        case .failure(.session(let retryable, _, _)):
            return retryable  // the request was not sent
        case .failure(.transport(let neverReached, _)):
            return policy.retriesWithoutAnswer && (neverReached || safe)
        case .failure(.unusable):
            return policy.retriesWithoutAnswer && safe
        case .failure(.unreadableBatchAnswer):
            return false
        }
    }

    /// The queued requests that go into one `$batch`, starting with the first of `entries`: at most `limit`, none
    /// on (or linking to) an entity whose create failed, and the batch ends after a create or a request followed by another on the
    /// same entity (that one waits for the new key or ETag). A media replace (``QueuedRequest/isMedia``) is never in a
    /// `$batch`: it ends the group before it, and goes alone.
    static func batchGroup(_ entries: ArraySlice<QueuedRequest>, limit: Int, failedCreates: [String: Int64]) -> [QueuedRequest] {
        var group: [QueuedRequest] = []
        for entry in entries {
            guard group.count < limit, entry.failedDependency(failedCreates) == nil else { break }
            // A media replace goes alone: its body is a stream, not a `$batch` part.
            if entry.isMedia {
                if group.isEmpty { group.append(entry) }
                break
            }
            group.append(entry)
            if entry.isCreate || entries.contains(where: { $0.id > entry.id && $0.entity == entry.entity }) { break }
        }
        return group
    }

    /// What an accepted create's answer holds, or `nil` when it is not a readable entity.
    static func createdEntity(_ reply: UploadReply) -> JSONObject? {
        (try? JSON.parse(reply.body))?.objectValue
    }

    /// Whether a conflict on the request can be resolved: an update or delete of an entity (not a create, a
    /// relationship request or a media replace).
    static func resolvable(_ entry: QueuedRequest) -> Bool {
        entry.link == nil && !entry.isMedia && ["PATCH", "MERGE", "PUT", "DELETE"].contains(entry.method.uppercased())
    }

    static let repeatabilityRequestID = HTTPField.Name("Repeatability-Request-ID")!
    static let repeatabilityFirstSent = HTTPField.Name("Repeatability-First-Sent")!

    /// The `Repeatability-*` headers (OData 4.01 §8.2.8.4) of a request first sent at `firstSent`: its ID and that
    /// time as an IMF-fixdate.
    static func repeatabilityHeaders(requestID: String, firstSent: Date) -> HTTPFields {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var fields = HTTPFields()
        fields[repeatabilityRequestID] = requestID
        fields[repeatabilityFirstSent] = formatter.string(from: firstSent)
        return fields
    }
}

extension SeededRandom {
    /// A version 4 UUID in lower case, from the generator's bits.
    mutating func uuid() -> String {
        let (high, low) = (next(), next())
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) } + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }
}
