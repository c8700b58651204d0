import Foundation
import ODataMetadata
import Testing

/// `MetadataError` follows the package's error idiom (docs/notes/errors.md): a kind matches in a `catch`, another
/// kind does not, errors are equal by kind, and the description names the kind, the element and the line.
@Suite struct MetadataErrorIdiomTests {
    @Test func aKindMatchesInACatchAndAnotherDoesNot() {
        var matched = false
        do {
            _ = try CSDLDocument(parsing: Data("<Schema/>".utf8))
            Issue.record("a wrong root must be refused")
        } catch MetadataError.missingKey {
            Issue.record("a wrong root is not a missing key")
        } catch MetadataError.notEDMX {
            matched = true
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(matched)
    }

    @Test func errorsAreEqualByKindAndDescribeThePlace() {
        let error = MetadataError(.missingAttribute, element: "<Property Name=\"A\">", line: 7, "the required attribute Type is missing or empty")
        #expect(error == .missingAttribute)
        #expect(error != .missingKey)
        #expect(error.shortDescription == "missingAttribute")
        #expect(error.description == "line 7: <Property Name=\"A\">: missing attribute: the required attribute Type is missing or empty")
    }
}
