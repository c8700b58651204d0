import ODataCore
import Testing

@testable import ODataQuery

/// OData V2's literal forms read as their V4 values (the V4 printing is what a V2 expression means).
@Suite struct V2LiteralTests {
    @Test(arguments: [
        ("CreatedAt ge datetime'2025-08-08T00:00:00'", "CreatedAt ge 2025-08-08T00:00:00Z"),
        ("CreatedAt ge datetime'2025-08-08T00:00:00Z'", "CreatedAt ge 2025-08-08T00:00:00Z"),
        ("Changed lt datetimeoffset'2025-08-08T10:00:00+02:00'", "Changed lt 2025-08-08T10:00:00+02:00"),
        ("Amount gt 100.50M", "Amount gt 100.50"),
        ("Amount gt 100.25m", "Amount gt 100.25"),
        ("Big eq 9007199254740993L", "Big eq 9007199254740993"),
        ("Ratio lt 1.5D and Ratio gt 0.5f", "Ratio lt 1.5e0 and Ratio gt 0.5e0"),
        ("Id eq guid'005056A5-0004-1ED4-0000-048D331D0001'", "Id eq 005056a5-0004-1ed4-0000-048d331d0001"),
        ("Start eq time'PT13H20M'", "Start eq 13:20:00"),
    ])
    func v2LiteralsReadAsV4(_ v2: String, _ v4: String) throws {
        #expect(try FilterExpression.parse(v2) == FilterExpression.parse(v4), "\(v2)")
    }

    @Test(arguments: ["CreatedAt ge datetime'garbage'", "Amount gt 1.5L", "Amount gt 1e3M", "Start eq time'PT25H'", "Amount gt 12Mx"])
    func badV2LiteralsAreTypedErrors(_ text: String) {
        #expect {
            _ = try FilterExpression.parse(text)
        } throws: { error in (error as? ODataError) == .invalidQueryOption }
    }
}
