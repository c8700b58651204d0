import Foundation
import ODataCore
import Testing

@testable import ODataFixtures

private let json = ["Content-Type": "application/json"]

/// The producer in V2 mode: EDMX 1.0 `$metadata`, V2 envelopes with `__next` in the configured form, `MERGE` taken
/// and `PATCH` refused.
@Suite struct V2ModeTests {
    static func configuration(_ nextLink: FixtureConfiguration.V2NextLink = .string) -> FixtureConfiguration {
        var configuration = FixtureConfiguration(defaultPageSize: 20)
        configuration.protocolVersion = .v2
        configuration.v2NextLink = nextLink
        return configuration
    }

    @Test func metadataIsEDMX1WithEveryEntitySet() async throws {
        try await withServer(Self.configuration()) { server in
            let metadata = try await Curl.run(server.serviceRoot + "$metadata")
            #expect(metadata.status == 200)
            #expect(metadata.text.contains(#"<edmx:Edmx Version="1.0""#))
            for set in server.model.entitySets {
                #expect(metadata.text.contains(#"<EntitySet Name="\#(set.name)""#), "\(set.name)")
            }
        }
    }

    @Test(arguments: FixtureConfiguration.V2NextLink.allCases)
    func pagesCarryTheirNextLinkInTheConfiguredForm(form: FixtureConfiguration.V2NextLink) async throws {
        try await withServer(Self.configuration(form)) { server in
            let page = try await Curl.run(server.serviceRoot + "Customers").json()
            let d = try #require(page["d"])
            #expect(d["results"]?.arrayValue?.count == 20)
            #expect(d["results"]?.arrayValue?.first?["__metadata"]?["etag"]?.stringValue != nil)
            let next = try #require(d["__next"])
            switch form {
            case .string: #expect(next.stringValue?.hasSuffix("Customers?$skiptoken=20") == true)
            case .object: #expect(next["uri"]?.stringValue?.hasSuffix("Customers?$skiptoken=20") == true)
            case .number: #expect(next == 42)
            case .objectWithNumberURI: #expect(next == ["uri": 7])
            }
            server.v2NextLink = .string
            let last = try await Curl.run(server.serviceRoot + "Customers?$skiptoken=80").json()
            #expect(last["d"]?["results"]?.arrayValue?.count == 11)
            #expect(last["d"]?.objectValue?.keys.contains("__next") == false)
            let entity = try await Curl.run(server.serviceRoot + "Customers('ALFKI')").json()
            #expect(entity["d"]?["CustomerID"] == "ALFKI")
        }
    }

    @Test func mergeIsTakenAndPatchRefused() async throws {
        try await withServer(Self.configuration()) { server in
            let url = server.serviceRoot + "Customers('ALFKI')"
            let patched = try await Curl.run("PATCH", url, headers: json, body: #"{"City":"Puebla"}"#)
            #expect(patched.status == 400)
            #expect(patched.text.contains("Method not allowed: PATCH not supported here"))
            #expect(try await Curl.run("MERGE", url, headers: json, body: #"{"City":"Puebla"}"#).status == 204)
            #expect(try server.read { try $0.entity(in: "Customers", key: ["CustomerID": "ALFKI"]) }?["City"] == "Puebla")
            #expect(server.counters.executions(method: "MERGE", path: "Customers('ALFKI')") == 1)
        }
    }
}
