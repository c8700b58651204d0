import ODataCore
import Testing

/// `ODataError` follows the package's error idiom: `catch ODataError.kind` matches its kind only, and the
/// description names the kind.
@Suite struct ODataErrorIdiomTests {
    @Test func aMalformedPayloadIsCaughtByItsKindOnly() {
        var matched = ""
        do {
            _ = try ODataPayload.decodeEntity(Array("{\"a\": ".utf8))
        } catch ODataError.malformedPayload {
            matched = "malformedPayload"
        } catch ODataError.malformedJSON {
            matched = "malformedJSON"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "malformedJSON")
        let error = ODataError(.malformedJSON, "unexpected end", offset: 6)
        #expect(error == .malformedJSON && error != .malformedPayload)
        #expect(error.description == "malformedJSON: unexpected end at 6")
        #expect(error.shortDescription == "malformedJSON")
        switch error as any Error {
        case ODataError.invalidURL: Issue.record("matched another kind")
        case ODataError.malformedJSON: break
        default: Issue.record("no kind matched")
        }
    }

    @Test func theTypedLayersKindsAreODataErrors() {
        let error: any Error = ODataError(.typeMismatch, "Product.Price: a string where a number belongs")
        #expect(ODataError.typeMismatch ~= error && !(ODataError.malformedPayload ~= error))
        #expect("\(error)".hasPrefix("typeMismatch: "))
    }
}
