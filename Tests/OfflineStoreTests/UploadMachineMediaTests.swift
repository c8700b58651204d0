import Foundation
import HTTPTypes
import ODataCore
import Testing
@testable import OfflineStore

/// The media replace as a request kind of the upload's rules, driven through ``UploadMachine`` with no server.
struct UploadMachineMediaTests {
    static func media(_ id: Int64, _ entity: String) -> QueuedRequest {
        QueuedRequest(id: id, method: "PUT", url: entity + "/$value", body: nil, customTag: nil, headers: [.ifMatch: #"W/"m1""#],
                      entity: entity, createdAt: "", mediaContentType: "image/png")
    }

    /// A media replace is never a `$batch` part: the group ends before it, and it goes alone.
    @Test(arguments: [
        (["PATCH A", "MEDIA B", "PATCH C", "PATCH D"], ["send 1", "send 2", "batch 3,4"]),
        (["MEDIA A", "MEDIA B"], ["send 1", "send 2"]),
        (["PATCH A", "PATCH B", "MEDIA C"], ["batch 1,2", "send 3"]),
    ])
    func aMediaReplaceGoesAloneInBatchMode(requests: [String], sends: [String]) {
        let queue = requests.enumerated().map { index, text in
            let parts = text.split(separator: " ")
            let entity = "Photos('\(parts[1])')"
            return parts[0] == "MEDIA" ? Self.media(Int64(index + 1), entity) : UploadMachineTests.request(Int64(index + 1), String(parts[0]), entity)
        }
        let run = UploadMachineTests.run(queue, batch: 10)
        #expect(run.trace.filter { $0.hasPrefix("send") || $0.hasPrefix("batch") } == sends, "\(run.trace)")
    }

    /// A media replace is a `PUT`: re-sent after a lost answer or a 5xx, accepted with its new ETag, archived when refused.
    @Test func aMediaReplaceFollowsTheRulesOfAPut() {
        let lostThenOK = UploadMachineTests.run([Self.media(1, "Photos(1)")], answers: [1: [UploadMachineTests.lost, UploadMachineTests.ok(204)]])
        #expect(lostThenOK.sends[1] == 2)
        guard case .accepted(let entry, let reply, _, _)? = lostThenOK.committed.first else {
            Issue.record("not accepted: \(lostThenOK.trace)")
            return
        }
        #expect(entry.isMedia)
        #expect(reply.etag == #"W/"e204""#)

        let refused = UploadMachineTests.run([Self.media(1, "Photos(1)")], answers: [1: [UploadMachineTests.status(412)]])
        #expect(refused.sends[1] == 1)
        #expect(refused.failures.map(\.httpStatusCode) == [412])
        #expect(refused.domains == [.oData])
        #expect(refused.failures.first?.affectedEntityReference == "Photos(1)")
    }

    /// The new media ETag goes to a later media replace of the entity, not to an update of its properties (and the
    /// other way round).
    @Test func anAcceptedReplaceGivesItsETagToLaterRequestsOfItsKind() {
        let first = Self.media(1, "Photos(1)")
        var update = UploadMachineTests.request(2, "PATCH", "Photos(1)")
        update.headers[.ifMatch] = #"W/"0""#
        let later = [update, Self.media(3, "Photos(1)")]
        let changed = OfflineODataProvider.withNewETag(later, after: first, etag: #"W/"m9""#)
        #expect(changed.map(\.id) == [3])
        #expect(changed.first?.headers[.ifMatch] == #"W/"m9""#)
        #expect(OfflineODataProvider.withNewETag([Self.media(3, "Photos(1)")], after: update, etag: #"W/"5""#).isEmpty)
    }

    /// The queue record keeps the kind (and the content type) across a store's close and open.
    @Test func theQueueRecordKeepsTheMediaKind() throws {
        let entry = Self.media(7, "Photos(2)")
        let decoded = try QueuedRequest.decode(entry.encoded())
        #expect(decoded == entry)
        #expect(decoded.isMedia)
        #expect(try QueuedRequest.decode(UploadMachineTests.request(1, "PATCH", "A").encoded()).isMedia == false)
    }
}
