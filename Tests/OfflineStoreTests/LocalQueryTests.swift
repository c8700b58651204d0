import Foundation
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

@Suite struct LocalQueryTests {
    /// URLs (encoded queries) answered by the producer and the local store alike.
    static let queries = [
        "Customers",
        "Customers?$filter=Country%20eq%20'Germany'",
        "Customers?$filter=startswith(CompanyName,'A')%20or%20City%20eq%20'London'",
        "Customers?$filter=contains(tolower(CompanyName),'market')&$orderby=CompanyName%20desc",
        "Customers?$orderby=Country,City%20desc&$top=15&$skip=5",
        "Customers?$select=CustomerID,CompanyName&$top=10",
        "Customers?$count=true&$filter=Fax%20eq%20null",
        "Customers?$filter=Orders/any(o:o/Freight%20gt%20500)",
        "Customers?$filter=Orders/all(o:o/ShipCountry%20eq%20'Germany')&$orderby=CustomerID",
        "Customers?$expand=Orders($select=OrderID,Freight;$orderby=Freight%20desc;$top=2)&$top=5",
        "Customers('ALFKI')/Orders",
        "Customers('ALFKI')/Orders?$orderby=OrderDate%20desc&$select=OrderID,OrderDate",
        "Orders",
        "Orders?$filter=Freight%20gt%20100%20and%20ShipCountry%20ne%20'USA'&$orderby=Freight",
        "Orders?$filter=year(OrderDate)%20eq%201997%20and%20month(OrderDate)%20le%203",
        "Orders?$filter=EmployeeID%20in%20(1,3,5)&$count=true&$top=20",
        "Orders?$filter=Freight%20mul%202%20gt%20400",
        "Orders?$orderby=ShipCity,OrderID%20desc&$skip=100&$top=50",
        "Orders?$filter=Customer/Country%20eq%20'France'",
        "Orders?$expand=Customer($select=CompanyName)&$filter=OrderID%20lt%2010260",
        "Orders(10248)/Order_Details",
        "Orders?$filter=ShippedDate%20eq%20null&$select=OrderID,ShippedDate",
        "Order_Details?$filter=Quantity%20ge%2050%20and%20Discount%20gt%200&$orderby=UnitPrice%20desc,OrderID",
        "Order_Details?$filter=OrderID%20eq%2010248",
        "Products?$filter=UnitPrice%20gt%2020%20and%20not%20Discontinued&$orderby=UnitPrice%20desc",
        "Products?$filter=Category/CategoryName%20eq%20'Beverages'&$select=ProductName",
        "Products?$expand=Category,Supplier&$filter=SupplierID%20eq%201",
        "Products?$filter=round(UnitPrice)%20eq%2018",
        "Products?$filter=length(ProductName)%20gt%2025",
        "Products?$count=true&$top=0",
        "Employees?$filter=endswith(LastName,'n')&$orderby=LastName",
        "Employees?$select=EmployeeID,FirstName,LastName&$orderby=HireDate",
        "Shippers?$filter=ShipperID%20ge%202",
        "Categories?$expand=Products($filter=UnitsInStock%20eq%200)",
    ]

    @Test func localQueriesAnswerWhatTheProducerAnswers() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        for url in Self.queries {
            let expected = try await Producer.getAll(server, url)
            let localFirst = try await provider.get(url)
            let local = try await provider.getAll(url)
            let mismatch = difference(local.map(plain), expected.entities.map(plain))
            #expect(mismatch == nil, "\(url): \(mismatch ?? "")")
            #expect(localFirst["@odata.count"]?.intValue.map(Int.init) == expected.count, "\(url): @odata.count")
        }
        // Single entities and single-valued navigation.
        for url in ["Customers('ALFKI')", "Orders(10248)/Customer", "Order_Details(OrderID=10248,ProductID=11)",
                    "Products(1)?$select=ProductName,UnitPrice", "Products(1)?$expand=Category", "Orders(10248)/Customer/Orders"] {
            let (status, body) = try await Producer.get(server, url)
            #expect(status == 200, "\(url)")
            let local = try await provider.get(url)
            if let values = body?["value"]?.arrayValue {
                #expect(local["value"]?.arrayValue?.compactMap(\.objectValue).map(plain) == values.compactMap(\.objectValue).map(plain), "\(url)")
            } else {
                #expect(plain(try #require(local.objectValue)) == plain(try #require(body?.objectValue)), "\(url)")
            }
        }
        // /$count.
        let count = try await provider.execute(.local("GET", "Orders/$count?$filter=ShipCountry%20eq%20'Germany'"))
        #expect(String(decoding: count.payload, as: UTF8.self) == "122")
    }

    @Test func localPagingFollowsPageSizeWithNextLinksTheStoreResolves() async throws {
        let (server, directory, provider) = try await Northwind.openStore(pageSize: 40)
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        let first = try await provider.get("Customers?$count=true")
        #expect(first["value"]?.arrayValue?.count == 40)
        #expect(first["@odata.count"] == 91)
        let next = try #require(first["@odata.nextLink"]?.stringValue)
        #expect(next.hasPrefix(server.serviceRoot + "Customers?"))
        let all = try await provider.getAll("Customers")
        #expect(difference(all.map(plain), try server.read { try $0.entities(in: "Customers") }.map(plain)) == nil)
        // Paging within $top and $skip, with a filter and order.
        let url = "Orders?$filter=Freight%20gt%2010&$orderby=Freight%20desc&$skip=7&$top=95"
        let pages = try await provider.getAll(url)
        #expect(pages.count == 95)
        let expected = try await Producer.getAll(server, url).entities
        #expect(difference(pages.map(plain), expected.map(plain)) == nil)
        // Exactly one page: no next link.
        let exact = try await provider.get("Orders?$top=40")
        #expect(exact["@odata.nextLink"] == nil)
        #expect(exact["value"]?.arrayValue?.count == 40)
        // A forged skip token is refused.
        await #expect(throws: OfflineODataError.self) { try await provider.get("Orders?$skiptoken=abc") }
    }

    @Test func nonisolatedReadsAnswerLikeExecute() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        for url in ["Customers('ALFKI')", "Orders?$filter=Freight%20gt%20500&$orderby=Freight", "Customers('ALFKI')/Orders"] {
            let viaActor = try await provider.execute(.local("GET", url))
            let direct = try provider.read(.local("GET", url))
            #expect(direct.statusCode == viaActor.statusCode)
            #expect(direct.payload == viaActor.payload, "\(url)")
        }
        // Concurrent readers while the actor writes.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<50 { _ = try provider.read(.local("GET", "Customers('ALFKI')")) }
                }
            }
            group.addTask {
                for index in 0..<20 { _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: "{\"Phone\":\"\(index)\"}")) }
            }
            try await group.waitForAll()
        }
        #expect(try provider.read(.local("GET", "Customers('ALFKI')")).statusCode == 200)
        #expect(try JSON.parse(try provider.read(.local("GET", "Customers('ALFKI')")).payload)["Phone"] == "19")
        let notRead = #expect(throws: OfflineODataError.self) { try provider.read(.local("DELETE", "Customers('ALFKI')")) }
        #expect(notRead == .invalidRequest)
        await provider.close()
        let closed = #expect(throws: OfflineODataError.self) { try provider.read(.local("GET", "Customers")) }
        #expect(closed == .notOpen)
    }
}
