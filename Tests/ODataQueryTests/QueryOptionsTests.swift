import ODataCore
import Testing
@testable import ODataQuery

@Suite struct QueryOptionsTests {
    @Test func parsesEverySystemOption() throws {
        let options = try QueryOptions.parse(
            "?$filter=Price%20gt%205&$orderby=Name%20desc,ID&$select=Name,Address/City&$expand=Orders($filter=Freight%20gt%2010;$top=2)"
                + "&$top=10&$skip=20&$count=true&$search=blue%20OR%20green&$skiptoken=abc&$deltatoken=d1&$format=json"
                + "&sap-client=100&@p=5&flag")
        #expect(options.filter == bin(.gt, m("Price"), int(5)))
        #expect(options.orderBy == OrderBy([.init(m("Name"), descending: true), .init(m("ID"))]))
        #expect(options.select?.items.map(\.path) == [["Name"], ["Address", "City"]])
        let expand = try #require(options.expand)
        #expect(expand.items.count == 1)
        #expect(expand.items[0].path == ["Orders"])
        #expect(expand.items[0].options.filter == bin(.gt, m("Freight"), int(10)))
        #expect(expand.items[0].options.top == 2)
        #expect(options.top == 10)
        #expect(options.skip == 20)
        #expect(options.count == true)
        #expect(options.search == .or(.term("blue"), .term("green")))
        #expect(options.skipToken == "abc")
        #expect(options.deltaToken == "d1")
        #expect(options.otherSystemOptions == ["$format": "json"])
        #expect(options.customOptions == [.init("sap-client", "100"), .init("flag", "")])
        #expect(options.aliases == ["p": "5"])
    }

    @Test func aliasesAreResolvedWhereverTheyAppear() throws {
        let options = try QueryOptions.parse("$filter=Price%20gt%20@p&$orderby=@o&@p=5&@o=Name")
        #expect(options.filter == bin(.gt, m("Price"), int(5)))
        #expect(options.orderBy == OrderBy([.init(m("Name"))]))
    }

    @Test func percentDecodingKeepsPlusAndDecodesQuotes() throws {
        let options = try QueryOptions.parse("$filter=Name%20eq%20%27O%27%27Neil%27%20and%20D%20lt%202024-01-01T00:00:00%2B01:00")
        #expect(options.filter == bin(.and, bin(.eq, m("Name"), str("O'Neil")),
            bin(.lt, m("D"), lit(.dateTimeOffset("2024-01-01T00:00:00+01:00")))))
        let plus = try QueryOptions.parse("$filter=D%20lt%202024-01-01T00:00:00+01:00")
        #expect(plus.filter == bin(.lt, m("D"), lit(.dateTimeOffset("2024-01-01T00:00:00+01:00"))))
    }

    @Test func systemOptionNamesAreCaseInsensitive() throws {
        let options = try QueryOptions.parse("$TOP=3&$Filter=A%20eq%201")
        #expect(options.top == 3)
        #expect(options.filter == bin(.eq, m("A"), int(1)))
    }

    @Test func nestedExpandOptionsRoundTrip() throws {
        let text = "$expand=Orders($filter=Freight gt 10;$orderby=OrderID desc;$select=OrderID,Freight;$expand=Lines($top=1;$count=true);$skip=1;$top=2),Customer/$ref,Employees/$count,Manager($levels=max),*"
        let options = try QueryOptions.parse(text)
        let items = try #require(options.expand?.items)
        #expect(items.map(\.path) == [["Orders"], ["Customer"], ["Employees"], ["Manager"], ["*"]])
        #expect(items[1].isRef && items[2].isCount)
        #expect(items[3].options.levels == .max)
        #expect(items[0].options.expand?.items[0].options.count == true)
        #expect(options.description == text)
        #expect(try QueryOptions.parse(options.queryString) == options)
    }

    @Test func descriptionRoundTrips() throws {
        let options = try QueryOptions.parse(
            "$filter=contains(Name,'a b')&$orderby=Name desc&$top=1&$count=false&$search=\"big box\" NOT red&x=1&@a=2")
        #expect(try QueryOptions.parse(options.description) == options)
        #expect(try QueryOptions.parse(options.queryString) == options)
        #expect(options.queryString.contains("%20"))
    }

    @Test(arguments: [
        ("$filter=Price%20gt", "in $filter: expected an expression after 'gt'", 9),
        ("$filter=", "in $filter: expected an expression", 0),
        ("$top=-1", "in $top: expected a non-negative integer, found '-1'", 0),
        ("$top=abc", "in $top: expected a non-negative integer, found 'abc'", 0),
        ("$skip=1.5", "in $skip: expected a non-negative integer, found '1.5'", 0),
        ("$count=yes", "in $count: expected true or false", 0),
        ("$top=1&$top=2", "$top given more than once", 0),
        ("$foo=1", "in $foo: unknown system query option", 0),
        ("$filter=%ZZ", "in $filter: invalid percent-encoding", 0),
        ("$orderby=Name%20up", "in $orderby: expected 'asc', 'desc', ',' or the end of $orderby, found 'up'", 5),
        ("$orderby=Name,", "in $orderby: expected an expression in $orderby", 5),
        ("$select=Name,,ID", "in $select: expected a path", 5),
        ("$select=Na-me", "in $select: invalid path segment 'Na-me'", 0),
        ("$expand=Orders($filter=Freight%20gt)", "in $expand: in $filter: expected an expression after 'gt'", 26),
        ("$expand=Orders($top=x)", "in $expand: in $top: expected a non-negative integer, found 'x'", 12),
        ("$expand=Orders($bogus=1)", "in $expand: in $bogus: unknown system query option", 7),
        ("$expand=Orders(top=1)", "in $expand: unknown nested option 'top'", 7),
        ("$expand=Orders($top=1", "in $expand: expected ')'", 13),
        ("$expand=Orders)", "in $expand: unbalanced ')'", 6),
        ("$expand=Orders($top)", "in $expand: expected '=' in nested option", 7),
        ("$search=(blue", "in $search: expected ')' to close '(' at 0", 5),
        ("$search=\"open", "in $search: unterminated search phrase", 0),
        ("$search=", "in $search: expected a search term", 0),
        ("$search=OR%20x", "in $search: expected a search term before 'OR'", 0),
        ("$levels=x", "in $levels: expected a non-negative integer, found 'x'", 0),
        ("$expand=Orders($skiptoken=1)", "in $expand: in $skiptoken: not allowed here", 18),
    ] as [(String, String, Int)])
    func errors(_ query: String, _ message: String, _ offset: Int) {
        #expect {
            _ = try QueryOptions.parse(query)
        } throws: { error in
            guard let error = error as? ODataError else { return false }
            #expect(error == .invalidQueryOption)
            #expect(error.message == message, "\(query): \(error.message)")
            #expect(error.offset == offset, "\(query): \(error)")
            return true
        }
    }

    @Test func searchGrammar() throws {
        #expect(try SearchExpression.parse("a b") == .and(.term("a"), .term("b")))
        #expect(try SearchExpression.parse("a AND b OR c") == .or(.and(.term("a"), .term("b")), .term("c")))
        #expect(try SearchExpression.parse("a OR b c") == .or(.term("a"), .and(.term("b"), .term("c"))))
        #expect(try SearchExpression.parse("NOT (a OR \"b c\")") == .not(.or(.term("a"), .phrase("b c"))))
        for text in ["a b", "a AND b OR c", "a OR (b OR c)", "NOT (a OR \"b \\\"q\\\" c\")", "(a OR b) c", "NOT NOT a"] {
            let parsed = try SearchExpression.parse(text)
            #expect(try SearchExpression.parse(parsed.description) == parsed, "\(text) → \(parsed.description)")
        }
        let entity: JSONObject = ["Name": "Big Blue Box", "Tags": ["sale"], "Nested": ["Note": "Fragile"]]
        #expect(try SearchExpression.parse("blue box").matches(entity))
        #expect(try SearchExpression.parse("\"blue box\"").matches(entity))
        #expect(!(try SearchExpression.parse("\"box blue\"").matches(entity)))
        #expect(try SearchExpression.parse("red OR fragile").matches(entity))
        #expect(try SearchExpression.parse("sale NOT red").matches(entity))
        #expect(!(try SearchExpression.parse("NOT sale").matches(entity)))
    }
}

@Suite struct ResourcePathTests {
    @Test(arguments: [
        ("Customers('ALFKI')/Orders", "Customers('ALFKI')/Orders"),
        ("/Customers('O''Neil')", "Customers('O''Neil')"),
        ("Customers(%27O%27%27Neil%27)", "Customers('O''Neil')"),
        ("Order_Details(OrderID=10248,ProductID=11)", "Order_Details(OrderID=10248,ProductID=11)"),
        ("Order_Details(OrderID = 10248, ProductID = 11)", "Order_Details(OrderID=10248,ProductID=11)"),
        ("Products(1)/Category/$ref", "Products(1)/Category/$ref"),
        ("Products/$count", "Products/$count"),
        ("$batch", "$batch"),
        ("$metadata", "$metadata"),
        ("Products(1)/Name/$value", "Products(1)/Name/$value"),
        ("Items(01234567-89ab-cdef-0123-456789abcdef)", "Items('01234567-89ab-cdef-0123-456789abcdef')"),
        ("Files('a/b(c)')", "Files('a/b(c)')"),
        ("NS.Container/NS.Action()", "NS.Container/NS.Action"),
        ("Customers('ALFKI')/", "Customers('ALFKI')"),
    ] as [(String, String)])
    func parsesAndRenders(_ path: String, _ canonical: String) throws {
        let parsed = try ResourcePath.parse(path)
        #expect(parsed.description == canonical)
    }

    @Test func keysAreJSONValues() throws {
        let single = try ResourcePath.parse("Customers('O''Neil')")
        #expect(single.segments[0].kind == .name("Customers"))
        #expect(single.segments[0].key == .single("O'Neil"))
        let composite = try ResourcePath.parse("Order_Details(OrderID=10248,ProductID=11)/Product")
        #expect(composite.segments[0].key == .named([.init("OrderID", 10248), .init("ProductID", 11)]))
        #expect(composite.segments[0].key?.value(for: "ProductID") == 11)
        #expect(composite.segments[1] == .init(.name("Product")))
        let special = try ResourcePath.parse("Products/$count")
        #expect(special.segments[1].kind == .count)
        #expect(try ResourcePath.parse("Things(1.5)").segments[0].key == .single(1.5))
        #expect(try ResourcePath.parse("Things(true)").segments[0].key == .single(true))
    }

    @Test func rendersCanonicalEntityIDs() throws {
        #expect(try KeyPredicate.render(entitySet: "Customers", key: [("CustomerID", "O'Neil")]) == "Customers('O''Neil')")
        #expect(try KeyPredicate.render(entitySet: "Order_Details", key: [("OrderID", 1), ("ProductID", 2)])
            == "Order_Details(OrderID=1,ProductID=2)")
        #expect(try KeyPredicate.render(entitySet: "Products", key: [("ProductID", 7)]) == "Products(7)")
        #expect(throws: ODataError.self) { try KeyPredicate.render(entitySet: "X", key: []) }
        #expect(throws: ODataError.self) { try KeyPredicate.render(entitySet: "X", key: [("a", ["b": 1])]) }
        // Rendered ids parse back to the same key.
        let id = try KeyPredicate.render(entitySet: "Customers", key: [("CustomerID", "a'b)c/d")])
        #expect(try ResourcePath.parse(id).segments[0].key == .single("a'b)c/d"))
    }

    @Test(arguments: [
        ("", ODataError.invalidURL, "empty resource path", 0),
        ("Customers('ALFKI'", .invalidKey, "unterminated key predicate", 9),
        ("Customers()x", .invalidURL, "expected '/' after a key predicate", 11),
        ("Customers(1,2)", .invalidKey, "composite keys need names (Name=value)", 11),
        ("Customers(A=1,A=2)", .invalidKey, "key property 'A' given twice", 14),
        ("Customers(A=)", .invalidKey, "expected a key value", 12),
        ("Customers(A 1)", .invalidKey, "expected '=' after key property 'A'", 12),
        ("Customers(null)", .invalidKey, "a key value cannot be null", 10),
        ("Customers('a'b)", .invalidKey, "expected the end of the key", 13),
        ("Custo mers", .invalidURL, "invalid path segment 'Custo mers'", 0),
        ("Customers//Orders", .invalidURL, "empty path segment", 10),
        ("$bogus", .invalidURL, "invalid path segment '$bogus'", 0),
        ("Customers(%ZZ)", .invalidURL, "invalid percent-encoding", 10),
    ] as [(String, ODataError, String, Int)])
    func errors(_ path: String, _ code: ODataError, _ message: String, _ offset: Int) {
        #expect {
            _ = try ResourcePath.parse(path)
        } throws: { error in
            guard let error = error as? ODataError else { return false }
            #expect(error == code)
            #expect(error.message == message, "\(path): \(error.message)")
            #expect(error.offset == offset, "\(path): \(error)")
            return true
        }
    }
}
