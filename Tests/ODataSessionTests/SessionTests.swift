import Foundation
import HTTPTypes
import ODataCore
import ODataTesting
import Testing

@testable import ODataSession

private let csrf = HTTPField.Name("X-CSRF-Token")!
private let root = "http://127.0.0.1:1/service/"

/// A back end that answers every request with the status and header fields `answer` gives, after `delay`.
private func scripted(delay: Duration = .zero, _ answer: @escaping @Sendable (TransportRequest) -> (Int, HTTPFields)) -> ScriptedTransport {
    ScriptedTransport(serviceRoot: root).on("*", "*") { request in
        let (status, fields) = answer(request)
        return .status(status, headerFields: fields).after(delay)
    }
}

extension ScriptedTransport {
    /// The CSRF token fetches sent so far.
    var fetches: [TransportRequest] { requests.filter { $0.headerFields[csrf] == "Fetch" } }
    /// The writes (every method but `GET`) sent so far.
    var writes: [TransportRequest] { requests.filter { $0.method != "GET" } }
}

/// A back end as SAP Gateway behaves: a fetch gives token `T<n>` and a session cookie; a write needs the
/// current token (`valid` decides which are current).
private func gateway(delay: Duration = .zero, valid: @escaping @Sendable (String) -> Bool = { _ in true }) -> ScriptedTransport {
    let issued = LockedValue(0)
    return scripted(delay: delay) { request in
        if request.headerFields[csrf] == "Fetch" {
            let n = issued.withLock { $0 += 1; return $0 }
            return (200, [csrf: "T\(n)", .setCookie: "SAP_SESSIONID=S\(n); path=/"])
        }
        if request.method != "GET" {
            guard let token = request.headerFields[csrf], valid(token) else { return (403, [csrf: "Required"]) }
        }
        return (request.method == "POST" ? 201 : 200, [:])
    }
}

@Suite struct SessionTests {
    @Test func twentyConcurrentWritesShareOneTokenFetch() async throws {
        let backEnd = gateway(delay: .milliseconds(20))
        let session = ServiceSession(serviceRoot: root, transport: backEnd)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await session.send(TransportRequest(method: "POST", url: root + "Items", body: Data("\(index)".utf8))).status
                }
            }
            for try await status in group { #expect(status == 201) }
        }
        #expect(backEnd.fetches.count == 1)
        #expect(session.statistics.csrfTokenFetches == 1)
        // Every write carried the token and the cookie that came with it.
        #expect(backEnd.writes.count == 20)
        #expect(backEnd.writes.allSatisfy { $0.headerFields[csrf] == "T1" && $0.headerFields[.cookie] == "SAP_SESSIONID=S1" })
    }

    @Test func theFetchCarriesTheWritesCredentialsButNotItsBodyFields() async throws {
        let backEnd = gateway()
        let session = ServiceSession(serviceRoot: root, transport: backEnd)
        let apiKey = HTTPField.Name("APIKey")!
        _ = try await session.send(TransportRequest(
            method: "PATCH", url: root + "Items(1)",
            headerFields: [.authorization: "Basic eDp5", apiKey: "k", .contentType: "application/json", .ifMatch: "W/\"1\""],
            body: Data("{}".utf8)))
        let fetch = try #require(backEnd.fetches.first)
        #expect(fetch.headerFields[.authorization] == "Basic eDp5" && fetch.headerFields[apiKey] == "k")
        #expect(fetch.headerFields[.contentType] == nil && fetch.headerFields[.ifMatch] == nil && fetch.body == nil)
        #expect(fetch.method == "GET" && fetch.url == root)
    }

    @Test func readsNeitherFetchNorSendAToken() async throws {
        let backEnd = gateway()
        let session = ServiceSession(serviceRoot: root, transport: backEnd)
        #expect(try await session.send(TransportRequest(url: root + "Items")).status == 200)
        #expect(backEnd.fetches.isEmpty)
        #expect(backEnd.requests.allSatisfy { $0.headerFields[csrf] == nil })
    }

    @Test func anExpiredTokenIsFetchedAgainOnceForAllRejectedRequests() async throws {
        // Token T1 expires after the first write; every later write with it meets 403 Required.
        let firstWriteDone = LockedValue(false)
        let backEnd = gateway(delay: .milliseconds(10)) { token in
            if token == "T1" { return firstWriteDone.withLock { done in defer { done = true }; return !done } }
            return true
        }
        let session = ServiceSession(serviceRoot: root, transport: backEnd)
        #expect(try await session.send(TransportRequest(method: "POST", url: root + "Items")).status == 201)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<10 {
                group.addTask { try await session.send(TransportRequest(method: "DELETE", url: root + "Items(1)")).status }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(backEnd.fetches.count == 2, "one new token for all")
        // Each delete went once with T2 (after a rejection with T1, or at once when it started after the new
        // token came): a rejected write was not executed, so its retry is the only execution.
        let writes = backEnd.writes
        #expect(writes.filter { $0.headerFields[csrf] == "T2" }.count == 10)
        #expect((11...21).contains(writes.count))
    }

    @Test func aRejectedTokenIsCaughtByItsKindOnlyAndItsDescriptionNamesTheKind() async throws {
        let session = ServiceSession(serviceRoot: root, transport: gateway { _ in false })
        var matched = ""
        var text = ""
        do {
            _ = try await session.send(TransportRequest(method: "PATCH", url: root + "Items(1)"))
        } catch SessionError.csrfTokenFetchFailed {
            matched = "csrfTokenFetchFailed"
        } catch SessionError.csrfTokenRejected {
            matched = "csrfTokenRejected"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "csrfTokenRejected")
        do {
            _ = try await session.send(TransportRequest(method: "PATCH", url: root + "Items(1)"))
        } catch {
            text = "\(error)"
        }
        #expect(text.hasPrefix("csrfTokenRejected (HTTP 403): "), "\(text)")
        #expect(!["T1", "T2", "T3", "T4", "SAP_SESSIONID"].contains { text.contains($0) }, "\(text)")  // what the gateway issued
    }

    @Test func aTokenRejectedTwiceIsATypedErrorThatNamesCSRFAndNoToken() async throws {
        let backEnd = gateway { _ in false }
        let session = ServiceSession(serviceRoot: root, transport: backEnd)
        do {
            _ = try await session.send(TransportRequest(method: "PATCH", url: root + "Items(1)?secret=query"))
            Issue.record("a token the back end never accepts must fail")
        } catch let error as SessionError {
            #expect(error == .csrfTokenRejected)
            #expect(error.statusCode == 403)
            #expect(!error.isRetryable)
            #expect(error.description.contains("CSRF"))
            #expect(!error.description.contains("T1") && !error.description.contains("T2"))
            #expect(!error.description.contains("secret=query"))
        }
        #expect(backEnd.fetches.count == 2)
        #expect(backEnd.writes.count == 2)  // one retry, no more
    }

    @Test func a403WithoutRequiredIsAnOrdinaryAnswer() async throws {
        let backEnd = scripted { request in
            request.headerFields[csrf] == "Fetch" ? (200, [csrf: "T"]) : (403, [:])
        }
        let session = ServiceSession(serviceRoot: root, transport: backEnd)
        #expect(try await session.send(TransportRequest(method: "POST", url: root + "Items")).status == 403)
        #expect(backEnd.writes.count == 1)
        #expect(backEnd.fetches.count == 1)
    }

    @Test func aBackEndWithoutCSRFGetsNoTokenAndOneFetchPerSession() async throws {
        let backEnd = scripted { _ in (200, [:]) }
        let session = ServiceSession(serviceRoot: root, transport: backEnd)
        for _ in 0..<3 { _ = try await session.send(TransportRequest(method: "PUT", url: root + "Items(1)")) }
        #expect(backEnd.fetches.count == 1)
        #expect(backEnd.writes.allSatisfy { $0.headerFields[csrf] == nil })

        let off = scripted { _ in (200, [:]) }
        var options = SessionOptions()
        options.csrf = .off
        _ = try await ServiceSession(serviceRoot: root, options: options, transport: off)
            .send(TransportRequest(method: "PUT", url: root + "Items(1)"))
        #expect(off.fetches.isEmpty)
    }

    @Test func aFailedFetchIsARetryableTypedErrorAndTheWriteIsNotSent() async throws {
        let backEnd = scripted { _ in (503, [:]) }
        let session = ServiceSession(serviceRoot: root, transport: backEnd)
        await #expect {
            _ = try await session.send(TransportRequest(method: "POST", url: root + "Items"))
        } throws: { error in
            (error as? SessionError) == .csrfTokenFetchFailed && (error as? SessionError)?.isRetryable == true
        }
        #expect(backEnd.writes.isEmpty)
    }

    @Test func aCustomHeaderNameCarriesTheToken() async throws {
        let name = HTTPField.Name("X-XSRF-Token")!
        let backEnd = scripted { request in
            request.headerFields[name] == "Fetch" ? (200, [name: "X1"]) : (request.headerFields[name] == "X1" ? 204 : 403, [:])
        }
        var options = SessionOptions()
        options.csrf = .automatic(headerName: "X-XSRF-Token")
        let response = try await ServiceSession(serviceRoot: root, options: options, transport: backEnd)
            .send(TransportRequest(method: "DELETE", url: root + "Items(1)"))
        #expect(response.status == 204)
    }

    @Test func answersCarryNoCookieAndNoTokenAndEndSessionForgetsBoth() async throws {
        let backEnd = gateway()
        let session = ServiceSession(serviceRoot: root, transport: backEnd)
        let response = try await session.send(TransportRequest(method: "POST", url: root + "Items"))
        #expect(response.headerFields[.setCookie] == nil && response.headerFields[csrf] == nil)
        session.endSession()
        _ = try await session.send(TransportRequest(method: "POST", url: root + "Items"))
        #expect(backEnd.fetches.count == 2)
        // The second session's fetch went without the first session's cookie.
        #expect(backEnd.fetches[1].headerFields[.cookie] == nil)
        #expect(backEnd.writes.last?.headerFields[.cookie] == "SAP_SESSIONID=S2")
    }

    @Test func sapClientLanguageAndUpdateMethodFollowTheOptions() async throws {
        let backEnd = gateway()
        var options = SessionOptions()
        options.sapClient = "100"
        options.sapLanguage = "DE"
        options.updateMethod = .merge
        let session = ServiceSession(serviceRoot: root, options: options, transport: backEnd)
        _ = try await session.send(TransportRequest(method: "PATCH", url: root + "Items(1)"))
        _ = try await session.send(TransportRequest(url: root + "Items?$top=1&sap-client=200"))
        let sent = backEnd.requests
        #expect(sent[0].url == root + "?sap-client=100&sap-language=DE")  // the token fetch
        #expect(sent[1].method == "MERGE" && sent[1].url == root + "Items(1)?sap-client=100&sap-language=DE")
        #expect(sent[2].url == root + "Items?$top=1&sap-client=200&sap-language=DE")  // a client given is kept

        options.updateMethod = .tunnelledMerge
        let tunnelled = gateway()
        _ = try await ServiceSession(serviceRoot: root, options: options, transport: tunnelled)
            .send(TransportRequest(method: "PATCH", url: root + "Items(1)"))
        let write = try #require(tunnelled.writes.first)
        #expect(write.method == "POST" && write.headerFields[HTTPField.Name("X-HTTP-Method")!] == "MERGE")
    }

    @Test func batchPartsUpdateWithMergeWhenAsked() throws {
        let batch = BatchRequest(parts: [
            .request(.get("Items")),
            .changeSet([.init(contentID: "1", request: ODataRequest(method: .patch, resourcePath: "Items(1)", body: Data("{}".utf8))),
                        .init(contentID: "2", request: ODataRequest(method: .post, resourcePath: "Items", body: Data("{}".utf8)))]),
        ])
        var options = SessionOptions()
        #expect(ServiceSession(serviceRoot: root, options: options, transport: gateway()).dialect(batch) == batch)
        for method in [UpdateMethod.merge, .tunnelledMerge] {
            options.updateMethod = method
            let parts = ServiceSession(serviceRoot: root, options: options, transport: gateway()).dialect(batch).allRequests
            #expect(parts.map(\.method.rawValue) == ["GET", "MERGE", "POST"])
        }
    }

    @Test func basicAuthenticationIsSentAndA401Stands() async throws {
        let backEnd = scripted { _ in (401, [:]) }
        var options = SessionOptions()
        options.authentication = BasicAuthentication(user: "CLERK", password: "pw")
        let session = ServiceSession(serviceRoot: root, options: options, transport: backEnd)
        #expect(try await session.send(TransportRequest(url: root + "Items")).status == 401)
        #expect(backEnd.requests.map { $0.headerFields[.authorization] } == ["Basic Q0xFUks6cHc="])
    }

    @Test func twentyConcurrent401sRenewTheBearerTokenOnce() async throws {
        let current = LockedValue("A")
        let backEnd = scripted(delay: .milliseconds(10)) { request in
            request.headerFields[.authorization] == "Bearer " + current.withLock { $0 } ? (200, [:]) : (401, [:])
        }
        let issued = LockedValue(0)
        let bearer = BearerAuthentication {
            try await Task.sleep(for: .milliseconds(20))
            return issued.withLock { $0 += 1; return ["A", "B", "C"][$0 - 1] }
        }
        var options = SessionOptions()
        options.authentication = bearer
        let session = ServiceSession(serviceRoot: root, options: options, transport: backEnd)
        #expect(try await session.send(TransportRequest(url: root + "Items")).status == 200)
        current.withLock { $0 = "B" }  // token A expires
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 {
                group.addTask { try await session.send(TransportRequest(url: root + "Items(\(index))")).status }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(bearer.tokenRequests == 2, "one refresh for all")
        // Each request that met the 401 was retried once; one that started after the refresh needed none.
        #expect((1...20).contains(session.statistics.credentialRenewals))
        #expect(backEnd.requests.count == 21 + session.statistics.credentialRenewals)
    }
}
