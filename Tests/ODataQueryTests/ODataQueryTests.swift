import Testing
@testable import ODataQuery

@Suite struct ODataQueryModuleTests {
    @Test func moduleLinks() {
        // Replaced by real tests when the module's issue lands.
    }
}
