import Foundation
import Testing
@testable import ODataProxyGenerator

/// The naming rules of the contract.
struct NamingTests {
    @Test(arguments: [
        ("CustomerID", "customerID"), ("ID", "id"), ("SAP__Messages", "sapMessages"), ("to_Item", "toItem"),
        ("ProductType", "productType"), ("Order_Details", "orderDetails"), ("code", "code"),
        ("numericSeverity", "numericSeverity"), ("URLValue", "urlValue"), ("1997Sales", "_1997Sales"),
        ("MRPType", "mrpType"), ("Employees1", "employees1"), ("A", "a"), ("__", "_"),
    ])
    func lowerCamel(_ name: String, _ expected: String) {
        #expect(Naming.lowerCamel(name) == expected)
    }

    @Test(arguments: [
        ("SAP__Message", "SAPMessage"), ("CT_Address", "CTAddress"), ("Order_Detail", "OrderDetail"),
        ("ProductType", "ProductType"), ("api_product_Container", "ApiProductContainer"),
        ("GWSAMPLE_BASIC_Entities", "GWSAMPLEBASICEntities"), ("Category_Sales_for_1997", "CategorySalesFor1997"),
    ])
    func upperCamel(_ name: String, _ expected: String) {
        #expect(Naming.upperCamel(name) == expected)
    }

    @Test func keywordsAreBackQuoted() {
        #expect(Naming.quoted("default") == "`default`")
        #expect(Naming.quoted("extension") == "`extension`")
        #expect(Naming.quoted("customerID") == "customerID")
    }

    @Test func memberCollisionsGetNumberedSuffixes() {
        var uniquer = Naming.Uniquer.members()
        #expect(uniquer.unique("odata") == "odata_2")
        #expect(uniquer.unique("entityKey") == "entityKey_2")
        #expect(uniquer.unique("init") == "init_2")
        #expect(uniquer.unique("name") == "name")
        #expect(uniquer.unique("name") == "name_2")
        #expect(uniquer.unique("name") == "name_3")
    }

    @Test func typeCollisionsGetTypeSuffixes() {
        var uniquer = Naming.Uniquer.types()
        #expect(uniquer.unique("Property") == "PropertyType")
        #expect(uniquer.unique("Property") == "PropertyType2")
        #expect(uniquer.unique("Data") == "DataType")
        #expect(uniquer.unique("Customer") == "Customer")
        #expect(uniquer.unique("Customer") == "CustomerType")
    }

    @Test func generatedNamesFollowTheRules() throws {
        let xml = """
            <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>
            <Schema Namespace="N" xmlns="http://docs.oasis-open.org/odata/ns/edm">
            <EntityType Name="Property"><Key><PropertyRef Name="ID"/></Key>
            <Property Name="ID" Type="Edm.Int32" Nullable="false"/><Property Name="odata" Type="Edm.String"/>
            <Property Name="default" Type="Edm.String"/><Property Name="Name" Type="Edm.String"/>
            <Property Name="name" Type="Edm.String"/></EntityType>
            <EntityContainer Name="C"><EntitySet Name="Properties" EntityType="N.Property"/></EntityContainer>
            </Schema></edmx:DataServices></edmx:Edmx>
            """
        let source = try ProxyGenerator(serviceName: nil, sourceName: "x.xml").generate(metadata: Data(xml.utf8))
        #expect(source.contains("public struct PropertyType: EntityValue {"))
        #expect(source.contains("public var odata_2: String?"))
        #expect(source.contains("public var `default`: String?"))
        #expect(source.contains("public var name: String?"))
        #expect(source.contains("public var name_2: String?"))
        #expect(source.contains("public struct CService: Sendable {"))
        #expect(source.contains("public func fetchProperties(matching query: DataQuery<PropertyType> = DataQuery())"))
        #expect(source.contains("public func fetchPropertyType(id: Int32) async throws -> PropertyType {"))
    }
}
