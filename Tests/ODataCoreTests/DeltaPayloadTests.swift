import Foundation
import ODataCore
import Testing

/// Every delta form the OData JSON Format allows, read from the examples of OData JSON Format Version 4.01
/// (section numbers of the OASIS Standard) and their OData 4.0 spellings.
@Suite struct DeltaPayloadTests {
    private func read(_ json: String) throws -> ODataEntitySet { try ODataPayload.decodeEntitySet(Data(json.utf8)) }

    /// §15.1 Delta Responses, the 4.01 example: control information without the `odata.` prefix.
    @Test func section15_1_odata401() throws {
        let set = try read(##"""
        {"@context":"http://host/service/$metadata#Customers/$delta","@count":3,
         "value":[{"@id":"Customers('BOTTM')","ContactName":"Susan Halvenstern"},
                  {"@removed":{"reason":"deleted"},"@id":"Customers('ANTON')"},
                  {"@id":"Customers('ALFKI')","ContactName":"Blake Smithe"}],
         "@deltaLink":"Customers?$deltatoken=8015"}
        """##)
        #expect(set.entities.map(\.id) == ["Customers('BOTTM')", "Customers('ANTON')", "Customers('ALFKI')"])
        #expect(set.entities.map(\.isRemoved) == [false, true, false])
        #expect(set.entities[1].removedReason == "deleted" && set.entities[1].properties.isEmpty)
        #expect(set.entities[0].properties["ContactName"] == "Susan Halvenstern")
        #expect(set.count == 3 && set.deltaLink == "Customers?$deltatoken=8015")
        #expect(set.context == "http://host/service/$metadata#Customers/$delta")
    }

    /// §15.1 Delta Responses, the 4.0 example: the deleted entity is a `$deletedEntity` context with `@odata.id`.
    @Test func section15_1_odata40() throws {
        let set = try read(##"""
        {"@odata.context":"http://host/service/$metadata#Customers/$delta","@odata.count":3,
         "value":[{"@odata.id":"Customers('BOTTM')","ContactName":"Susan Halvenstern"},
                  {"@odata.context":"#Customers/$deletedEntity","@odata.id":"Customers('ANTON')"},
                  {"@odata.id":"Customers('ALFKI')","ContactName":"Blake Smithe"}],
         "@odata.deltaLink":"Customers?$deltatoken=8015"}
        """##)
        #expect(set.entities.map(\.isRemoved) == [false, true, false])
        #expect(set.entities[1].id == "Customers('ANTON')" && set.entities[1].contextEntitySet == "Customers")
        #expect(set.count == 3 && set.deltaLink == "Customers?$deltatoken=8015")
    }

    /// §15.4 Deleted Entity: the 4.0 form, where `id` and `reason` are properties, not control information.
    @Test func section15_4_odata40DeletedEntity() throws {
        for context in ["@context", "@odata.context"] {
            let set = try read(##"{"value":[{"\##(context)":"#Customers/$deletedEntity","reason":"deleted","id":"Customers('ANTON')"}]}"##)
            let entity = try #require(set.entities.first)
            #expect(entity.isRemoved && entity.removedReason == "deleted" && entity.id == "Customers('ANTON')")
            #expect(entity.properties.isEmpty, "id and reason are not entity properties")
        }
    }

    /// §15.4 Deleted Entity: 4.01 with `@removed` carrying an annotation, and `@id`; in either member order.
    @Test func section15_4_odata401WithID() throws {
        for json in [
            ##"{"value":[{"@context":"#Customers/$deletedEntity","@removed":{"reason":"deleted","@myannoation.deletedBy":"Mario"},"@id":"Customers('ANTON')"}]}"##,
            ##"{"value":[{"@id":"Customers('ANTON')","@odata.removed":{"reason":"deleted"},"@odata.context":"#Customers/$deletedEntity"}]}"##,
        ] {
            let entity = try #require(try read(json).entities.first)
            #expect(entity.isRemoved && entity.removedReason == "deleted" && entity.id == "Customers('ANTON')")
        }
    }

    /// §15.4 Deleted Entity: 4.01 without `id`, with all key fields; `@removed` without a reason.
    @Test func section15_4_odata401WithKeys() throws {
        let entity = try #require(try read(##"{"value":[{"@removed":{},"ID":"ANTON"}]}"##).entities.first)
        #expect(entity.isRemoved && entity.removedReason == nil && entity.id == nil)
        #expect(entity.properties["ID"] == "ANTON")
    }

    /// §15.5.1 OData 4.01 expanded navigation properties: a nested delta is kept on its navigation property.
    @Test func section15_5_1_nestedDelta() throws {
        let set = try read(##"""
        {"@context":"http://host/service/$metadata#Customers/$delta","@count":3,
         "value":[{"@id":"Customers('ALFKI')","Orders@delta":[{"@removed":{"reason":"changed"},"@id":"Orders(10643)"},
                                                               {"@id":"Orders(10645)","ShippingAddress":{"City":"Tsawassen"}}]},
                  {"@removed":{"reason":"deleted"},"@id":"Customers('ANTON')"},
                  {"@id":"Customers('ALFKI')","ContactName":"Blake Smithe"}],
         "@deltaLink":"Customers?$expand=Orders&$deltatoken=8015"}
        """##)
        #expect(set.entities.count == 3)
        #expect(set.entities[0].annotations["Orders@odata.delta"]?.arrayValue?.count == 2)
    }

    /// §15.5.2 OData 4.0 flattened delta payload: added and deleted links, a member of another set named by its
    /// own context, and a deleted entity.
    @Test func section15_5_2_flattened40() throws {
        let set = try read(##"""
        {"@odata.context":"http://host/service/$metadata#Customers/$delta","@odata.count":5,
         "value":[{"@odata.context":"#Customers/$deletedLink","source":"Customers('ALFKI')","relationship":"Orders","target":"Orders(10643)"},
                  {"@odata.context":"#Customers/$link","source":"Customers('BOTTM')","relationship":"Orders","target":"Orders(10645)"},
                  {"@odata.context":"#Orders/$entity","@odata.id":"Orders(10645)","ShippingAddress":{"City":"Tsawassen"}},
                  {"@odata.context":"#Customers/$deletedEntity","@odata.id":"Customers('ANTON')"},
                  {"@odata.id":"Customers('ALFKI')","ContactName":"Blake Smithe"}],
         "@odata.deltaLink":"Customers?$expand=Orders&$deltatoken=8016"}
        """##)
        #expect(set.links == [
            ODataDeltaLink(source: "Customers('ALFKI')", relationship: "Orders", target: "Orders(10643)", isRemoved: true),
            ODataDeltaLink(source: "Customers('BOTTM')", relationship: "Orders", target: "Orders(10645)", isRemoved: false),
        ])
        #expect(set.entities.count == 3)
        #expect(set.entities[0].contextEntitySet == "Orders" && set.entities[0].id == "Orders(10645)")
        #expect(set.entities[1].isRemoved && set.entities[2].contextEntitySet == nil)
    }

    /// §4.5.x: every control information with and without the prefix; IEEE754Compatible numbers stay strings.
    @Test func controlInformationWithoutPrefixAndNumbersAsStrings() throws {
        let set = try read(##"""
        {"@nextLink":"Orders?$skiptoken=2","value":[{"@etag":"W/\"1\"","@type":"#NS.Order","@id":"Orders(5)","OrderID":"5","Freight":"12.50"}],"@context":"$metadata#Orders"}
        """##)
        let entity = try #require(set.entities.first)
        #expect(entity.etag == "W/\"1\"" && entity.type == "NS.Order" && entity.id == "Orders(5)")
        #expect(entity.properties["OrderID"] == "5" && entity.properties["Freight"] == "12.50")
        #expect(set.nextLink == "Orders?$skiptoken=2" && set.context == "$metadata#Orders")
    }

    /// SAP's V2 forms: `__metadata.deleted` (SAP Gateway, mock-sap) and `__deleted`, with the id in `__metadata`.
    @Test func v2DeletedForms() throws {
        let set = try read(##"""
        {"d":{"results":[{"__metadata":{"id":"http://h/s/SalesOrderSet('1')","uri":"http://h/s/SalesOrderSet('1')","deleted":true,"type":"S.SalesOrder"}},
                         {"__metadata":{"uri":"http://h/s/SalesOrderSet('2')"},"__deleted":true,"SalesOrderID":"2"},
                         {"__metadata":{"uri":"http://h/s/SalesOrderSet('3')","deleted":false},"SalesOrderID":"3"}],
              "__delta":"http://h/s/SalesOrderSet?!deltatoken='D1'"}}
        """##)
        #expect(set.entities.map(\.isRemoved) == [true, true, false])
        #expect(set.entities[0].id == "http://h/s/SalesOrderSet('1')")
        #expect(set.deltaLink == "http://h/s/SalesOrderSet?!deltatoken='D1'")
    }

    @Test func malformedLinksAreTypedErrorsNamingTheMember() {
        for json in [
            ##"{"value":[{"@odata.context":"#Customers/$link","relationship":"Orders","target":"Orders(1)"}]}"##,
            ##"{"value":[{"@context":"#Customers/$link","source":"Customers('A')","relationship":"Orders"}]}"##,
        ] {
            #expect { try read(json) } throws: { error in
                (error as? ODataError) == .malformedPayload && "\(error)".contains("link 0")
            }
        }
        // A deleted link of a single-valued navigation may omit its target (§15.5.2.2).
        #expect((try? read(##"{"value":[{"@context":"#Orders/$deletedLink","source":"Orders(1)","relationship":"Customer"}]}"##))?.links.first?.target == nil)
    }
}
