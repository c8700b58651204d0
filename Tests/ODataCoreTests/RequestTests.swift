import Foundation
import HTTPTypes
import Testing
@testable import ODataCore

@Suite struct RequestTests {
    @Test(arguments: [
        (QueryOption.filter("Name eq 'O''Neil'"), "$filter=Name%20eq%20'O''Neil'"),
        (.filter("Price add 1 gt 2&x=1#frag"), "$filter=Price%20add%201%20gt%202%26x=1%23frag"),
        (.filter("City eq 'Zürich'"), "$filter=City%20eq%20'Z%C3%BCrich'"),
        (.filter("contains(Name,'100%')"), "$filter=contains(Name,'100%25')"),
        (.filter("A eq 1+2"), "$filter=A%20eq%201%2B2"),
        (.select(["CustomerID", "Address/City"]), "$select=CustomerID,Address/City"),
        (.expand(["Orders($select=OrderID;$top=2)"]), "$expand=Orders($select=OrderID;$top=2)"),
        (.orderBy(["Country desc", "City"]), "$orderby=Country%20desc,City"),
        (.top(5), "$top=5"),
        (.skip(10), "$skip=10"),
        (.count(true), "$count=true"),
        (.search("blue OR \"red car\""), "$search=blue%20OR%20%22red%20car%22"),
        (.custom(name: "sap-client", value: "100"), "sap-client=100"),
        (.custom(name: "@p1", value: "'a b'"), "@p1='a%20b'"),
        (.encoded("$skiptoken=abc%20d"), "$skiptoken=abc%20d"),
        (.custom(name: "a=b&c", value: "x=y"), "a%3Db%26c=x=y"),
    ])
    func rendersQueryOptions(option: QueryOption, expected: String) throws {
        #expect(try option.rendered() == expected)
    }

    @Test func keepsTheOrderGiven() throws {
        let request = ODataRequest.get("Customers", .top(2), .filter("Country eq 'Germany'"), .select(["CustomerID"]))
        #expect(try request.relativeURL() == "Customers?$top=2&$filter=Country%20eq%20'Germany'&$select=CustomerID")
        let reordered = ODataRequest.get("Customers", .select(["CustomerID"]), .top(2))
        #expect(try reordered.relativeURL() == "Customers?$select=CustomerID&$top=2")
    }

    @Test func encodesThePathButKeepsODataCharacters() throws {
        let request = ODataRequest.get("Customers('O''Neil Ltd')/Orders")
        #expect(try request.relativeURL() == "Customers('O''Neil%20Ltd')/Orders")
        #expect(try ODataRequest.get("Products('Caf%C3%A9')").relativeURL() == "Products('Caf%C3%A9')")
        #expect(try ODataRequest.get("Products('Café')").relativeURL() == "Products('Caf%C3%A9')")
    }

    /// A path that needs no encoding is itself; a refused character is named at its offset in Unicode scalars.
    @Test func aRefusedCharacterIsNamedAtItsScalarOffset() throws {
        #expect(try ODataRequest.get("Products(1)/Category").relativeURL() == "Products(1)/Category")
        for (path, offset, text) in [("Prodücts?x", 8, "'?'"), ("Café#1", 4, "'#'"), ("Ünits\u{7F}", 5, "control character")] {
            do {
                _ = try ODataRequest.get(path).relativeURL()
                Issue.record("\(path) was not refused")
            } catch {
                #expect(error == .invalidURL && error.offset == offset && "\(error)".contains(text), "\(error)")
            }
        }
    }

    @Test func joinsTheServiceRootWithOneSlash() throws {
        let request = ODataRequest.get("Customers", .top(1))
        #expect(try request.url(serviceRoot: "http://127.0.0.1:8080/odata") == "http://127.0.0.1:8080/odata/Customers?$top=1")
        #expect(try request.url(serviceRoot: "http://127.0.0.1:8080/odata/") == "http://127.0.0.1:8080/odata/Customers?$top=1")
    }

    @Test(arguments: ["ftp://host/x", "not a url", "/relative", "http://host/svc?x=1", "http://"])
    func rejectsABadServiceRoot(root: String) {
        #expect { try ODataRequest.get("Customers").url(serviceRoot: root) } throws: { ($0 as? ODataError) == .invalidURL }
    }

    @Test(arguments: [
        (ODataRequest.get("Customers?$top=1"), ODataError.invalidURL),
        (.get("Customers#x"), .invalidURL),
        (.get("http://elsewhere/Customers"), .invalidURL),
        (.get("Customers\u{0}"), .invalidURL),
        (.get("Customers", .top(-1)), .invalidQueryOption),
        (.get("Customers", .skip(-5)), .invalidQueryOption),
        (.get("Customers", .select([])), .invalidQueryOption),
        (.get("Customers", .orderBy(["Name", " "])), .invalidQueryOption),
        (.get("Customers", .custom(name: "", value: "x")), .invalidQueryOption),
        (.get("Customers", .encoded("a=b&c=d")), .invalidQueryOption),
    ])
    func badPathsAndOptionsAreTypedErrors(request: ODataRequest, code: ODataError) {
        #expect { try request.relativeURL() } throws: { ($0 as? ODataError) == code }
    }

    @Test func readsUseTheCacheByDefaultAndChangesDoNot() {
        #expect(ODataRequest.get("Customers").isCacheable)
        #expect(!ODataRequest(method: .post, resourcePath: "Customers", body: Data("{}".utf8)).isCacheable)
        #expect(!ODataRequest(resourcePath: "Customers", useCache: false).isCacheable)
        #expect(ODataLiteral.string("O'Neil") == "'O''Neil'")
    }
}
