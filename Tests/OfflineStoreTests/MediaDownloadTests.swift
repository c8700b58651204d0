import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// Media resources offline: a defining query with `automaticallyRetrievesStreams` downloads its media entities'
/// `$value` into the encrypted store; local reads give the producer's bytes.
@Suite struct MediaDownloadTests {
    static let queries = [
        OfflineODataDefiningQuery(name: "photos", query: "Photos", automaticallyRetrievesStreams: true),
        OfflineODataDefiningQuery(name: "shippers", query: "Shippers"),
    ]

    @Test func theDownloadFetchesEveryMediaResourceAndLocalReadsAreByteIdentical() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: Self.queries)
        try await provider.open()
        for id in 1...3 {
            let media = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": .int(Int64(id))]) })
            #expect(try await provider.readMedia(of: "Photos(\(id))/$value") == Data(media.bytes))
            let local = try await provider.execute(.local("GET", "Photos(\(id))/$value"))
            #expect(local.payload == Data(media.bytes))
            #expect(local.headerFields[.contentType] == "image/png")
            #expect(local.headerFields[.eTag] == media.etag)
            #expect(try provider.read(.local("GET", "Photos(\(id))/$value")).payload == Data(media.bytes))
            let resource = try #require(try await provider.mediaResource(of: "Photos(\(id))"))
            #expect(resource == OfflineMediaResource(contentType: "image/png", etag: media.etag, size: Int64(media.bytes.count), isLocal: false))
            let file = URL(fileURLWithPath: directory.path + "/photo\(id).png")
            #expect(try await provider.writeMedia(of: "Photos(\(id))", to: file) == Int64(media.bytes.count))
            #expect(try Data(contentsOf: file) == Data(media.bytes))
        }
        #expect(server.counters.requests(method: "GET", path: "Photos(1)/$value") == 1)
        // Nothing of the stream stays outside the encrypted database.
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/northwind/media-download.part"))

        // A replaced media resource is read again by the next download; the unchanged ones are not.
        let replaced = try server.mutate { data in
            try data.replaceMedia(in: "Photos", key: ["PhotoID": 2], bytes: Array(repeating: 7, count: 600_000), contentType: "image/gif")
        }
        try await provider.download()
        #expect(try await provider.readMedia(of: "Photos(2)") == Data(replaced.bytes))
        #expect(try await provider.mediaResource(of: "Photos(2)")?.etag == replaced.etag)
        #expect(try await provider.mediaResource(of: "Photos(2)")?.contentType == "image/gif")
        #expect(server.counters.requests(method: "GET", path: "Photos(1)/$value") == 1)
        #expect(server.counters.requests(method: "GET", path: "Photos(2)/$value") == 2)
        await provider.close()
    }

    @Test func withoutTheOptionNoMediaIsDownloaded() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: [OfflineODataDefiningQuery(name: "photos", query: "Photos")])
        try await provider.open()
        #expect(server.counters.requests(method: "GET", path: "Photos(1)/$value") == 0)
        #expect(try await provider.mediaResource(of: "Photos(1)") == nil)
        await #expect(throws: OfflineODataError.entityNotFound) { try await provider.readMedia(of: "Photos(1)") }
        await #expect(throws: OfflineODataError.invalidRequest) { try await provider.readMedia(of: "Nothing(1)") }
        await provider.close()
    }

    @Test func aV2ProducersMediaSourceIsFollowed() async throws {
        var configuration = FixtureConfiguration()
        configuration.protocolVersion = .v2
        let server = try await FixtureServer.start(configuration)
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: [Self.queries[0]])
        try await provider.open()
        let media = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 3]) })
        #expect(try await provider.readMedia(of: "Photos(3)") == Data(media.bytes))
        #expect(try await provider.mediaResource(of: "Photos(3)")?.etag == media.etag)
        await provider.close()
    }
}

/// mock-sap 0.22.0 has no media entity (no `HasStream` in its `$metadata`, no `$value` of an entity, no
/// `__metadata.media_src`): there a defining query with `automaticallyRetrievesStreams` downloads its entities and no
/// media, and says so by holding none.
@Suite struct MockSAPMediaTests {
    @Test func aStreamsQueryAgainstMockSAPDownloadsItsEntitiesAndNoMedia() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        let provider = try OfflineODataProvider(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), parameters: Northwind.parameters(directory, name: "sap"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "ProductSet", automaticallyRetrievesStreams: true))
        try await provider.open()
        let first = try #require(try await provider.getAll("ProductSet?$orderby=ProductID&$top=1").first?["ProductID"]?.stringValue)
        #expect(try await provider.mediaResource(of: "ProductSet('\(first)')") == nil)
        #expect(try sap.logged(method: "GET", path: "ProductSet('\(first)')/$value").isEmpty)
        await provider.close()
    }
}
