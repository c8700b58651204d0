import Foundation
import Testing
import ODataCore

/// Inputs the fuzzers found, kept so that the bugs they showed stay fixed.
@Suite struct FuzzRegressionTests {
    /// libFuzzer (FuzzJSON, round-trip check): a number whose exponent overflows a Double used to
    /// parse as infinity, which prints as the string "INF" and so changed value on a round trip.
    /// It is now a typed `.malformedJSON` "number out of range".
    @Test(arguments: ["999999999999999999.999999E999999", "1e999999", "-1E+400", "[1,2e309]", #"{"a":-9.9e99999}"#])
    func overflowingNumberIsOutOfRange(text: String) {
        #expect {
            _ = try JSON.parse(text)
        } throws: { error in
            guard let error = error as? ODataError else { return false }
            return error == .malformedJSON && error.message.contains("out of range")
        }
    }

    /// Large but finite numbers and underflow to zero still parse and round-trip.
    @Test(arguments: ["1e308", "-1.7976931348623157e308", "1e-400", "123456789012345678901234567890"])
    func largeFiniteNumbersRoundTrip(text: String) throws {
        let value = try JSON.parse(text)
        #expect(try JSON.parse(JSON.serialize(value)) == value)
    }
}
