import Foundation
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

@Suite struct LocalChangeTests {
    @Test func changesAreVisibleAtOnceAndQueuedInOrderUncombined() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        #expect(try await provider.hasPendingUpload == false)

        // Create a shipper with a client-given key, update it, delete it: three requests.
        let created = try await provider.execute(.local("POST", "Shippers", body: #"{"ShipperID":4,"CompanyName":"Fast Ferry","Phone":"(503) 555-0000"}"#, tag: "c1"))
        #expect(created.statusCode == 201)
        #expect(try JSON.parse(created.payload)["CompanyName"] == "Fast Ferry")
        #expect(try await provider.get("Shippers(4)")["CompanyName"] == "Fast Ferry")
        _ = try await provider.execute(.local("PATCH", "Shippers(4)", body: #"{"Phone":"(503) 555-1111"}"#))
        let patched = try await provider.get("Shippers(4)")
        #expect(patched["Phone"] == "(503) 555-1111")
        #expect(patched["CompanyName"] == "Fast Ferry")
        _ = try await provider.execute(.local("DELETE", "Shippers(4)"))
        await #expect(throws: OfflineODataError.self) { try await provider.get("Shippers(4)") }
        #expect(try await provider.getAll("Shippers").count == 3)

        // An update of a downloaded customer, PUT semantics on a product.
        _ = try await provider.execute(.local("PATCH", "Customers('ALFKI')", body: #"{"City":"Hamburg"}"#))
        #expect(try await provider.get("Customers('ALFKI')")["City"] == "Hamburg")
        #expect(try await provider.getAll("Customers?$filter=City%20eq%20'Hamburg'").map { $0["CustomerID"] } == ["ALFKI"])
        _ = try await provider.execute(.local("PUT", "Products(1)", body: #"{"ProductName":"Chai Latte","Discontinued":false}"#))
        let product = try await provider.get("Products(1)")
        #expect(product["ProductName"] == "Chai Latte")
        #expect(product["UnitPrice"] == .null, "PUT replaces: properties not given become null")
        #expect(product["ProductID"] == 1)

        let queue = try await provider.pendingRequests().map(\.properties)
        #expect(queue.map { $0["Method"]?.stringValue ?? "" } == ["POST", "PATCH", "DELETE", "PATCH", "PUT"])
        #expect(queue.map { $0["URL"]?.stringValue ?? "" } == ["Shippers", "Shippers(4)", "Shippers(4)", "Customers('ALFKI')", "Products(1)"])
        #expect(queue.map { $0["RequestID"]?.intValue ?? 0 } == [1, 2, 3, 4, 5])
        #expect(queue[0]["CustomTag"] == "c1")
        #expect(queue[1]["Body"] == #"{"Phone":"(503) 555-1111"}"#)
        #expect(try await provider.hasPendingUpload)

        // The queue is an entity set: query it like one.
        let deletes = try await provider.getAll("RequestQueue?$filter=Method%20eq%20'DELETE'")
        #expect(deletes.map { $0["RequestID"] } == [3])
        let counted = try await provider.get("RequestQueue?$count=true&$top=1&$orderby=RequestID%20desc")
        #expect(counted["@odata.count"] == 5)
        #expect(counted["value"]?.arrayValue?.first?["Method"] == "PUT")
        #expect(try await provider.get("RequestQueue(2)")["Method"] == "PATCH")

        // The queue and the changes survive a close and reopen.
        let root = server.serviceRoot
        let parameters = provider.parameters
        await provider.close()
        let reopened = try OfflineODataProvider(serviceRoot: root, parameters: parameters)
        try await reopened.open()
        #expect(try await reopened.pendingRequests().count == 5)
        #expect(try await reopened.get("Customers('ALFKI')")["City"] == "Hamburg")
        // A new request continues the sequence.
        _ = try await reopened.execute(.local("PATCH", "Customers('ANATR')", body: #"{"City":"Puebla"}"#))
        #expect(try await reopened.pendingRequests().last?.properties["RequestID"] == 6)
        await reopened.close()
    }

    @Test func temporaryKeysWorkForReadsAndNavigationAtOnce() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        let response = try await provider.execute(.local("POST", "Orders", body: #"{"Customer@odata.bind":"Customers('ALFKI')","ShipCity":"Berlin","Freight":12.5}"#))
        let created = try JSON.parse(response.payload)
        let orderID = try #require(created["OrderID"]?.intValue)
        #expect(orderID < 0, "a temporary key that cannot collide with a server key")
        #expect(created["CustomerID"] == "ALFKI")
        #expect(try await provider.get("Orders(\(orderID))")["ShipCity"] == "Berlin")
        #expect(try await provider.get("Orders(\(orderID))/Customer")["CompanyName"] == "Alfreds Futterkiste")
        let alfki = try await provider.getAll("Customers('ALFKI')/Orders").compactMap { $0["OrderID"]?.intValue }
        #expect(alfki.contains(orderID))
        #expect(alfki.count == 7)
        // Create through a navigation path: the foreign key comes from the parent.
        let detail = try await provider.execute(.local("POST", "Orders(\(orderID))/Order_Details", body: #"{"ProductID":11,"UnitPrice":14.0,"Quantity":3,"Discount":0}"#))
        #expect(detail.statusCode == 201)
        let details = try await provider.getAll("Orders(\(orderID))/Order_Details")
        #expect(details.map { $0["ProductID"] } == [11])
        #expect(try await provider.get("Order_Details(OrderID=\(orderID),ProductID=11)")["Quantity"] == 3)
        // A second create gets another temporary key; expand reaches the new order.
        let second = try JSON.parse(try await provider.execute(.local("POST", "Orders", body: #"{"CustomerID":"ANATR"}"#)).payload)
        #expect(second["OrderID"]?.intValue != orderID)
        let expanded = try await provider.get("Customers('ALFKI')?$expand=Orders($filter=OrderID%20lt%200)")
        #expect(expanded["Orders"]?.arrayValue?.compactMap { $0["OrderID"]?.intValue } == [orderID])
        // The queue keeps the create as the client sent it (no temporary key in the body).
        let queue = try await provider.pendingRequests().map(\.properties)
        #expect(queue.map { $0["URL"]?.stringValue ?? "" } == ["Orders", "Orders(\(orderID))/Order_Details", "Orders"])
        #expect(queue[0]["AffectedEntity"]?.stringValue == "Orders(\(orderID))")
    }

    @Test func cancelPendingRequestsUndoesEveryLocalChange() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        let before = try await provider.get("Customers('BLAUS')")
        _ = try await provider.execute(.local("PATCH", "Customers('BLAUS')", body: #"{"City":"Berlin"}"#))
        _ = try await provider.execute(.local("PATCH", "Customers('BLAUS')", body: #"{"Phone":"1"}"#))
        _ = try await provider.execute(.local("DELETE", "Employees(1)"))
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"New"}"#))
        _ = try await provider.execute(.local("PATCH", "Products(2)", body: #"{"UnitPrice":99.5}"#))
        _ = try await provider.execute(.local("DELETE", "Products(2)"))
        #expect(try await provider.getAll("Shippers").count == 4)
        try await provider.cancelPendingRequests()
        #expect(try await provider.hasPendingUpload == false)
        #expect(try await provider.get("Customers('BLAUS')") == before)
        #expect(try await provider.get("Employees(1)")["LastName"] == "Davolio")
        #expect(try await provider.getAll("Shippers").count == 3)
        let product = try await provider.get("Products(2)")
        #expect(product["UnitPrice"] != 99.5)
        let expected = try server.read { data in try data.entities(in: "Products") }.map(plain)
        #expect(difference(try await provider.getAll("Products").map(plain), expected) == nil)
    }

    static let badRequests: [(String, String, String, OfflineODataError)] = [
        ("POST", "Customers", #"{"CustomerID":"ALFKI","CompanyName":"Dup"}"#, .entityExists),
        ("POST", "Customers", #"{"CustomerID":"NEWCO","NoSuchProperty":1}"#, .invalidRequest),
        ("POST", "Customers", #"[1,2]"#, .invalidRequest),
        ("POST", "Customers", #"{"CustomerID":"#, .invalidRequest),
        ("PATCH", "Customers('NOONE')", #"{"City":"X"}"#, .entityNotFound),
        ("PATCH", "Customers('ALFKI')", #"{"CustomerID":"OTHER"}"#, .invalidRequest),
        ("PATCH", "Customers", #"{"City":"X"}"#, .invalidRequest),
        ("DELETE", "Orders(1)", "", .entityNotFound),
        ("DELETE", "RequestQueue(1)", "", .invalidRequest),
        ("POST", "NoSuchSet", #"{}"#, .invalidRequest),
        ("POST", "Orders", #"{"Customer@odata.bind":"Customers('NOONE')"}"#, .entityNotFound),
        ("GET", "Customers('ALFKI'", "", .invalidRequest),
        ("GET", "Customers?$filter=City%20eq", "", .invalidRequest),
        ("GET", "Customers?$top=x", "", .invalidRequest),
        ("GET", "Customers('ALFKI')/NoNav", "", .invalidRequest),
        ("GET", "Customers/Orders", "", .invalidRequest),
        ("GET", "Order_Details(10248)", "", .invalidRequest),
    ]

    @Test func badRequestsGetTypedErrorsAndChangeNothing() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        for (method, url, body, code) in Self.badRequests {
            let error = await #expect(throws: OfflineODataError.self, "\(method) \(url)") {
                try await provider.execute(.local(method, url, body: body.isEmpty ? nil : body))
            }
            #expect(error == code, "\(method) \(url): \(error?.description ?? "")")
        }
        #expect(try await provider.hasPendingUpload == false)
        #expect(try await provider.get("Customers('ALFKI')")["CompanyName"] == "Alfreds Futterkiste")
        #expect(try await provider.getAll("Customers").count == 91)
    }

    @Test func closedStoresRefuseWorkAndTheOfflineStoreHasNoCache() async throws {
        let directory = try TemporaryDirectory()
        let provider = try OfflineODataProvider(serviceRoot: "http://127.0.0.1:1/svc", parameters: Northwind.parameters(directory))
        let error = await #expect(throws: OfflineODataError.self) { try await provider.execute(.local("GET", "Customers")) }
        #expect(error == .notOpen)
        await #expect(throws: OfflineODataError.self) { try await provider.hasPendingUpload }
        let passive = await #expect(throws: OfflineODataError.self) { try await provider.setPassiveMode(true) }
        #expect(passive == .unsupported)
        await #expect(throws: OfflineODataError.self) { try await provider.clearTechnicalCache() }
        #expect(throws: OfflineODataError.self) { try OfflineODataProvider(serviceRoot: "ftp://x/", parameters: Northwind.parameters(directory)) }
        #expect(throws: OfflineODataError.self) {
            try OfflineODataProvider(serviceRoot: "http://x/", parameters: OfflineODataParameters(storeName: "a/b"))
        }
        #expect(throws: OfflineODataError.self) {
            try OfflineODataProvider(serviceRoot: "http://x/", parameters: OfflineODataParameters(pageSize: -1))
        }
    }
}
