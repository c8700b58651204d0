import Foundation
import HTTPTypes
import Testing
@testable import ODataCore

@Suite struct BatchTests {
    static func sampleBatch() -> BatchRequest {
        var create = ODataRequest(method: .post, resourcePath: "Customers", body: Data(#"{"CustomerID":"NEWCO","CompanyName":"New Co"}"#.utf8))
        create.headerFields[.contentType] = "application/json"
        var update = ODataRequest(method: .patch, resourcePath: "$1", body: Data(#"{"City":"Köln"}"#.utf8))
        update.headerFields[.ifMatch] = "*"
        return BatchRequest(parts: [
            .request(.get("Customers('ALFKI')", .select(["CustomerID", "City"]))),
            .changeSet([.init(contentID: "1", request: create), .init(contentID: "2", request: update)]),
            .request(.get("Orders", .filter("ShipCity eq 'Reims'"), .top(3))),
        ])
    }

    @Test func multipartRequestsRoundTrip() throws {
        let batch = Self.sampleBatch()
        let (body, contentType) = try MultipartBatch.encode(batch, boundary: "batch_42")
        #expect(contentType == "multipart/mixed; boundary=batch_42")
        let text = String(decoding: body, as: UTF8.self)
        #expect(text.contains("GET Customers('ALFKI')?$select=CustomerID,City HTTP/1.1\r\n"))
        #expect(text.contains("Content-ID: 1\r\n"))
        #expect(text.hasSuffix("--batch_42--\r\n"))
        let decoded = try MultipartBatch.decodeRequest(body, contentType: contentType)
        #expect(decoded.parts.count == 3)
        let requests = decoded.allRequests
        #expect(requests.map(\.method) == [.get, .post, .patch, .get])
        #expect(requests.map(\.resourcePath) == ["Customers('ALFKI')", "Customers", "$1", "Orders"])
        #expect(try requests[3].relativeURL() == "Orders?$filter=ShipCity%20eq%20'Reims'&$top=3")
        #expect(requests[1].body == batch.allRequests[1].body)
        #expect(requests[2].headerFields[.ifMatch] == "*")
        guard case .changeSet(let members) = decoded.parts[1] else { Issue.record("expected a change set"); return }
        #expect(members.map(\.contentID) == ["1", "2"])
        #expect(String(decoding: members[1].request.body ?? Data(), as: UTF8.self) == #"{"City":"Köln"}"#)
    }

    @Test func multipartResponsesRoundTrip() throws {
        var etag = HTTPFields()
        etag[.eTag] = "W/\"1\""
        etag[.contentType] = "application/json"
        let response = BatchResponse(parts: [
            .response(ODataResponse(statusCode: 200, headerFields: etag, payload: Data(#"{"CustomerID":"ALFKI"}"#.utf8)), contentID: nil),
            .changeSet([
                (contentID: "1", response: ODataResponse(statusCode: 201, payload: Data(#"{"CustomerID":"NEWCO"}"#.utf8))),
                (contentID: "2", response: ODataResponse(statusCode: 204)),
            ]),
            .response(ODataResponse(statusCode: 404, payload: Data(#"{"error":{"code":"404","message":"no\r\n--batch_x"}}"#.utf8)), contentID: nil),
        ])
        let (body, contentType) = MultipartBatch.encode(response, boundary: "batchresponse_7")
        let text = String(decoding: body, as: UTF8.self)
        #expect(text.contains("HTTP/1.1 201 Created\r\n") && text.contains("HTTP/1.1 404 Not Found\r\n"))
        let decoded = try MultipartBatch.decodeResponse(body, contentType: contentType)
        let all = decoded.allResponses
        #expect(all.map(\.statusCode) == [200, 201, 204, 404])
        #expect(all[0].etag == "W/\"1\"")
        #expect(all[2].payload.isEmpty, "a 204 has an empty payload")
        #expect(all[3].serviceError?.message == "no\r\n--batch_x")
        guard case .changeSet(let members) = decoded.parts[1] else { Issue.record("expected a change set"); return }
        #expect(members.map(\.contentID) == ["1", "2"])
    }

    @Test func aThousandChangeSetsKeepBoundariesWithinSeventyCharacters() throws {
        let parts = (0..<1_000).map { index in
            BatchResponse.Part.changeSet([(contentID: String(index), response: ODataResponse(statusCode: 204))])
        }
        let (body, contentType) = MultipartBatch.encode(BatchResponse(parts: parts))
        let decoded = try MultipartBatch.decodeResponse(body, contentType: contentType)
        #expect(decoded.allResponses.count == 1_000)
        guard case .changeSet(let last) = decoded.parts.last else { Issue.record("expected a change set"); return }
        #expect(last.map(\.contentID) == ["999"])
        let requests = (0..<1_000).map { index in
            BatchRequest.Part.changeSet([.init(contentID: String(index), request: ODataRequest(method: .delete, resourcePath: "Items(\(index))"))])
        }
        let (requestBody, requestType) = try MultipartBatch.encode(BatchRequest(parts: requests))
        #expect(try MultipartBatch.decodeRequest(requestBody, contentType: requestType).allRequests.count == 1_000)
    }

    @Test func readsAServerWrittenResponseWithLFLinesAndPadding() throws {
        let body = "preamble\n--b1  \nContent-Type: application/http\n\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n{\"A\":1}\n--b1--\nepilogue"
        let decoded = try MultipartBatch.decodeResponse(Data(body.utf8), contentType: "multipart/mixed; boundary=\"b1\"")
        #expect(decoded.allResponses.count == 1)
        #expect(String(decoding: decoded.allResponses[0].payload, as: UTF8.self) == "{\"A\":1}")
    }

    @Test(arguments: [
        ("--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 200 OK\r\n\r\n{}\r\n", "multipart/mixed; boundary=b", ODataError.malformedBatch),
        ("no delimiters at all", "multipart/mixed; boundary=b", .malformedBatch),
        ("--b--\r\n", "application/json", .malformedBatch),
        ("--b--\r\n", "multipart/mixed", .malformedBatch),
        ("--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 abc OK\r\n\r\n--b--\r\n", "multipart/mixed; boundary=b", .malformedHTTPMessage),
        ("--b\r\nContent-Type: application/http\r\n\r\nGARBAGE\r\n--b--\r\n", "multipart/mixed; boundary=b", .malformedHTTPMessage),
        ("--b\r\nBad Header Line\r\n\r\nHTTP/1.1 200 OK\r\n\r\n--b--\r\n", "multipart/mixed; boundary=b", .malformedHTTPMessage),
        // Found by FuzzMultipart: a negative length crashed `prefix(_:)`.
        ("--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length:-2\r\n\r\n{}\r\n--b--\r\n", "multipart/mixed; boundary=b", .malformedHTTPMessage),
        ("--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{}\r\n--b--\r\n", "multipart/mixed; boundary=b", .malformedHTTPMessage),
        ("--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 201 Created\r\n\r\n--b--\r\n", "multipart/mixed; boundary=b", .malformedBatch),
    ])
    func malformedMultipartIsATypedError(body: String, contentType: String, code: ODataError) {
        #expect { try MultipartBatch.decodeResponse(Data(body.utf8), contentType: contentType) } throws: {
            ($0 as? ODataError) == code
        }
    }

    @Test func malformedBatchRequestsAreTypedErrors() {
        let body = "--b\r\nContent-Type: application/http\r\n\r\nGET\r\n--b--\r\n"
        #expect { try MultipartBatch.decodeRequest(Data(body.utf8), contentType: "multipart/mixed; boundary=b") } throws: {
            ($0 as? ODataError) == .malformedHTTPMessage
        }
    }

    @Test func jsonBatchRoundTrips() throws {
        let batch = Self.sampleBatch()
        let body = try JSONBatch.encode(batch)
        let json = try JSON.parse(body)
        let first = try #require(json["requests"]?.arrayValue?.first)
        #expect(first["method"] == "get")
        #expect(first["url"] == "Customers('ALFKI')?$select=CustomerID,City")
        let decoded = try JSONBatch.decodeRequest(body)
        #expect(decoded.parts.count == 3)
        #expect(decoded.allRequests.map(\.method) == [.get, .post, .patch, .get])
        guard case .changeSet(let members) = decoded.parts[1] else { Issue.record("expected a change set"); return }
        #expect(members.map(\.contentID) == ["1", "2"])
        #expect(try JSON.parse(members[0].request.body ?? Data()) == JSON.parse(batch.allRequests[1].body ?? Data()))

        let response = BatchResponse(parts: [
            .response(ODataResponse(statusCode: 200, payload: Data(#"{"A":1}"#.utf8)), contentID: "r1"),
            .changeSet([(contentID: "1", response: ODataResponse(statusCode: 201, payload: Data(#"{"B":2}"#.utf8))),
                        (contentID: "2", response: ODataResponse(statusCode: 204))]),
        ])
        let decodedResponse = try JSONBatch.decodeResponse(JSONBatch.encode(response))
        #expect(decodedResponse.allResponses.map(\.statusCode) == [200, 201, 204])
        #expect(try decodedResponse.allResponses[1].json() == ["B": 2])
        #expect(decodedResponse.parts.count == 2)
    }

    @Test(arguments: [
        #"[]"#, #"{"requests":{}}"#, #"{"requests":[1]}"#, #"{"requests":[{"method":"get","url":"x"}]}"#,
        #"{"requests":[{"id":"1","url":"x"}]}"#, #"{"requests":[{"id":"1","method":"get"}]}"#,
        #"{"requests":[{"id":"1","method":"get","url":"x","headers":[]}]}"#,
        #"{"requests":[{"id":"1","method":"get","url":"x","headers":{"a":1}}]}"#,
    ])
    func malformedJSONBatchesAreTypedErrors(body: String) {
        #expect { try JSONBatch.decodeRequest(Data(body.utf8)) } throws: { ($0 as? ODataError) == .malformedBatch }
    }
}
