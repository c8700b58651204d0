import Testing
@testable import OnlineStore

@Suite struct OnlineStoreModuleTests {
    @Test func moduleLinks() {
        // Replaced by real tests when the module's issue lands.
    }
}
