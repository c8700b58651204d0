import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataTesting
import Testing

/// The scripted transport itself: how routes match, what it records, the failures and latency it injects, and the
/// error for a request it cannot answer.
@Suite struct ScriptedTransportTests {
    let root = "http://odata.test/service/"

    func get(_ transport: ScriptedTransport, _ relative: String) async throws -> TransportResponse {
        try await transport.send(TransportRequest(url: root + relative))
    }

    func text(_ response: TransportResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test func theFirstMatchingRouteAnswersByMethodPathAndQuery() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "Products", query: ["$top": "1"], reply: .json("top"))
            .on("GET", "Products", reply: .json("all"))
            .on("POST", "Products", reply: .status(201))
            .on("*", "Orders*", reply: .status(204))
            .on("GET", "", reply: .status(200, headerFields: [.eTag: "root"]))
            .on("GET", "/elsewhere/$metadata", reply: .metadata("<edmx/>"))
        #expect(text(try await get(transport, "Products?$skip=2&$top=1")) == "top", "the query option is required, others may be present")
        #expect(text(try await get(transport, "Products?$top=2")) == "all")
        #expect(text(try await get(transport, "Products")) == "all")
        #expect(try await transport.send(TransportRequest(method: "post", url: root + "Products")).status == 201, "methods compare without case")
        #expect(try await transport.send(TransportRequest(method: "DELETE", url: root + "Orders(1)/Items")).status == 204)
        #expect(try await get(transport, "").headerFields[.eTag] == "root", "\"\" is the service root")
        #expect(try await transport.send(TransportRequest(url: "http://odata.test/elsewhere/$metadata")).headerFields[.contentType] == "application/xml")
        #expect(transport.unmatchedRequests.isEmpty)
    }

    /// As ``CurlTransport`` does: a 2xx body goes to the request's `responseBodyFile`, an error's stays in the response.
    @Test func aResponseBodyFileGetsASuccessfulBody() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "Photos(1)/$value", reply: .status(200, headerFields: [.contentType: "image/png"], body: Data([1, 2, 3])))
            .on("GET", "Photos(2)/$value", reply: .json(#"{"error":{"code":"x","message":"gone"}}"#, status: 404))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("scripted-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var request = TransportRequest(url: root + "Photos(1)/$value")
        request.responseBodyFile = path
        let response = try await transport.send(request)
        #expect(response.body.isEmpty)
        #expect(FileManager.default.contents(atPath: path) == Data([1, 2, 3]))
        request.url = root + "Photos(2)/$value"
        #expect(text(try await transport.send(request)).contains("gone"))
    }

    @Test func pathsAndQueryOptionsComparePercentDecodedAndAStarMatchesAnyValue() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "Customers('ALFKI')", query: ["$filter": "Name eq 'A B'"], reply: .status(200))
            .on("GET", "Employees", query: ["$deltatoken": "*"], reply: .status(203))
        #expect(try await get(transport, "Customers(%27ALFKI%27)?$filter=Name%20eq%20%27A%20B%27").status == 200)
        #expect(try await get(transport, "Employees?$deltatoken=abc").status == 203)
        await #expect(throws: ScriptedTransportError.self) { try await get(transport, "Employees") }
    }

    @Test func aSequenceAnswersOnceEachThenLaterRoutesTakeOver() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "Items", replies: [.status(500), .status(503)])
            .on("GET", "Items", reply: .status(200))
        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try await get(transport, "Items").status) }
        #expect(statuses == [500, 503, 200, 200])

        let once = ScriptedTransport().on("GET", "Items", replies: [.status(200)])
        _ = try await once.send(TransportRequest(url: root + "Items"))
        await #expect(throws: ScriptedTransportError.self) { try await once.send(TransportRequest(url: root + "Items")) }
    }

    @Test func aHandlerDecidesPerRequest() async throws {
        let transport = ScriptedTransport()
        transport.on("PATCH", "Items(*") { request in
            request.headerFields[.ifMatch] == "W/\"1\"" ? .status(204) : .odataError(status: 412, code: "Precondition", message: "stale")
        }
        #expect(try await transport.send(TransportRequest(method: "PATCH", url: root + "Items(1)", headerFields: [.ifMatch: "W/\"1\""])).status == 204)
        let stale = try await transport.send(TransportRequest(method: "PATCH", url: root + "Items(1)", headerFields: [.ifMatch: "W/\"0\""]))
        #expect(stale.status == 412)
        #expect(try JSON.parse(stale.body)["error"]?["message"] == "stale")
    }

    @Test func everyRequestIsRecordedInOrderFromManyTasks() async throws {
        let transport = ScriptedTransport().on("*", "*", reply: .status(200))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<100 {
                group.addTask {
                    _ = try await transport.send(TransportRequest(method: index.isMultiple(of: 2) ? "GET" : "PUT", url: self.root + "Items(\(index))",
                                                                  headerFields: [.authorization: "Bearer \(index)"], body: Data("\(index)".utf8)))
                }
            }
            try await group.waitForAll()
        }
        #expect(transport.requests.count == 100)
        #expect(Set(transport.requests.map(\.url)).count == 100)
        #expect(transport.requests("PUT", "*").count == 50)
        #expect(transport.requests("GET", "Items(4)").first?.headerFields[.authorization] == "Bearer 4")
        #expect(transport.requests("PUT", "Items(5)").first?.body == Data("5".utf8))
        transport.removeRecordedRequests()
        #expect(transport.requests.isEmpty)
    }

    @Test func injectedFailuresAreTheErrorsCurlTransportThrows() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "Refused", reply: .connectionRefused)
            .on("GET", "Slow", reply: .timeout)
            .on("GET", "Closed", reply: .connectionClosed)
            .on("GET", "Custom", reply: .failure(CancellationError()))
        await #expect { try await get(transport, "Refused") } throws: { ($0 as? CurlError) == .connectFailed }
        await #expect { try await get(transport, "Slow") } throws: { ($0 as? CurlError) == .timedOut }
        await #expect { try await get(transport, "Closed") } throws: { ($0 as? CurlError) == .connectionClosed }
        await #expect(throws: CancellationError.self) { try await get(transport, "Custom") }
        #expect(transport.requests.count == 4, "failed requests are recorded too")
    }

    @Test func latencyDelaysTheReplyAndCancellationEndsIt() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "Slow", reply: .status(200).after(.milliseconds(50)))
            .on("GET", "Never", reply: .status(200).after(.seconds(600)))
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try await get(transport, "Slow").status == 200)
        #expect(clock.now - start >= .milliseconds(50))

        let waiting = Task { try await self.get(transport, "Never") }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
    }

    @Test func anUnmatchedRequestIsATypedErrorNamingMethodAndURL() async throws {
        let transport = ScriptedTransport()
        transport.on("GET", "Products", reply: .status(200))
        do {
            _ = try await transport.send(TransportRequest(method: "DELETE", url: root + "Products(3)?x=1"))
            Issue.record("an unscripted request must fail")
        } catch let error as ScriptedTransportError {
            #expect(error.method == "DELETE")
            #expect(error.url == root + "Products(3)?x=1")
            #expect(error.description.contains("DELETE http://odata.test/service/Products(3)?x=1"))
            #expect(error.description.contains("GET /service/Products"), "it lists the routes there were: \(error)")
        }
        #expect(transport.unmatchedRequests.map(\.method) == ["DELETE"])
        #expect(transport.requests.count == 1)
    }

    @Test func unmatchedRequestsGoToTheForwardingTransportAndAForwardCanRewrite() async throws {
        let backEnd = ScriptedTransport().on("*", "*", reply: .json(#"{"real":true}"#, status: 201))
        let transport = ScriptedTransport(forwardingTo: backEnd)
        transport.on("GET", "Scripted", reply: .status(299))
            .on("POST", "Rewritten", reply: .forward { response in
                TransportResponse(status: response.status, headerFields: response.headerFields, body: Data("changed".utf8), metrics: response.metrics)
            })
            .on("GET", "Forwarded", reply: .forward)
        #expect(try await get(transport, "Scripted").status == 299)
        #expect(text(try await get(transport, "Anything")) == #"{"real":true}"#)
        #expect(text(try await transport.send(TransportRequest(method: "POST", url: root + "Rewritten"))) == "changed")
        #expect(try await get(transport, "Forwarded").status == 201)
        #expect(backEnd.requests.map(\.url) == [root + "Anything", root + "Rewritten", root + "Forwarded"])
        #expect(transport.unmatchedRequests.map(\.url) == [root + "Anything"])

        let alone = ScriptedTransport().on("GET", "Forwarded", reply: .forward)
        await #expect(throws: ScriptedTransportError.self) { try await alone.send(TransportRequest(url: root + "Forwarded")) }
    }

    @Test func odataRepliesHaveTheShapesOfEachVersion() async throws {
        func answer(_ reply: ScriptedReply) async throws -> (TransportResponse, JSONValue) {
            let response = try await ScriptedTransport().on("*", "*", reply: reply).send(TransportRequest(url: root + "x"))
            return (response, try JSON.parse(response.body))
        }
        let entities: [JSONValue] = [["ID": 1], ["ID": 2]]
        let (v4, v4Body) = try await answer(.collection(entities, count: 5, nextLink: "x?$skiptoken=2"))
        #expect(v4Body == ["@odata.count": 5, "value": .array(entities), "@odata.nextLink": "x?$skiptoken=2"])
        #expect(v4.headerFields[.contentType] == "application/json" && v4.headerFields[HTTPField.Name("OData-Version")!] == "4.0")
        let (v2, v2Body) = try await answer(.collection(entities, version: .v2, count: 5))
        #expect(v2Body == ["d": ["__count": "5", "results": .array(entities)]])
        #expect(v2.headerFields[HTTPField.Name("DataServiceVersion")!] == "2.0")
        #expect(try await answer(.entity(["ID": 1], version: .v2, status: 201)).1 == ["d": ["ID": 1]])
        #expect(try await answer(.entity(["ID": 1])).0.status == 200)
        let (error4, error4Body) = try await answer(.odataError(status: 404, code: "NotFound", message: "no such product"))
        #expect(error4.status == 404 && error4Body == ["error": ["code": "NotFound", "message": "no such product"]])
        #expect(try await answer(.odataError(status: 400, code: "SY/530", message: "bad", version: .v2)).1
                == ["error": ["code": "SY/530", "message": ["lang": "en", "value": "bad"]]])
    }

    @Test func aBatchIsAnsweredPartByPartAndAFailedChangeSetByItsFailure() async throws {
        let transport = ScriptedTransport()
        transport.on("POST", "$batch", reply: .batch { request in
            request.resourcePath == "Products(2)" ? ODataResponse(statusCode: 400) : ODataResponse(statusCode: request.method == .get ? 200 : 204)
        })
        let batch = BatchRequest(parts: [
            .request(.get("Products")),
            .changeSet([.init(contentID: "1", request: ODataRequest(method: .patch, resourcePath: "Products(1)", body: Data("{}".utf8)))]),
            .changeSet([.init(contentID: "2", request: ODataRequest(method: .patch, resourcePath: "Products(3)", body: Data("{}".utf8))),
                        .init(contentID: "3", request: ODataRequest(method: .patch, resourcePath: "Products(2)", body: Data("{}".utf8)))]),
        ])
        for json in [false, true] {
            let (body, contentType) = json ? (try JSONBatch.encode(batch), JSONBatch.contentType) : try MultipartBatch.encode(batch)
            let response = try await transport.send(TransportRequest(method: "POST", url: root + "$batch", headerFields: [.contentType: contentType], body: body))
            #expect(response.status == 200)
            let answer = json ? try JSONBatch.decodeResponse(response.body)
                : try MultipartBatch.decodeResponse(response.body, contentType: try #require(response.headerFields[.contentType]))
            #expect(answer.allResponses.map(\.statusCode) == [200, 204, 400], "json: \(json)")
        }
        let garbage = try await transport.send(TransportRequest(method: "POST", url: root + "$batch", headerFields: [.contentType: "multipart/mixed; boundary=x"], body: Data("no".utf8)))
        #expect(garbage.status == 400)
    }
}
