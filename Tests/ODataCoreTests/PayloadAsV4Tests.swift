import Foundation
import Testing

@testable import ODataCore

/// `decodeEntitySetAsV4` gives what `decodeEntitySet` then `jsonV4` give, for plain V4 entities (read once) and for
/// every other form (read through `ODataEntity`).
@Suite struct PayloadAsV4Tests {
    static let payloads: [String] = [
        // Plain V4, an ETag leading, a next link, an expanded entity.
        #"{"@odata.context":"$metadata#Items","value":[{"@odata.etag":"W/\"1\"","ID":1,"Name":"a \"b\"","Tags":["x"],"Owner":{"@odata.etag":"W/\"9\"","ID":9}},{"ID":2,"Name":null}],"@odata.nextLink":"Items?$skiptoken=2"}"#,
        // 4.01 short control names; a count (as a number, and as some producers write it, a string).
        #"{"value":[{"ID":1}],"@nextLink":"Items?$skiptoken=1","@deltaLink":"Items?$deltatoken=7","@count":830}"#,
        #"{"@odata.count":"91","value":[{"ID":1}]}"#,
        // An ETag that does not lead, a property annotation, an id: taken apart and put together as jsonV4 does.
        ##"{"value":[{"ID":1,"@odata.etag":"W/\"1\""},{"ID":2,"Name@odata.type":"#String","Name":"n"},{"@odata.id":"Items(3)","ID":3}]}"##,
        // A delta payload: a removed entity and a link.
        ##"{"value":[{"ID":1},{"@removed":{"reason":"deleted"},"@id":"Items(2)"},{"@context":"#Items/$link","source":"Items(1)","relationship":"Owner","target":"People(9)"}],"@deltaLink":"Items?$deltatoken=8"}"##,
        // V2, with its count.
        #"{"d":{"results":[{"__metadata":{"uri":"Items(1)","etag":"W/\"1\""},"ID":1}],"__next":"Items?$skiptoken=1","__count":"830"}}"#,
        #"{"value":[]}"#,
    ]

    @Test(arguments: payloads) func theSameEntitiesAndLinksAsDecodeEntitySet(payload: String) throws {
        let bytes = Array(payload.utf8)
        let expected = try ODataPayload.decodeEntitySet(bytes)
        let read = try ODataPayload.decodeEntitySetAsV4(bytes)
        #expect(read.entities == expected.entities.map(\.jsonV4))
        #expect(read.entities.map { $0.keys } == expected.entities.map(\.jsonV4).map { $0.keys }, "member order")
        #expect(read.nextLink == expected.nextLink)
        #expect(read.deltaLink == expected.deltaLink)
        #expect(read.count == expected.count)
    }

    /// The count a producer announces (`@odata.count`, `@count`, V2 `__count`, a number or a string of digits) is read in
    /// every form; it is what the offline store's download progress gives as its total.
    @Test func theCountIsRead() throws {
        #expect(try ODataPayload.decodeEntitySetAsV4(Array(Self.payloads[1].utf8)).count == 830)
        #expect(try ODataPayload.decodeEntitySetAsV4(Array(Self.payloads[2].utf8)).count == 91)
        #expect(try ODataPayload.decodeEntitySetAsV4(Array(Self.payloads[5].utf8)).count == 830)
        #expect(try ODataPayload.decodeEntitySetAsV4(Array(Self.payloads[0].utf8)).count == nil)
    }

    @Test func malformedPayloadsFailAsDecodeEntitySetDoes() {
        for payload in [#"{"value":{}}"#, #"[1]"#, #"{"value":[1]}"#, #"{"value":[{"ID":1}"#] {
            let bytes = Array(payload.utf8)
            let expected = #expect(throws: ODataError.self) { try ODataPayload.decodeEntitySet(bytes) }
            let read = #expect(throws: ODataError.self) { try ODataPayload.decodeEntitySetAsV4(bytes) }
            #expect(read == expected && read?.message == expected?.message, "\(payload)")
        }
    }
}
