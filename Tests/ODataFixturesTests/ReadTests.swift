import Foundation
import ODataCore
import Testing

@testable import ODataFixtures

@Suite struct ReadTests {
    @Test func serviceDocumentAndMetadata() async throws {
        try await withServer { server in
            let document = try await Curl.run(server.serviceRoot)
            #expect(document.status == 200)
            #expect(document.headers["odata-version"] == "4.0")
            let names = try document.values().compactMap { $0["name"]?.stringValue }
            #expect(names.contains("Customers") && names.contains("Events") && names.contains("Order_Details"))

            let metadata = try await Curl.run(server.serviceRoot + "$metadata")
            #expect(metadata.status == 200)
            #expect(metadata.headers["content-type"]?.hasPrefix("application/xml") == true)
            #expect(metadata.text.contains("<EntityType Name=\"Event\">"))
            #expect(metadata.text.contains("<EntitySet Name=\"Events\" EntityType=\"NorthwindModel.Event\">"))
        }
    }

    @Test func northwindChecksFromTheDataReadme() async throws {
        try await withServer { server in
            let germany = try await Curl.run(server.serviceRoot + "Customers?$filter=Country%20eq%20'Germany'&$count=true")
            #expect(germany.status == 200)
            #expect(try germany.values().count == 11)
            #expect(try germany.json()["@odata.count"] == 11)
            #expect(try germany.values().allSatisfy { $0["Country"] == "Germany" })

            let countOnly = try await Curl.run(server.serviceRoot + "Customers/$count?$filter=Country%20eq%20'Germany'")
            #expect(countOnly.text == "11")

            let unshipped = try await Curl.run(server.serviceRoot + "Orders?$filter=ShippedDate%20eq%20null&$count=true")
            #expect(try unshipped.values().count == 21)
            #expect(try unshipped.json()["@odata.count"] == 21)
        }
    }

    @Test func pagingOverAllOrders() async throws {
        try await withServer { server in
            var url: String? = server.serviceRoot + "Orders?$count=true"
            var ids: [Int64] = []
            var pages = 0
            while let next = url {
                let page = try await Curl.run(next)
                #expect(page.status == 200)
                ids += try page.values().compactMap { $0["OrderID"]?.intValue }
                url = try page.json()["@odata.nextLink"]?.stringValue
                pages += 1
                if pages == 1 { #expect(try page.json()["@odata.count"] == 830) }
                #expect(pages <= 10)
            }
            #expect(pages == 9)  // default page size 100
            #expect(ids.count == 830)
            #expect(Set(ids).count == 830)

            // A client preference changes the page size and is acknowledged.
            let preferred = try await Curl.run(server.serviceRoot + "Orders", headers: ["Prefer": "odata.maxpagesize=300"])
            #expect(try preferred.values().count == 300)
            #expect(preferred.headers["preference-applied"] == "odata.maxpagesize=300")
            let nextLink = try #require(try preferred.json()["@odata.nextLink"]?.stringValue)
            #expect(nextLink.hasPrefix(server.serviceRoot + "Orders?") && nextLink.contains("$skiptoken=300"))

            // Paging keeps the filter.
            let filtered = try await Curl.run(
                server.serviceRoot + "Orders?$filter=ShipCountry%20eq%20'Germany'", headers: ["Prefer": "odata.maxpagesize=50"])
            let secondURL = try #require(try filtered.json()["@odata.nextLink"]?.stringValue)
            let second = try await Curl.run(secondURL)
            #expect(try (filtered.values() + second.values()).count == 122)
            #expect(try second.values().allSatisfy { $0["ShipCountry"] == "Germany" })

            let bad = try await Curl.run(server.serviceRoot + "Orders?$skiptoken=abc")
            #expect(bad.status == 400)
            let badPrefer = try await Curl.run(server.serviceRoot + "Orders", headers: ["Prefer": "odata.maxpagesize=zero"])
            #expect(badPrefer.status == 400)
        }
    }

    @Test func filteredPagesWalkTheSetOnceAndGiveTheUnpagedAnswer() async throws {
        try await withServer { server in
            let query = "Orders?$filter=Freight%20gt%2050%20and%20ShipCountry%20ne%20'USA'&$select=OrderID,Freight"
            let whole = try await Curl.run(server.serviceRoot + query, headers: ["Prefer": "odata.maxpagesize=1000"])
            let expected = try whole.values().compactMap { $0["OrderID"]?.intValue }
            #expect(expected.count > 200 && expected.count < 830)

            var url: String? = server.serviceRoot + query
            var ids: [Int64] = []
            var pages = 0
            while let next = url {
                let page = try await Curl.run(next, headers: ["Prefer": "odata.maxpagesize=37"])
                #expect(page.status == 200)
                let values = try page.values()
                #expect(values.count <= 37)
                #expect(values.allSatisfy { $0.objectValue?.keys.sorted() == ["@odata.etag", "Freight", "OrderID"] })
                ids += values.compactMap { $0["OrderID"]?.intValue }
                url = try page.json()["@odata.nextLink"]?.stringValue
                pages += 1
                #expect(pages < 40)
            }
            #expect(ids == expected)  // same entities, same order, none twice

            // Options that do not parse fail on an empty collection too (FISSA has no orders).
            #expect(try await Curl.run(server.serviceRoot + "Customers('FISSA')/Orders").status == 200)
            #expect(try await Curl.run(server.serviceRoot + "Customers('FISSA')/Orders?$filter=Freight%20gt").status == 400)
        }
    }

    @Test func topSkipAndCount() async throws {
        try await withServer { server in
            let result = try await Curl.run(server.serviceRoot + "Orders?$skip=10&$top=5&$count=true")
            let ids = try result.values().compactMap { $0["OrderID"]?.intValue }
            #expect(ids == [10258, 10259, 10260, 10261, 10262])
            #expect(try result.json()["@odata.count"] == 830)
            #expect(try result.json()["@odata.nextLink"] == nil)
            #expect(try await Curl.run(server.serviceRoot + "Orders?$top=-1").status == 400)
            #expect(try await Curl.run(server.serviceRoot + "Orders?$count=maybe").status == 400)
            #expect(try await Curl.run(server.serviceRoot + "Orders?$frobnicate=1").status == 400)
        }
    }

    @Test func singleEntitiesByKey() async throws {
        try await withServer { server in
            let customer = try await Curl.run(server.serviceRoot + "Customers('ALFKI')")
            #expect(customer.status == 200)
            let body = try customer.json()
            #expect(body["CompanyName"] == "Alfreds Futterkiste")
            #expect(body["@odata.context"]?.stringValue == server.serviceRoot + "$metadata#Customers/$entity")
            #expect(body["@odata.etag"]?.stringValue == customer.headers["etag"])
            #expect(customer.headers["last-modified"] != nil)

            let detail = try await Curl.run(server.serviceRoot + "Order_Details(OrderID=10248,ProductID=11)")
            #expect(try detail.json()["Quantity"] == 12)
            let reordered = try await Curl.run(server.serviceRoot + "Order_Details(ProductID=11,OrderID=10248)")
            #expect(reordered.status == 200)
            let partial = try await Curl.run(server.serviceRoot + "Order_Details(10248)")
            #expect(partial.status == 400)

            let event = try await Curl.run(server.serviceRoot + "Events(615f74a5-3943-5ce8-b702-29638297e32d)")
            #expect(try event.json()["Title"] == "Call #1 with ALFKI")

            let missing = try await Curl.run(server.serviceRoot + "Customers('NOPE')")
            #expect(missing.status == 404)
            #expect(try missing.errorCode() == "NotFound")
            #expect(try await Curl.run(server.serviceRoot + "Nothing").status == 404)
            #expect(try await Curl.run(server.serviceRoot + "Orders('x')").status == 400)
            #expect(try await Curl.run(server.serviceRoot + "Customers('ALFKI')/Nope").status == 404)
        }
    }

    @Test func stringKeysWithQuotes() async throws {
        try await withServer { server in
            let created = try await Curl.run(
                "POST", server.serviceRoot + "Customers", headers: ["Content-Type": "application/json"],
                body: #"{"CustomerID":"O'BR","CompanyName":"O'Brien & Sons"}"#)
            #expect(created.status == 201)
            #expect(created.headers["location"] == server.serviceRoot + "Customers('O''BR')")
            let read = try await Curl.run(server.serviceRoot + "Customers('O''BR')")
            #expect(read.status == 200)
            #expect(try read.json()["CompanyName"] == "O'Brien & Sons")
            let encoded = try await Curl.run(server.serviceRoot + "Customers(%27O%27%27BR%27)")
            #expect(encoded.status == 200)
        }
    }

    @Test func navigationAndProperties() async throws {
        try await withServer { server in
            let orders = try await Curl.run(server.serviceRoot + "Customers('ALFKI')/Orders?$count=true")
            #expect(try orders.values().count == 6)
            #expect(try orders.values().allSatisfy { $0["CustomerID"] == "ALFKI" })
            #expect(try await Curl.run(server.serviceRoot + "Customers('ALFKI')/Orders/$count").text == "6")
            #expect(try await Curl.run(server.serviceRoot + "Customers('ALFKI')/Events/$count").text == "4")

            let one = try await Curl.run(server.serviceRoot + "Customers('ALFKI')/Orders(10643)")
            #expect(try one.json()["OrderID"] == 10643)
            let foreign = try await Curl.run(server.serviceRoot + "Customers('ALFKI')/Orders(10248)")
            #expect(foreign.status == 404)

            let customer = try await Curl.run(server.serviceRoot + "Orders(10248)/Customer")
            #expect(try customer.json()["CustomerID"] == "VINET")
            let eventCustomer = try await Curl.run(server.serviceRoot + "Events(615f74a5-3943-5ce8-b702-29638297e32d)/Customer")
            #expect(try eventCustomer.json()["CustomerID"] == "ALFKI")

            let property = try await Curl.run(server.serviceRoot + "Customers('ALFKI')/City")
            #expect(try property.json()["value"] == "Berlin")
            let raw = try await Curl.run(server.serviceRoot + "Customers('ALFKI')/City/$value")
            #expect(raw.text == "Berlin")
            let nullProperty = try await Curl.run(server.serviceRoot + "Customers('ALFKI')/Region")
            #expect(nullProperty.status == 204)

            // Filters may navigate, through lambdas and single-valued paths.
            let bigSpenders = try await Curl.run(
                server.serviceRoot + "Customers/$count?$filter=Orders/any(o:o/Freight%20gt%20500)")
            #expect(bigSpenders.text == "8")
            let german = try await Curl.run(server.serviceRoot + "Orders/$count?$filter=Customer/Country%20eq%20'Germany'")
            #expect(german.text == "122")
            let bad = try await Curl.run(server.serviceRoot + "Orders?$filter=Freight%20gt")
            #expect(bad.status == 400)
            #expect(try bad.json()["error"]?["message"]?.stringValue?.contains("$filter") == true)
        }
    }

    @Test func orderSelectAndExpand() async throws {
        try await withServer { server in
            let ordered = try await Curl.run(
                server.serviceRoot + "Customers?$orderby=City%20desc&$top=2&$select=CustomerID,City&$expand=Orders($select=OrderID;$top=1)")
            let values = try ordered.values()
            #expect(values.map { $0["CustomerID"] } == ["VAFFE", "WOLZA"])
            let first = try #require(values.first?.objectValue)
            #expect(first.keys == ["@odata.etag", "CustomerID", "City", "Orders"])
            #expect(first["Orders"]?.arrayValue?.count == 1)
            #expect(first["Orders"]?.arrayValue?.first?["OrderID"] == 10367)

            let single = try await Curl.run(server.serviceRoot + "Orders(10248)?$expand=Customer($select=CompanyName),Order_Details&$select=OrderID")
            let order = try single.json()
            #expect(order["Customer"]?["CompanyName"] == "Vins et alcools Chevalier")
            #expect(order["Order_Details"]?.arrayValue?.count == 3)
            #expect(order["ShipCity"] == nil)
            #expect(try await Curl.run(server.serviceRoot + "Customers('ALFKI')?$top=1").status == 400)
            #expect(try await Curl.run(server.serviceRoot + "Customers?$orderby=").status == 400)

            // Paging follows the requested order.
            let paged = try await Curl.run(server.serviceRoot + "Orders?$orderby=Freight%20desc&$select=OrderID,Freight",
                                           headers: ["Prefer": "odata.maxpagesize=2"])
            let next = try #require(try paged.json()["@odata.nextLink"]?.stringValue)
            let second = try await Curl.run(next)
            let freights = try (paged.values() + second.values()).compactMap { $0["Freight"]?.doubleValue }
            #expect(freights == freights.sorted(by: >))
            #expect(freights.first == 1007.64)
        }
    }

    @Test func serviceRootPathIsConfigurable() async throws {
        try await withServer(FixtureConfiguration(serviceRootPath: "/odata/v4/")) { server in
            #expect(server.serviceRoot == "http://127.0.0.1:\(server.port)/odata/v4/")
            let customers = try await Curl.run(server.serviceRoot + "Customers/$count")
            #expect(customers.text == "91")
            let outside = try await Curl.run(server.baseURL.absoluteString + "Customers")
            #expect(outside.status == 404)
            let context = try await Curl.run(server.serviceRoot + "Regions")
            #expect(try context.json()["@odata.context"]?.stringValue == server.serviceRoot + "$metadata#Regions")
        }
    }

    @Test func serversDoNotShareState() async throws {
        try await withServer { first in
            try await withServer { second in
                #expect(first.port != second.port)
                let deleted = try await Curl.run("DELETE", first.serviceRoot + "Customers('FISSA')")
                #expect(deleted.status == 204)
                #expect(try await Curl.run(first.serviceRoot + "Customers('FISSA')").status == 404)
                #expect(try await Curl.run(second.serviceRoot + "Customers('FISSA')").status == 200)
                try first.faults.add(FaultRule(.fail(status: 503, code: "Busy", message: "busy")))
                #expect(try await Curl.run(first.serviceRoot + "Regions").status == 503)
                #expect(try await Curl.run(second.serviceRoot + "Regions").status == 200)
                #expect(first.counters.executions(method: "DELETE", path: "Customers('FISSA')") == 1)
                #expect(second.counters.executions(method: "DELETE", path: "Customers('FISSA')") == 0)
            }
        }
    }
}
