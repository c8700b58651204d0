import Foundation
import ODataMetadata
import Testing

/// Documents that cannot be read: each a ``MetadataError`` of its kind, with the element and line; never a crash.
@Suite struct MalformedDocumentTests {
    static let valid = """
        <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
        <edmx:DataServices>
        <Schema Namespace="NS" xmlns="http://docs.oasis-open.org/odata/ns/edm">
        <EntityType Name="Item">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
        </EntityType>
        <EntityContainer Name="C"><EntitySet Name="Items" EntityType="NS.Item"/></EntityContainer>
        </Schema>
        </edmx:DataServices>
        </edmx:Edmx>
        """

    static func error(_ text: String) -> MetadataError? {
        error(Data(text.utf8))
    }

    static func error(_ data: Data) -> MetadataError? {
        do {
            _ = try CSDLDocument(parsing: data)
            return nil
        } catch {
            return error
        }
    }

    @Test func theValidDocumentReads() throws {
        #expect(Self.error(Self.valid) == nil)
    }

    @Test func aTruncatedDocumentIsMalformedXML() throws {
        for length in [0, 10, Self.valid.utf8.count / 2, Self.valid.utf8.count - 5] {
            let error = try #require(Self.error(Data(Self.valid.utf8.prefix(length))), "length \(length)")
            #expect(error == .malformedXML, "length \(length): \(error)")
        }
    }

    @Test func aWrongRootIsNotEDMX() throws {
        let error = try #require(Self.error("<Schema Namespace=\"NS\"/>"))
        #expect(error == .notEDMX)
        #expect(error.element == "<Schema>")
        #expect(error.line == 1)
    }

    @Test func anUnsupportedVersionIsNamed() throws {
        let error = try #require(Self.error(Self.valid.replacingOccurrences(of: "Version=\"4.0\"", with: "Version=\"3.0\"")))
        #expect(error == .unsupportedVersion)
        #expect(error.message.contains("3.0"))
    }

    @Test func aContainedCollectionOfAKeylessTypeIsMissingKey() throws {
        let text = Self.valid.replacingOccurrences(
            of: "</EntityType>",
            with: "<NavigationProperty Name=\"Parts\" Type=\"Collection(NS.Part)\" ContainsTarget=\"true\"/>\n</EntityType>\n"
                + "<EntityType Name=\"Part\"><Property Name=\"Name\" Type=\"Edm.String\"/></EntityType>")
        let error = try #require(Self.error(text))
        #expect(error == .missingKey)
        #expect(error.element == "<NavigationProperty Name=\"Parts\">")
        #expect(error.line == 7)
        #expect(error.message.contains("NS.Part"))
        // The same target, single-valued: no key needed.
        #expect(Self.error(text.replacingOccurrences(of: "Collection(NS.Part)", with: "NS.Part")) == nil)
    }

    @Test func anEntitySetOfAKeylessTypeIsReadWithAWarning() throws {
        let text = Self.valid.replacingOccurrences(of: "<Key><PropertyRef Name=\"ID\"/></Key>", with: "")
        let document = try CSDLDocument(parsing: Data(text.utf8))
        #expect(document.key(of: try #require(document.structuredType(named: "NS.Item"))).isEmpty)
        let warning = try #require(document.warnings.first)
        #expect(warning.element == "<EntitySet Name=\"Items\">")
        #expect(warning.line == 8)
        #expect(warning.message.contains("no key"))
        #expect(warning.description.hasPrefix("line 8: <EntitySet Name=\"Items\">: warning: "))
    }

    @Test func aKeyNamingNoPropertyIsAnInvalidDefinition() throws {
        let error = try #require(Self.error(Self.valid.replacingOccurrences(of: "<PropertyRef Name=\"ID\"/>", with: "<PropertyRef Name=\"Missing\"/>")))
        #expect(error == .invalidDefinition)
        #expect(error.message.contains("Missing"))
        #expect(error.line == 4)
    }

    @Test func aMissingAttributeNamesTheElementAndLine() throws {
        let error = try #require(Self.error(Self.valid.replacingOccurrences(of: "<Property Name=\"ID\" Type=\"Edm.Int32\"", with: "<Property Name=\"ID\"")))
        #expect(error == .missingAttribute)
        #expect(error.element == "<Property Name=\"ID\">")
        #expect(error.line == 6)
        #expect(error.description.hasPrefix("line 6: <Property Name=\"ID\">: missing attribute: "))
    }

    @Test func anUnknownTypeIsNamed() throws {
        let error = try #require(Self.error(Self.valid.replacingOccurrences(of: "Edm.Int32", with: "NS.Nothing")))
        #expect(error == .unknownType)
        #expect(error.message.contains("NS.Nothing"))
    }

    @Test func aPropertyOfAReferencedTypeIsKeptUnresolvedOnlyWhenAsked() throws {
        let text = Self.valid.replacingOccurrences(of: "<Property Name=\"ID\" Type=\"Edm.Int32\"", with: "<Property Name=\"ID\" Type=\"Edm.Int32\"/><Property Name=\"Amount\" Type=\"Common.Money\"")
        #expect(Self.error(text) == .unknownType)
        let document = try CSDLDocument(parsing: Data(text.utf8), allowingUnresolvedPropertyTypes: true)
        let amount = try #require(document.structuredType(named: "NS.Item")?.properties.first { $0.name == "Amount" })
        #expect(amount.type == "Common.Money")
        #expect(amount.resolved == nil)
        #expect(document.structuredType(named: "NS.Item")?.properties.first { $0.name == "ID" }?.resolved != nil)
    }

    @Test func anEntitySetOfAMissingTypeIsNamed() throws {
        let error = try #require(Self.error(Self.valid.replacingOccurrences(of: "EntityType=\"NS.Item\"", with: "EntityType=\"NS.Gone\"")))
        #expect(error == .unknownEntitySetType)
        #expect(error.line == 8)
    }

    @Test func anUnknownV2AssociationIsUnresolved() throws {
        let broken = CSDLDocumentTests.v2.replacingOccurrences(
            of: "Relationship=\"NS.Partner_Orders\" FromRole=\"O\"", with: "Relationship=\"NS.Missing\" FromRole=\"O\"")
        let error = try #require(Self.error(broken))
        #expect(error == .unresolvedAssociation)
        #expect(error.message.contains("NS.Missing"))
    }

    @Test func bytesThatAreNotUTF8AreMalformed() throws {
        var data = Data(Self.valid.utf8)
        data.insert(0xFF, at: 60)
        let error = try #require(Self.error(data))
        #expect(error == .malformedXML)
        #expect(error.message.contains("UTF-8"))
    }

    @Test(arguments: ["", "<", "<edmx:Edmx", "<edmx:Edmx Version=\"", "<!-- never closed", "not xml at all", "<a><b></a>"])
    func garbageIsAnErrorNotACrash(text: String) {
        #expect(Self.error(text) != nil)
    }
}
