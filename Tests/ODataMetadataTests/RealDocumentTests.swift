import Foundation
import ODataMetadata
import Testing

/// What real producers publish (Microsoft Graph, ABAP CDS services, documents that include vocabularies) is read,
/// each construct from `Proxies/Metadata/RealServices.xml`, a document of this repository's own; what is not CSDL
/// is still refused, naming the element and its line.
@Suite struct RealDocumentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static func data(_ path: String) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent("Proxies/Metadata/" + path))
    }
    static func document(withReferences: Bool) throws -> CSDLDocument {
        try CSDLDocument(
            parsing: data("RealServices.xml"), references: withReferences ? [data("Vocabularies/Permissions.xml")] : [])
    }
    static func property(_ name: String, of type: String = "Example.Real.Device", in document: CSDLDocument) throws
        -> CSDLProperty
    {
        try #require(document.structuredType(named: type)?.properties.first { $0.name == name }, "\(name)")
    }

    @Test func keylessEntityTypesAreReadWhereNoKeyIsNeeded() throws {
        let document = try Self.document(withReferences: true)
        // A singleton's type, a single-valued containment target, an abstract base type.
        for name in ["Example.Real.Admin", "Example.Real.SettingsRoot", "Example.Real.Entity"] {
            let type = try #require(document.structuredType(named: name))
            #expect(document.key(of: type).isEmpty, "\(name)")
        }
        // A derived type declares the key its base lacks.
        #expect(document.key(of: try #require(document.structuredType(named: "Example.Real.Device"))) == ["ID"])
        // An entity set of a keyless type: read, with a warning naming the set and its line.
        let warning = try #require(document.warnings.first { $0.element == "<EntitySet Name=\"LogLines\">" })
        #expect(warning.line == 95)
        #expect(warning.message.contains("Example.Real.LogLine") && warning.message.contains("no key"))
    }

    @Test func edmFloatIsReadAsADoubleWithAWarning() throws {
        let document = try Self.document(withReferences: true)
        let weight = try Self.property("Weight", in: document)
        #expect(weight.resolved == .primitive("Edm.Double"))
        #expect(weight.type == "Edm.Double")
        #expect(try Self.property("Samples", in: document).resolved == .collection(.primitive("Edm.Double")))
        let warning = try #require(document.warnings.first { $0.element == "<Property Name=\"Weight\">" })
        #expect(warning.line == 40)
        #expect(warning.message.contains("Edm.Float"))
    }

    @Test func anUnknownPrimitiveTypeIsKeptAsJSONWithAWarning() throws {
        let document = try Self.document(withReferences: true)
        let orientation = try Self.property("Orientation", in: document)
        #expect(orientation.resolved == .primitive("Edm.Untyped"))
        #expect(orientation.type == "Edm.Quaternion")
        let warning = try #require(document.warnings.first { $0.element == "<Property Name=\"Orientation\">" })
        #expect(warning.line == 43)
        #expect(warning.message.contains("Edm.Quaternion"))
    }

    @Test func typesOfAReferencedDocumentAreTypedWhenItIsGivenElseKeptWithAWarning() throws {
        let given = try Self.document(withReferences: true)
        #expect(try Self.property("Access", in: given).resolved == .enumType("Example.Permissions.V1.Permission"))
        #expect(
            try Self.property("Grants", in: given).resolved == .collection(.structured("Example.Permissions.V1.Grant")))
        #expect(given.schemas.first { $0.namespace == "Example.Permissions.V1" }?.isReferenced == true)
        #expect(given.schemas.first { $0.namespace == "Example.Real" }?.isReferenced == false)
        // The vocabulary that is never given: untyped, with a warning naming the namespace.
        #expect(try Self.property("Restrictions", in: given).resolved == .primitive("Edm.Untyped"))
        #expect(given.warnings.contains { $0.line == 48 && $0.message.contains("Org.OData.Capabilities.V1") })
        #expect(!given.warnings.contains { $0.message.contains("Example.Permissions.V1") })

        let alone = try Self.document(withReferences: false)
        #expect(try Self.property("Access", in: alone).resolved == .primitive("Edm.Untyped"))
        #expect(alone.warnings.contains { $0.line == 45 && $0.message.contains("Example.Permissions.V1") })
        // A namespace the document never references is still an unknown type.
        let text = String(decoding: try Self.data("RealServices.xml"), as: UTF8.self)
            .replacingOccurrences(of: "Capabilities.ReadRestrictionsType", with: "Elsewhere.Type")
        #expect(throws: MetadataError.unknownType) { try CSDLDocument(parsing: Data(text.utf8)) }
    }

    @Test func theAbstractAndPathTypesAndStreamsAreRead() throws {
        let document = try Self.document(withReferences: true)
        for (name, type) in [
            ("Extra", "Edm.Untyped"), ("Anything", "Edm.PrimitiveType"), ("Shape", "Edm.ComplexType"),
            ("Related", "Edm.EntityType"), ("SortBy", "Edm.PropertyPath"), ("Via", "Edm.NavigationPropertyPath"),
            ("Term", "Edm.AnnotationPath"), ("Element", "Edm.ModelElementPath"), ("AnyPath", "Edm.AnyPropertyPath"),
            ("Firmware", "Edm.Stream"),
        ] {
            #expect(try Self.property(name, in: document).resolved == .primitive(type), "\(name)")
        }
        #expect(!document.warnings.contains { $0.message.contains("Edm.PropertyPath") })
    }

    @Test func annotationsOfEveryFormAreReadPast() throws {
        let document = try Self.document(withReferences: true)
        let device = try #require(document.structuredType(named: "Example.Real.Device"))
        // Nothing inside an annotation became a property, a key or a navigation property.
        #expect(device.properties.count == 17)
        #expect(device.key == ["ID"])
        #expect(device.navigationProperties.map(\.name) == ["Readings", "Owner"])
        #expect(document.entitySets.map(\.name) == ["Devices", "LogLines"])
    }

    @Test func operationsAreReadWithTheirSignatures() throws {
        let document = try Self.document(withReferences: true)
        let schema = try #require(document.schemas.first { $0.namespace == "Example.Real" })
        // Both overloads of Nearest, in document order, then Reset and Broken.
        #expect(schema.operations.map(\.name) == [
            "Example.Real.Nearest", "Example.Real.Reset", "Example.Real.Nearest", "Example.Real.Broken",
        ])
        let onOne = schema.operations[0]
        #expect(onOne.kind == "function" && onOne.isBound)
        #expect(onOne.parameters.map(\.name) == ["device", "radius"])
        #expect(onOne.parameters.map(\.resolved) == [.structured("Example.Real.Device"), .primitive("Edm.Double")])
        #expect(onOne.returnResolved == .collection(.structured("Example.Real.Device")))
        let onMany = schema.operations[2]
        #expect(onMany.parameters.first?.resolved == .collection(.structured("Example.Real.Device")))
        #expect(onMany.returnResolved == .structured("Example.Real.Device"))
        let reset = schema.operations[1]
        #expect(reset.kind == "action" && !reset.isBound)
        #expect(reset.parameters.map(\.nullable) == [false])
        // A parameter whose type names nothing: the operation stays untyped, with a warning; the document is read.
        let broken = schema.operations[3]
        #expect(broken.parameters.first?.resolved == nil)
        #expect(broken.returnResolved == .primitive("Edm.String"))
        #expect(document.warnings.contains { $0.line == 111 && $0.message.contains("Example.Real.Broken") })

        let container = try #require(schema.entityContainers.first)
        let imports = container.operations.filter { $0.kind != "singleton" }
        #expect(imports.map(\.name) == ["ResetAll", "Broken"])
        #expect(imports.map(\.imports) == ["Example.Real.Reset", "Example.Real.Broken"])
        #expect(imports.first?.entitySet == "Devices")
        #expect(container.operations.first { $0.kind == "singleton" }?.type == "real.Admin")
    }

    @Test func aV2FunctionImportHasItsMethodParametersAndReturnType() throws {
        let text = CSDLDocumentTests.v2.replacingOccurrences(
            of: "</EntityContainer>",
            with: """
                <FunctionImport Name="Confirm" ReturnType="NS.Order" EntitySet="Orders" m:HttpMethod="POST">
                <Parameter Name="OrderID" Type="Edm.Guid" Mode="In"/></FunctionImport>
                <FunctionImport Name="Count" ReturnType="Edm.Int32"/>
                </EntityContainer>
                """)
        let document = try CSDLDocument(parsing: Data(text.utf8))
        let imports = try #require(document.schemas.first?.entityContainers.first?.operations)
        #expect(imports.map(\.name) == ["Confirm", "Count"])
        #expect(imports.map(\.httpMethod) == ["POST", "GET"])
        #expect(imports[0].parameters.map(\.resolved) == [.primitive("Edm.Guid")])
        #expect(imports[0].returnResolved == .structured("NS.Order"))
        #expect(imports[0].entitySet == "Orders")
        #expect(imports[1].returnResolved == .primitive("Edm.Int32"))
    }

    @Test func twoKeyElementsAreRefused() throws {
        let text = String(decoding: try Self.data("RealServices.xml"), as: UTF8.self)
            .replacingOccurrences(
                of: "<Key>\n          <PropertyRef Name=\"At\"/>\n        </Key>",
                with: "<Key>\n          <PropertyRef Name=\"At\"/>\n        </Key>\n        <Key><PropertyRef Name=\"Value\"/></Key>")
        let error = try #require(throws: MetadataError.self) { try CSDLDocument(parsing: Data(text.utf8)) }
        #expect(error == .invalidDefinition)
        #expect(error.element == "<Key>")
        #expect(error.line == 71)
        #expect(error.message.contains("second Key"))
    }

    @Test func anUndeclaredNamespacePrefixIsNamed() throws {
        let text = MalformedDocumentTests.valid.replacingOccurrences(
            of: "<EntityType Name=\"Item\">", with: "<EntityType Name=\"Item\" sap:content-version=\"1\">")
        let error = try #require(throws: MetadataError.self) { try CSDLDocument(parsing: Data(text.utf8)) }
        #expect(error == .malformedXML)
        #expect(error.line == 4)
        #expect(error.element == "<EntityType Name=\"Item\">")
        #expect(error.message.contains("`sap`") && error.message.contains("xmlns:sap"))
        #expect(!error.message.contains("XMLParser error"))
    }

    @Test func aV2AssociationEndThatNamesASetIsReadThroughItsAssociationSet() throws {
        let broken = CSDLDocumentTests.v2.replacingOccurrences(of: "Type=\"NS.Order\" Multiplicity=\"*\"", with: "Type=\"NS.Orders\" Multiplicity=\"*\"")
        try #require(broken != CSDLDocumentTests.v2)
        let document = try CSDLDocument(parsing: Data(broken.utf8))
        let partner = try #require(document.structuredType(named: "NS.Partner"))
        #expect(partner.navigationProperties.first?.target == "NS.Order")
        #expect(document.warnings.contains { $0.message.contains("NS.Orders") })
    }
}
