import Testing
@testable import LMDB

@Suite struct LMDBModuleTests {
    @Test func moduleLinks() {
        // Replaced by real tests when the module's issue lands.
    }
}
