import Foundation
import ODataCore
import Testing

@testable import OfflineStore

/// OData V2 wire values read by their Edm types for local queries.
@Suite struct V2ValuesTests {
    @Test func datesDecimalsIntegersGuidsAndTimes() {
        #expect(V2Values.typed("/Date(1754611200000)/", as: "Edm.DateTime") == "2025-08-08T00:00:00Z")
        #expect(V2Values.typed("/Date(1754611200123)/", as: "Edm.DateTime") == "2025-08-08T00:00:00.123Z")
        #expect(V2Values.typed("/Date(1358236800000+0060)/", as: "Edm.DateTimeOffset") == "2013-01-15T09:00:00+01:00")
        #expect(V2Values.typed("/Date(-86400000)/", as: "Edm.DateTime") == "1969-12-31T00:00:00Z")
        #expect(V2Values.typed("123991.820", as: "Edm.Decimal") == .double(123991.82))
        #expect(V2Values.typed("9007199254740993", as: "Edm.Int64") == .int(9007199254740993))
        #expect(V2Values.typed("005056A5-0004-1ED4", as: "Edm.Guid") == "005056a5-0004-1ed4")
        #expect(V2Values.typed("PT13H20M5S", as: "Edm.Time") == "13:20:05")
        #expect(V2Values.typed("PT8H0M0.5S", as: "Edm.Time") == "08:00:00.500")
    }

    @Test func valuesInNoV2FormStayAsTheyAre() {
        for (value, type) in [("/Date(abc)/", "Edm.DateTime"), ("/Date(1+60)/", "Edm.DateTime"), ("2025-08-08T00:00:00Z", "Edm.DateTime"),
                              ("12,5", "Edm.Decimal"), ("x", "Edm.Int64"), ("PT25H", "Edm.Time"), ("plain", "Edm.String")] {
            #expect(V2Values.typed(.string(value), as: type) == .string(value), "\(value) as \(type)")
        }
        #expect(V2Values.typed(.int(5), as: "Edm.Decimal") == .int(5))
        #expect(V2Values.typed(.null, as: "Edm.DateTime") == .null)
    }
}
