import Foundation
import HTTPTypes
import ODataCore
import ODataTesting
import TechnicalCache
import Testing
@testable import OnlineStore

/// Streams through the online store: read into a file, written from a file, outside the JSON path; cached up to
/// ``OnlineStoreOptions/maxCachedStreamSize``.
@Suite struct StreamTests {
    @Test func aStreamIsReadIntoAFileAndWrittenFromOne() async throws {
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let received = LockedValue<(body: Data?, headers: HTTPFields)?>(nil)
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "Photos(1)/$value", reply: .status(200, headerFields: [.contentType: "image/png", .eTag: #"W/"m1""#], body: bytes))
            .on("GET", "Photos(9)/$value", reply: .json(#"{"error":{"code":"NotFound","message":"no Photos(9)"}}"#, status: 404))
            .on("GET", "", reply: .status(200, headerFields: [HTTPField.Name("X-CSRF-Token")!: "token"]))
            .on("PUT", "Photos(1)/$value", reply: .handler { request in
                received.withLock { $0 = (request.bodyFile.flatMap { FileManager.default.contents(atPath: $0) }, request.headerFields) }
                return .status(204, headerFields: [.eTag: #"W/"m2""#])
            })
        try await Harness.run(on: backEnd) { harness in
            let store = try await harness.openStore { $0.maxCachedStreamSize = 100_000 }
            let file = harness.directory.appendingPathComponent("photo.png")
            let read = try await store.readStream("Photos(1)/$value", to: file)
            #expect(read.status == 200)
            #expect(read.headerFields[.eTag] == #"W/"m1""#)
            #expect(try Data(contentsOf: file) == bytes)
            let missing = try await store.readStream("Photos(9)/$value", to: harness.directory.appendingPathComponent("none"))
            #expect(missing.status == 404)
            #expect(String(decoding: missing.body, as: UTF8.self).contains("no Photos(9)"))

            let written = try await store.writeStream("Photos(1)/$value", from: file, contentType: "image/png", ifMatch: #"W/"m1""#)
            #expect(written.status == 204)
            #expect(written.headerFields[.eTag] == #"W/"m2""#)
            let sent = try #require(received.withLock { $0 })
            #expect(sent.body == bytes)
            #expect(sent.headers[.ifMatch] == #"W/"m1""#)
            #expect(sent.headers[.contentType] == "image/png")
            #expect(sent.headers[HTTPField.Name("X-CSRF-Token")!] == "token")
            // A stream above the cache's cap is not stored.
            await store.waitForCacheWrites()  // entries commit after their answers
            #expect(store.statistics.cache?.writes ?? 0 == 0)
            #expect(store.statistics.requests == 0)
            store.close()
        }
    }

    @Test func aStreamUpToTheCapIsCachedAndRevalidatedALargerOneNever() async throws {
        let small = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let large = Data((0..<4097).map { UInt8(truncatingIfNeeded: $0 &* 11) })
        let conditional = LockedValue<[String: [String?]]>([:])
        let backEnd = ScriptedTransport()
        for (path, bytes, etag) in [("Photos(1)/$value", small, #"W/"s1""#), ("Photos(2)/$value", large, #"W/"l1""#)] {
            backEnd.on("GET", path, reply: .handler { request in
                let ifNoneMatch = request.headerFields[.ifNoneMatch]
                conditional.withLock { $0[path, default: []].append(ifNoneMatch) }
                if ifNoneMatch == etag { return .status(304, headerFields: [.eTag: etag]) }
                return .status(200, headerFields: [.contentType: "image/png", .eTag: etag], body: bytes)
            })
        }
        try await Harness.run(on: backEnd) { harness in
            let store = try await harness.openStore { $0.maxCachedStreamSize = 4096 }
            for round in 1...2 {
                let smallFile = harness.directory.appendingPathComponent("small\(round).png")
                let read = try await store.readStream("Photos(1)/$value", to: smallFile)
                #expect(read.status == 200)
                #expect(read.headerFields[.eTag] == #"W/"s1""#)
                #expect(read.body.isEmpty)
                #expect(try Data(contentsOf: smallFile) == small)
                let largeFile = harness.directory.appendingPathComponent("large\(round).png")
                #expect(try await store.readStream("Photos(2)/$value", to: largeFile).status == 200)
                #expect(try Data(contentsOf: largeFile) == large)
            }
            // At the cap: stored, then revalidated (a 304 wrote the cached copy into the second file). Above it: never
            // stored, read whole each time.
            #expect(conditional.withLock { $0["Photos(1)/$value"] } == [nil, #"W/"s1""#])
            #expect(conditional.withLock { $0["Photos(2)/$value"] } == [nil, nil])
            await store.waitForCacheWrites()  // entries commit after their answers
            #expect(store.statistics.cache?.writes == 1)
            // The JSON path's requests are not the streams'.
            #expect(store.statistics.requests == 0)
            store.close()
        }
    }
}
