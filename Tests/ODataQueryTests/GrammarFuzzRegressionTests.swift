import ODataCore
import Testing
@testable import ODataQuery

/// What FuzzFilter's grammar-aware generator (Fuzz/Sources/FuzzFilter/Generator.swift) found: each
/// input must parse, and its printed form must parse back to the same tree.
@Suite struct GrammarFuzzRegressionTests {
    static func roundTrip(_ text: String) throws -> FilterExpression {
        let tree = try FilterExpression.parse(text)
        #expect(try FilterExpression.parse(tree.description) == tree, "\(text) → \(tree.description)")
        return tree
    }

    /// A one-item expression array outside `in` printed as `(a)`, which reads back as `a`.
    @Test func singletonExpressionArraysRoundTrip() throws {
        #expect(try Self.roundTrip("not [Name]") == .unary(.not, .list([.member(["Name"])])))
        #expect(try FilterExpression.parse("not [Name]").description == "not [(Name)]")
        _ = try Self.roundTrip("Price mul [@p]")
        _ = try Self.roundTrip("NS.custom([Tags])")
        _ = try Self.roundTrip("Qty in [[Tags/Flag],Name]")
        // After `in`, `(a)` stays a list of one, and `[1]` stays JSON.
        #expect(try FilterExpression.parse("Name in [Name]").description == "Name in (Name)")
        #expect(try Self.roundTrip("Name in (1)") == .binary(.in, .member(["Name"]), .list([.literal(.int(1))])))
        #expect(try Self.roundTrip("[1]") == .literal(.json([1])))
    }

    /// `-` before a GUID or a time of day was read as the start of a number.
    @Test func negatedGUIDsAndTimesOfDayParse() throws {
        #expect(try Self.roundTrip("-01234567-89ab-cdef-0123-456789abcdef")
            == .unary(.negate, .literal(.guid("01234567-89ab-cdef-0123-456789abcdef"))))
        #expect(try Self.roundTrip("-6d4aB90c-B0ae-170c-aBd3-B810B2530000")
            == .unary(.negate, .literal(.guid("6d4ab90c-b0ae-170c-abd3-b810b2530000"))))
        #expect(try Self.roundTrip("-01:01") == .unary(.negate, .literal(.timeOfDay("01:01:00"))))
        _ = try Self.roundTrip("Born sub -13:20:00.5 eq 0")
        // Negative numbers, negative-year dates and durations keep their signed literal forms.
        #expect(try FilterExpression.parse("-12") == .literal(.int(-12)))
        #expect(try FilterExpression.parse("-2024-01-01") == .literal(.date("-2024-01-01")))
        #expect(try FilterExpression.parse("-P1D") == .literal(.duration("-P1D")))
        #expect(throws: ODataError.self) { try FilterExpression.parse("-2024-13-01") }
    }

    /// A `$root` path in an expression array took the closing `]` into its resource path.
    @Test func rootPathsEndAtAClosingBracket() throws {
        let tree = try Self.roundTrip("[$root/People(1)/Name,Name]")
        guard case .list(let items) = tree, items.count == 2, case .root(_, let members) = items[0] else {
            Issue.record("not a list starting with a $root path: \(tree)")
            return
        }
        #expect(members == ["Name"])
        _ = try Self.roundTrip("Name in [$root/People(ID=1,Name='a]b')/Name]")
        _ = try Self.roundTrip("not [$root/Customers('ALFKI')]")
    }

    /// `NaN` did not equal itself, so a tree with a NaN literal never equalled its own reparse.
    @Test func nanLiteralsEqualThemselves() throws {
        let tree = try Self.roundTrip("Price eq NaN")
        #expect(tree == (try FilterExpression.parse("Price eq NaN")))
        #expect(Set([tree, try FilterExpression.parse("Price eq NaN")]).count == 1)
        #expect(try Self.roundTrip("-NaN") == .literal(.double(.nan)))
        #expect(Literal.double(-.nan).hashValue == Literal.double(.nan).hashValue)
        #expect(Literal.double(.nan) != Literal.double(0))
        #expect(Literal.double(0) == Literal.double(-0.0))
        #expect(Literal.string("a") != Literal.guid("a"))
        let options = try QueryOptions.parse("$filter=Price%20add%20NaN%20ne%203")
        #expect(try QueryOptions.parse(options.queryString) == options)
    }
}
