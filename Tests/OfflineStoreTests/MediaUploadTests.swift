import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// A media resource replaced locally: read locally at once, uploaded as `PUT Set(key)/$value` with `If-Match`, a
/// refused one archived like any request.
@Suite struct MediaUploadTests {
    @Test func aLocalReplaceIsReadLocallyAndUploadedWithIfMatch() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: [MediaDownloadTests.queries[0]])
        try await provider.open()
        let before = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) })
        let bytes = Data((0..<700_000).map { UInt8(truncatingIfNeeded: $0 * 31) })
        let file = URL(fileURLWithPath: directory.path + "/new.jpg")
        try bytes.write(to: file)
        try await provider.replaceMedia(of: "Photos(1)/$value", from: file, contentType: "image/jpeg", customTag: "photo one")
        #expect(try await provider.readMedia(of: "Photos(1)") == bytes)
        #expect(try await provider.mediaResource(of: "Photos(1)") == OfflineMediaResource(contentType: "image/jpeg", etag: before.etag, size: 700_000, isLocal: true))
        let planned = try await provider.pendingUpload()
        #expect(planned.map(\.method) == ["PUT"])
        #expect(planned.first?.url == server.serviceRoot + "Photos(1)/$value")
        #expect(planned.first?.headers[.ifMatch] == before.etag)
        #expect(planned.first?.headers[.contentType] == "image/jpeg")

        // A download meanwhile keeps the local media.
        try await provider.download()
        #expect(try await provider.readMedia(of: "Photos(1)") == bytes)

        let result = try await provider.upload()
        #expect(result.succeeded == 1)
        #expect(result.failed.isEmpty)
        let after = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) })
        #expect(Data(after.bytes) == bytes)
        #expect(after.contentType == "image/jpeg")
        #expect(try await provider.mediaResource(of: "Photos(1)") == OfflineMediaResource(contentType: "image/jpeg", etag: after.etag, size: 700_000, isLocal: false))
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/northwind/media-upload.part"))
        await provider.close()
    }

    @Test func aReplaceOverAChangedMediaIsRefusedAndArchived() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: [MediaDownloadTests.queries[0]])
        try await provider.open()
        // Someone else replaces the media on the back end after the download.
        let theirs = try server.mutate { data in
            try data.replaceMedia(in: "Photos", key: ["PhotoID": 2], bytes: Array("theirs".utf8), contentType: "text/plain")
        }
        let file = URL(fileURLWithPath: directory.path + "/mine.txt")
        try Data("mine".utf8).write(to: file)
        try await provider.replaceMedia(of: "Photos(2)", from: file, contentType: "text/plain")
        let result = try await provider.upload()
        #expect(result.failed.map(\.httpStatusCode) == [412])
        #expect(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 2]) } == theirs)
        let archive = try await provider.getAll("ErrorArchive")
        #expect(archive.count == 1)
        #expect(archive.first?["HTTPStatusCode"] == 412)
        #expect(archive.first?["RequestMethod"] == "PUT")
        #expect(try await provider.readMedia(of: "Photos(2)") == Data("mine".utf8))
        await provider.close()
    }
}
