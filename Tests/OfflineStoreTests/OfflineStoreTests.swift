import Testing
@testable import OfflineStore

@Suite struct OfflineStoreModuleTests {
    @Test func moduleLinks() {
        // Replaced by real tests when the module's issue lands.
    }
}
