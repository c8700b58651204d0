import ODataCore
import Testing
@testable import ODataQuery

/// Shorthands for expected trees.
func m(_ path: String) -> FilterExpression { .member(path.split(separator: "/").map(String.init)) }
func lit(_ l: Literal) -> FilterExpression { .literal(l) }
func int(_ i: Int64) -> FilterExpression { .literal(.int(i)) }
func str(_ s: String) -> FilterExpression { .literal(.string(s)) }
func bin(_ op: BinaryOperator, _ l: FilterExpression, _ r: FilterExpression) -> FilterExpression { .binary(op, l, r) }
func call(_ name: String, _ args: FilterExpression...) -> FilterExpression { .function(name, args) }

struct ParseCase: CustomTestStringConvertible, Sendable {
    let text: String
    let tree: FilterExpression
    let canonical: String?
    init(_ text: String, _ tree: FilterExpression, canonical: String? = nil) {
        self.text = text
        self.tree = tree
        self.canonical = canonical
    }
    var testDescription: String { text }
}

struct ErrorCase: CustomTestStringConvertible, Sendable {
    let text: String
    let message: String
    let offset: Int
    init(_ text: String, _ message: String, at offset: Int) {
        self.text = text
        self.message = message
        self.offset = offset
    }
    var testDescription: String { text }
}

let operatorCases: [ParseCase] = BinaryOperator.allCases.filter { $0 != .in && $0 != .has }.map { op in
    ParseCase("A \(op.rawValue) B", bin(op, m("A"), m("B")))
} + [
    ParseCase("Color has NS.Color'Red'", bin(.has, m("Color"), lit(.enumMember(type: "NS.Color", value: "Red")))),
    ParseCase("Name in ('a','b')", bin(.in, m("Name"), .list([str("a"), str("b")]))),
    ParseCase("Name in ('a')", bin(.in, m("Name"), .list([str("a")]))),
    ParseCase("Name in ()", bin(.in, m("Name"), .list([]))),
    ParseCase(#"Name in ["a","b"]"#, bin(.in, m("Name"), lit(.json(["a", "b"])))),
    ParseCase("Name in @list", bin(.in, m("Name"), .alias("list"))),
    ParseCase("not A", .unary(.not, m("A"))),
    ParseCase("not(A)", .unary(.not, m("A")), canonical: "not A"),
    ParseCase("-A", .unary(.negate, m("A"))),
    ParseCase("- 5", int(-5), canonical: "-5"),
    ParseCase("-(A add B)", .unary(.negate, bin(.add, m("A"), m("B")))),
]

let precedenceCases: [ParseCase] = [
    ParseCase("A or B and C", bin(.or, m("A"), bin(.and, m("B"), m("C")))),
    ParseCase("(A or B) and C", bin(.and, bin(.or, m("A"), m("B")), m("C"))),
    ParseCase("A and B or C", bin(.or, bin(.and, m("A"), m("B")), m("C"))),
    ParseCase("A eq B and C ne D", bin(.and, bin(.eq, m("A"), m("B")), bin(.ne, m("C"), m("D")))),
    ParseCase("A add B mul C", bin(.add, m("A"), bin(.mul, m("B"), m("C")))),
    ParseCase("(A add B) mul C", bin(.mul, bin(.add, m("A"), m("B")), m("C"))),
    ParseCase("A sub B sub C", bin(.sub, bin(.sub, m("A"), m("B")), m("C"))),
    ParseCase("A sub (B sub C)", bin(.sub, m("A"), bin(.sub, m("B"), m("C")))),
    ParseCase("A div B mod C", bin(.mod, bin(.div, m("A"), m("B")), m("C"))),
    ParseCase("A add B gt C", bin(.gt, bin(.add, m("A"), m("B")), m("C"))),
    ParseCase("A lt B eq true", bin(.eq, bin(.lt, m("A"), m("B")), lit(.bool(true)))),
    ParseCase("not A eq B", bin(.eq, .unary(.not, m("A")), m("B"))),
    ParseCase("not (A eq B)", .unary(.not, bin(.eq, m("A"), m("B")))),
    ParseCase("not A in (1,2)", .unary(.not, bin(.in, m("A"), .list([int(1), int(2)])))),
    ParseCase("-A mul B", bin(.mul, .unary(.negate, m("A")), m("B"))),
    ParseCase("A mul -B", bin(.mul, m("A"), .unary(.negate, m("B")))),
    ParseCase("A add B in (1)", bin(.add, m("A"), bin(.in, m("B"), .list([int(1)])))),
    ParseCase("(A add B) in (1)", bin(.in, bin(.add, m("A"), m("B")), .list([int(1)]))),
    ParseCase("((A))", m("A"), canonical: "A"),
    ParseCase("A or (B or C)", bin(.or, m("A"), bin(.or, m("B"), m("C")))),
    ParseCase("A  eq\t1", bin(.eq, m("A"), int(1)), canonical: "A eq 1"),
]

let literalCases: [ParseCase] = [
    ParseCase("A eq null", bin(.eq, m("A"), lit(.null))),
    ParseCase("A eq true", bin(.eq, m("A"), lit(.bool(true)))),
    ParseCase("A eq false", bin(.eq, m("A"), lit(.bool(false)))),
    ParseCase("A eq 42", bin(.eq, m("A"), int(42))),
    ParseCase("A eq -42", bin(.eq, m("A"), int(-42))),
    ParseCase("A eq 9223372036854775807", bin(.eq, m("A"), int(.max))),
    ParseCase("A eq 99999999999999999999", bin(.eq, m("A"), lit(.decimal("99999999999999999999")))),
    ParseCase("A eq 1.50", bin(.eq, m("A"), lit(.decimal("1.50")))),
    ParseCase("A eq -0.5", bin(.eq, m("A"), lit(.decimal("-0.5")))),
    ParseCase("A eq 1.5e3", bin(.eq, m("A"), lit(.double(1500))), canonical: "A eq 1500.0e0"),
    ParseCase("A eq 2E-2", bin(.eq, m("A"), lit(.double(0.02))), canonical: "A eq 0.02e0"),
    ParseCase("A eq INF", bin(.eq, m("A"), lit(.double(.infinity)))),
    ParseCase("A eq -INF", bin(.eq, m("A"), lit(.double(-.infinity)))),
    ParseCase("A eq 'it''s'", bin(.eq, m("A"), str("it's"))),
    ParseCase("A eq ''", bin(.eq, m("A"), str(""))),
    ParseCase("A eq 'Straße ü'", bin(.eq, m("A"), str("Straße ü"))),
    ParseCase("A eq 01234567-89AB-cdef-0123-456789abcdef",
        bin(.eq, m("A"), lit(.guid("01234567-89ab-cdef-0123-456789abcdef"))),
        canonical: "A eq 01234567-89ab-cdef-0123-456789abcdef"),
    ParseCase("A eq abcdef01-2345-6789-abcd-ef0123456789", bin(.eq, m("A"), lit(.guid("abcdef01-2345-6789-abcd-ef0123456789")))),
    ParseCase("A eq 2024-02-29", bin(.eq, m("A"), lit(.date("2024-02-29")))),
    ParseCase("A eq 13:20", bin(.eq, m("A"), lit(.timeOfDay("13:20:00"))), canonical: "A eq 13:20:00"),
    ParseCase("A eq 13:20:05.250", bin(.eq, m("A"), lit(.timeOfDay("13:20:05.25"))), canonical: "A eq 13:20:05.25"),
    ParseCase("A eq 2024-02-29T13:20:00Z", bin(.eq, m("A"), lit(.dateTimeOffset("2024-02-29T13:20:00Z")))),
    ParseCase("A eq 2024-02-29T13:20:00.5+01:30", bin(.eq, m("A"), lit(.dateTimeOffset("2024-02-29T13:20:00.5+01:30")))),
    ParseCase("A eq 2024-02-29T13:20-05:00", bin(.eq, m("A"), lit(.dateTimeOffset("2024-02-29T13:20:00-05:00"))),
        canonical: "A eq 2024-02-29T13:20:00-05:00"),
    ParseCase("A eq duration'P1DT2H3M4.5S'", bin(.eq, m("A"), lit(.duration("P1DT2H3M4.5S")))),
    ParseCase("A eq duration'-PT90M'", bin(.eq, m("A"), lit(.duration("-PT1H30M"))), canonical: "A eq duration'-PT1H30M'"),
    ParseCase("A eq P2D", bin(.eq, m("A"), lit(.duration("P2D"))), canonical: "A eq duration'P2D'"),
    ParseCase("A eq binary'T0RhdGE='", bin(.eq, m("A"), lit(.binary("T0RhdGE"))), canonical: "A eq binary'T0RhdGE'"),
    ParseCase("A eq X'4F44'", bin(.eq, m("A"), lit(.binary("T0Q"))), canonical: "A eq binary'T0Q'"),
    ParseCase("A eq NS.Color'Red,Blue'", bin(.eq, m("A"), lit(.enumMember(type: "NS.Color", value: "Red,Blue")))),
    ParseCase("A eq geography'SRID=4326;Point(1 2)'", bin(.eq, m("A"), lit(.geo(kind: "geography", text: "SRID=4326;Point(1 2)")))),
    ParseCase(#"A in [1,{"k":"v"}]"#, bin(.in, m("A"), lit(.json([1, ["k": "v"]])))),
    ParseCase("A eq @p", bin(.eq, m("A"), .alias("p"))),
]

let pathCases: [ParseCase] = [
    ParseCase("Address/City eq 'Berlin'", bin(.eq, m("Address/City"), str("Berlin"))),
    ParseCase("$it/Name eq 'x'", bin(.eq, m("$it/Name"), str("x"))),
    ParseCase("Orders/$count gt 2", bin(.gt, m("Orders/$count"), int(2))),
    ParseCase("Customer/NS.VIP/Level eq 1", bin(.eq, m("Customer/NS.VIP/Level"), int(1))),
    ParseCase("Orders/any(o:o/Freight gt 10)",
        .lambda(Lambda(path: ["Orders"], kind: .any, variable: "o", predicate: bin(.gt, m("o/Freight"), int(10))))),
    ParseCase("Orders/all(o: o/Lines/any(l:l/Qty gt 1 and o/Id eq $it/Id))",
        .lambda(Lambda(path: ["Orders"], kind: .all, variable: "o", predicate:
            .lambda(Lambda(path: ["o", "Lines"], kind: .any, variable: "l", predicate:
                bin(.and, bin(.gt, m("l/Qty"), int(1)), bin(.eq, m("o/Id"), m("$it/Id"))))))),
        canonical: "Orders/all(o:o/Lines/any(l:l/Qty gt 1 and o/Id eq $it/Id))"),
    ParseCase("Tags/any()", .lambda(Lambda(path: ["Tags"], kind: .any, variable: nil, predicate: nil))),
    ParseCase("Tags/any(t:$this eq 'x')",
        .lambda(Lambda(path: ["Tags"], kind: .any, variable: "t", predicate: bin(.eq, m("$this"), str("x"))))),
    ParseCase("$root/Customers('ALFKI')/Country eq Country",
        bin(.eq, .root(ResourcePath(segments: [.init(.name("Customers"), key: .single("ALFKI"))]), ["Country"]), m("Country"))),
    ParseCase("inErrorState()", call("inErrorState")),
    ParseCase("NS.isPreferred(Name,1)", .function("NS.isPreferred", [m("Name"), int(1)])),
]

let functionCases: [ParseCase] = [
    ParseCase("contains(Name,'a')", call("contains", m("Name"), str("a"))),
    ParseCase("startswith(Name, 'a')", call("startswith", m("Name"), str("a")), canonical: "startswith(Name,'a')"),
    ParseCase("endswith(Name,'a')", call("endswith", m("Name"), str("a"))),
    ParseCase("length(Name) gt 3", bin(.gt, call("length", m("Name")), int(3))),
    ParseCase("indexof(Name,'a') eq 1", bin(.eq, call("indexof", m("Name"), str("a")), int(1))),
    ParseCase("substring(Name,1) eq 'b'", bin(.eq, call("substring", m("Name"), int(1)), str("b"))),
    ParseCase("substring(Name,1,2) eq 'b'", bin(.eq, call("substring", m("Name"), int(1), int(2)), str("b"))),
    ParseCase("matchesPattern(Name,'^A.*e$')", call("matchesPattern", m("Name"), str("^A.*e$"))),
    ParseCase("tolower(Name) eq 'a'", bin(.eq, call("tolower", m("Name")), str("a"))),
    ParseCase("toupper(Name) eq 'A'", bin(.eq, call("toupper", m("Name")), str("A"))),
    ParseCase("trim(Name) eq 'A'", bin(.eq, call("trim", m("Name")), str("A"))),
    ParseCase("concat(concat(City,', '),Country) eq 'x'",
        bin(.eq, call("concat", call("concat", m("City"), str(", ")), m("Country")), str("x"))),
    ParseCase("year(D) eq 2024", bin(.eq, call("year", m("D")), int(2024))),
    ParseCase("month(D) eq 2", bin(.eq, call("month", m("D")), int(2))),
    ParseCase("day(D) eq 29", bin(.eq, call("day", m("D")), int(29))),
    ParseCase("hour(D) eq 13", bin(.eq, call("hour", m("D")), int(13))),
    ParseCase("minute(D) eq 20", bin(.eq, call("minute", m("D")), int(20))),
    ParseCase("second(D) eq 5", bin(.eq, call("second", m("D")), int(5))),
    ParseCase("fractionalseconds(D) lt 0.5", bin(.lt, call("fractionalseconds", m("D")), lit(.decimal("0.5")))),
    ParseCase("totalseconds(duration'PT1M') eq 60", bin(.eq, call("totalseconds", lit(.duration("PT1M"))), int(60))),
    ParseCase("date(D) eq 2024-02-29", bin(.eq, call("date", m("D")), lit(.date("2024-02-29")))),
    ParseCase("time(D) lt 12:00:00", bin(.lt, call("time", m("D")), lit(.timeOfDay("12:00:00")))),
    ParseCase("totaloffsetminutes(D) eq 60", bin(.eq, call("totaloffsetminutes", m("D")), int(60))),
    ParseCase("D lt now()", bin(.lt, m("D"), call("now"))),
    ParseCase("D gt mindatetime()", bin(.gt, m("D"), call("mindatetime"))),
    ParseCase("D lt maxdatetime()", bin(.lt, m("D"), call("maxdatetime"))),
    ParseCase("round(P) eq 2", bin(.eq, call("round", m("P")), int(2))),
    ParseCase("floor(P) eq 2", bin(.eq, call("floor", m("P")), int(2))),
    ParseCase("ceiling(P) eq 2", bin(.eq, call("ceiling", m("P")), int(2))),
    ParseCase("cast(P,Edm.String) eq '2'", bin(.eq, call("cast", m("P"), .typeName("Edm.String")), str("2"))),
    ParseCase("isof(NS.Manager)", call("isof", .typeName("NS.Manager"))),
    ParseCase("isof(P,Edm.Int32)", call("isof", m("P"), .typeName("Edm.Int32"))),
    ParseCase("geo.distance(Location,geography'SRID=0;Point(1 2)') lt 5",
        bin(.lt, call("geo.distance", m("Location"), lit(.geo(kind: "geography", text: "SRID=0;Point(1 2)"))), int(5))),
    ParseCase("geo.length(Route) gt 1", bin(.gt, call("geo.length", m("Route")), int(1))),
    ParseCase("geo.intersects(Location,Area)", call("geo.intersects", m("Location"), m("Area"))),
    ParseCase(#"hassubset(Tags,["a"])"#, call("hassubset", m("Tags"), lit(.json(["a"])))),
]

let errorCases: [ErrorCase] = [
    ErrorCase("Price gt", "expected an expression after 'gt'", at: 9),
    ErrorCase("Price gt ", "expected an expression after 'gt'", at: 9),
    ErrorCase("Price gt and", "expected an expression after 'gt', found 'and'", at: 9),
    ErrorCase("Price gt)", "expected an expression after 'gt'", at: 8),
    ErrorCase("", "expected an expression", at: 0),
    ErrorCase("   ", "expected an expression", at: 3),
    ErrorCase("Price", "", at: -1),
    ErrorCase("Price eq 5 Name", "expected an operator or the end of the expression, found 'Name'", at: 11),
    ErrorCase("Price eq 'abc", "unterminated string literal", at: 9),
    ErrorCase("(Price eq 5", "expected ')' to close '(' at 0, found the end", at: 11),
    ErrorCase("Price eq 5)", "expected an operator or the end of the expression, found ')'", at: 10),
    ErrorCase("contains(Name)", "function 'contains' takes 2 arguments, got 1", at: 0),
    ErrorCase("now(1)", "function 'now' takes 0 arguments, got 1", at: 0),
    ErrorCase("substring('a')", "function 'substring' takes 2 or 3 arguments, got 1", at: 0),
    ErrorCase("contains(Name,'a'", "expected ',' or ')' in call of 'contains', found the end", at: 17),
    ErrorCase("Price eq 2024-13-01", "invalid date or date-time literal", at: 9),
    ErrorCase("Price eq 2023-02-29", "invalid date or date-time literal", at: 9),
    ErrorCase("Price eq 25:00", "invalid time-of-day literal", at: 9),
    ErrorCase("Price eq 1.", "expected digits after the decimal point", at: 11),
    ErrorCase("Price eq 1e", "expected digits in the exponent", at: 11),
    ErrorCase("Price eq 12abc", "unexpected character 'a' in a number", at: 11),
    ErrorCase("Price eq #", "unexpected character '#'", at: 9),
    ErrorCase("Price eq duration'P'", "invalid duration literal", at: 18),
    ErrorCase("Price eq binary'***'", "invalid binary literal", at: 16),
    ErrorCase("Price eq foo'x'", "unknown literal prefix 'foo'", at: 9),
    ErrorCase("Color has NS.Color'1a'", "invalid enum value '1a'", at: 19),
    ErrorCase("Price eq [1,", "unterminated JSON literal", at: 9),
    ErrorCase("Price eq [1,]", "malformed JSON literal", at: 12),
    ErrorCase("Price eq @", "expected a parameter alias name after '@'", at: 10),
    ErrorCase("Price eq5", "expected an operator or the end of the expression, found 'eq5'", at: 6),
    ErrorCase("Price eq(5)", "expected whitespace after 'eq'", at: 8),
    ErrorCase("not", "expected an expression after 'not'", at: 4),
    ErrorCase("-", "expected an expression after '-'", at: 1),
    ErrorCase("Orders/any(o o/X)", "expected ':' after range variable 'o'", at: 13),
    ErrorCase("Orders/any(:o/X)", "expected a range variable in 'any'", at: 11),
    ErrorCase("Orders/all()", "expected a range variable in 'all'", at: 11),
    ErrorCase("Orders/any(o:)", "expected a predicate after 'o:'", at: 13),
    ErrorCase("Orders/any(o:o/X eq 1", "expected ')' to close 'any', found the end", at: 21),
    ErrorCase("Address/", "expected a property name after '/'", at: 8),
    ErrorCase("Address/City(1)", "unexpected '(' after 'City'", at: 12),
    ErrorCase("()", "expected an expression after '('", at: 1),
    ErrorCase("Name in (1,", "expected an expression", at: 11),
    ErrorCase("cast(P,1)", "the last argument of 'cast' must be a qualified type name", at: 0),
    ErrorCase("$root", "expected '/' after '$root'", at: 5),
    ErrorCase("$root/Customers('a", "invalid $root path: unterminated key predicate", at: 15),
    ErrorCase("A eq 1 and", "expected an expression after 'and'", at: 11),
    ErrorCase("A eq 1 or or", "expected an expression after 'or', found 'or'", at: 10),
    ErrorCase("A add B mul", "expected an expression after 'mul'", at: 12),
]

@Suite struct FilterParserTests {
    static let validCases = operatorCases + precedenceCases + literalCases + pathCases + functionCases

    @Test(arguments: operatorCases) func operators(_ c: ParseCase) throws { try check(c) }
    @Test(arguments: precedenceCases) func precedence(_ c: ParseCase) throws { try check(c) }
    @Test(arguments: literalCases) func literals(_ c: ParseCase) throws { try check(c) }
    @Test(arguments: pathCases) func paths(_ c: ParseCase) throws { try check(c) }
    @Test(arguments: functionCases) func functions(_ c: ParseCase) throws { try check(c) }

    func check(_ c: ParseCase) throws {
        let tree = try FilterExpression.parse(c.text)
        #expect(tree == c.tree, "\(c.text)")
        #expect(tree.description == (c.canonical ?? c.text))
    }

    @Test(arguments: validCases) func roundTrip(_ c: ParseCase) throws {
        let tree = try FilterExpression.parse(c.text)
        let printed = tree.description
        let reparsed = try FilterExpression.parse(printed)
        #expect(reparsed == tree, "\(c.text) → \(printed)")
        #expect(reparsed.description == printed)
    }

    @Test(arguments: errorCases.filter { $0.offset >= 0 })
    func errors(_ c: ErrorCase) {
        #expect {
            _ = try FilterExpression.parse(c.text)
        } throws: { error in
            guard let error = error as? ODataError else { return false }
            #expect(error == .invalidQueryOption)
            #expect(error.message.hasPrefix(c.message), "\(c.text): \(error.message)")
            #expect(error.offset == c.offset, "\(c.text): \(error)")
            return true
        }
    }

    @Test func issueExampleReadsAsPromised() {
        #expect {
            _ = try FilterExpression.parse("Price gt")
        } throws: { error in
            (error as? ODataError)?.description == "invalidQueryOption: expected an expression after 'gt' at 9"
        }
    }

    @Test func aliasesAreSubstituted() throws {
        let tree = try FilterExpression.parse("Price gt @p and Name in @names", aliases: ["p": "5", "names": "('a','b')"])
        #expect(tree == bin(.and, bin(.gt, m("Price"), int(5)), bin(.in, m("Name"), .list([str("a"), str("b")]))))
        #expect(throws: ODataError.self) {
            try FilterExpression.parse("Price gt @p", aliases: ["p": "5 gt"])
        }
        // An alias referring to itself ends with an error, not a hang.
        #expect(throws: ODataError.self) {
            try FilterExpression.parse("Price gt @p", aliases: ["p": "@p"])
        }
    }

    @Test func depthLimitGivesAClearError() throws {
        let deep = String(repeating: "(", count: 5000) + "A" + String(repeating: ")", count: 5000)
        #expect {
            try FilterExpression.parse(deep)
        } throws: { error in
            (error as? ODataError)?.message == "expression nested deeper than 100 levels"
        }
        let chain = (0..<5000).map { "A eq \($0)" }.joined(separator: " or ")
        #expect(throws: ODataError.self) { try FilterExpression.parse(chain) }
        let nots = String(repeating: "not ", count: 5000) + "A"
        #expect(throws: ODataError.self) { try FilterExpression.parse(nots) }
        // Just inside the limit is fine.
        let ok = (0..<50).map { "A eq \($0)" }.joined(separator: " or ")
        #expect(try FilterExpression.parse(ok).description == ok)
    }
}

/// Every canonical function called with one argument too many fails at the function name.
@Suite struct FunctionArityTests {
    static let names = ExpressionParser.canonicalFunctions.keys.sorted()

    @Test(arguments: names) func tooManyArguments(_ name: String) {
        let arity = ExpressionParser.canonicalFunctions[name]!
        let arguments = (0...arity.upperBound).map { _ in "1" }.joined(separator: ",")
        let text = "X eq \(name)(\(arguments))"
        #expect {
            _ = try FilterExpression.parse(text)
        } throws: { error in
            guard let error = error as? ODataError else { return false }
            return error.offset == 5 && error.message.hasPrefix("function '\(name)' takes ")
                && error.message.hasSuffix("got \(arity.upperBound + 1)")
        }
    }

    @Test(arguments: names.filter { ExpressionParser.canonicalFunctions[$0]!.lowerBound > 0 })
    func tooFewArguments(_ name: String) {
        let arity = ExpressionParser.canonicalFunctions[name]!
        let arguments = (0..<(arity.lowerBound - 1)).map { _ in "1" }.joined(separator: ",")
        #expect(throws: ODataError.self) { try FilterExpression.parse("\(name)(\(arguments))") }
    }

    @Test func operatorNamesAreNotFunctions() {
        #expect {
            try FilterExpression.parse("and(1) eq 2")
        } throws: { ($0 as? ODataError)?.message == "'and' is an operator, not a function" }
    }
}
