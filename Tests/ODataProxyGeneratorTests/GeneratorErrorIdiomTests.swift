import Foundation
import ODataProxyGenerator
import Testing

/// `GeneratorError` follows the package's error idiom: `catch GeneratorError.kind` matches its kind only, and
/// the description names the kind (in words) and the place.
@Suite struct GeneratorErrorIdiomTests {
    @Test func aDocumentThatIsNoEDMXIsCaughtByItsKind() {
        let generator = ProxyGenerator(serviceName: nil, sourceName: "x")
        var matched = ""
        do {
            _ = try generator.generate(metadata: Data("<html><body/></html>".utf8))
        } catch GeneratorError.malformedXML {
            matched = "malformedXML"
        } catch GeneratorError.notEDMX {
            matched = "notEDMX"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "notEDMX")
        let error = GeneratorError(.missingKey, element: "<EntityType Name=\"A\">", line: 4, "no Key")
        #expect(error == .missingKey && error != .unknownType)
        #expect(error.description == "line 4: <EntityType Name=\"A\">: entity type without a key: no Key")
        #expect(error.shortDescription == "missingKey")
    }
}
