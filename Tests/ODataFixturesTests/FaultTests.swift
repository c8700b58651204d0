import Foundation
import ODataCore
import Testing

@testable import ODataFixtures

private let json = ["Content-Type": "application/json"]

@Suite struct FaultTests {
    @Test func addedLatency() async throws {
        try await withServer { server in
            try server.faults.add(FaultRule(.latency(.milliseconds(400)), method: "GET", path: "Regions"))
            let slow = try await Curl.run(server.serviceRoot + "Regions")
            #expect(slow.status == 200)
            #expect(slow.seconds >= 0.4)
            #expect(try slow.values().count == 4)
            let other = try await Curl.run(server.serviceRoot + "Shippers")
            #expect(other.status == 200)
            #expect(server.faults.installed.first?.fired == 1)  // only the matching request waited
        }
    }

    @Test func nthRequestFailsWithAnODataError() async throws {
        try await withServer { server in
            try server.faults.add(FaultRule(.fail(status: 503, code: "Busy", message: "come back later"), firstMatch: 2, times: 1))
            let statuses = try await [
                Curl.run(server.serviceRoot + "Regions").status,
                Curl.run(server.serviceRoot + "Shippers").status,
                Curl.run(server.serviceRoot + "Regions").status,
            ]
            #expect(statuses == [200, 503, 200])
            #expect(server.counters.entry(method: "GET", path: "Shippers")?.faulted == 1)
            #expect(server.counters.executions(method: "GET", path: "Shippers") == 0)
            #expect(server.faults.installed.first?.fired == 1)
        }
    }

    @Test func methodAndPathPatternFaults() async throws {
        try await withServer { server in
            let id = try server.faults.add(
                FaultRule(.fail(status: 500, code: "Boom", message: "orders are broken"), method: "PATCH", path: "Orders(*)"))
            let failed = try await Curl.run("PATCH", server.serviceRoot + "Orders(10248)", headers: json, body: #"{"Freight":1}"#)
            #expect(failed.status == 500)
            #expect(try failed.errorCode() == "Boom")
            #expect(try failed.json()["error"]?["message"] == "orders are broken")
            #expect(try await Curl.run(server.serviceRoot + "Orders(10248)").json()["Freight"] == 32.38)
            #expect(try await Curl.run("PATCH", server.serviceRoot + "Customers('ALFKI')", headers: json, body: "{}").status == 204)
            #expect(server.faults.remove(id))
            #expect(try await Curl.run("PATCH", server.serviceRoot + "Orders(10248)", headers: json, body: #"{"Freight":1}"#).status == 204)
            #expect(throws: FixtureError.self) { try server.faults.add(FaultRule(.fail(status: 42, code: "", message: ""))) }
            #expect(throws: FixtureError.self) { try server.faults.add(FaultRule(.dropConnection, firstMatch: 0)) }
        }
    }

    @Test func droppedConnectionIsNotExecuted() async throws {
        try await withServer { server in
            try server.faults.add(FaultRule(.dropConnection, method: "POST", path: "Customers", times: 1))
            let dropped = try await Curl.run(
                "POST", server.serviceRoot + "Customers", headers: json, body: #"{"CustomerID":"DROP1","CompanyName":"x"}"#)
            #expect(dropped.exitCode == 52)  // empty reply from server
            #expect(dropped.status == 0)
            #expect(server.counters.executions(method: "POST", path: "Customers") == 0)
            #expect(server.counters.requests(method: "POST", path: "Customers") == 1)
            #expect(try await Curl.run(server.serviceRoot + "Customers('DROP1')").status == 404)
        }
    }

    @Test func executedThenDroppedIsALostAcknowledgement() async throws {
        try await withServer { server in
            try server.faults.add(FaultRule(.executeThenDropConnection, method: "POST", path: "Customers", times: 1))
            let dropped = try await Curl.run(
                "POST", server.serviceRoot + "Customers", headers: json, body: #"{"CustomerID":"LOST1","CompanyName":"x"}"#)
            #expect(dropped.exitCode == 52)
            #expect(server.counters.executions(method: "POST", path: "Customers") == 1)
            #expect(try await Curl.run(server.serviceRoot + "Customers('LOST1')").status == 200)
            // A plain retry without repeatability executes again and now conflicts.
            let retry = try await Curl.run(
                "POST", server.serviceRoot + "Customers", headers: json, body: #"{"CustomerID":"LOST1","CompanyName":"x"}"#)
            #expect(retry.status == 409)
        }
    }

    @Test(arguments: [500, 503, 400])
    func executedThenFailedAnswersTheStatusAfterExecuting(status: Int) async throws {
        try await withServer { server in
            try server.faults.add(FaultRule(.executeThenFail(status: status), method: "POST", path: "Customers", times: 1))
            let failed = try await Curl.run(
                "POST", server.serviceRoot + "Customers", headers: json, body: #"{"CustomerID":"FAIL1","CompanyName":"x"}"#)
            #expect(failed.status == status)
            #expect(failed.text.contains("FailedAfterExecution"))
            #expect(server.counters.executions(method: "POST", path: "Customers") == 1)
            #expect(server.counters.entry(method: "POST", path: "Customers")?.faulted == 1)
            #expect(try await Curl.run(server.serviceRoot + "Customers('FAIL1')").status == 200)
            #expect(throws: FixtureError.self) { try server.faults.add(FaultRule(.executeThenFail(status: 700))) }
        }
    }

    @Test func truncatedBody() async throws {
        try await withServer { server in
            try server.faults.add(FaultRule(.truncateBody(afterBytes: 100), method: "GET", path: "Customers"))
            let truncated = try await Curl.run(server.serviceRoot + "Customers")
            #expect(truncated.exitCode == 18)  // transfer closed with outstanding read data remaining
            #expect(truncated.status == 200)
            #expect(truncated.body.count == 100)
            #expect(Int(truncated.headers["content-length"] ?? "") ?? 0 > 100)
            #expect(throws: ODataError.self) { try JSON.parse(truncated.body) }
        }
    }

    @Test func slowBody() async throws {
        try await withServer { server in
            try server.faults.add(FaultRule(.slowBody(chunkSize: 64, interval: .milliseconds(100)), path: "Regions"))
            let slow = try await Curl.run(server.serviceRoot + "Regions")
            #expect(slow.exitCode == 0)
            #expect(slow.status == 200)
            let chunks = (slow.body.count + 63) / 64
            #expect(chunks >= 4)
            #expect(slow.seconds >= Double(chunks - 1) * 0.1 * 0.9)
            #expect(try slow.values().count == 4)
        }
    }

    @Test func repeatablePostIsExecutedOnce() async throws {
        try await withServer { server in
            let headers = json.merging([
                "Repeatability-Request-ID": "7f1c2a3e-0000-4000-8000-000000000001",
                "Repeatability-First-Sent": "Sun, 22 Nov 2026 18:00:00 GMT",
            ]) { $1 }
            let body = #"{"CustomerID":"ALFKI","Title":"once"}"#
            let first = try await Curl.run("POST", server.serviceRoot + "Events", headers: headers, body: body)
            #expect(first.status == 201)
            #expect(first.headers["repeatability-result"] == "accepted")
            let second = try await Curl.run("POST", server.serviceRoot + "Events", headers: headers, body: body)
            #expect(second.status == 201)
            #expect(second.headers["repeatability-result"] == "accepted")
            #expect(second.headers["location"] == first.headers["location"])
            #expect(second.body == first.body)
            #expect(server.counters.executions(method: "POST", path: "Events") == 1)
            #expect(server.counters.entry(method: "POST", path: "Events")?.replayed == 1)
            #expect(try await Curl.run(server.serviceRoot + "Events/$count").text == "17")

            // The same ID for another request is refused.
            let misuse = try await Curl.run("POST", server.serviceRoot + "Orders", headers: headers, body: "{}")
            #expect(misuse.status == 422)
        }
    }

    @Test func repeatableRetryAfterLostAcknowledgement() async throws {
        try await withServer { server in
            try server.faults.add(FaultRule(.executeThenDropConnection, method: "POST", path: "Events", times: 1))
            let headers = json.merging(["Repeatability-Request-ID": "retry-after-lost-ack"]) { $1 }
            let body = #"{"CustomerID":"ALFKI","Title":"lost ack"}"#
            let lost = try await Curl.run("POST", server.serviceRoot + "Events", headers: headers, body: body)
            #expect(lost.exitCode == 52)
            let retry = try await Curl.run("POST", server.serviceRoot + "Events", headers: headers, body: body)
            #expect(retry.status == 201)
            #expect(retry.headers["repeatability-result"] == "accepted")
            #expect(server.counters.executions(method: "POST", path: "Events") == 1)
            let count = try await Curl.run(server.serviceRoot + "Events/$count?$filter=Title%20eq%20'lost%20ack'")
            #expect(count.text == "1")

            server.forgetRepeatableRequests()
            let again = try await Curl.run("POST", server.serviceRoot + "Events", headers: headers, body: body)
            #expect(again.status == 201)
            #expect(server.counters.executions(method: "POST", path: "Events") == 2)
        }
    }

    @Test func countersAndReset() async throws {
        try await withServer { server in
            _ = try await Curl.run(server.serviceRoot + "Regions")
            _ = try await Curl.run(server.serviceRoot + "Regions")
            _ = try await Curl.run(server.serviceRoot + "Regions(1)")
            #expect(server.counters.executions(method: "GET", path: "Regions") == 2)
            #expect(server.counters.executions(method: "get", path: "Regions(1)") == 1)
            #expect(server.counters.totalRequests == 3)
            server.resetCounters()
            #expect(server.counters.executions(method: "GET", path: "Regions") == 0)
            #expect(server.counters.all.isEmpty)
        }
    }

    @Test func controlEndpointOverHTTP() async throws {
        try await withServer { server in
            let control = server.baseURL.absoluteString + "$fixture/"
            let added = try await Curl.run(
                "POST", control + "faults", headers: json,
                body: #"{"action":"fail","status":429,"code":"TooMany","message":"slow down","method":"GET","path":"Regions","times":1}"#)
            #expect(added.status == 201)
            let id = try #require(try added.json()["id"]?.intValue)
            let listed = try await Curl.run(control + "faults")
            #expect(try listed.values().first?["status"] == 429)

            let failed = try await Curl.run(server.serviceRoot + "Regions")
            #expect(failed.status == 429)
            #expect(try failed.errorCode() == "TooMany")
            #expect(try await Curl.run(server.serviceRoot + "Regions").status == 200)

            for body in [#"{"action":"drop","path":"Shippers"}"#, #"{"action":"latency","milliseconds":1}"#] {
                #expect(try await Curl.run("POST", control + "faults", headers: json, body: body).status == 201)
            }
            #expect(try await Curl.run(server.serviceRoot + "Shippers").exitCode == 52)
            #expect(try await Curl.run("DELETE", control + "faults/\(id)").status == 204)
            #expect(try await Curl.run("DELETE", control + "faults/\(id)").status == 404)
            #expect(try await Curl.run("DELETE", control + "faults").status == 204)
            #expect(server.faults.installed.isEmpty)

            let counters = try await Curl.run(control + "counters")
            let regions = try counters.values().first { $0["path"] == "Regions" && $0["method"] == "GET" }
            #expect(regions?["received"] == 2)
            #expect(regions?["executed"] == 1)
            #expect(regions?["faulted"] == 1)

            let bad = try await Curl.run("POST", control + "faults", headers: json, body: #"{"action":"explode"}"#)
            #expect(bad.status == 400)
            let missing = try await Curl.run("POST", control + "faults", headers: json, body: #"{"action":"truncate"}"#)
            #expect(missing.status == 400)

            #expect(try await Curl.run("DELETE", server.serviceRoot + "Customers('FISSA')").status == 204)
            #expect(try await Curl.run("POST", control + "reset").status == 204)
            #expect(try await Curl.run(server.serviceRoot + "Customers('FISSA')").status == 200)
            #expect(try await Curl.run(control + "nothing").status == 404)

            // Every row of a set, unpaged, as the producer holds it (what FixtureProcess.entities(in:) reads).
            let rows = try await Curl.run(control + "data/Regions")
            #expect(rows.status == 200)
            #expect(try rows.values().count == server.read { try $0.entities(in: "Regions") }.count)
            #expect(try await Curl.run(control + "data/NoSuchSet").status == 400)
        }
    }
}
