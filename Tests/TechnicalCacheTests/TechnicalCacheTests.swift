import Testing
@testable import TechnicalCache

@Suite struct TechnicalCacheModuleTests {
    @Test func moduleLinks() {
        // Replaced by real tests when the module's issue lands.
    }
}
