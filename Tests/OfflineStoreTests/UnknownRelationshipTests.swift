import Foundation
import ODataCore
import ODataFixtures
import TechnicalCache
import Testing

@testable import OfflineStore

/// A navigation property without a referential constraint (mock-sap's V4 `Product/to_Description`, a producer nobody
/// here wrote): the store knows its links only from `$expand`. Without it, a local read of the relationship is a
/// typed error naming the defining query, never `[]`; with it, the producer's answer.
@Suite(.serialized) struct UnknownRelationshipTests {
    static func open(_ root: String, _ directory: TemporaryDirectory, products: String) async throws -> OfflineODataProvider {
        let provider = try OfflineODataProvider(serviceRoot: root, parameters: OfflineODataParameters(
            storeName: "relationships", storePath: directory.path, storeEncryptionKey: "k", keyDerivation: .pbkdf2(rounds: 1_000)))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: products))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "descriptions", query: "ProductDescription"))
        try await provider.open()
        return provider
    }

    /// The local products' keys, as text.
    static func productKeys(_ provider: OfflineODataProvider) async throws -> [String] {
        let page = try JSON.parse(try await provider.execute(.local("GET", "Product?$orderby=Product&$select=Product")).payload)
        return (page["value"]?.arrayValue ?? []).compactMap { $0.objectValue?["Product"]?.stringValue }
    }

    @Test func aRelationshipWhoseLinksWereNotDownloadedIsATypedErrorAndWithExpandTheProducersAnswer() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let root = sap.serviceRoot(MockSAP.productV4)
        let key = ["Product", "Language"]

        let plain = try TemporaryDirectory()
        let provider = try await Self.open(root, plain, products: "Product")
        let products = try await Self.productKeys(provider)
        try #require(!products.isEmpty)
        #expect(try await LocalAnswerTests.localAnswer(provider, "ProductDescription", key: key).keys.count > 0)
        let path = "Product('\(products[0])')/to_Description"
        for url in [path, "Product('\(products[0])')?$expand=to_Description", "Product?$filter=to_Description/any()"] {
            let error = await #expect(throws: OfflineODataError.self, "\(url)") { try await provider.execute(.local("GET", url)) }
            #expect(error == .relationshipNotDownloaded, "\(url): \(String(describing: error))")
            #expect(error?.message.contains("'products'") == true && error?.message.contains("$expand=to_Description") == true)
            #expect(error?.errorNumber == -10021)
        }
        await provider.close()

        let expanded = try TemporaryDirectory()
        let withExpand = try await Self.open(root, expanded, products: "Product?$expand=to_Description")
        defer { Task { await withExpand.close() } }
        for product in products {
            let url = "Product('\(product)')/to_Description"
            let local = try await LocalAnswerTests.localAnswer(withExpand, url, key: key).keys.sorted()
            let remote = try await LocalAnswerTests.producerAnswer(root: root, url, key: key).keys.sorted()
            #expect(local == remote, "\(url): local \(local), mock-sap \(remote)")
        }
        #expect(try await LocalAnswerTests.producerAnswer(root: root, path, key: key).keys.count > 0)
    }

    /// A navigation a download expanded and found empty is known to be empty: `[]`, not an error; an entity created
    /// locally has nothing linked to it yet.
    @Test func aRelationshipKnownToBeEmptyAnswersEmpty() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let root = sap.serviceRoot(MockSAP.productV4)
        let directory = try TemporaryDirectory()
        // The products' descriptions in a language none has: every expanded collection is empty.
        let provider = try await Self.open(root, directory, products: "Product?$expand=to_Description($filter=Language eq 'XX')")
        defer { Task { await provider.close() } }
        let products = try await Self.productKeys(provider)
        try #require(!products.isEmpty)
        let answer = try await LocalAnswerTests.localAnswer(provider, "Product('\(products[0])')/to_Description", key: ["Language"])
        #expect(answer.keys.isEmpty)
        #expect(try await LocalAnswerTests.producerAnswer(root: root, "Product('\(products[0])')/to_Description", key: ["Language"]).keys.count > 0,
                "the producer has descriptions: the empty answer is the expanded filter's, not a missing link")

        _ = try await provider.execute(.local("POST", "Product", body: #"{"Product":"LOCAL1","ProductType":"FERT"}"#))
        #expect(try await LocalAnswerTests.localAnswer(provider, "Product('LOCAL1')/to_Description", key: ["Language"]).keys.isEmpty)
    }
}
