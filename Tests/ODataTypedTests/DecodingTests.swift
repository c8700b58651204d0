import Foundation
import GWSampleBasicProxies
import NorthwindProxies
import ODataCore
import ODataTyped
import Testing

/// Payloads decode straight into generated types, V4 and V2 forms alike; what does not fit is a typed error
/// naming the property; unknown properties are kept; nothing crashes.
@Suite struct DecodingTests {
    @Test func v4CollectionWithCountNextLinkExpansionAndAnnotations() throws {
        let payload = #"""
        {"@odata.context":"$metadata#Customers","@odata.count":91,"value":[
          {"@odata.etag":"W/\"1\"","CustomerID":"ALFKI","CompanyName":"Alfreds","City":null,"Rating":5,
           "@com.sap.vocabularies.Offline.v1.inErrorState":true,
           "Orders":[{"OrderID":10643,"OrderDate":"1997-08-25T00:00:00Z","Freight":29.46,"ShipCity":"Berlin"}]}
        ],"@odata.nextLink":"Customers?$skiptoken=1"}
        """#
        let result = try QueryResult<Customer>.decode(Data(payload.utf8), entitySet: "Customers")
        #expect(try result.count() == 91 && result.nextLink == "Customers?$skiptoken=1")
        let alfki = try #require(result.entities.first)
        #expect(alfki.customerID == "ALFKI" && alfki.companyName == "Alfreds" && alfki.city == nil)
        #expect(alfki.odata.etag == "W/\"1\"" && alfki.odata.entitySet == "Customers" && alfki.odata.inErrorState)
        #expect(alfki.odata.unknownProperties["Rating"] == 5, "a property the type does not declare is kept")
        let order = try #require(alfki.orders?.first)
        #expect(order.orderID == 10643 && order.freight == Decimal(string: "29.46") && order.shipCity == "Berlin")
        #expect(order.orderDate == Date(timeIntervalSince1970: 872_467_200))
        // Written back, the unknown property goes with a full update; navigation properties do not.
        let written = alfki.properties(for: .v4)
        #expect(written["Rating"] == 5 && written["Orders"] == nil && written["City"] == .null)
    }

    @Test func v2ResultsMetadataDeferredDatesAndNumbersAsStrings() throws {
        let payload = #"""
        {"d":{"__count":"2","results":[
          {"__metadata":{"uri":"http://h/S/SalesOrderSet('0500000001')","type":"GWSAMPLE_BASIC.SalesOrder","etag":"W/\"datetime'2024'\""},
           "SalesOrderID":"0500000001","GrossAmount":"1137.640","CreatedAt":"\/Date(1700000000000)\/",
           "ToLineItems":{"__deferred":{"uri":"http://h/S/SalesOrderSet('0500000001')/ToLineItems"}},
           "ToBusinessPartner":{"BusinessPartnerID":"0100000000","CompanyName":"SAP"}}
        ],"__next":"SalesOrderSet?$skiptoken=1"}}
        """#
        let result = try QueryResult<SalesOrder>.decode(Data(payload.utf8))
        #expect(try result.count() == 2 && result.nextLink == "SalesOrderSet?$skiptoken=1")
        let order = try #require(result.entities.first)
        #expect(order.salesOrderID == "0500000001" && order.grossAmount == Decimal(string: "1137.64"))
        #expect(order.createdAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(order.toLineItems == nil, "a deferred link is not a loaded collection")
        #expect(order.toBusinessPartner?.companyName == "SAP")
        #expect(order.odata.etag == "W/\"datetime'2024'\"" && order.odata.type == "GWSAMPLE_BASIC.SalesOrder")
        #expect(order.odata.unknownProperties.isEmpty)
        // Written for V2: decimals as strings, dates as /Date(…)/.
        let written = order.properties(for: .v2)
        #expect(written["GrossAmount"] == "1137.64" && written["CreatedAt"] == "/Date(1700000000000)/")
    }

    /// A next link in every form producers write it; one that is there but cannot be read fails the decoding.
    @Test(arguments: [
        #"{"value":[{"SalesOrderID":"1"}],"@odata.nextLink":"SalesOrderSet?$skiptoken='C007'"}"#,
        #"{"value":[{"SalesOrderID":"1"}],"odata.nextLink":"SalesOrderSet?$skiptoken='C007'"}"#,
        #"{"d":{"results":[{"SalesOrderID":"1"}],"__next":"SalesOrderSet?$skiptoken='C007'"}}"#,
        #"{"d":{"results":[{"SalesOrderID":"1"}],"__next":{"uri":"SalesOrderSet?$skiptoken='C007'"}}}"#,
        #"{"d":[{"SalesOrderID":"1"}],"__next":{"uri":"SalesOrderSet?$skiptoken='C007'"}}"#,
    ])
    func everyFormOfNextLinkIsRead(payload: String) throws {
        let result = try QueryResult<SalesOrder>.decode(Data(payload.utf8))
        #expect(result.nextLink == "SalesOrderSet?$skiptoken='C007'")
        #expect(result.entities.map(\.salesOrderID) == ["1"])
    }

    @Test(arguments: [
        #"{"d":{"results":[],"__next":42}}"#,
        #"{"d":{"results":[],"__next":{"uri":7}}}"#,
        #"{"d":{"results":[],"__next":""}}"#,
        #"{"value":[],"@odata.nextLink":{"href":"x"}}"#,
    ])
    func aNextLinkThatCannotBeReadFails(payload: String) {
        #expect(throws: DataServiceError.self) { try QueryResult<SalesOrder>.decode(Data(payload.utf8)) }
    }

    @Test func singleEntityV4AndV2() throws {
        let v4 = try NorthwindProxies.Product.decode(Data(#"{"ProductID":1,"ProductName":"Chai","Discontinued":false,"UnitPrice":18}"#.utf8))
        #expect(v4.productID == 1 && v4.productName == "Chai" && v4.unitPrice == 18 && v4.discontinued == false)
        let v2 = try BusinessPartner.decode(Data(#"{"d":{"BusinessPartnerID":"0100000000","CompanyName":"SAP"}}"#.utf8))
        #expect(v2.businessPartnerID == "0100000000" && v2.companyName == "SAP")
    }

    @Test func aValueThatDoesNotFitNamesTypeAndProperty() throws {
        let cases: [(String, String)] = [
            (#"{"value":[{"CustomerID":12}]}"#, "NorthwindModel.Customer.CustomerID: expected a string, found a number"),
            (#"{"value":[{"CustomerID":null}]}"#, "NorthwindModel.Customer.CustomerID: expected a string, found null"),
            (#"{"value":[{"CustomerID":"A","Orders":[{"OrderID":"x"}]}]}"#, "NorthwindModel.Order.OrderID: expected an integer, found the string 'x'"),
            (#"{"value":[{"CustomerID":"A","Orders":[{"OrderID":99999999999}]}]}"#, "NorthwindModel.Order.OrderID: 99999999999 is out of the range of Int32"),
            (#"{"value":[{"CustomerID":"A","Orders":[{"OrderDate":"yesterday"}]}]}"#, "NorthwindModel.Order.OrderDate: 'yesterday' is not a date-time"),
            (#"{"value":{}}"#, "expected a collection, found an object without 'results'"),
            (#"{"value":[{"CustomerID":"A"}"#, "collection.value: expected an element or ']', found the end of the input"),
            (#"{"nothing":1}"#, "expected a collection ('value' or V2 'd'), found none"),
        ]
        for (payload, expected) in cases {
            do {
                _ = try QueryResult<Customer>.decode(Data(payload.utf8))
                Issue.record("\(payload) decoded")
            } catch {
                #expect(error.message.contains(expected), "\(error)")
                #expect(error.offset != nil)
            }
        }
    }

    @Test func randomlyDamagedPayloadsNeverCrash() throws {
        let good = Array(#"{"d":{"results":[{"__metadata":{"uri":"u"},"SalesOrderID":"1","GrossAmount":"1.5","CreatedAt":"\/Date(0)\/","ToBusinessPartner":{"BusinessPartnerID":"2"},"ToLineItems":{"results":[{"SalesOrderID":"1","ItemPosition":"10","Quantity":"3"}]}}]}}"#.utf8)
        _ = try QueryResult<SalesOrder>.decode(good)
        var random = SeededRandom(seed: 7)
        func next(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &random) }
        var decoded = 0
        for _ in 0..<3000 {
            var bytes = good
            for _ in 0...next(3) where bytes.count > 1 {
                switch next(3) {
                case 0: bytes.remove(at: next(bytes.count))
                case 1: let noise = Array("{}[]\",:0a-\\".utf8); bytes.insert(noise[next(noise.count)], at: next(bytes.count))
                default: bytes = Array(bytes.prefix(1 + next(bytes.count - 1)))
                }
            }
            if (try? QueryResult<SalesOrder>.decode(bytes)) != nil { decoded += 1 }
        }
        #expect(decoded < 3000)
    }

    @Test func codableRoundTripUsesODataNames() throws {
        let customer = Customer(customerID: "ALFKI", companyName: "Alfreds", city: "Berlin")
        let json = try JSONEncoder().encode(customer)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains("\"CustomerID\":\"ALFKI\"") && text.contains("\"City\":\"Berlin\""))
        #expect(try JSONDecoder().decode(Customer.self, from: json) == customer)
    }
}
