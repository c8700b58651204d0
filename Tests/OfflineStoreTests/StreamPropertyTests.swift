import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// Stream properties (`Edm.Stream`, the fixture's `Photo/Thumbnail`) offline: downloaded with
/// `automaticallyRetrievesStreams` into the media tables beside the entity's `$value`, read locally, replaced locally
/// and uploaded as `PUT Set(key)/Name` with `If-Match`, a refused replace archived. mock-sap serves no media (neither
/// `$value` nor stream properties), so these run against the fixture alone.
@Suite struct StreamPropertyTests {
    static func thumbnail(_ server: FixtureServer, _ id: Int64) throws -> FixtureMedia {
        try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": .int(id)], property: "Thumbnail") })
    }

    @Test func theDownloadFetchesStreamPropertiesBesideTheMediaResource() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: MediaDownloadTests.queries)
        try await provider.open()
        for id in Int64(1)...3 {
            let thumbnail = try Self.thumbnail(server, id)
            let media = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": .int(id)]) })
            #expect(thumbnail.bytes != media.bytes)
            #expect(try await provider.readMedia(of: "Photos(\(id))", property: "Thumbnail") == Data(thumbnail.bytes))
            #expect(try await provider.readMedia(of: "Photos(\(id))") == Data(media.bytes))
            let local = try await provider.execute(.local("GET", "Photos(\(id))/Thumbnail"))
            #expect(local.payload == Data(thumbnail.bytes))
            #expect(local.headerFields[.contentType] == "image/jpeg")
            #expect(local.headerFields[.eTag] == thumbnail.etag)
            #expect(try provider.read(.local("GET", "Photos(\(id))/Thumbnail")).payload == Data(thumbnail.bytes))
            #expect(try await provider.mediaResource(of: "Photos(\(id))", property: "Thumbnail")
                == OfflineMediaResource(contentType: "image/jpeg", etag: thumbnail.etag, size: Int64(thumbnail.bytes.count), isLocal: false))
            let file = URL(fileURLWithPath: directory.path + "/thumbnail\(id).jpg")
            #expect(try await provider.writeMedia(of: "Photos(\(id))", property: "Thumbnail", to: file) == Int64(thumbnail.bytes.count))
            #expect(try Data(contentsOf: file) == Data(thumbnail.bytes))
        }
        // The entity keeps the stream's annotations; the stream is not one of its properties.
        let entity = try await provider.execute(.local("GET", "Photos(1)"))
        let object = try #require(try JSON.parse(entity.payload).objectValue)
        #expect(object["Thumbnail@odata.mediaEtag"]?.stringValue == (try Self.thumbnail(server, 1)).etag)
        #expect(object["Thumbnail"] == nil)
        #expect(server.counters.requests(method: "GET", path: "Photos(1)/Thumbnail") == 1)
        await #expect(throws: OfflineODataError.invalidRequest) { try await provider.readMedia(of: "Photos(1)", property: "Title") }
        await #expect(throws: OfflineODataError.invalidRequest) { try await provider.readMedia(of: "Shippers(1)", property: "Thumbnail") }

        // A stream property replaced on the back end is read again by the next download; the other streams are not.
        let replaced = try server.mutate { data in
            try data.replaceMedia(in: "Photos", key: ["PhotoID": 2], property: "Thumbnail", bytes: Array(repeating: 9, count: 300_000),
                                  contentType: "image/webp")
        }
        try await provider.download()
        #expect(try await provider.readMedia(of: "Photos(2)", property: "Thumbnail") == Data(replaced.bytes))
        #expect(try await provider.mediaResource(of: "Photos(2)", property: "Thumbnail")?.contentType == "image/webp")
        #expect(server.counters.requests(method: "GET", path: "Photos(2)/Thumbnail") == 2)
        #expect(server.counters.requests(method: "GET", path: "Photos(2)/$value") == 1)
        #expect(server.counters.requests(method: "GET", path: "Photos(1)/Thumbnail") == 1)
        await provider.close()
    }

    @Test func aLocalReplaceOfAStreamPropertyIsUploadedWithIfMatch() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: [MediaDownloadTests.queries[0]])
        try await provider.open()
        let before = try Self.thumbnail(server, 1)
        let media = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) })
        let bytes = Data((0..<400_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let file = URL(fileURLWithPath: directory.path + "/thumb.jpg")
        try bytes.write(to: file)
        try await provider.replaceMedia(of: "Photos(1)", property: "Thumbnail", from: file, contentType: "image/jpeg", customTag: "thumb")
        #expect(try await provider.readMedia(of: "Photos(1)", property: "Thumbnail") == bytes)
        #expect(try await provider.readMedia(of: "Photos(1)") == Data(media.bytes))
        #expect(try await provider.mediaResource(of: "Photos(1)", property: "Thumbnail")
            == OfflineMediaResource(contentType: "image/jpeg", etag: before.etag, size: 400_000, isLocal: true))
        let planned = try await provider.pendingUpload()
        #expect(planned.map(\.method) == ["PUT"])
        #expect(planned.first?.url == server.serviceRoot + "Photos(1)/Thumbnail")
        #expect(planned.first?.headers[.ifMatch] == before.etag)
        #expect(planned.first?.headers[.contentType] == "image/jpeg")

        let result = try await provider.upload()
        #expect(result.succeeded == 1)
        #expect(result.failed.isEmpty)
        let after = try Self.thumbnail(server, 1)
        #expect(Data(after.bytes) == bytes)
        #expect(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) } == media)
        #expect(try await provider.mediaResource(of: "Photos(1)", property: "Thumbnail")
            == OfflineMediaResource(contentType: "image/jpeg", etag: after.etag, size: 400_000, isLocal: false))
        #expect(try await provider.mediaResource(of: "Photos(1)")?.etag == media.etag)
        // The next download finds the ETag it holds: the uploaded stream is not read back.
        try await provider.download()
        #expect(server.counters.requests(method: "GET", path: "Photos(1)/Thumbnail") == 1)
        await provider.close()
    }

    @Test func aReplaceOverAChangedStreamPropertyIsRefusedAndArchived() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: [MediaDownloadTests.queries[0]])
        try await provider.open()
        let theirs = try server.mutate { data in
            try data.replaceMedia(in: "Photos", key: ["PhotoID": 3], property: "Thumbnail", bytes: Array("theirs".utf8), contentType: "text/plain")
        }
        let file = URL(fileURLWithPath: directory.path + "/mine.txt")
        try Data("mine".utf8).write(to: file)
        try await provider.replaceMedia(of: "Photos(3)", property: "Thumbnail", from: file, contentType: "text/plain")
        let result = try await provider.upload()
        #expect(result.failed.map(\.httpStatusCode) == [412])
        #expect(try Self.thumbnail(server, 3) == theirs)
        let archive = try await provider.getAll("ErrorArchive")
        #expect(archive.count == 1)
        #expect(archive.first?["RequestMethod"] == "PUT")
        #expect(archive.first?["RequestURL"]?.stringValue?.hasSuffix("Photos(3)/Thumbnail") == true)
        #expect(try await provider.readMedia(of: "Photos(3)", property: "Thumbnail") == Data("mine".utf8))
        await provider.close()
    }
}
