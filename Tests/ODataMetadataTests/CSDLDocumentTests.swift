import Foundation
import ODataCore
import ODataMetadata
import Testing

/// Real `$metadata` documents (V4 and SAP's V2), read and resolved into one model.
@Suite struct CSDLDocumentTests {
    /// The package's root directory, from this file's path.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The shared data next to the package (the Northwind V4 `$metadata` as published); absent in a bare clone.
    static let sharedNorthwind = packageRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/data/northwind/Northwind.metadata.v4.xml")

    static func read(_ relativePath: String) throws -> CSDLDocument {
        try CSDLDocument(parsing: Data(contentsOf: packageRoot.appendingPathComponent(relativePath)))
    }

    static func entityType(_ name: String, in document: CSDLDocument) throws -> CSDLStructuredType {
        try #require(document.structuredType(named: name))
    }

    @Test func readsNorthwindV4() throws {
        let document = try Self.read("Proxies/Metadata/Northwind.xml")
        #expect(document.version == .v4)
        #expect(document.versionText == "4.0")
        let customer = try Self.entityType("NorthwindModel.Customer", in: document)
        #expect(customer.isEntity)
        #expect(document.key(of: customer) == ["CustomerID"])
        let id = try #require(customer.properties.first { $0.name == "CustomerID" })
        #expect(id.type == "Edm.String")
        #expect(id.resolved == .primitive("Edm.String"))
        #expect(id.nullable == false)
        #expect(id.maxLength == "5")
        let orders = try #require(customer.navigationProperties.first { $0.name == "Orders" })
        #expect(orders.target == "NorthwindModel.Order")
        #expect(orders.isCollection)
        #expect(orders.partner == "Customer")
        let set = try #require(document.entitySets.first { $0.name == "Customers" })
        #expect(set.entityType == "NorthwindModel.Customer")
        #expect(set.navigationPropertyBindings.contains(CSDLNavigationPropertyBinding(path: "Orders", target: "Orders")))
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: sharedNorthwind.path)))
    func readsThePublishedNorthwindWithItsReferentialConstraints() throws {
        let document = try CSDLDocument(parsing: Data(contentsOf: Self.sharedNorthwind))
        #expect(document.version == .v4)
        #expect(document.entitySets.count == 26)
        let order = try Self.entityType("NorthwindModel.Order", in: document)
        let customer = try #require(order.navigationProperties.first { $0.name == "Customer" })
        #expect(customer.target == "NorthwindModel.Customer")
        #expect(!customer.isCollection)
        #expect(customer.partner == "Orders")
        #expect(customer.referentialConstraints == [CSDLReferentialConstraint(property: "CustomerID", referencedProperty: "CustomerID")])
    }

    @Test func readsSAPV2WithAssociations() throws {
        let document = try Self.read("Proxies/Metadata/GWSAMPLE_BASIC.xml")
        #expect(document.version == .v2)
        #expect(document.versionText == "2.0")
        let container = try #require(document.schemas.first?.entityContainers.first)
        #expect(container.isDefault)
        #expect(container.associationSets.count == 9)

        // Navigation resolved through the association: target, multiplicity, and (this side dependent) the constraint.
        let order = try Self.entityType("GWSAMPLE_BASIC.SalesOrder", in: document)
        let partner = try #require(order.navigationProperties.first { $0.name == "ToBusinessPartner" })
        #expect(partner.target == "GWSAMPLE_BASIC.BusinessPartner")
        #expect(!partner.isCollection)
        #expect(partner.relationship == "GWSAMPLE_BASIC.assoc_SalesOrder_ToBusinessPartner")
        let items = try #require(order.navigationProperties.first { $0.name == "ToLineItems" })
        #expect(items.target == "GWSAMPLE_BASIC.SalesOrderLineItem")
        #expect(items.isCollection)
        #expect(items.referentialConstraints.isEmpty)  // this side is the principal
        let header = try #require(
            try Self.entityType("GWSAMPLE_BASIC.SalesOrderLineItem", in: document).navigationProperties.first {
                $0.name == "ToHeader"
            })
        #expect(header.referentialConstraints == [])  // the header association makes the line item the principal

        let association = try #require(document.association(named: "GWSAMPLE_BASIC.assoc_BusinessPartner_ToSalesOrders"))
        #expect(association.ends.map(\.multiplicity) == ["1", "*"])
        #expect(association.referentialConstraint?.principal.properties == ["BusinessPartnerID"])
        #expect(association.referentialConstraint?.dependent.properties == ["CustomerID"])

        // Bindings derived from the association sets.
        let orders = try #require(document.entitySets.first { $0.name == "SalesOrderSet" })
        #expect(orders.navigationPropertyBindings.first { $0.path == "ToLineItems" }?.targetSetName == "SalesOrderLineItemSet")
        #expect(orders.navigationPropertyBindings.first { $0.path == "ToBusinessPartner" }?.targetSetName == "BusinessPartnerSet")

        // The complex type and its use.
        let address = try #require(
            try Self.entityType("GWSAMPLE_BASIC.BusinessPartner", in: document).properties.first { $0.name == "Address" })
        #expect(address.resolved == .structured("GWSAMPLE_BASIC.CT_Address"))
        let price = try #require(try Self.entityType("GWSAMPLE_BASIC.Product", in: document).properties.first { $0.name == "Price" })
        #expect(price.precision == "16")
        #expect(price.scale == "3")
    }

    @Test func readsAV2ConstraintWhereThisSideIsTheDependent() throws {
        let document = try CSDLDocument(parsing: Data(Self.v2.utf8))
        let order = try Self.entityType("NS.Order", in: document)
        let partner = try #require(order.navigationProperties.first { $0.name == "ToPartner" })
        #expect(partner.referentialConstraints == [CSDLReferentialConstraint(property: "PartnerID", referencedProperty: "PartnerID")])
        let orders = try #require(try Self.entityType("NS.Partner", in: document).navigationProperties.first)
        #expect(orders.isCollection)
        #expect(orders.referentialConstraints.isEmpty)
        #expect(document.entitySets.first { $0.name == "Orders" }?.navigationPropertyBindings
            == [CSDLNavigationPropertyBinding(path: "ToPartner", target: "Partners")])
    }

    @Test func readsSAPV4WithOperationsAndAnnotations() throws {
        let document = try Self.read("Proxies/Metadata/API_PRODUCT.xml")
        #expect(document.version == .v4)
        let product = try #require(document.entitySets.first { $0.name == "Product" })
        #expect(product.entityType == "com.sap.gateway.srvd_a2x.api_product.v0001.ProductType")
        #expect(product.navigationPropertyBindings.contains(CSDLNavigationPropertyBinding(path: "to_Plant", target: "ProductPlant")))
        let type = try Self.entityType(product.entityType, in: document)
        #expect(!document.key(of: type).isEmpty)
    }

    @Test func readsTheFixturesDocument() throws {
        let document = try Self.read("Fixtures/Data/Fixture.metadata.xml")
        #expect(document.version == .v4)
        #expect(!document.entitySets.isEmpty)
        for set in document.entitySets {
            let type = try Self.entityType(set.entityType, in: document)
            #expect(!document.key(of: type).isEmpty, "\(set.name)")
        }
    }

    @Test func resolvesAliasesAndInheritedKeys() throws {
        let xml = """
            <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>
            <Schema Namespace="Long.Name.Space" Alias="N" xmlns="http://docs.oasis-open.org/odata/ns/edm">
            <EnumType Name="Color"><Member Name="Red" Value="1"/></EnumType>
            <EntityType Name="Base" Abstract="true"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32" Nullable="false"/></EntityType>
            <EntityType Name="Car" BaseType="N.Base"><Property Name="Color" Type="N.Color"/><Property Name="Tags" Type="Collection(Edm.String)"/></EntityType>
            <Function Name="Cheapest"><ReturnType Type="N.Car"/></Function>
            <EntityContainer Name="C"><EntitySet Name="Cars" EntityType="N.Car"/><FunctionImport Name="Cheapest" Function="N.Cheapest"/></EntityContainer>
            </Schema></edmx:DataServices></edmx:Edmx>
            """
        let document = try CSDLDocument(parsing: Data(xml.utf8))
        let car = try Self.entityType("N.Car", in: document)
        #expect(car.qualifiedName == "Long.Name.Space.Car")
        #expect(car.baseType == "Long.Name.Space.Base")
        #expect(car.key == nil)
        #expect(document.key(of: car) == ["ID"])
        #expect(car.properties.map(\.resolved) == [.enumType("Long.Name.Space.Color"), .collection(.primitive("Edm.String"))])
        #expect(document.entitySets.first?.entityType == "Long.Name.Space.Car")
        #expect(document.schemas[0].operations == [CSDLOperation(kind: "function", name: "Long.Name.Space.Cheapest")])
        #expect(document.schemas[0].entityContainers[0].operations == [CSDLOperation(kind: "function import", name: "Cheapest")])
    }

    static let v2 = """
        <?xml version="1.0" encoding="utf-8"?>
        <edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
        <edmx:DataServices m:DataServiceVersion="2.0"><Schema Namespace="NS" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">
        <EntityType Name="Partner"><Key><PropertyRef Name="PartnerID"/></Key>
          <Property Name="PartnerID" Type="Edm.String" Nullable="false"/>
          <NavigationProperty Name="ToOrders" Relationship="NS.Partner_Orders" FromRole="P" ToRole="O"/></EntityType>
        <EntityType Name="Order"><Key><PropertyRef Name="OrderID"/></Key>
          <Property Name="OrderID" Type="Edm.Guid" Nullable="false"/><Property Name="PartnerID" Type="Edm.String"/>
          <NavigationProperty Name="ToPartner" Relationship="NS.Partner_Orders" FromRole="O" ToRole="P"/></EntityType>
        <Association Name="Partner_Orders"><End Type="NS.Partner" Multiplicity="1" Role="P"/><End Type="NS.Order" Multiplicity="*" Role="O"/>
          <ReferentialConstraint><Principal Role="P"><PropertyRef Name="PartnerID"/></Principal>
          <Dependent Role="O"><PropertyRef Name="PartnerID"/></Dependent></ReferentialConstraint></Association>
        <EntityContainer Name="C" m:IsDefaultEntityContainer="true">
          <EntitySet Name="Partners" EntityType="NS.Partner"/><EntitySet Name="Orders" EntityType="NS.Order"/>
          <AssociationSet Name="PO" Association="NS.Partner_Orders"><End EntitySet="Partners" Role="P"/><End EntitySet="Orders" Role="O"/></AssociationSet>
        </EntityContainer></Schema></edmx:DataServices></edmx:Edmx>
        """
}
