import Foundation
import ODataCore
import Testing

@testable import ODataFixtures

/// The producer's media entities: `Photos` (`HasStream="true"`), their `$value`, annotations and V2 `__metadata`; and
/// the stream property `Photo/Thumbnail` (`Edm.Stream`, V4 only).
@Suite struct MediaTests {
    @Test func aMediaEntityAnnouncesItsStreamAndServesItsBytes() async throws {
        try await withServer { server in
            let metadata = try await Curl.run(server.serviceRoot + "$metadata")
            #expect(metadata.text.contains(#"<EntityType Name="Photo" HasStream="true">"#))
            let entity = try await Curl.run(server.serviceRoot + "Photos(1)").json()
            let link = server.serviceRoot + "Photos(1)/$value"
            #expect(entity["@odata.mediaReadLink"]?.stringValue == link)
            #expect(entity["@odata.mediaEditLink"]?.stringValue == link)
            #expect(entity["@odata.mediaContentType"] == "image/png")
            let media = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) })
            #expect(entity["@odata.mediaEtag"]?.stringValue == media.etag)
            #expect(media.bytes.count >= 2048)

            let value = try await Curl.run(link)
            #expect(value.status == 200)
            #expect(value.body == media.bytes)
            #expect(value.headers["content-type"] == "image/png")
            #expect(value.headers["etag"] == media.etag)
            #expect(try await Curl.run(link, headers: ["If-None-Match": media.etag]).status == 304)
            // Each entity's media differs.
            #expect(try await Curl.run(server.serviceRoot + "Photos(2)/$value").body != media.bytes)
        }
    }

    @Test func aMediaResourceIsReplacedWithPutAndIfMatch() async throws {
        try await withServer { server in
            let link = server.serviceRoot + "Photos(1)/$value"
            let before = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) })
            let stale = try await Curl.run("PUT", link, headers: ["If-Match": #"W/"m999""#, "Content-Type": "text/plain"], body: "new")
            #expect(stale.status == 412)
            let put = try await Curl.run("PUT", link, headers: ["If-Match": before.etag, "Content-Type": "text/plain"], body: "new bytes")
            #expect(put.status == 204)
            let after = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) })
            #expect(put.headers["etag"] == after.etag)
            #expect(after.etag != before.etag)
            #expect(after.bytes == Array("new bytes".utf8))
            #expect(after.contentType == "text/plain")
            let read = try await Curl.run(link)
            #expect(read.text == "new bytes")
            #expect(read.headers["content-type"] == "text/plain")
            // The entity's own ETag does not change with its media; its media ETag does.
            let entity = try await Curl.run(server.serviceRoot + "Photos(1)").json()
            #expect(entity["@odata.mediaEtag"]?.stringValue == after.etag)
            #expect(entity["@odata.etag"] == #"W/"0""#)
        }
    }

    @Test func postingBytesCreatesAMediaEntity() async throws {
        try await withServer { server in
            let created = try await Curl.run(
                "POST", server.serviceRoot + "Photos", headers: ["Content-Type": "image/jpeg"], body: "jpeg bytes")
            #expect(created.status == 201)
            #expect(try created.json()["PhotoID"] == 4)
            #expect(created.headers["location"] == server.serviceRoot + "Photos(4)")
            let value = try await Curl.run(server.serviceRoot + "Photos(4)/$value")
            #expect(value.text == "jpeg bytes")
            #expect(value.headers["content-type"] == "image/jpeg")
        }
    }

    @Test func aStreamPropertyIsAnnouncedReadAndReplaced() async throws {
        try await withServer { server in
            let metadata = try await Curl.run(server.serviceRoot + "$metadata")
            #expect(metadata.text.contains(#"<Property Name="Thumbnail" Type="Edm.Stream" />"#))
            let entity = try await Curl.run(server.serviceRoot + "Photos(1)").json()
            let link = server.serviceRoot + "Photos(1)/Thumbnail"
            let before = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1], property: "Thumbnail") })
            #expect(entity["Thumbnail@odata.mediaReadLink"]?.stringValue == link)
            #expect(entity["Thumbnail@odata.mediaEditLink"]?.stringValue == link)
            #expect(entity["Thumbnail@odata.mediaContentType"] == "image/jpeg")
            #expect(entity["Thumbnail@odata.mediaEtag"]?.stringValue == before.etag)
            #expect(entity["Thumbnail"] == nil)
            let media = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) })
            #expect(before.bytes != media.bytes)

            let read = try await Curl.run(link)
            #expect(read.status == 200)
            #expect(read.body == before.bytes)
            #expect(read.headers["content-type"] == "image/jpeg")
            #expect(read.headers["etag"] == before.etag)
            #expect(try await Curl.run("PUT", link, headers: ["If-Match": #"W/"m999""#, "Content-Type": "text/plain"], body: "x").status == 412)
            let put = try await Curl.run("PUT", link, headers: ["If-Match": before.etag, "Content-Type": "text/plain"], body: "small")
            #expect(put.status == 204)
            let after = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1], property: "Thumbnail") })
            #expect(put.headers["etag"] == after.etag)
            #expect(after.bytes == Array("small".utf8))
            // The media resource (`$value`) is another stream: unchanged.
            #expect(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) } == media)
            #expect(try await Curl.run(server.serviceRoot + "Photos(1)/Title/Thumbnail").status == 404)
        }
    }

    @Test func theV2DialectWritesMediaIntoMetadata() async throws {
        var configuration = FixtureConfiguration()
        configuration.protocolVersion = .v2
        try await withServer(configuration) { server in
            let metadata = try await Curl.run(server.serviceRoot + "$metadata")
            #expect(metadata.text.contains(#"<EntityType Name="Photo" m:HasStream="true">"#))
            #expect(!metadata.text.contains("Edm.Stream"))  // V2 has no stream properties
            let entity = try await Curl.run(server.serviceRoot + "Photos(1)").json()
            let meta = try #require(entity["d"]?["__metadata"])
            #expect(meta["media_src"]?.stringValue == server.serviceRoot + "Photos(1)/$value")
            #expect(meta["content_type"] == "image/png")
            #expect(meta["media_etag"]?.stringValue?.hasPrefix("W/\"m") == true)
            let value = try await Curl.run(server.serviceRoot + "Photos(1)/$value")
            let media = try #require(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) })
            #expect(value.body == media.bytes)
        }
    }
}
