import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// A media entity created offline from its bytes: `POST Set` queued with the media's content type, a temporary key
/// that later local changes use, the back end's key in the store, its media and the later requests after the upload.
@Suite struct MediaCreateTests {
    @Test func aMediaEntityCreatedOfflineIsUploadedAndItsKeyRewritten() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: [MediaDownloadTests.queries[0]])
        try await provider.open()
        let existing = try server.read { try $0.entities(in: "Photos") }.compactMap { $0["PhotoID"]?.intValue }
        let bytes = Data((0..<500_000).map { UInt8(truncatingIfNeeded: $0 * 3) })
        let file = URL(fileURLWithPath: directory.path + "/new.gif")
        try bytes.write(to: file)
        let reference = try await provider.createMediaEntity(in: "Photos", from: file, contentType: "image/gif", customTag: "new photo")
        #expect(reference == "Photos(-1)")
        #expect(try await provider.readMedia(of: reference) == bytes)
        #expect(try await provider.mediaResource(of: reference) == OfflineMediaResource(contentType: "image/gif", etag: nil, size: 500_000, isLocal: true))
        #expect(try await provider.execute(.local("GET", "Photos(-1)/$value")).payload == bytes)

        // Later local changes on the temporary key.
        _ = try await provider.execute(.local("PATCH", reference, body: #"{"Title":"Taken offline"}"#))
        let second = Data(repeating: 5, count: 1000)
        let secondFile = URL(fileURLWithPath: directory.path + "/second.png")
        try second.write(to: secondFile)
        try await provider.replaceMedia(of: reference, from: secondFile, contentType: "image/png")
        let planned = try await provider.pendingUpload()
        #expect(planned.map(\.method) == ["POST", "PATCH", "PUT"])
        #expect(planned.first?.url == server.serviceRoot + "Photos")
        #expect(planned.first?.headers[.contentType] == "image/gif")
        await #expect(throws: OfflineODataError.invalidRequest) { try await provider.createMediaEntity(in: "Shippers", from: file, contentType: "image/gif") }

        let result = try await provider.upload()
        #expect(result.failed.isEmpty)
        #expect(result.succeeded == 3)
        let created = try server.read { try $0.entities(in: "Photos") }.filter { !existing.contains($0["PhotoID"]?.intValue ?? 0) }
        #expect(created.count == 1)
        let id = try #require(created.first?["PhotoID"]?.intValue)
        #expect(created.first?["Title"]?.stringValue == "Taken offline")
        let media = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": .int(id)]) })
        #expect(Data(media.bytes) == second)
        #expect(media.contentType == "image/png")
        // The store holds the entity and its media under the back end's key, nothing under the temporary one.
        #expect(try await provider.readMedia(of: "Photos(\(id))") == second)
        #expect(try await provider.mediaResource(of: "Photos(\(id))")
            == OfflineMediaResource(contentType: "image/png", etag: media.etag, size: 1000, isLocal: false))
        await #expect(throws: OfflineODataError.self) { try await provider.readMedia(of: "Photos(-1)") }
        let local = try #require(try JSON.parse(try await provider.execute(.local("GET", "Photos(\(id))")).payload).objectValue)
        #expect(local["Title"]?.stringValue == "Taken offline")
        #expect(try await provider.pendingUpload().isEmpty)
        await provider.close()
    }
}
