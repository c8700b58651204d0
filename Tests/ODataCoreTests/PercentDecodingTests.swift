import Foundation
import Testing

@testable import ODataCore

/// The one percent decoder (RFC 3986: `%2B` and a literal `+` are both a plus, `%20` is a space) and every place of
/// ODataCore that decodes with it: a service's link, a `$batch` part's path (multipart and JSON), an encoded query
/// option. A `%` that starts no `%XX` is each place's typed error, or its documented behaviour.
@Suite struct PercentDecodingTests {
    /// Encoded text and what it decodes to: a plus stays a plus, `%2B` is a plus, `%20` a space.
    static let decodable: [(String, String)] = [
        ("a%2Bb", "a+b"), ("a+b", "a+b"), ("a%20b", "a b"), ("a%2bb+c%20d", "a+b+c d"), ("Caf%C3%A9", "Café"),
        ("2024-03-01T10:00:00+01:00", "2024-03-01T10:00:00+01:00"),
    ]
    /// Malformed escapes and the offset of their `%`.
    static let malformed: [(String, Int)] = [("a%G1", 1), ("ab%", 2), ("ab%4", 2), ("%%41", 0)]

    @Test(arguments: decodable) func decodesAsRFC3986Says(encoded: String, decoded: String) throws {
        #expect(try PercentDecoding.decodeString(encoded) == decoded)
        #expect(try PercentDecoding.decode(encoded) == Array(decoded.utf8))
    }

    @Test(arguments: malformed) func aMalformedEscapeIsATypedErrorAtItsOffset(encoded: String, offset: Int) {
        let error = #expect(throws: ODataError.self) { try PercentDecoding.decodeString(encoded) }
        #expect(error == .invalidQueryOption)
        #expect(error?.offset == offset)
    }

    @Test func bytesThatAreNotUTF8AreRefusedAsText() throws {
        #expect(try PercentDecoding.decode("%FF") == [0xFF])
        #expect { try PercentDecoding.decodeString("%FF") } throws: { ($0 as? ODataError) == .invalidQueryOption }
    }

    // MARK: ODataRequest(link:serviceRoot:)

    @Test(arguments: decodable) func aLinkPathIsDecoded(encoded: String, decoded: String) throws {
        let root = "http://h/svc/"
        let absolute = try ODataRequest(link: root + "Products('\(encoded)')?$skiptoken=a%2Bb+c", serviceRoot: root)
        #expect(absolute.resourcePath == "Products('\(decoded)')")
        #expect(absolute.queryOptions == [.encoded("$skiptoken=a%2Bb+c")])  // the query is kept as sent
        #expect(try ODataRequest(link: "Products('\(encoded)')", serviceRoot: root).resourcePath == "Products('\(decoded)')")
        #expect(try ODataRequest(link: "/svc/Products('\(encoded)')", serviceRoot: root).resourcePath == "Products('\(decoded)')")
    }

    @Test(arguments: malformed) func aLinkWithAMalformedPathIsAnInvalidURL(encoded: String, offset: Int) {
        let error = #expect(throws: ODataError.self) {
            try ODataRequest(link: "http://h/svc/Products" + encoded + "?$top=1", serviceRoot: "http://h/svc/")
        }
        #expect(error == .invalidURL)
        #expect(error?.offset == "Products".utf8.count + offset)
        #expect(error?.message.contains("Products\(encoded)") == true, "\(String(describing: error))")
    }

    // MARK: $batch parts

    static func multipart(_ target: String) -> Data {
        Data("--b\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nGET \(target) HTTP/1.1\r\n\r\n\r\n--b--\r\n".utf8)
    }

    static func json(_ url: String) -> Data {
        Data(#"{"requests":[{"id":"r1","method":"get","url":"\#(url)"}]}"#.utf8)
    }

    @Test(arguments: decodable) func aBatchPartPathIsDecoded(encoded: String, decoded: String) throws {
        let target = "Products('\(encoded)')?$filter=a%2Bb+c"
        let fromMultipart = try MultipartBatch.decodeRequest(Self.multipart(target), contentType: "multipart/mixed; boundary=b")
        let fromJSON = try JSONBatch.decodeRequest(Self.json(target))
        for request in [fromMultipart.allRequests, fromJSON.allRequests].map(\.first) {
            #expect(request?.resourcePath == "Products('\(decoded)')")
            #expect(request?.queryOptions == [.encoded("$filter=a%2Bb+c")])
            #expect(request?.queryOptions.first?.value == "a+b+c")
        }
    }

    @Test(arguments: malformed) func aMultipartPartWithAMalformedPathIsAMalformedHTTPMessage(encoded: String, offset: Int) {
        let error = #expect(throws: ODataError.self) {
            try MultipartBatch.decodeRequest(Self.multipart("Products\(encoded)?$top=1"), contentType: "multipart/mixed; boundary=b")
        }
        #expect(error == .malformedHTTPMessage)
        #expect(error?.offset == "Products".utf8.count + offset)
        #expect(error?.message.contains("Products\(encoded)?$top=1") == true, "\(String(describing: error))")
    }

    @Test(arguments: malformed) func aJSONBatchRequestWithAMalformedPathIsAMalformedBatch(encoded: String, offset: Int) {
        let error = #expect(throws: ODataError.self) { try JSONBatch.decodeRequest(Self.json("Products\(encoded)")) }
        #expect(error == .malformedBatch)
        #expect(error?.offset == "Products".utf8.count + offset)
        #expect(error?.message.contains("request 'r1'") == true, "\(String(describing: error))")
    }

    // MARK: QueryOption.encoded

    @Test(arguments: decodable) func anEncodedOptionsNameAndValueAreDecoded(encoded: String, decoded: String) throws {
        let option = QueryOption.encoded("%24filter=\(encoded)")
        #expect(option.name == "$filter")
        #expect(option.value == decoded)
        #expect(try option.rendered() == "%24filter=\(encoded)")  // rendered verbatim
        #expect(QueryOption.encoded("a%2Bb+c%20d=1").name == "a+b+c d")
    }

    @Test(arguments: malformed) func anEncodedOptionWithAMalformedEscapeIsReadAsWrittenAndNotRendered(encoded: String, offset: Int) {
        let option = QueryOption.encoded("$filter=\(encoded)")
        // A property cannot throw: the name and value are given as written…
        #expect(option.name == "$filter")
        #expect(option.value == encoded)
        #expect(QueryOption.encoded("\(encoded)=1").name == encoded)
        // …and the piece is refused where a URL is made of it.
        let error = #expect(throws: ODataError.self) { try option.rendered() }
        #expect(error == .invalidQueryOption)
        #expect(error?.offset == "$filter=".utf8.count + offset)
        #expect { try ODataRequest.get("Products", option).relativeURL() } throws: { ($0 as? ODataError) == .invalidQueryOption }
    }

    @Test func anEncodedOptionMayCarryBytesThatAreNotUTF8() throws {
        // An opaque token: rendered as sent (the server reads it); its value cannot be text, so it is given as written.
        let option = QueryOption.encoded("$skiptoken=%FF%00")
        #expect(try option.rendered() == "$skiptoken=%FF%00")
        #expect(option.value == "%FF%00")
    }
}
