import Foundation
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// Comparisons OData gives no meaning to are refused before evaluation, with advice; the spelled-out
/// forms give the producer's answer.
@Suite struct FilterTypesTests {
    private func failure(_ provider: OfflineODataProvider, _ query: String) async throws -> OfflineODataError {
        try await #require(throws: OfflineODataError.self) { _ = try await provider.getAll(query) }
    }

    @Test func aDateTimeOffsetIsNotComparedWithADate() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }

        let error = try await failure(provider, "Orders?$filter=OrderDate%20lt%201996-08-01")
        #expect(error == .invalidRequest)
        #expect(error.message.contains("OrderDate (Edm.DateTimeOffset)") && error.message.contains("1996-08-01 (Edm.Date)"))
        #expect(error.message.contains("date(…)"))
        // The same in every position a comparison can take.
        for query in [
            "Orders?$filter=1996-08-01%20gt%20OrderDate",
            "Orders?$filter=Freight%20gt%2010%20and%20not%20(RequiredDate%20eq%201996-08-01)",
            "Orders?$filter=OrderDate%20in%20(1996-07-04,1996-07-05)",
            "Customers?$filter=Orders/any(o:o/OrderDate%20lt%201996-08-01)",
            "Orders?$filter=Customer/Orders/all(o:o/ShippedDate%20ge%201996-08-01)",
            "Orders?$filter=Freight%20gt%201996-08-01",
            "Orders?$filter=OrderDate%20eq%2012:00:00",
            "Orders?$filter=date(OrderDate)%20eq%201996-07-04T00:00:00Z",
        ] {
            let error = try await failure(provider, query)
            #expect(error.message.contains("defines no promotion"), "\(query)")
        }
        let count = try await failure(provider, "Orders/$count?$filter=OrderDate%20lt%201996-08-01")
        #expect(count.message.contains("defines no promotion"), "…/$count too")
        await provider.close()
    }

    @Test func theSpelledOutFormsGiveTheProducersAnswer() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        let expected = try server.read { data in try data.entities(in: "Orders") }
            .filter { ($0["OrderDate"]?.stringValue ?? "9") < "1996-08-01" }.compactMap { $0["OrderID"]?.intValue }
        #expect(expected.count == 22)
        for query in ["Orders?$filter=date(OrderDate)%20lt%201996-08-01", "Orders?$filter=OrderDate%20lt%201996-08-01T00:00:00Z"] {
            let local = try await provider.getAll(query).compactMap { $0["OrderID"]?.intValue }
            #expect(local == expected, "\(query)")
        }
        // Numbers still promote among themselves, and paths the model cannot type are left alone.
        #expect(try await provider.getAll("Orders?$filter=Freight%20gt%20100%20and%20EmployeeID%20lt%203.5").count > 0)
        #expect(try await provider.getAll("Orders?$filter=Customer/CompanyName%20eq%20'Vins%20et%20alcools%20Chevalier'").count == 5)
        await provider.close()
    }
}
