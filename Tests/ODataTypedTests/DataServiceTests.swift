import Foundation
import HTTPTypes
import NorthwindProxies
import ODataCore
import ODataTesting
import ODataTyped
import OnlineStore
import Testing

/// A provider that answers every request with one canned response: for the logic of `DataService` alone.
private final class CannedProvider: DataServiceProvider {
    let response: ODataResponse?
    init(_ response: ODataResponse?) { self.response = response }
    var serviceRoot: String { "http://127.0.0.1:9/" }
    func executeRequest(_ request: ODataRequest) async throws -> ODataResponse? { response }
}

/// `DataService` over the online store and a scripted back end: server-driven paging, counts, passive mode,
/// and what a full replacement sends.
@Suite(.serialized) struct DataServiceTests {
    /// 230 orders, one in three shipped to Germany.
    static let orders: [JSONValue] = (0..<230).map { index in
        ["OrderID": .int(Int64(10_248 + index)), "CustomerID": "ALFKI", "ShipCountry": .string(index % 3 == 0 ? "Germany" : "France")]
    }

    /// `Orders` as a service with server-driven paging answers it: at most 100 per page with a next link
    /// (`$skiptoken`), `$filter` on the ship country, `$top`, and the count with `$count=true`.
    static func pagedOrders(_ backEnd: ScriptedTransport) {
        backEnd.on("GET", "Orders") { request in
            let items = URLComponents(string: request.url)?.queryItems ?? []
            func option(_ name: String) -> String? { items.first { $0.name == name }?.value }
            var rows = Self.orders
            if let filter = option("$filter") {
                guard filter == "ShipCountry eq 'Germany'" else { return .odataError(status: 501, code: "Unscripted", message: filter) }
                rows = rows.filter { $0.objectValue?["ShipCountry"] == "Germany" }
            }
            let start = Int(option("$skiptoken") ?? "0") ?? 0
            let top = option("$top").flatMap { Int($0) }
            let end = min(rows.count, start + min(top ?? 100, 100))
            var next: String?
            if top == nil && end < rows.count {
                var components = URLComponents(string: request.url)
                components?.queryItems = items.filter { $0.name != "$skiptoken" } + [URLQueryItem(name: "$skiptoken", value: String(end))]
                next = components?.string
            }
            return .collection(Array(rows[start..<end]), count: option("$count") == "true" ? rows.count : nil, nextLink: next)
        }
    }

    @Test func pagesCountsAndPassiveMode() async throws {
        let backEnd = ScriptedTransport()
        Self.pagedOrders(backEnd)
        try await backEnd.withOnlineStore { store in
            let service = NorthwindService(provider: store)
            let total = Self.orders.count

            // One page at a time, with the total count.
            let first = try await service.dataService.executeQuery(DataQuery<Order>().from(NorthwindService.orders).orderBy(Order.orderID).count())
            #expect(try first.count() == total && first.entities.count == 100 && first.nextLink != nil)
            let second = try #require(try await service.dataService.nextPage(of: first))
            #expect(second.entities.first?.orderID == first.entities.last.map { $0.orderID + 1 })
            #expect(second.entities.allSatisfy { $0.odata.entitySet == "Orders" })

            // fetch follows every next link.
            let all = try await service.fetchOrders()
            #expect(all.count == total && Set(all.map(\.orderID)).count == total && total > 200)

            // A count without entities.
            let counted = try await service.dataService.executeQuery(DataQuery<Order>().from(NorthwindService.orders)
                .filter(Order.shipCountry == "Germany").count().top(0))
            #expect(counted.entities.isEmpty)
            #expect(try counted.count() == Self.orders.filter { $0.objectValue?["ShipCountry"] == "Germany" }.count)
            let uncounted = try await service.dataService.executeQuery(DataQuery<Order>().from(NorthwindService.orders).top(1))
            #expect(throws: DataServiceError.self) { try uncounted.count() }

            // Passive mode: what was read is answered from the cache; what never was is `.noData`.
            try store.setMode(.passive)
            let cached = try await service.dataService.executeQuery(DataQuery<Order>().from(NorthwindService.orders).orderBy(Order.orderID).count())
            #expect(cached.entities.map(\.orderID) == first.entities.map(\.orderID))
            do {
                _ = try await service.fetchCustomers(matching: DataQuery().filter(Customer.city == "Nowhere"))
                Issue.record("a read nothing was cached for answered")
            } catch let error as DataServiceError {
                #expect(error == .noData)
            }
        }
        #expect(backEnd.unmatchedRequests.isEmpty)
    }

    @Test func aQueryWithoutASetAndAnEntityWithoutKeysAreTypedErrors() async throws {
        let service = DataService(provider: CannedProvider(nil))
        do {
            _ = try await service.executeQuery(DataQuery<Customer>())
            Issue.record("a query without a set ran")
        } catch let error as DataServiceError {
            #expect(error == .invalidQuery)
        }
        do {
            try await service.deleteEntity(Customer(), in: NorthwindService.customers)
            Issue.record("a delete with no answer succeeded")
        } catch let error as DataServiceError {
            #expect(error == .noData, "an empty string key is still a key: the canned provider answered nothing")
        }
    }

    /// Through the online store to a scripted back end: what the typed layer sends is what goes on the wire.
    @Test func aFullReplacementSendsTheUnknownPropertiesItRead() async throws {
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "", reply: .status(200))  // the CSRF token fetch before the first write
            .on("PUT", "Customers('ALFKI')", reply: .status(204, headerFields: [.eTag: "W/\"2\""]))
            .on("PATCH", "Customers('ALFKI')", reply: .status(204, headerFields: [.eTag: "W/\"3\""]))
        try await backEnd.withOnlineStore { store in
            let service = NorthwindService(provider: store)
            var customer = try Customer.decode(Data(#"{"@odata.etag":"W/\"1\"","CustomerID":"ALFKI","CompanyName":"Alfreds","Rating":5}"#.utf8))
            customer.city = "Berlin"
            let replaced = try await service.dataService.replaceEntity(customer, in: NorthwindService.customers)
            #expect(replaced.odata.etag == "W/\"2\"")
            let request = try #require(backEnd.requests("PUT", "Customers('ALFKI')").first)
            #expect(request.headerFields[.ifMatch] == "W/\"1\"")
            let sent = try #require(request.body)
            let body = try #require(try JSON.parse(sent).objectValue)
            #expect(body["Rating"] == 5 && body["City"] == "Berlin" && body["CompanyName"] == "Alfreds")
            #expect(body["Orders"] == nil, "navigation properties are not sent")

            // A partial update leaves the unknown property alone.
            _ = try await service.updateCustomer(customer) { $0.companyName = "Alfreds Futterkiste" }
            let patches = try backEnd.requests("PATCH", "Customers('ALFKI')").map { try JSON.parse($0.body ?? Data()).objectValue }
            #expect(patches == [["CompanyName": "Alfreds Futterkiste"]])
        }
        #expect(backEnd.unmatchedRequests.isEmpty)
    }
}
