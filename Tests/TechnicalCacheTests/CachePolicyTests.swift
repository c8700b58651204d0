import Foundation
import HTTPTypes
import Testing
import TechnicalCache

private let withETag = makeEntry(payload: "{}", etag: "\"v1\"")
private let withLastModified = makeEntry(payload: "{}", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT")
private let withBoth = makeEntry(payload: "{}", etag: "\"v2\"", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT")
private let withoutValidators = makeEntry(payload: "{}")

private func get(_ headers: HTTPFields = [:], useCache: Bool = true) -> CacheRequest {
    CacheRequest(method: "GET", headers: headers, useCache: useCache)
}

struct DecisionCase: Sendable, CustomTestStringConvertible {
    let name: String
    let request: CacheRequest
    let stored: CacheEntry?
    let mode: StoreMode
    let expected: CacheDecision
    var testDescription: String { name }
}

struct ActionCase: Sendable, CustomTestStringConvertible {
    let name: String
    let request: CacheRequest
    let status: Int
    let headers: HTTPFields
    let hasStored: Bool
    let mode: StoreMode
    let expected: CacheAction
    var testDescription: String { name }
}

@Suite struct CachePolicyTests {
    static let decisions: [DecisionCase] = [
        .init(name: "active, nothing stored: fetch", request: get(), stored: nil, mode: .active, expected: .fetch),
        .init(name: "active, ETag: If-None-Match", request: get(), stored: withETag, mode: .active,
              expected: .revalidate(conditionalHeaders: [.ifNoneMatch: "\"v1\""])),
        .init(name: "active, Last-Modified: If-Modified-Since", request: get(), stored: withLastModified, mode: .active,
              expected: .revalidate(conditionalHeaders: [.ifModifiedSince: "Wed, 21 Oct 2015 07:28:00 GMT"])),
        .init(name: "active, both validators: both headers", request: get(), stored: withBoth, mode: .active,
              expected: .revalidate(conditionalHeaders: [
                  .ifNoneMatch: "\"v2\"",
                  .ifModifiedSince: "Wed, 21 Oct 2015 07:28:00 GMT",
              ])),
        .init(name: "active, no validators: plain fetch", request: get(), stored: withoutValidators, mode: .active, expected: .fetch),
        .init(name: "active, useCache=false: fetch", request: get(useCache: false), stored: withETag, mode: .active, expected: .fetch),
        .init(name: "active, POST: fetch", request: CacheRequest(method: "POST"), stored: withETag, mode: .active, expected: .fetch),
        .init(name: "active, request no-store: fetch", request: get([.cacheControl: "no-store"]),
              stored: withETag, mode: .active, expected: .fetch),
        .init(name: "active, app's own If-None-Match kept", request: get([.ifNoneMatch: "\"x\""]),
              stored: withETag, mode: .active, expected: .fetch),
        .init(name: "active, only-if-cached with entry", request: get([HTTPField.Name("cache-control")!: "max-age=0, only-if-cached"]),
              stored: withETag, mode: .active, expected: .serveStored),
        .init(name: "active, only-if-cached without entry", request: get([.cacheControl: "only-if-cached"]),
              stored: nil, mode: .active, expected: .unsatisfiable),
        .init(name: "passive, entry: serve", request: get(), stored: withETag, mode: .passive, expected: .serveStored),
        .init(name: "passive, nothing stored: serve nil (not a failure)", request: get(), stored: nil, mode: .passive, expected: .serveStored),
        .init(name: "passive, no-store GET: serve (passive mode never stores)", request: get([.cacheControl: "no-store"]), stored: withETag, mode: .passive, expected: .serveStored),
        .init(name: "passive, PATCH: unsatisfiable", request: CacheRequest(method: "PATCH"), stored: withETag, mode: .passive, expected: .unsatisfiable),
        .init(name: "passive, useCache=false: unsatisfiable", request: get(useCache: false), stored: withETag, mode: .passive, expected: .unsatisfiable),
    ]

    @Test(arguments: decisions)
    func decision(_ testCase: DecisionCase) {
        #expect(CachePolicy.decision(for: testCase.request, stored: testCase.stored, mode: testCase.mode) == testCase.expected)
    }

    static let actions: [ActionCase] = [
        .init(name: "200 stores", request: get(), status: 200, headers: [:], hasStored: false, mode: .active, expected: .store),
        .init(name: "204 stores (empty payload is an entry)", request: get(), status: 204, headers: [:], hasStored: true, mode: .active, expected: .store),
        .init(name: "206 leaves", request: get(), status: 206, headers: [:], hasStored: true, mode: .active, expected: .leave),
        .init(name: "304 refreshes a stored entry", request: get(), status: 304, headers: [:], hasStored: true, mode: .active, expected: .refresh),
        .init(name: "304 without entry leaves", request: get(), status: 304, headers: [:], hasStored: false, mode: .active, expected: .leave),
        .init(name: "404 removes", request: get(), status: 404, headers: [:], hasStored: true, mode: .active, expected: .remove),
        .init(name: "410 removes", request: get(), status: 410, headers: [:], hasStored: true, mode: .active, expected: .remove),
        .init(name: "500 leaves", request: get(), status: 500, headers: [:], hasStored: true, mode: .active, expected: .leave),
        .init(name: "401 leaves", request: get(), status: 401, headers: [:], hasStored: true, mode: .active, expected: .leave),
        .init(name: "response no-store removes the superseded entry", request: get(), status: 200,
              headers: [.cacheControl: "private, no-store"], hasStored: true, mode: .active, expected: .remove),
        .init(name: "response no-store without entry leaves", request: get(), status: 200,
              headers: [HTTPField.Name("CACHE-CONTROL")!: "no-store"], hasStored: false, mode: .active, expected: .leave),
        .init(name: "no-cache is not no-store", request: get(), status: 200,
              headers: [.cacheControl: "no-cache"], hasStored: false, mode: .active, expected: .store),
        .init(name: "request no-store is not stored", request: get([.cacheControl: "no-store"]), status: 200,
              headers: [:], hasStored: false, mode: .active, expected: .leave),
        .init(name: "passive never changes the cache", request: get(), status: 404, headers: [:], hasStored: true, mode: .passive, expected: .leave),
        .init(name: "POST never touches the cache", request: CacheRequest(method: "POST"), status: 201, headers: [:], hasStored: true, mode: .active, expected: .leave),
        .init(name: "DELETE 404 never touches the cache", request: CacheRequest(method: "DELETE"), status: 404, headers: [:], hasStored: true, mode: .active, expected: .leave),
        .init(name: "useCache=false never stores", request: get(useCache: false), status: 200, headers: [:], hasStored: false, mode: .active, expected: .leave),
    ]

    @Test(arguments: actions)
    func action(_ testCase: ActionCase) {
        let action = CachePolicy.action(
            for: testCase.request, status: testCase.status, headers: testCase.headers,
            hasStoredEntry: testCase.hasStored, mode: testCase.mode)
        #expect(action == testCase.expected)
    }

    /// `maxAge`: a young entry is served without the server; an old one, a `no-cache` request or the
    /// application's own validators go to the server.
    @Test func maxAgeServesAYoungEntryOnly() {
        let now = Date()
        let stored = CacheEntry(status: 200, headers: [.eTag: "\"v1\""], payload: Data(), storedAt: now - 30)
        #expect(CachePolicy.decision(for: get(), stored: stored, mode: .active, maxAge: .seconds(60), now: now) == .serveStored)
        #expect(CachePolicy.decision(for: get(), stored: stored, mode: .active, maxAge: .seconds(29), now: now)
                == .revalidate(conditionalHeaders: [.ifNoneMatch: "\"v1\""]))
        #expect(CachePolicy.decision(for: get([.cacheControl: "no-cache"]), stored: stored, mode: .active, maxAge: .seconds(60), now: now)
                == .revalidate(conditionalHeaders: [.ifNoneMatch: "\"v1\""]))
        #expect(CachePolicy.decision(for: get([.ifNoneMatch: "\"x\""]), stored: stored, mode: .active, maxAge: .seconds(60), now: now) == .fetch)
        #expect(CachePolicy.decision(for: get(), stored: nil, mode: .active, maxAge: .seconds(60), now: now) == .fetch)
        #expect(CachePolicy.decision(for: get(), stored: stored, mode: .active, now: now) != .serveStored, "no maxAge: always ask")
    }

    @Test func cacheabilityAndDirectives() {
        #expect(CachePolicy.isCacheable(get()))
        #expect(CachePolicy.isCacheable(CacheRequest(method: "get")))
        #expect(!CachePolicy.isCacheable(CacheRequest(method: "PUT")))
        #expect(!CachePolicy.isCacheable(get(useCache: false)))
        #expect(CachePolicy.hasDirective("no-store", in: [.cacheControl: "max-age=5, No-Store"]))
        #expect(!CachePolicy.hasDirective("no-store", in: [HTTPField.Name("X-Cache-Control")!: "no-store"]))
        #expect(!CachePolicy.hasDirective("no-store", in: [.cacheControl: "no-storage"]))
    }

    /// A 304 confirms only the representation it names (RFC 9111 §4.3.4, weak comparison).
    @Test func aNotModifiedAnswerConfirmsOnlyTheRepresentationItNames() {
        let tagged = makeEntry(payload: "x", etag: "W/\"7\"", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        let dated = makeEntry(payload: "x", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(CachePolicy.notModified([.eTag: "W/\"7\""], confirms: tagged))
        #expect(CachePolicy.notModified([HTTPField.Name("etag")!: "\"7\""], confirms: tagged), "weak comparison")
        #expect(!CachePolicy.notModified([.eTag: "W/\"8\""], confirms: tagged))
        #expect(!CachePolicy.notModified([.eTag: "W/\"7\""], confirms: dated), "a tag the entry lacks")
        #expect(CachePolicy.notModified([.lastModified: "Mon, 01 Jan 2024 00:00:00 GMT"], confirms: dated))
        #expect(!CachePolicy.notModified([.lastModified: "Tue, 02 Jan 2024 00:00:00 GMT"], confirms: dated))
        #expect(CachePolicy.notModified([.date: "Tue, 02 Jan 2024 00:00:00 GMT"], confirms: tagged), "no validators")
    }

    @Test func entriesNeverHoldCredentials() {
        var entry = CacheEntry(status: 200, headers: [
            .authorization: "Basic c2VjcmV0",
            HTTPField.Name("cookie")!: "a=b",
            .setCookie: "session=1",
            HTTPField.Name("PROXY-AUTHORIZATION")!: "x",
            .eTag: "\"e\"",
        ], payload: Data())
        #expect(entry.headers == [.eTag: "\"e\""])
        entry.headers.append(HTTPField(name: .setCookie, value: "later=1"))
        #expect(entry.headers == [.eTag: "\"e\""])
        #expect(entry.etag == "\"e\"")
        #expect(entry.lastModified == nil)
        #expect(entry.payload.isEmpty)
    }
}
