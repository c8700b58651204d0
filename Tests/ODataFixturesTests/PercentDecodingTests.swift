import Foundation
import HTTPTypes
import ODataCore
import Testing

@testable import ODataFixtures

/// The producer reads URLs as the client writes them — RFC 3986, ODataCore's `PercentDecoding`: a `+` is a plus (OData
/// URLs are not form-encoded), `%20` a space; a `%` that starts no `%XX` is a 400.
@Suite struct FixturePercentDecodingTests {
    @Test(arguments: [("a%2Bb", "a+b"), ("a+b", "a+b"), ("a%20b", "a b"), ("1996-07-04T23:30:00+01:00", "1996-07-04T23:30:00+01:00")])
    func queryNamesAndValuesKeepAPlus(encoded: String, decoded: String) throws {
        #expect(try QueryString.value(of: "%24filter=\(encoded)") == decoded)
        #expect(try QueryString.name(of: "%24filter=\(encoded)") == "$filter")
        #expect(try QueryString.name(of: "\(encoded)=1") == decoded)
        #expect(try QueryString.value(of: "$count") == "")
    }

    @Test(arguments: ["a%G1", "ab%", "ab%4"]) func aMalformedEscapeInTheQueryIsA400(encoded: String) {
        for read in [{ try QueryString.value(of: "$filter=\(encoded)") }, { try QueryString.name(of: "\(encoded)=1") }]
            as [() throws -> String]
        {
            let failure = #expect(throws: ServiceFailure.self) { try read() }
            #expect(failure?.status == 400)
            #expect(failure?.message.contains("is malformed") == true, "\(String(describing: failure))")
        }
    }

    @Test func decodedPathKeepsAPlusAndCountsAMalformedPathAsWritten() {
        func request(_ path: String) -> IncomingRequest {
            IncomingRequest(method: "GET", path: path, query: "", headers: [:], body: [])
        }
        #expect(request("Products('a%2Bb+c%20d')").decodedPath == "Products('a+b+c d')")
        #expect(request("Products%G1").decodedPath == "Products%G1")
        #expect(request("Products%").decodedPath == "Products%")
    }

    @Test func aFilterWithALiteralPlusOffsetIsReadAsAPlus() async throws {
        try await withServer { server in
            // 1996-07-04T23:30:00+01:00 is 22:30Z on the 4th: only the order of the 4th is before it. Read as a form
            // would read it (a space before 01:00) the filter would not parse.
            let plus = try await Curl.run(server.serviceRoot + "Orders?$filter=OrderDate%20lt%201996-07-04T23:30:00+01:00&$count=true")
            #expect(plus.status == 200, "\(plus.text)")
            #expect(try plus.json()["@odata.count"] == 1)
            let encodedPlus = try await Curl.run(server.serviceRoot + "Orders?$filter=OrderDate%20lt%201996-07-04T23:30:00%2B01:00&$count=true")
            #expect(try encodedPlus.json()["@odata.count"] == 1)
            // The same wall time on the other side of UTC is 00:30Z on the 5th: the order of the 5th is before it too.
            let minus = try await Curl.run(server.serviceRoot + "Orders?$filter=OrderDate%20lt%201996-07-04T23:30:00-01:00&$count=true")
            #expect(try minus.json()["@odata.count"] == 2)
            let later = try await Curl.run(server.serviceRoot + "Orders?$filter=OrderDate%20lt%201996-07-05T00:30:00+01:00&$count=true")
            #expect(try later.json()["@odata.count"] == 1)
            let nextDay = try await Curl.run(server.serviceRoot + "Orders?$filter=OrderDate%20lt%201996-07-05T02:00:00+01:00&$count=true")
            #expect(try nextDay.json()["@odata.count"] == 2)
        }
    }

    @Test func malformedEscapesInAURLAre400s() async throws {
        try await withServer { server in
            for url in ["Orders?$top=1&%G1=1", "Orders?$filter=OrderID%20eq%201%", "Orders%G1", "Orders(10248)%"] {
                let response = try await Curl.run(server.serviceRoot + url)
                #expect(response.status == 400, "\(url): \(response.status) \(response.text)")
            }
        }
    }
}
