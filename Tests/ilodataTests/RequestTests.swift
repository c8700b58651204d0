import HTTPTypes
import ODataCore
import Testing

@testable import ilodata

/// `ilodata`'s typed requests: a readable query whose values may also be percent-encoded (ODataCore's
/// `PercentDecoding`: `%2B` and `+` are both a plus, `%20` a space); a `%` that starts no `%XX` is a usage error.
@Suite struct ILODataRequestTests {
    @Test(arguments: [("a%2Bb", "a+b"), ("a+b", "a+b"), ("a%20b", "a b"), ("Name eq 'O''Neil'", "Name eq 'O''Neil'")])
    func valuesAreDecodedAndReEncoded(typed: String, decoded: String) throws {
        let request = try Session.request(.get, "Customers?$filter=\(typed)")
        #expect(request.resourcePath == "Customers")
        #expect(request.queryOptions.map(\.name) == ["$filter"])
        #expect(request.queryOptions.map(\.value) == [decoded])
        #expect(try request.relativeURL() == "Customers?$filter=" + PercentEncoding.encodeQueryValue(decoded))
    }

    @Test(arguments: ["a%G1", "ab%", "contains(Name,'100%')"]) func aMalformedEscapeIsAUsageError(typed: String) {
        let error = #expect(throws: UsageError.self) { try Session.request(.get, "Customers?$filter=\(typed)") }
        #expect(error?.description.contains("'$filter' is malformed") == true, "\(String(describing: error))")
        #expect(error?.description.contains("%25") == true)
    }
}
