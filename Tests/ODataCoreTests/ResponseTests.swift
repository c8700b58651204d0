import Foundation
import HTTPTypes
import Testing
@testable import ODataCore

/// A cached answer's header fields are made on first read, once, whoever reads them first.
@Suite struct ResponseTests {
    @Test func deferredHeaderFieldsAreMadeOnceOnFirstRead() async {
        let made = LockedValue(0)
        let response = ODataResponse(statusCode: 200, payload: Data("{}".utf8), isFromCache: true, isRevalidated: true) {
            made.withLock { $0 += 1 }
            return [.eTag: "\"v1\"", .contentType: "application/json"]
        }
        #expect(made.withLock { $0 } == 0)
        #expect(response.payload == Data("{}".utf8) && response.isFromCache && response.isRevalidated)
        // Sixteen readers at once: one of them makes the fields, all see the same.
        let seen = await withTaskGroup(of: HTTPFields.self) { group in
            for _ in 0..<16 { group.addTask { response.headerFields } }
            return await group.reduce(into: [HTTPFields]()) { $0.append($1) }
        }
        #expect(made.withLock { $0 } == 1)
        #expect(Set(seen.map { $0[.eTag] }) == ["\"v1\""])
        #expect(response.etag == "\"v1\"" && response.headerFields[.contentType] == "application/json")
        #expect(made.withLock { $0 } == 1)
    }

    @Test func aCopyWithOtherFlagsKeepsDeferredFields() {
        let made = LockedValue(0)
        let response = ODataResponse(statusCode: 203, payload: Data(), isFromCache: true, isRevalidated: false) {
            made.withLock { $0 += 1 }
            return [.eTag: "W/\"7\""]
        }
        let copy = response.with(isFromCache: false, isRevalidated: true)
        #expect(copy.statusCode == 203 && !copy.isFromCache && copy.isRevalidated)
        #expect(copy.etag == "W/\"7\"" && response.etag == "W/\"7\"")
        #expect(made.withLock { $0 } == 1)
    }

    @Test func readyHeaderFieldsAreKeptAsGiven() {
        let response = ODataResponse(statusCode: 200, headerFields: [.lastModified: "Tue, 24 Nov 2026 10:00:00 GMT"])
        #expect(response.lastModified == "Tue, 24 Nov 2026 10:00:00 GMT")
        #expect(response.with(isFromCache: true, isRevalidated: false).lastModified == response.lastModified)
    }
}
