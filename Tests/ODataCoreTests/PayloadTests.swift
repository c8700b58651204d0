import Foundation
import HTTPTypes
import Testing
@testable import ODataCore

@Suite struct PayloadTests {
    @Test func readsAV4CollectionWithLinksAndAnnotations() throws {
        let body = #"""
        {"@odata.context":"$metadata#Customers","@odata.count":91,
         "value":[{"@odata.etag":"W/\"1\"","CustomerID":"ALFKI","Region":null,
                   "Address":{"City":"Berlin","Geo":{"Lat":52.5}},"Name@odata.type":"#String",
                   "Orders":[{"OrderID":10643}]},
                  {"@etag":"W/\"2\"","CustomerID":"ANATR"}],
         "@odata.nextLink":"Customers?$skiptoken=2","@odata.deltaLink":"Customers?$deltatoken=9"}
        """#
        let set = try ODataPayload.decodeEntitySet(Array(body.utf8))
        #expect(set.entities.count == 2)
        #expect(set.count == 91)
        #expect(set.context == "$metadata#Customers")
        #expect(set.nextLink == "Customers?$skiptoken=2")
        #expect(set.deltaLink == "Customers?$deltatoken=9")
        let first = set.entities[0]
        #expect(first.etag == "W/\"1\"")
        #expect(first.properties.keys == ["CustomerID", "Region", "Address", "Orders"])
        #expect(first.properties["Region"] == .null)
        #expect(first.properties["Address"]?["Geo"]?["Lat"] == .double(52.5))
        #expect(first.annotations["Name@odata.type"] == "#String")
        #expect(set.entities[1].etag == "W/\"2\"", "4.01 short annotation names are normalized")
    }

    @Test func readsDeltaTombstones() throws {
        let body = #"{"value":[{"@removed":{"reason":"deleted"},"@id":"Customers('X')"},{"@odata.removed":{},"@odata.id":"Customers('Y')"},{"CustomerID":"Z"}]}"#
        let set = try ODataPayload.decodeEntitySet(Array(body.utf8))
        #expect(set.entities.map(\.isRemoved) == [true, true, false])
        #expect(set.entities[0].removedReason == "deleted")
        #expect(set.entities[0].id == "Customers('X')")
        #expect(set.entities[1].id == "Customers('Y')")
    }

    @Test func readsAV2CollectionIntoTheSameRepresentation() throws {
        let body = #"""
        {"d":{"results":[{"__metadata":{"uri":"http://h/svc/Customers('ALFKI')","type":"NW.Customer","etag":"W/\"5\""},
            "CustomerID":"ALFKI","Orders":{"__deferred":{"uri":"http://h/svc/Customers('ALFKI')/Orders"}},
            "Region":null,
            "Lines":{"results":[{"__metadata":{"uri":"L(1)","type":"NW.Line"},"Qty":2}]}}],
          "__count":"91","__next":"http://h/svc/Customers?$skiptoken='ALFKI'"}}
        """#
        let set = try ODataPayload.decodeEntitySet(Array(body.utf8))
        #expect(set.count == 91)
        #expect(set.nextLink == "http://h/svc/Customers?$skiptoken='ALFKI'")
        let entity = try #require(set.entities.first)
        #expect(entity.etag == "W/\"5\"")
        #expect(entity.type == "NW.Customer")
        #expect(entity.id == "http://h/svc/Customers('ALFKI')")
        #expect(entity.properties.keys == ["CustomerID", "Region", "Lines"], "deferred navigation is not a value")
        #expect(entity.annotations["Orders@odata.navigationLink"] == "http://h/svc/Customers('ALFKI')/Orders")
        #expect(entity.properties["Lines"]?.arrayValue?.first?["Qty"] == 2)
        #expect(entity.properties["Lines"]?.arrayValue?.first?["@odata.type"] == "NW.Line")
    }

    @Test func readsV1ArraysAndSingleEntities() throws {
        #expect(try ODataPayload.decodeEntitySet(Array(#"{"d":[{"A":1},{"A":2}]}"#.utf8)).entities.count == 2)
        let v2 = try ODataPayload.decodeEntity(Array(#"{"d":{"__metadata":{"etag":"7"},"A":1}}"#.utf8))
        #expect(v2.etag == "7")
        #expect(v2.properties["A"] == 1)
        let v4 = try ODataPayload.decodeEntity(Array(#"{"@odata.context":"c","@odata.etag":"e","A":"x"}"#.utf8))
        #expect(v4.etag == "e")
        #expect(v4.properties.keys == ["A"])
    }

    @Test(arguments: [
        ("[1,2]", ODataError.malformedPayload),
        (#"{"items":[]}"#, .malformedPayload),
        (#"{"value":{}}"#, .malformedPayload),
        (#"{"value":[1]}"#, .malformedPayload),
        (#"{"d":{"x":1}}"#, .malformedPayload),
        (#"{"d":"x"}"#, .malformedPayload),
        (#"{"value":["#, .malformedJSON),
        ("", .malformedJSON),
    ])
    func badCollectionsAreTypedErrors(body: String, code: ODataError) {
        #expect { try ODataPayload.decodeEntitySet(Array(body.utf8)) } throws: { ($0 as? ODataError) == code }
    }

    @Test func aCollectionIsNotASingleEntity() {
        #expect { try ODataPayload.decodeEntity(Array(#"{"value":[]}"#.utf8)) } throws: { ($0 as? ODataError) == .malformedPayload }
    }

    @Test func writesV4ThatReadsBackTheSame() throws {
        var entity = ODataEntity(properties: ["ID": 1, "Name": "A", "Tags": ["x"]])
        entity.annotations["odata.etag"] = "W/\"3\""
        let set = ODataEntitySet(entities: [entity], nextLink: "next", deltaLink: nil, count: 1, context: "ctx")
        let again = try ODataPayload.decodeEntitySet(ODataPayload.encodeEntitySet(set))
        #expect(again == set)
        #expect(try ODataPayload.decodeEntity(ODataPayload.encodeEntity(entity)) == entity)
    }

    @Test func responsesTellNoContentFromNoResponse() throws {
        let empty = ODataResponse(statusCode: 204)
        #expect(empty.payload.isEmpty)
        #expect(empty.isSuccess)
        var headers = HTTPFields()
        headers[.eTag] = "\"abc\""
        headers[.lastModified] = "Wed, 21 Oct 2015 07:28:00 GMT"
        let full = ODataResponse(statusCode: 200, headerFields: headers, payload: Data(#"{"value":[]}"#.utf8))
        #expect(full.etag == "\"abc\"")
        #expect(full.lastModified == "Wed, 21 Oct 2015 07:28:00 GMT")
        #expect(try full.entitySet().entities.isEmpty)
        let cached = full.with(isFromCache: true, isRevalidated: true)
        #expect(cached.isFromCache && cached.isRevalidated && cached !== full)
    }
}

@Suite struct ServiceErrorTests {
    @Test func readsAV4Error() {
        let body = #"{"error":{"code":"SY/530","message":"Customer not found","target":"CustomerID","details":[{"code":"D1","message":"detail","target":"x"}],"innererror":{"transactionid":"42"}}}"#
        let error = ODataServiceError.parse(Data(body.utf8), statusCode: 404)
        #expect(error.format == .v4JSON)
        #expect(error.code == "SY/530")
        #expect(error.message == "Customer not found")
        #expect(error.target == "CustomerID")
        #expect(error.details == [.init(code: "D1", message: "detail", target: "x")])
        #expect(error.innerError?["transactionid"] == "42")
        #expect(error.statusCode == 404)
        #expect(ODataServiceError.parse(Data(JSON.serialize(error.jsonBody))).message == "Customer not found")
    }

    @Test func readsAV2Error() {
        let body = #"{"error":{"code":"/IWBEP/CM_MGW_RT/020","message":{"lang":"en","value":"Resource not found"},"innererror":{"application":{"component_id":"X"}}}}"#
        let error = ODataServiceError.parse(Data(body.utf8), statusCode: 404)
        #expect(error.format == .v2JSON)
        #expect(error.code == "/IWBEP/CM_MGW_RT/020")
        #expect(error.message == "Resource not found")
        #expect(error.innerError?["application"]?["component_id"] == "X")
    }

    @Test func readsAnXMLError() {
        let body = #"<?xml version="1.0" encoding="utf-8"?><error xmlns="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><code>SY/530</code><message xml:lang="en">Value &lt;5&gt; too &amp; small</message></error>"#
        let error = ODataServiceError.parse(Data(body.utf8), statusCode: 400)
        #expect(error.format == .xml)
        #expect(error.code == "SY/530")
        #expect(error.message == "Value <5> too & small")
    }

    @Test(arguments: [
        ("<html><body>Bad Gateway</body></html>", ODataServiceError.Format.text, "<html><body>Bad Gateway</body></html>"),
        (#"{"message":"not odata"}"#, .text, #"{"message":"not odata"}"#),
        ("{\"error\":", .text, "{\"error\":"),
        ("", .empty, "HTTP 502 with an empty body"),
        ("  \r\n", .empty, "HTTP 502 with an empty body"),
    ])
    func keepsOtherBodiesAsText(body: String, format: ODataServiceError.Format, message: String) {
        let error = ODataServiceError.parse(Data(body.utf8), statusCode: 502)
        #expect(error.format == format)
        #expect(error.message == message)
        #expect(error.code == "")
    }

    @Test func responsesExposeTheirServiceError() {
        #expect(ODataResponse(statusCode: 200, payload: Data("{}".utf8)).serviceError == nil)
        #expect(ODataResponse(statusCode: 412, payload: Data(#"{"error":{"code":"412","message":"stale"}}"#.utf8)).serviceError?.message == "stale")
    }
}
