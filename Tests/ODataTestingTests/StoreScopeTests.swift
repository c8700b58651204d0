import Foundation
import HTTPTypes
import ODataCore
import ODataTesting
import OfflineStore
import OnlineStore
import Testing

/// Either store opened on a scripted transport in a temporary directory that is gone afterwards.
@Suite struct StoreScopeTests {
    static let metadata = """
        <?xml version="1.0" encoding="utf-8"?>
        <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
          <edmx:DataServices>
            <Schema Namespace="Shop" xmlns="http://docs.oasis-open.org/odata/ns/edm">
              <EntityType Name="Product">
                <Key><PropertyRef Name="ID"/></Key>
                <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
                <Property Name="Name" Type="Edm.String"/>
              </EntityType>
              <EntityContainer Name="Container">
                <EntitySet Name="Products" EntityType="Shop.Product"/>
              </EntityContainer>
            </Schema>
          </edmx:DataServices>
        </edmx:Edmx>
        """

    @Test func theOnlineStoreReadsThroughTheScriptAndItsDirectoryIsRemoved() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "Products", reply: .collection([["ID": 1, "Name": "Bread"]]))
        let directory = try await transport.withOnlineStore { store in
            let response = try #require(try await store.response(for: .get("Products", .top(5))))
            #expect(try response.entitySet().entities.map { $0.properties["Name"] } == ["Bread"])
            return store.options.storeDirectory
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(transport.requests.map(\.url) == ["http://odata.test/service/Products?$top=5"])
        #expect(transport.unmatchedRequests.isEmpty)
    }

    @Test func theDirectoryIsRemovedWhenTheBodyThrows() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "Products", reply: .connectionRefused)
        var directory: URL?
        do {
            try await transport.withOnlineStore { store in
                directory = store.options.storeDirectory
                _ = try await store.response(for: .get("Products"))
            }
            Issue.record("a refused connection must fail the read")
        } catch {
            #expect("\(error)".contains("connectFailed"), "\(error)")
        }
        let used = try #require(directory)
        #expect(!FileManager.default.fileExists(atPath: used.path))
    }

    @Test func theOfflineStoreDownloadsThroughTheScriptAndUploadsItsChanges() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "$metadata", reply: .metadata(Self.metadata))
            .on("GET", "Products", reply: .collection([["ID": 1, "Name": "Bread"], ["ID": 2, "Name": "Milk"]]))
            .on("GET", "", reply: .status(200))  // the CSRF token fetch before an upload
            .on("PATCH", "Products(2)", reply: .status(204))
        let path = try await transport.withOfflineStore(definingQueries: [OfflineODataDefiningQuery(name: "products", query: "Products")]) { provider in
            let local = try await provider.execute(ODataRequest(method: .get, resourcePath: "Products", queryOptions: [.filter("ID eq 2")]))
            #expect(try local.entitySet().entities.map { $0.properties["Name"] } == ["Milk"])
            _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Products(2)", body: Data(#"{"Name":"Oat milk"}"#.utf8)))
            let result = try await provider.upload()
            #expect(result.failed.isEmpty)
            return provider.parameters.storePath
        }
        #expect(!FileManager.default.fileExists(atPath: path))
        let patch = try #require(transport.requests("PATCH", "Products(2)").first)
        #expect(try JSON.parse(patch.body ?? Data())["Name"] == "Oat milk")
        #expect(transport.unmatchedRequests.isEmpty, "\(transport.unmatchedRequests.map(\.url))")
    }
}
