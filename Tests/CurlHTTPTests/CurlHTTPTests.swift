import Testing
@testable import CurlHTTP

@Suite struct CurlHTTPModuleTests {
    @Test func moduleLinks() {
        // Replaced by real tests when the module's issue lands.
    }
}
