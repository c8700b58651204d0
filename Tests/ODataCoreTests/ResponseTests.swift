import Foundation
import HTTPTypes
import Testing
@testable import ODataCore

/// A response keeps the header fields it was made with, also in a copy with other flags.
@Suite struct ResponseTests {
    @Test func readyHeaderFieldsAreKeptAsGiven() {
        let response = ODataResponse(statusCode: 200, headerFields: [.lastModified: "Tue, 24 Nov 2026 10:00:00 GMT"])
        #expect(response.lastModified == "Tue, 24 Nov 2026 10:00:00 GMT")
        #expect(response.with(isFromCache: true, isRevalidated: false).lastModified == response.lastModified)
    }
}
