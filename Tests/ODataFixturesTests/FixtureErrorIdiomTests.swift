import ODataFixtures
import Testing

/// `FixtureError` follows the package's error idiom: `catch FixtureError.kind` matches its kind only, and the
/// description names the kind.
@Suite struct FixtureErrorIdiomTests {
    @Test func aBadConfigurationIsCaughtByItsKindOnly() async {
        var matched = ""
        do {
            _ = try await FixtureServer.start(FixtureConfiguration(defaultPageSize: 0))
        } catch FixtureError.serverFailure {
            matched = "serverFailure"
        } catch FixtureError.invalidArgument {
            matched = "invalidArgument"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "invalidArgument")
        let error = FixtureError(.notFound, "no entity set Nowhere")
        #expect(error == .notFound && error != .conflict)
        #expect(error.description == "notFound: no entity set Nowhere")
    }
}
