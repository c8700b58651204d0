import ODataCore
import Testing
@testable import ODataQuery

struct EvalCase: CustomTestStringConvertible, Sendable {
    let filter: String
    let expected: Bool
    init(_ filter: String, _ expected: Bool) {
        self.filter = filter
        self.expected = expected
    }
    var testDescription: String { "\(filter) → \(expected)" }
}

/// One entity with every kind of value the evaluator meets.
let sample: JSONObject = [
    "ID": 7, "Name": "Alfreds Futterkiste", "Price": 21.5, "Stock": 0, "Nothing": nil, "Flag": true,
    "Big": 9_007_199_254_740_993, "Ratio": "NaN", "Huge": "INF", "Exact": "12.25",
    "Ordered": "1996-07-04T00:00:00Z", "Shipped": "1996-07-04T02:30:00+02:00", "Born": "1980-02-29",
    "Opens": "08:30:00", "Wait": "PT2H", "Key": "01234567-89ab-cdef-0123-456789abcdef",
    "Color": "Red,Blue", "Raw": "T0RhdGE",
    "Address": ["City": "Berlin", "Geo": ["Lat": 52.5]],
    "Tags": ["a", "b", "c"], "Scores": [3, 9, 27], "Empty": [],
    "Orders": [
        ["OrderID": 1, "Freight": 32.38, "Lines": [["Qty": 1], ["Qty": 5]]],
        ["OrderID": 2, "Freight": 11.5, "Lines": [["Qty": 2]]],
    ],
    "Manager": ["@odata.type": "#NS.Manager", "Level": 3],
]

let nullCases: [EvalCase] = [
    EvalCase("Nothing eq null", true),
    EvalCase("null eq null", true),
    EvalCase("Nothing ne null", false),
    EvalCase("Missing eq null", true),
    EvalCase("Nothing eq 1", false),
    EvalCase("Nothing ne 1", true),
    EvalCase("Nothing gt 1", false),
    EvalCase("Nothing lt 1", false),
    EvalCase("Nothing le null", false),
    EvalCase("not (Nothing gt 1)", true),
    EvalCase("Nothing add 1 eq null", true),
    EvalCase("contains(Nothing,'a') eq null", true),
    EvalCase("not contains(Nothing,'a')", false),
    EvalCase("contains(Nothing,'a') or ID eq 7", true),
    EvalCase("contains(Nothing,'a') and ID eq 8", false),
    EvalCase("contains(Nothing,'a') and ID eq 7", false),
    EvalCase("length(Nothing) eq null", true),
    EvalCase("Nothing in (null,1)", true),
    EvalCase("Address/Missing/Deeper eq null", true),
    EvalCase("Flag", true),
    EvalCase("Nothing", false),
    EvalCase("@unset eq null", true),
]

let numericCases: [EvalCase] = [
    EvalCase("ID eq 7", true),
    EvalCase("ID eq 7.0", true),
    EvalCase("ID eq 7.0e0", true),
    EvalCase("ID lt 7.5", true),
    EvalCase("Price gt 21", true),
    EvalCase("Price eq 21.5", true),
    EvalCase("Price eq 2.15e1", true),
    EvalCase("21 lt Price", true),
    EvalCase("Big eq 9007199254740993", true),
    EvalCase("Big ne 9007199254740992", true),
    EvalCase("ID add 1 eq 8", true),
    EvalCase("ID sub 10 eq -3", true),
    EvalCase("ID mul 2 eq 14", true),
    EvalCase("ID div 2 eq 3", true),
    EvalCase("ID divby 2 eq 3.5", true),
    EvalCase("ID mod 4 eq 3", true),
    EvalCase("-ID eq -7", true),
    EvalCase("Price add 1 eq 22.5", true),
    EvalCase("Price mul 2 eq 43", true),
    EvalCase("Price mod 2 eq 1.5", true),
    EvalCase("ID div 0 eq null", true),
    EvalCase("9223372036854775807 add 1 eq null", true),
    EvalCase("Ratio eq NaN", true),
    EvalCase("Huge eq INF", true),
    EvalCase("Huge gt 1e308", true),
    EvalCase("Exact eq 12.25", true),
    EvalCase("Exact gt 12", true),
    EvalCase("round(Price) eq 22", true),
    EvalCase("round(-2.5) eq -3", true),
    EvalCase("floor(Price) eq 21", true),
    EvalCase("ceiling(Price) eq 22", true),
    EvalCase("ID add 0.5 eq 7.5", true),
    EvalCase("Stock eq 0 and Price gt 0", true),
    EvalCase("cast(Price,Edm.Int32) eq null", true),
    EvalCase("cast(ID,Edm.String) eq '7'", true),
    EvalCase("cast(ID,Edm.Double) eq 7", true),
    EvalCase("isof(ID,Edm.Int32)", true),
    EvalCase("isof(Price,Edm.Int32)", false),
    EvalCase("isof(Name,Edm.String)", true),
]

let stringCases: [EvalCase] = [
    EvalCase("Name eq 'Alfreds Futterkiste'", true),
    EvalCase("Name eq 'alfreds futterkiste'", false),
    EvalCase("Name gt 'Alfred'", true),
    EvalCase("Name lt 'B'", true),
    EvalCase("Name lt 'a'", true),
    EvalCase("contains(Name,'Futter')", true),
    EvalCase("contains(Name,'futter')", false),
    EvalCase("startswith(Name,'Alf')", true),
    EvalCase("endswith(Name,'kiste')", true),
    EvalCase("length(Name) eq 19", true),
    EvalCase("indexof(Name,'Futter') eq 8", true),
    EvalCase("indexof(Name,'zzz') eq -1", true),
    EvalCase("substring(Name,8) eq 'Futterkiste'", true),
    EvalCase("substring(Name,0,7) eq 'Alfreds'", true),
    EvalCase("substring(Name,100) eq ''", true),
    EvalCase("tolower(Name) eq 'alfreds futterkiste'", true),
    EvalCase("toupper(Name) eq 'ALFREDS FUTTERKISTE'", true),
    EvalCase("trim('  x  ') eq 'x'", true),
    EvalCase("concat(Name,'!') eq 'Alfreds Futterkiste!'", true),
    EvalCase("concat(Address/City,concat(', ',Name)) eq 'Berlin, Alfreds Futterkiste'", true),
    EvalCase("matchesPattern(Name,'^A.*e$')", true),
    EvalCase("matchesPattern(Name,'^a')", false),
    EvalCase("Name in ('x','Alfreds Futterkiste')", true),
    EvalCase("Name in ('x','y')", false),
    EvalCase(#"Name in ["Alfreds Futterkiste"]"#, true),
    EvalCase("Address/City eq 'Berlin'", true),
    EvalCase("Address/Geo/Lat gt 52", true),
    EvalCase("Key eq 01234567-89AB-CDEF-0123-456789ABCDEF", true),
    EvalCase("Color has NS.Color'Red'", true),
    EvalCase("Color has NS.Color'Red,Blue'", true),
    EvalCase("Color has NS.Color'Green'", false),
    EvalCase("Raw eq binary'T0RhdGE='", true),
    EvalCase("Raw eq X'4F44617461'", true),
]

let temporalCases: [EvalCase] = [
    EvalCase("Ordered eq 1996-07-04T00:00:00Z", true),
    EvalCase("Ordered eq 1996-07-04T02:00:00+02:00", true),
    EvalCase("Ordered eq 1996-07-03T20:00:00-04:00", true),
    EvalCase("Ordered lt 1996-07-04T00:00:01Z", true),
    EvalCase("Shipped gt Ordered", true),
    EvalCase("Shipped eq 1996-07-04T00:30:00Z", true),
    EvalCase("Shipped sub Ordered eq duration'PT30M'", true),
    EvalCase("Ordered add duration'P1D' eq 1996-07-05T00:00:00Z", true),
    EvalCase("Ordered sub duration'PT1H' lt 1996-07-04T00:00:00Z", true),
    EvalCase("year(Ordered) eq 1996", true),
    EvalCase("month(Ordered) eq 7", true),
    EvalCase("day(Ordered) eq 4", true),
    EvalCase("hour(Shipped) eq 2", true),
    EvalCase("minute(Shipped) eq 30", true),
    EvalCase("second(Shipped) eq 0", true),
    EvalCase("fractionalseconds(2020-01-01T00:00:00.25Z) eq 0.25", true),
    EvalCase("totaloffsetminutes(Shipped) eq 120", true),
    EvalCase("date(Shipped) eq 1996-07-04", true),
    EvalCase("time(Shipped) eq 02:30:00", true),
    EvalCase("Born eq 1980-02-29", true),
    EvalCase("Born lt 1980-03-01", true),
    EvalCase("year(Born) eq 1980", true),
    EvalCase("Born add duration'P1D' eq 1980-03-01", true),
    EvalCase("Opens lt 09:00", true),
    EvalCase("hour(Opens) eq 8", true),
    EvalCase("Wait eq duration'PT120M'", true),
    EvalCase("Wait gt duration'PT1H59M'", true),
    EvalCase("totalseconds(Wait) eq 7200", true),
    EvalCase("Ordered lt now()", true),
    EvalCase("Ordered gt mindatetime()", true),
    EvalCase("Ordered lt maxdatetime()", true),
    EvalCase("Ordered eq 1996-07-04", false),
    EvalCase("cast(Born,Edm.DateTimeOffset) eq 1980-02-29T00:00:00Z", true),
]

let lambdaCases: [EvalCase] = [
    EvalCase("Tags/any(t:t eq 'b')", true),
    EvalCase("Tags/any(t:t eq 'z')", false),
    EvalCase("Tags/all(t:length(t) eq 1)", true),
    EvalCase("Tags/any()", true),
    EvalCase("Empty/any()", false),
    EvalCase("Empty/all(e:e eq 1)", true),
    EvalCase("Missing/any(e:e eq 1)", false),
    EvalCase("Scores/all(s:s mod 3 eq 0)", true),
    EvalCase("Scores/any(s:s gt 20)", true),
    EvalCase("Orders/any(o:o/Freight gt 30)", true),
    EvalCase("Orders/all(o:o/Freight gt 30)", false),
    EvalCase("Orders/any(o:o/Lines/any(l:l/Qty ge 5))", true),
    EvalCase("Orders/all(o:o/Lines/any(l:l/Qty ge 2))", true),
    EvalCase("Orders/all(o:o/Lines/all(l:l/Qty ge 2))", false),
    EvalCase("Orders/any(o:o/OrderID eq $it/ID sub 5)", true),
    EvalCase("Orders/any(o:$this/OrderID eq 2)", true),
    EvalCase("Orders/any(o:o/Lines/any(l:l/Qty eq o/OrderID))", true),
    EvalCase("Orders/$count eq 2", true),
    EvalCase("Tags/$count gt 2", true),
    EvalCase("length(Tags) eq 3", true),
    EvalCase("Scores/any(s:s in (9,10))", true),
    EvalCase("hassubset(Tags,[\"c\",\"a\"])", true),
    EvalCase("hassubset(Tags,[\"d\"])", false),
    EvalCase("hassubsequence(Tags,[\"a\",\"c\"])", true),
    EvalCase("hassubsequence(Tags,[\"c\",\"a\"])", false),
    EvalCase("isof(Manager,NS.Manager)", true),
    EvalCase("isof(Manager,NS.Employee)", false),
    EvalCase("Manager/NS.Manager/Level eq 3", true),
    EvalCase("Manager/NS.Other/Level eq 3", false),
]

@Suite struct FilterEvaluationTests {
    func evaluate(_ filter: String, _ entity: JSONObject = sample) throws -> Bool {
        try CompiledFilter(parsing: filter).matches(entity)
    }

    @Test(arguments: nullCases) func nullSemantics(_ c: EvalCase) throws {
        #expect(try evaluate(c.filter) == c.expected)
    }

    @Test(arguments: numericCases) func numericPromotion(_ c: EvalCase) throws {
        #expect(try evaluate(c.filter) == c.expected)
    }

    @Test(arguments: stringCases) func strings(_ c: EvalCase) throws {
        #expect(try evaluate(c.filter) == c.expected)
    }

    @Test(arguments: temporalCases) func temporal(_ c: EvalCase) throws {
        #expect(try evaluate(c.filter) == c.expected)
    }

    @Test(arguments: lambdaCases) func lambdas(_ c: EvalCase) throws {
        #expect(try evaluate(c.filter) == c.expected)
    }

    /// Every case negated gives the opposite answer when the result is not null.
    @Test(arguments: numericCases + stringCases + temporalCases + lambdaCases)
    func negationFlips(_ c: EvalCase) throws {
        #expect(try evaluate("not (\(c.filter))") == !c.expected)
    }

    @Test func nullLogicIsThreeValued() throws {
        let filter = try CompiledFilter(parsing: "Flag and contains(Nothing,'a')")
        #expect(filter.evaluate(sample) == .null)
        #expect(try CompiledFilter(parsing: "not contains(Nothing,'a')").evaluate(sample) == .null)
        #expect(try CompiledFilter(parsing: "contains(Nothing,'a') or true").evaluate(sample) == .bool(true))
        #expect(try CompiledFilter(parsing: "contains(Nothing,'a') and false").evaluate(sample) == .bool(false))
    }

    @Test func customFunctionsAreInjected() throws {
        var functions = FunctionTable()
        try functions.register("inErrorState") { call in
            .bool(call.entity["@inErrorState"] == .bool(true))
        }
        try functions.register("NS.twice", arity: 1...1) { call in
            guard case .int(let i) = call.arguments[0] else { return .null }
            return .int(i * 2)
        }
        let filter = try CompiledFilter(parsing: "inErrorState()", functions: functions)
        #expect(filter.matches(["@inErrorState": true, "ID": 1]))
        #expect(!filter.matches(["ID": 1]))
        #expect(try CompiledFilter(parsing: "NS.twice(ID) eq 14", functions: functions).matches(sample))
        #expect(try CompiledFilter(parsing: "not inErrorState() and ID eq 7", functions: functions).matches(sample))

        #expect {
            try CompiledFilter(parsing: "inErrorState()")
        } throws: { ($0 as? ODataError)?.message == "unknown function 'inErrorState'" }
        #expect(throws: ODataError.self) { try CompiledFilter(parsing: "inErrorState(1)", functions: functions) }
        #expect(throws: ODataError.self) { try functions.register("contains") { _ in .null } }
    }

    @Test func unsupportedAndInvalidFunctionsFailAtCompile() {
        #expect {
            try CompiledFilter(parsing: "geo.distance(A,B) lt 1")
        } throws: { ($0 as? ODataError)?.message == "function 'geo.distance' is not supported in evaluation" }
        #expect(throws: ODataError.self) { try CompiledFilter(parsing: "matchesPattern(Name,'(')") }
    }

    struct Resolver: NavigationResolver {
        func related(_ entity: JSONObject, navigationProperty: String) -> JSONValue? {
            guard navigationProperty == "Orders", case .int(let id)? = entity["ID"] else { return nil }
            return .array([["OrderID": .int(id * 10), "Freight": 5]])
        }
        func resource(at path: ResourcePath) -> JSONValue? {
            path.description == "Customers('ALFKI')" ? ["Country": "Germany"] : nil
        }
    }

    @Test func navigationIsResolvedWhenNotEmbedded() throws {
        let filter = try CompiledFilter(parsing: "Orders/any(o:o/OrderID eq 10)")
        #expect(filter.matches(["ID": 1], navigation: Resolver()))
        #expect(!filter.matches(["ID": 2], navigation: Resolver()))
        #expect(!filter.matches(["ID": 1]))
        let count = try CompiledFilter(parsing: "Orders/$count eq 1")
        #expect(count.matches(["ID": 3], navigation: Resolver()))
        let root = try CompiledFilter(parsing: "$root/Customers('ALFKI')/Country eq Country")
        #expect(root.matches(["Country": "Germany"], navigation: Resolver()))
        #expect(!root.matches(["Country": "France"], navigation: Resolver()))
        #expect(!root.matches(["Country": "Germany"]))
    }

    @Test func slotCacheSurvivesDifferentMemberOrders() throws {
        let filter = try CompiledFilter(parsing: "A eq 1 and B eq 2")
        #expect(filter.matches(["A": 1, "B": 2]))
        #expect(filter.matches(["B": 2, "A": 1]))
        #expect(filter.matches(["X": 0, "B": 2, "Y": 0, "A": 1]))
        #expect(!filter.matches(["B": 2]))
        #expect(filter.matches(["A": 1, "B": 2]))
    }

    @Test func compiledFiltersAreUsableFromManyTasks() async throws {
        let filter = try CompiledFilter(parsing: "ID mod 3 eq 0 and Name ne 'x'")
        let counts = await withTaskGroup(of: Int.self) { group in
            for task in 0..<4 {
                group.addTask {
                    (0..<3000).filter { i in
                        let entity: JSONObject = task % 2 == 0 ? ["ID": .int(Int64(i)), "Name": "a"] : ["Name": "a", "ID": .int(Int64(i))]
                        return filter.matches(entity)
                    }.count
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(counts == [1000, 1000, 1000, 1000])
    }
}

@Suite struct MoreEvaluationTests {
    @Test(arguments: [
        EvalCase("Flags has 4", true),
        EvalCase("Flags has 6", true),
        EvalCase("Flags has 8", false),
        EvalCase("'b' in Tags", true),
        EvalCase("'z' in Tags", false),
        EvalCase("3 in Scores", true),
        EvalCase("Missing in (1,2)", false),
        EvalCase("ID in (7.0,8)", true),
        EvalCase("ID in (1,2)", false),
        EvalCase("Name in ('x',Name)", true),
        EvalCase("Color has NS.Color'Blue'", true),
        EvalCase("Nothing has NS.Color'Blue'", false),
        EvalCase("concat(ID,'x') eq '7x'", true),
        EvalCase("length(Name) gt length(Address/City)", true),
        EvalCase("Big sub 1 eq 9007199254740992", true),
        EvalCase("-9223372036854775808 sub 1 eq null", true),
        EvalCase("ID mul 1.5 eq 10.5", true),
        EvalCase("Price div 0 eq null", true),
        EvalCase("Price divby 2 eq 10.75", true),
        EvalCase("-Price eq -21.5", true),
        EvalCase("-Wait eq duration'-PT2H'", true),
        EvalCase("Wait add duration'PT1H' eq duration'PT3H'", true),
        EvalCase("Wait mul 2 eq duration'PT4H'", true),
        EvalCase("Born sub 1980-02-28 eq duration'P1D'", true),
        EvalCase("Born add duration'PT1H' eq null", true),
        EvalCase("isof(Ordered,Edm.DateTimeOffset)", true),
        EvalCase("isof(Born,Edm.Date)", true),
        EvalCase("isof(Key,Edm.Guid)", true),
        EvalCase("isof(Name,Edm.Guid)", false),
        EvalCase("cast(Key,Edm.Guid) eq 01234567-89ab-cdef-0123-456789abcdef", true),
        EvalCase("cast('true',Edm.Boolean)", true),
        EvalCase("cast(Opens,Edm.TimeOfDay) eq 08:30", true),
        EvalCase("cast(Wait,Edm.Duration) eq duration'PT2H'", true),
        EvalCase("cast(300,Edm.Byte) eq null", true),
        EvalCase("cast(-5,Edm.SByte) eq -5", true),
        EvalCase("cast(40000,Edm.Int16) eq null", true),
        EvalCase("Ordered eq 1996-07-04T00:00:00.000000001Z", false),
        EvalCase("Ordered lt 1996-07-04T00:00:00.000000001Z", true),
        EvalCase("$it/ID eq 7", true),
        EvalCase("$this/ID eq 7", true),
    ])
    func more(_ c: EvalCase) throws {
        var entity = sample
        entity["Flags"] = 6
        #expect(try CompiledFilter(parsing: c.filter).matches(entity) == c.expected)
    }

    @Test func evaluateReturnsValuesOfAnyType() throws {
        #expect(try CompiledFilter(parsing: "ID mul 2").evaluate(sample) == 14)
        #expect(try CompiledFilter(parsing: "Price add 0.5").evaluate(sample) == 22.0)
        #expect(try CompiledFilter(parsing: "toupper(Address/City)").evaluate(sample) == "BERLIN")
        #expect(try CompiledFilter(parsing: "Ordered add duration'P1D'").evaluate(sample) == "1996-07-05T00:00:00Z")
        #expect(try CompiledFilter(parsing: "1 div 0").evaluate(sample) == .null)
        #expect(try CompiledFilter(parsing: "ID eq 7").evaluate(sample) == true)
        #expect(try CompiledFilter(parsing: "INF").evaluate(sample) == "INF")
    }

    @Test func treesBuiltInCodeAreCheckedAtCompile() throws {
        #expect(throws: ODataError.self) { try CompiledFilter(.function("matchesPattern", [.member(["Name"])])) }
        #expect(throws: ODataError.self) { try CompiledFilter(.function("contains", [str("a"), str("b"), str("c")])) }
        #expect(throws: ODataError.self) { try CompiledFilter(.member([])) }
        #expect(throws: ODataError.self) { try CompiledFilter(.typeName("Edm.String")) }
        #expect(throws: ODataError.self) { try CompiledFilter(.function("cast", [.member(["A"]), .member(["B"])])) }
        #expect(try CompiledFilter(.binary(.in, int(1), .list([]))).matches([:]) == false)
    }

    @Test func batchFilterAgreesWithMatches() throws {
        let filter = try CompiledFilter(parsing: "Orders/any(o:o/Freight gt 30) or ID eq 2")
        let entities: [JSONObject] = [sample, ["ID": 2], ["ID": 3], sample]
        #expect(filter.filter(entities) == entities.filter { filter.matches($0) })
        #expect(filter.filter(entities).count == 3)
    }
}
