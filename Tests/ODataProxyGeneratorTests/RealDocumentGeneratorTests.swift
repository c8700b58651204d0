import Foundation
import ODataMetadata
import Testing
@testable import ODataProxyGenerator

/// The generator over what real producers publish (`Proxies/Metadata/RealServices.xml`, generated and compiled as
/// `RealServicesProxies`): referenced vocabularies, `--only`'s closure, keyless entity sets, files split by size.
struct RealDocumentGeneratorTests {
    static let document = "Proxies/Metadata/RealServices.xml"
    static let vocabulary = "Proxies/Metadata/Vocabularies/Permissions.xml"

    static func generate(only: [String]? = nil, references: Bool = true) throws -> GeneratedProxies {
        try ProxyGenerator(serviceName: "RealService", sourceName: "RealServices.xml", only: only)
            .generate(metadata: Support.data(document), references: references ? [Support.data(vocabulary)] : [])
    }

    @Test func theCommittedProxiesAreThisOutput() throws {
        let committed = try String(decoding: Support.data("Proxies/RealServices/RealServices.swift"), as: UTF8.self)
        #expect(try Self.generate().source == committed)
    }

    @Test func aReferencedVocabularyTypesItsPropertiesAndOnlyWhatIsUsedIsGenerated() throws {
        let source = try Self.generate().source
        #expect(source.contains("public var access: Permission?"))
        #expect(source.contains("public var grants: [Grant]"))
        #expect(source.contains("public struct Grant: StructuredValue"))
        #expect(!source.contains("struct Unused"))
        #expect(source.contains("public var weight: Double?"))
        #expect(source.contains("public var samples: [Double]"))
        #expect(source.contains("public var orientation: JSONValue?"))
        #expect(source.contains("public var restrictions: JSONValue?"))

        let alone = try Self.generate(references: false)
        #expect(alone.source.contains("public var access: JSONValue?"))
        #expect(!alone.source.contains("struct Grant"))
        #expect(alone.warnings.contains { $0.line == 45 })
    }

    @Test func aReferencedServicesContainerIsNotGenerated() throws {
        let other = """
            <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>
            <Schema Namespace="Example.Permissions.V1" xmlns="http://docs.oasis-open.org/odata/ns/edm">
            <EnumType Name="Permission"><Member Name="None" Value="0"/></EnumType>
            <ComplexType Name="Grant"><Property Name="Principal" Type="Edm.String"/></ComplexType>
            <EntityType Name="Audit"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32" Nullable="false"/></EntityType>
            <Action Name="Purge"/>
            <EntityContainer Name="Elsewhere"><EntitySet Name="Audits" EntityType="Example.Permissions.V1.Audit"/></EntityContainer>
            </Schema></edmx:DataServices></edmx:Edmx>
            """
        let generated = try ProxyGenerator(serviceName: "RealService", sourceName: "RealServices.xml")
            .generate(metadata: Support.data(Self.document), references: [Data(other.utf8)])
        #expect(generated.source.contains("public struct Grant: "))
        #expect(!generated.source.contains("Elsewhere") && !generated.source.contains("struct Audit"))
        #expect(!generated.source.contains("Purge"))
        let error = try #require(throws: GeneratorError.self) {
            try ProxyGenerator(serviceName: nil, sourceName: "x", only: ["Audits"]).generate(
                metadata: Support.data(Self.document), references: [Data(other.utf8)])
        }
        #expect(error == .invalidOption)
    }

    @Test func aKeylessEntitySetIsReadAndCreatedOnly() throws {
        let source = try Self.generate().source
        #expect(source.contains("public func fetchLogLines(matching"))
        #expect(source.contains("public func createLogLine("))
        #expect(!source.contains("func updateLogLine("))
        #expect(!source.contains("func deleteLogLine("))
        #expect(source.contains("public func deleteDevice("))
    }

    @Test func onlyGeneratesTheClosureOfTheNamedSetsAndSingletons() throws {
        let devices = try Self.generate(only: ["Devices"]).source
        for type in ["Device", "Reading", "Admin", "SettingsRoot", "Entity", "Grant"] {
            #expect(devices.contains("public struct \(type): "), "\(type)")
        }
        #expect(devices.contains("public enum Permission: "))
        #expect(!devices.contains("struct LogLine"))
        #expect(devices.contains("func fetchDevices(") && !devices.contains("func fetchLogLines("))

        let admin = try Self.generate(only: ["Admin"]).source
        #expect(admin.contains("public struct Admin: ") && admin.contains("public struct SettingsRoot: "))
        #expect(!admin.contains("struct Device"))

        let error = try #require(throws: GeneratorError.self) { try Self.generate(only: ["Nowhere"]) }
        #expect(error == .invalidOption)
        #expect(error.message.contains("Nowhere"))
    }

    @Test func filesSplitBetweenTypesAndJoinToTheSameSource() throws {
        let generated = try Self.generate()
        let files = generated.files(maxBytes: 4_000)
        #expect(files.count > 3)
        let header = try #require(files.first?.split(separator: "\n", maxSplits: 4).prefix(4).joined(separator: "\n"))
        for file in files { #expect(file.hasPrefix(header)) }
        #expect(generated.files(maxBytes: 1 << 30) == [generated.source])
        // Every type once, in the same order.
        let declarations = files.flatMap { $0.split(separator: "\n").filter { $0.hasPrefix("public struct ") } }
        #expect(declarations == generated.source.split(separator: "\n").filter { $0.hasPrefix("public struct ") })
    }
}
