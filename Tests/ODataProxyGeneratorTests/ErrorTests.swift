import Foundation
import ODataMetadata
import Testing
@testable import ODataProxyGenerator

/// Every ``GeneratorError`` case names what was wrong, the element and its line.
struct ErrorTests {
    /// A V4 document whose `body` starts on line 4.
    static func v4(_ body: String) -> String {
        """
        <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
        <edmx:DataServices>
        <Schema Namespace="N" xmlns="http://docs.oasis-open.org/odata/ns/edm">
        \(body)
        </Schema>
        </edmx:DataServices>
        </edmx:Edmx>
        """
    }

    /// A V2 document whose `body` starts on line 4.
    static func v2(_ body: String) -> String {
        """
        <edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
        <edmx:DataServices m:DataServiceVersion="2.0">
        <Schema Namespace="N" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">
        \(body)
        </Schema>
        </edmx:DataServices>
        </edmx:Edmx>
        """
    }

    static let customer = """
        <EntityType Name="Customer"><Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/></EntityType>
        """

    /// Checks the kind, element, line, and that the description names the element and the line.
    func check(
        _ xml: String, _ kind: GeneratorError, element: String, line: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let error = Support.error(xml) else {
            Issue.record("no error, expected \(kind)", sourceLocation: sourceLocation)
            return
        }
        #expect(error == kind, sourceLocation: sourceLocation)
        #expect(error.element == element, sourceLocation: sourceLocation)
        #expect(error.line == line, sourceLocation: sourceLocation)
        #expect(error.description.contains("line \(line)"), sourceLocation: sourceLocation)
        #expect(error.description.contains(element), sourceLocation: sourceLocation)
    }

    @Test func malformedXML() {
        check(
            Self.v4("<EntityType Name=\"A\"></Entity>"), .malformedXML, element: "<EntityType>", line: 4)
        check("<edmx:Edmx Version=\"4.0\"\n\n  <<", .malformedXML, element: "document", line: 3)
        #expect(Support.error("") == .malformedXML)
    }

    @Test func notUTF8() throws {
        var bytes = Array("<edmx:Edmx Version=\"4.0\">\n\n<P".utf8)
        bytes += [0xF5, 0x40, 0x3C, 0x11, 0xB1]
        bytes += Array("/></edmx:Edmx>".utf8)
        do {
            _ = try ProxyGenerator(serviceName: nil, sourceName: "x").generate(metadata: Data(bytes))
            Issue.record("no error")
        } catch {
            #expect(error == .malformedXML)
            #expect(error.line == 3)
            #expect(error.description.hasPrefix("line 3: document: malformed XML: the document is not UTF-8"))
        }
    }

    @Test func notEDMX() {
        check("<?xml version=\"1.0\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\"/>", .notEDMX, element: "<feed>", line: 2)
    }

    @Test func unsupportedVersion() {
        check(
            "<edmx:Edmx Version=\"3.0\" xmlns:edmx=\"http://docs.oasis-open.org/odata/ns/edmx\"/>",
            .unsupportedVersion, element: "<edmx:Edmx>", line: 1)
        let v9 = Self.v2("").replacingOccurrences(of: "m:DataServiceVersion=\"2.0\"", with: "m:DataServiceVersion=\"9.0\"")
        check(v9, .unsupportedVersion, element: "<edmx:DataServices>", line: 2)
    }

    @Test func entityTypeWithoutKey() {
        // Without a key where none is needed (no entity set, a derived type whose base has none): generated.
        #expect(Support.error(Self.v4("<EntityType Name=\"Loose\">\n<Property Name=\"A\" Type=\"Edm.String\"/></EntityType>")) == nil)
        #expect(Support.error(Self.v4("<EntityType Name=\"Base\"/>\n<EntityType Name=\"Derived\" BaseType=\"N.Base\"/>")) == nil)
        // A contained collection of such a type is addressed by key: refused where it is declared.
        check(
            Self.v4(
                Self.customer.replacingOccurrences(
                    of: "</EntityType>", with: "\n<NavigationProperty Name=\"Notes\" Type=\"Collection(N.Loose)\" ContainsTarget=\"true\"/></EntityType>")
                    + "\n<EntityType Name=\"Loose\"/>"),
            .missingKey, element: "<NavigationProperty Name=\"Notes\">", line: 6)
        // A derived type gets its base's key: no error.
        #expect(Support.error(Self.v4(Self.customer + "\n<EntityType Name=\"VIP\" BaseType=\"N.Customer\"/>")) == nil)
    }

    @Test func propertyTypeNamesNoType() {
        check(
            Self.v4(Self.customer + "\n<ComplexType Name=\"C\">\n<Property Name=\"X\" Type=\"N.Nope\"/></ComplexType>"),
            .unknownType, element: "<Property Name=\"X\">", line: 7)
        // A primitive type this reader does not know is generated as JSON (a warning, see RealDocumentTests).
        #expect(Support.error(Self.v4("<ComplexType Name=\"C\">\n<Property Name=\"X\" Type=\"Edm.Nope\"/></ComplexType>")) == nil)
    }

    @Test func navigationTypeNamesNoType() {
        check(
            Self.v4(
                "<EntityType Name=\"Customer\"><Key><PropertyRef Name=\"ID\"/></Key>\n"
                    + "<Property Name=\"ID\" Type=\"Edm.Int32\" Nullable=\"false\"/>\n"
                    + "<NavigationProperty Name=\"Orders\" Type=\"Collection(N.Order)\"/></EntityType>"),
            .unknownType, element: "<NavigationProperty Name=\"Orders\">", line: 6)
    }

    @Test func entitySetNamesAMissingEntityType() {
        check(
            Self.v4(Self.customer + "\n<EntityContainer Name=\"C\">\n<EntitySet Name=\"Orders\" EntityType=\"N.Order\"/>\n</EntityContainer>"),
            .unknownEntitySetType, element: "<EntitySet Name=\"Orders\">", line: 7)
    }

    @Test func v2NavigationWithUnresolvedAssociation() {
        let association = """
            <Association Name="A_Orders"><End Type="N.Customer" Multiplicity="1" Role="From"/>
            <End Type="N.Customer" Multiplicity="*" Role="To"/></Association>
            """
        func document(_ navigation: String) -> String {
            Self.v2(
                "<EntityType Name=\"Customer\"><Key><PropertyRef Name=\"ID\"/></Key>\n"
                    + "<Property Name=\"ID\" Type=\"Edm.Int32\" Nullable=\"false\"/>\n"
                    + navigation + "</EntityType>\n" + association)
        }
        let element = "<NavigationProperty Name=\"Friends\">"
        check(
            document("<NavigationProperty Name=\"Friends\" Relationship=\"N.Nope\" FromRole=\"From\" ToRole=\"To\"/>"),
            .unresolvedAssociation, element: element, line: 6)
        check(
            document("<NavigationProperty Name=\"Friends\" Relationship=\"N.A_Orders\" FromRole=\"From\" ToRole=\"Nope\"/>"),
            .unresolvedAssociation, element: element, line: 6)
        check(
            document("<NavigationProperty Name=\"Friends\" Relationship=\"N.A_Orders\" FromRole=\"Nope\" ToRole=\"To\"/>"),
            .unresolvedAssociation, element: element, line: 6)
        // Resolving: to many.
        let source = try? ProxyGenerator(serviceName: nil, sourceName: "x").generate(
            metadata: Data(
                document("<NavigationProperty Name=\"Friends\" Relationship=\"N.A_Orders\" FromRole=\"From\" ToRole=\"To\"/>")
                    .utf8))
        #expect(source?.contains("public var friends: [Customer]?") == true)
    }

    @Test func missingRequiredAttributes() {
        check(
            Self.v4("<ComplexType Name=\"C\">\n<Property Type=\"Edm.String\"/></ComplexType>"),
            .missingAttribute, element: "<Property>", line: 5)
        check(
            Self.v4("<ComplexType Name=\"C\">\n\n<Property Name=\"P\"/></ComplexType>"),
            .missingAttribute, element: "<Property Name=\"P\">", line: 6)
        check(Self.v4("<EntityType>\n</EntityType>"), .missingAttribute, element: "<EntityType>", line: 4)
        // A start tag over several lines: the line where it begins.
        check(
            Self.v4("<ComplexType Name=\"C\">\n<Property\n  Name=\"P\"\n  Nullable=\"true\"/></ComplexType>"),
            .missingAttribute, element: "<Property Name=\"P\">", line: 5)
        check(
            Self.v4(Self.customer + "\n<EntityContainer Name=\"C\"><EntitySet Name=\"S\"/></EntityContainer>"),
            .missingAttribute, element: "<EntitySet Name=\"S\">", line: 6)
        #expect(Support.error(Self.v4(""))?.description.contains("Name") == nil)
    }

    @Test func descriptionReadsWell() {
        let error = Support.error(Self.v4("<ComplexType Name=\"C\">\n<Property Name=\"X\" Type=\"N.Nope\"/></ComplexType>"))
        #expect(
            error?.description
                == "line 5: <Property Name=\"X\">: unknown type: the type `N.Nope` names no type in the document")
    }

    /// Each kind of the reader's error becomes the generator's kind of the same name, with element, line and message.
    @Test func everyReaderKindMapsToItsGeneratorKind() {
        let kinds: [(MetadataError, GeneratorError)] = [
            (.malformedXML, .malformedXML), (.notEDMX, .notEDMX), (.unsupportedVersion, .unsupportedVersion),
            (.missingKey, .missingKey), (.unknownType, .unknownType), (.unknownEntitySetType, .unknownEntitySetType),
            (.unresolvedAssociation, .unresolvedAssociation), (.missingAttribute, .missingAttribute),
            (.invalidDefinition, .invalidDefinition),
        ]
        for (reader, generator) in kinds {
            let error = GeneratorError(metadata: MetadataError(reader, element: "<E>", line: 3, "m"))
            #expect(error == generator)
            #expect(error.shortDescription == reader.shortDescription)
            #expect(error.description == MetadataError(reader, element: "<E>", line: 3, "m").description)
        }
    }
}
