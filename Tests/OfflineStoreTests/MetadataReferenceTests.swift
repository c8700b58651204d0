import Foundation
import ODataCore
import ODataTesting
import TechnicalCache
import Testing

@testable import OfflineStore

/// `OfflineODataParameters.metadataReferences` (#44): a property whose type comes from a document the service includes
/// with `edmx:Reference` is read with that type's underlying type in local queries when the document is given, and is
/// kept as it comes (with a warning) when it is not.
@Suite struct MetadataReferenceTests {
    static let metadata = """
        <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
        <edmx:Reference Uri="https://example.test/Measures.xml"><edmx:Include Namespace="Example.Measures" Alias="Measures"/></edmx:Reference>
        <edmx:DataServices><Schema Namespace="Shop" xmlns="http://docs.oasis-open.org/odata/ns/edm">
        <EntityType Name="Product"><Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/><Property Name="Price" Type="Measures.Money"/></EntityType>
        <EntityContainer Name="C"><EntitySet Name="Products" EntityType="Shop.Product"/></EntityContainer>
        </Schema></edmx:DataServices></edmx:Edmx>
        """
    static let vocabulary = """
        <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>
        <Schema Namespace="Example.Measures" Alias="Measures" xmlns="http://docs.oasis-open.org/odata/ns/edm">
        <TypeDefinition Name="Money" UnderlyingType="Edm.Decimal"/></Schema></edmx:DataServices></edmx:Edmx>
        """

    @Test func theModelTypesAPropertyFromAGivenReference() throws {
        let typed = try ServiceModel.parse(Data(Self.metadata.utf8), references: [Data(Self.vocabulary.utf8)])
        #expect(typed.entityTypes["Shop.Product"]?.propertyTypes["Price"] == "Edm.Decimal")
        #expect(typed.metadataWarnings.isEmpty)
        let untyped = try ServiceModel.parse(Data(Self.metadata.utf8))
        #expect(untyped.entityTypes["Shop.Product"]?.propertyTypes["Price"] == "Example.Measures.Money")
        #expect(untyped.metadataWarnings.contains { $0.contains("Example.Measures.Money") || $0.contains("Measures.Money") })
        // A reference that is not CSDL is refused as the $metadata is, naming what was wrong.
        let error = #expect(throws: OfflineODataError.self) {
            try ServiceModel.parse(Data(Self.metadata.utf8), references: [Data("<not-edmx/>".utf8)])
        }
        #expect(error == .invalidMetadata)
    }

    @Test func localQueriesAreTypedByTheReferencedTypesUnderlyingType() async throws {
        try await withTemporaryDirectory { directory in
            let transport = ScriptedTransport()
            transport.on("GET", "$metadata", reply: .metadata(Self.metadata))
                .on("GET", "Products", reply: .collection([["ID": 1, "Price": "9.5"], ["ID": 2, "Price": "10"], ["ID": 3, "Price": "100"]]))
            var parameters = OfflineODataParameters(storeName: "shop", storePath: directory.path)
            parameters.transport = transport
            parameters.keyDerivation = .pbkdf2(rounds: 1_000)
            parameters.metadataReferences = [Data(Self.vocabulary.utf8)]
            let provider = try OfflineODataProvider(serviceRoot: "http://odata.test/service/", parameters: parameters)
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "Products"))
            try await provider.open()
            let answer = try provider.read(.get("Products", .filter("Price gt 9.75"), .orderBy(["Price desc"])))
            let ids = try JSON.parse(answer.payload).objectValue?["value"]?.arrayValue?.compactMap { $0.objectValue?["ID"]?.intValue }
            #expect(ids == [3, 2])
            // The property is a number now: comparing it with a date is refused, naming both types.
            let refused = #expect(throws: OfflineODataError.self) { try provider.read(.get("Products", .filter("Price lt 2024-03-01"))) }
            #expect(refused == .invalidRequest)
            #expect(refused?.message.contains("Edm.Date") == true, "\(refused?.message ?? "")")
            await provider.close()

            // Reopened with the reference: the stored $metadata is read with it again.
            let reopened = try OfflineODataProvider(serviceRoot: "http://odata.test/service/", parameters: parameters)
            try await reopened.open()
            #expect(throws: OfflineODataError.invalidRequest) { try reopened.read(.get("Products", .filter("Price lt 2024-03-01"))) }
            await reopened.close()

            // Without it, the values are kept as they come: the same filter is not type-checked (and matches nothing).
            parameters.metadataReferences = []
            let untyped = try OfflineODataProvider(serviceRoot: "http://odata.test/service/", parameters: parameters)
            try await untyped.open()
            let loose = try untyped.read(.get("Products", .filter("Price lt 2024-03-01")))
            #expect(try JSON.parse(loose.payload).objectValue?["value"]?.arrayValue?.isEmpty == true)
            await untyped.close()
        }
    }
}
