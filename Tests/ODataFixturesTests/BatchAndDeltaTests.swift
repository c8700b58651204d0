import Foundation
import HTTPTypes
import ODataCore
import Testing

@testable import ODataFixtures

private func jsonRequest(_ method: HTTPRequest.Method, _ path: String, _ body: String) -> ODataRequest {
    var headers = HTTPFields()
    headers[.contentType] = "application/json"
    return ODataRequest(method: method, resourcePath: path, headerFields: headers, body: Data(body.utf8))
}

/// Sends a batch encoded by ODataCore's codec and decodes the answer with it.
private func send(_ batch: BatchRequest, to server: FixtureServer, json: Bool = false) async throws -> (CurlResult, BatchResponse) {
    let body: Data
    let contentType: String
    if json {
        body = try JSONBatch.encode(batch)
        contentType = JSONBatch.contentType
    } else {
        (body, contentType) = try MultipartBatch.encode(batch)
    }
    let result = try await Curl.run(
        "POST", server.serviceRoot + "$batch", headers: ["Content-Type": contentType],
        body: String(decoding: body, as: UTF8.self))
    #expect(result.status == 200)
    let responseType = try #require(result.headers["content-type"])
    let decoded = json
        ? try JSONBatch.decodeResponse(Data(result.body))
        : try MultipartBatch.decodeResponse(Data(result.body), contentType: responseType)
    return (result, decoded)
}

@Suite struct BatchTests {
    @Test(arguments: [false, true])
    func changeSetWithContentIDReference(json: Bool) async throws {
        try await withServer { server in
            let batch = BatchRequest(parts: [
                .request(.get("Customers('ALFKI')")),
                .changeSet([
                    .init(contentID: "1", request: jsonRequest(.post, "Customers", #"{"CustomerID":"NEWC1","CompanyName":"New"}"#)),
                    .init(contentID: "2", request: jsonRequest(.post, "$1/Orders", #"{"ShipCity":"Paris"}"#)),
                    .init(contentID: "3", request: jsonRequest(.patch, "$1", #"{"City":"Lyon"}"#)),
                ]),
                .request(.get("Customers('NEWC1')/Orders/$count")),
            ])
            let (_, response) = try await send(batch, to: server, json: json)
            let all = response.allResponses
            #expect(all.map(\.statusCode) == [200, 201, 201, 204, 200])
            #expect(try all[0].json()["CustomerID"] == "ALFKI")
            #expect(try all[2].json()["CustomerID"] == "NEWC1")
            #expect(String(decoding: all[4].payload, as: UTF8.self) == "1")
            #expect(try await Curl.run(server.serviceRoot + "Customers('NEWC1')").json()["City"] == "Lyon")
            #expect(server.counters.executions(method: "POST", path: "$batch") == 1)
            #expect(server.counters.executions(method: "POST", path: "Customers") == 1)
            #expect(server.counters.executions(method: "POST", path: "Customers('NEWC1')/Orders") == 1)
        }
    }

    @Test(arguments: [false, true])
    func failingChangeSetRollsBackAsAWhole(json: Bool) async throws {
        try await withServer { server in
            let batch = BatchRequest(parts: [
                .changeSet([
                    .init(contentID: "a", request: jsonRequest(.post, "Customers", #"{"CustomerID":"ROLL1","CompanyName":"Gone"}"#)),
                    .init(contentID: "b", request: jsonRequest(.patch, "Customers('ANATR')", #"{"City":"Nowhere"}"#)),
                    .init(contentID: "c", request: jsonRequest(.post, "Customers", #"{"CustomerID":"ALFKI","CompanyName":"Duplicate"}"#)),
                ]),
                .request(.get("Customers('ROLL1')")),
                .changeSet([
                    .init(contentID: "d", request: jsonRequest(.post, "Customers", #"{"CustomerID":"KEEP1","CompanyName":"Kept"}"#))
                ]),
            ])
            let (_, response) = try await send(batch, to: server, json: json)
            #expect(response.parts.count == 3)
            guard case .response(let failure, let contentID) = response.parts[0] else {
                Issue.record("a failed change set is answered by one error response")
                return
            }
            #expect(failure.statusCode == 409)
            #expect(contentID == "c")
            #expect(failure.serviceError?.code == "Conflict")
            #expect(response.allResponses[1].statusCode == 404)  // the rolled-back create is not visible
            #expect(response.allResponses[2].statusCode == 201)
            #expect(try await Curl.run(server.serviceRoot + "Customers('ROLL1')").status == 404)
            #expect(try await Curl.run(server.serviceRoot + "Customers('ANATR')").json()["City"] == "México D.F.")
            #expect(try await Curl.run(server.serviceRoot + "Customers('KEEP1')").status == 200)
        }
    }

    @Test func faultsForBatchMembers() async throws {
        try await withServer { server in
            try server.faults.add(
                FaultRule(.fail(status: 500, code: "Backend", message: "the back end failed"), method: "PATCH",
                          path: "Customers('ANATR')", times: 1, insideBatch: true))
            #expect(throws: FixtureError.self) {
                try server.faults.add(FaultRule(.dropConnection, insideBatch: true))
            }
            // An HTTP PATCH of the same path is not a batch member: untouched by the fault.
            let batch = BatchRequest(parts: [
                .request(jsonRequest(.patch, "Customers('BERGS')", #"{"City":"Umeå"}"#)),
                .changeSet([
                    .init(contentID: "1", request: jsonRequest(.post, "Customers", #"{"CustomerID":"FLT01","CompanyName":"x"}"#)),
                    .init(contentID: "2", request: jsonRequest(.patch, "Customers('ANATR')", #"{"City":"Toluca"}"#)),
                ]),
                .request(jsonRequest(.patch, "Customers('ANATR')", #"{"City":"Puebla"}"#)),
            ])
            let (_, response) = try await send(batch, to: server)
            #expect(response.allResponses.map(\.statusCode) == [204, 500, 204])
            #expect(response.allResponses[1].serviceError?.code == "Backend")
            #expect(try await Curl.run(server.serviceRoot + "Customers('FLT01')").status == 404)
            #expect(try await Curl.run(server.serviceRoot + "Customers('ANATR')").json()["City"] == "Puebla")
            #expect(server.counters.entry(method: "PATCH", path: "Customers('ANATR')")?.faulted == 1)
            #expect(server.counters.executions(method: "PATCH", path: "Customers('ANATR')") == 1)
            #expect(server.counters.requests(method: "POST", path: "$batch") == 1)
        }
    }

    /// A member carrying its own `Repeatability-Request-ID` is executed once even when a later
    /// `$batch` (another body, no batch-level ID) sends it again: the second answer is the stored one.
    @Test(arguments: [false, true])
    func batchMembersWithRepeatabilityIDsAreExecutedOnce(json: Bool) async throws {
        try await withServer { server in
            func repeatable(_ request: ODataRequest, _ id: String) -> ODataRequest {
                var request = request
                request.headerFields[HTTPField.Name("Repeatability-Request-ID")!] = id
                request.headerFields[HTTPField.Name("Repeatability-First-Sent")!] = "Sun, 22 Nov 2026 18:00:00 GMT"
                return request
            }
            let create = repeatable(jsonRequest(.post, "Shippers", #"{"CompanyName":"Once"}"#), "member-create-1")
            let update = repeatable(jsonRequest(.patch, "Customers('ANATR')", #"{"City":"Once"}"#), "member-update-1")
            let first = BatchRequest(parts: [.changeSet([.init(contentID: "1", request: create)]),
                                             .changeSet([.init(contentID: "2", request: update)])])
            let (_, answer) = try await send(first, to: server, json: json)
            #expect(answer.allResponses.map(\.statusCode) == [201, 204])
            let createdID = try answer.allResponses[0].json()["ShipperID"]
            // Sent again in another grouping, with a new member in front of them.
            let second = BatchRequest(parts: [.changeSet([.init(contentID: "9", request: jsonRequest(.patch, "Customers('BERGS')", #"{"City":"New"}"#))]),
                                              .changeSet([.init(contentID: "1", request: create)]),
                                              .changeSet([.init(contentID: "2", request: update)])])
            let (_, again) = try await send(second, to: server, json: json)
            #expect(again.allResponses.map(\.statusCode) == [204, 201, 204])
            #expect(try again.allResponses[1].json()["ShipperID"] == createdID, "the stored answer, not a second create")
            #expect(again.allResponses[1].headerFields[HTTPField.Name("Repeatability-Result")!] == "accepted")
            #expect(server.counters.executions(method: "POST", path: "Shippers") == 1)
            #expect(server.counters.entry(method: "POST", path: "Shippers")?.replayed == 1)
            #expect(server.counters.executions(method: "PATCH", path: "Customers('ANATR')") == 1)
            #expect(server.counters.executions(method: "PATCH", path: "Customers('BERGS')") == 1)
            #expect(try server.read { try $0.entities(in: "Shippers") }.filter { $0["CompanyName"] == "Once" }.count == 1)
            // The same ID for another request is refused, as for a request of its own.
            let misuse = BatchRequest(parts: [.changeSet([.init(contentID: "1", request: repeatable(jsonRequest(.patch, "Customers('BERGS')", #"{"City":"X"}"#), "member-update-1"))])])
            let (_, refused) = try await send(misuse, to: server, json: json)
            #expect(refused.allResponses.map(\.statusCode) == [422])
        }
    }

    @Test func malformedBatchIs400() async throws {
        try await withServer { server in
            let result = try await Curl.run(
                "POST", server.serviceRoot + "$batch", headers: ["Content-Type": "multipart/mixed; boundary=x"], body: "garbage")
            #expect(result.status == 400)
            #expect(try result.errorCode() == "BadRequest")
            let json = try await Curl.run(
                "POST", server.serviceRoot + "$batch", headers: ["Content-Type": "application/json"], body: #"{"requests":5}"#)
            #expect(json.status == 400)
            #expect(try await Curl.run(server.serviceRoot + "$batch").status == 405)
        }
    }
}

@Suite struct DeltaTests {
    @Test func deltaAfterUpdateDeleteAndCreate() async throws {
        try await withServer { server in
            let initial = try await Curl.run(server.serviceRoot + "Customers", headers: ["Prefer": "odata.track-changes"])
            #expect(initial.headers["preference-applied"]?.contains("odata.track-changes") == true)
            #expect(try initial.values().count == 91)
            let deltaLink = try #require(try initial.json()["@odata.deltaLink"]?.stringValue)
            #expect(try initial.json()["@odata.nextLink"] == nil)

            let nothing = try await Curl.run(deltaLink)
            #expect(nothing.status == 200)
            #expect(try nothing.values().isEmpty)

            #expect(try await Curl.run("PATCH", server.serviceRoot + "Customers('ANATR')", headers: ["Content-Type": "application/json"], body: #"{"City":"Puebla"}"#).status == 204)
            #expect(try await Curl.run("DELETE", server.serviceRoot + "Customers('FISSA')").status == 204)
            try server.mutate { data in
                try data.insert(["CustomerID": "DELT1", "CompanyName": "Delta"], into: "Customers")
            }
            let delta = try await Curl.run(deltaLink)
            #expect(delta.status == 200)
            let values = try delta.values()
            #expect(values.count == 3)
            let changed = values.first { $0["CustomerID"] == "ANATR" && $0["@removed"] == nil }
            #expect(changed?["City"] == "Puebla")
            let removed = try #require(values.first { $0["@removed"] != nil })
            #expect(removed["@removed"]?["reason"] == "deleted")
            #expect(removed["@id"] == "Customers('FISSA')")
            #expect(removed["CustomerID"] == "FISSA")
            #expect(values.contains { $0["CustomerID"] == "DELT1" })
            #expect(try delta.json()["@odata.context"]?.stringValue?.hasSuffix("$metadata#Customers/$delta") == true)

            // The new delta link starts after these changes.
            let next = try #require(try delta.json()["@odata.deltaLink"]?.stringValue)
            #expect(next != deltaLink)
            #expect(try await Curl.run(next).values().isEmpty)
        }
    }

    @Test func filteredDeltaReportsEntitiesLeavingTheFilter() async throws {
        try await withServer { server in
            let initial = try await Curl.run(
                server.serviceRoot + "Customers?$filter=Country%20eq%20'Germany'", headers: ["Prefer": "odata.track-changes"])
            #expect(try initial.values().count == 11)
            let deltaLink = try #require(try initial.json()["@odata.deltaLink"]?.stringValue)
            #expect(deltaLink.contains("$filter="))
            try server.mutate { data in
                try data.update(in: "Customers", key: ["CustomerID": "ALFKI"], changes: ["Country": "Austria"])
                try data.update(in: "Customers", key: ["CustomerID": "ANATR"], changes: ["City": "Toluca"])  // not German: absent
                try data.update(in: "Customers", key: ["CustomerID": "BLAUS"], changes: ["City": "Heidelberg"])
            }
            let values = try await Curl.run(deltaLink).values()
            #expect(values.count == 2)
            #expect(values.first { $0["CustomerID"] == "ALFKI" }?["@removed"]?["reason"] == "changed")
            #expect(values.first { $0["CustomerID"] == "BLAUS" }?["City"] == "Heidelberg")
        }
    }

    @Test func pagedTrackingPutsTheDeltaLinkOnTheLastPage() async throws {
        try await withServer { server in
            var url: String? = server.serviceRoot + "Orders"
            var deltaLink: String?
            var pages = 0
            while let next = url {
                let page = try await Curl.run(next, headers: ["Prefer": "odata.track-changes,odata.maxpagesize=400"])
                url = try page.json()["@odata.nextLink"]?.stringValue
                deltaLink = try page.json()["@odata.deltaLink"]?.stringValue
                pages += 1
                #expect((url == nil) == (deltaLink != nil))
            }
            #expect(pages == 3)
            #expect(deltaLink != nil)
        }
    }

    @Test func unknownOrExpiredTokensAre410() async throws {
        try await withServer { server in
            let unknown = try await Curl.run(server.serviceRoot + "Customers?$deltatoken=nonsense")
            #expect(unknown.status == 410)
            #expect(try unknown.errorCode() == "DeltaTokenExpired")

            let initial = try await Curl.run(server.serviceRoot + "Regions", headers: ["Prefer": "odata.track-changes"])
            let deltaLink = try #require(try initial.json()["@odata.deltaLink"]?.stringValue)
            #expect(try await Curl.run(deltaLink).status == 200)

            // A token of another server instance is unknown here.
            try await withServer { (other: FixtureServer) async throws -> Void in
                let foreign = deltaLink.replacingOccurrences(of: server.serviceRoot, with: other.serviceRoot)
                #expect(try await Curl.run(foreign).status == 410)
            }

            server.expireDeltaTokens()
            #expect(try await Curl.run(deltaLink).status == 410)
            let fresh = try await Curl.run(server.serviceRoot + "Regions", headers: ["Prefer": "odata.track-changes"])
            let freshLink = try #require(try fresh.json()["@odata.deltaLink"]?.stringValue)
            #expect(try await Curl.run(freshLink).status == 200)
            server.resetData()
            #expect(try await Curl.run(freshLink).status == 410)
        }
    }
}
