import Foundation
import Testing

@testable import ODataCore

/// A collection's next link in every form producers write it, read by both collection decoders; one that is there
/// but cannot be read fails with `.malformedNextLink` instead of reading as the last page.
@Suite struct NextLinkTests {
    static let link = "http://h/svc/Customers?$skiptoken='C007'"

    static let readable: [String] = [
        #"{"value":[{"ID":1}],"@odata.nextLink":"http://h/svc/Customers?$skiptoken='C007'"}"#,
        #"{"value":[{"ID":1}],"@nextLink":"http://h/svc/Customers?$skiptoken='C007'"}"#,
        // JSON Light (OData V3, early V4 producers): the control name without `@`.
        #"{"odata.metadata":"http://h/svc/$metadata#Customers","value":[{"ID":1}],"odata.nextLink":"http://h/svc/Customers?$skiptoken='C007'"}"#,
        #"{"d":{"results":[{"ID":1}],"__next":"http://h/svc/Customers?$skiptoken='C007'"}}"#,
        // A foreign producer's V2 next link: an object with a uri.
        #"{"d":{"results":[{"ID":1}],"__next":{"uri":"http://h/svc/Customers?$skiptoken='C007'"}}}"#,
        // The next link beside `d`, and in a `d.results` object wrapping the array once more.
        #"{"d":[{"ID":1}],"__next":{"uri":"http://h/svc/Customers?$skiptoken='C007'"}}"#,
        #"{"d":{"results":{"results":[{"ID":1}],"__next":"http://h/svc/Customers?$skiptoken='C007'"}}}"#,
    ]

    @Test(arguments: readable) func everyFormIsRead(payload: String) throws {
        let set = try ODataPayload.decodeEntitySet(Array(payload.utf8))
        #expect(set.nextLink == Self.link)
        #expect(set.entities.count == 1)
        let asV4 = try ODataPayload.decodeEntitySetAsV4(Array(payload.utf8))
        #expect(asV4.nextLink == Self.link)
        #expect(asV4.entities == [["ID": 1]])
    }

    static let unreadable: [String] = [
        #"{"d":{"results":[{"ID":1}],"__next":42}}"#,
        #"{"d":{"results":[{"ID":1}],"__next":{"uri":7}}}"#,
        #"{"d":{"results":[{"ID":1}],"__next":{"href":"http://h/svc/Customers?$skiptoken='C007'"}}}"#,
        #"{"d":{"results":[{"ID":1}],"__next":""}}"#,
        #"{"d":[{"ID":1}],"__next":["http://h/svc/Customers"]}"#,
        #"{"value":[{"ID":1}],"@odata.nextLink":42}"#,
        #"{"value":[{"ID":1}],"@nextLink":{"uri":7}}"#,
        #"{"value":[{"ID":1}],"odata.nextLink":true}"#,
    ]

    @Test(arguments: unreadable) func aLinkThatCannotBeReadFails(payload: String) {
        for decode in [{ try ODataPayload.decodeEntitySet(Array(payload.utf8)).nextLink },
                       { try ODataPayload.decodeEntitySetAsV4(Array(payload.utf8)).nextLink }] as [() throws -> String?] {
            let error = #expect(throws: ODataError.self) { try decode() }
            #expect(error == .malformedNextLink, "\(String(describing: error))")
            #expect(error?.message.contains("next link") == true)
        }
    }

    @Test func nullIsNoNextLink() throws {
        #expect(try ODataPayload.decodeEntitySet(Array(#"{"d":{"results":[],"__next":null}}"#.utf8)).nextLink == nil)
        #expect(try ODataPayload.decodeEntitySetAsV4(Array(#"{"value":[],"@odata.nextLink":null}"#.utf8)).nextLink == nil)
    }
}
