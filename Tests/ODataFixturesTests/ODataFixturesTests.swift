import Testing
@testable import ODataFixtures

@Suite struct ODataFixturesModuleTests {
    @Test func moduleLinks() {
        // Replaced by real tests when the module's issue lands.
    }
}
