import Foundation
import Testing

@testable import OfflineStore

/// `$metadata` in OData V2 (EDMX 1.0): property types and navigation through associations.
@Suite struct ServiceModelV2Tests {
    static let edmx = """
    <?xml version="1.0" encoding="utf-8"?>
    <edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
    <edmx:DataServices m:DataServiceVersion="2.0"><Schema Namespace="NS" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">
    <EntityType Name="Partner"><Key><PropertyRef Name="PartnerID"/></Key>
      <Property Name="PartnerID" Type="Edm.String" Nullable="false"/><Property Name="Created" Type="Edm.DateTime"/>
      <NavigationProperty Name="ToOrders" Relationship="NS.Partner_Orders" FromRole="P" ToRole="O"/></EntityType>
    <EntityType Name="Order"><Key><PropertyRef Name="OrderID"/></Key>
      <Property Name="OrderID" Type="Edm.Guid" Nullable="false"/><Property Name="PartnerID" Type="Edm.String"/>
      <Property Name="Amount" Type="Edm.Decimal" Precision="16" Scale="3"/><Property Name="Count" Type="Edm.Int64"/>
      <Property Name="Starts" Type="Edm.Time"/><Property Name="Stamp" Type="Edm.DateTimeOffset"/>
      <NavigationProperty Name="ToPartner" Relationship="NS.Partner_Orders" FromRole="O" ToRole="P"/></EntityType>
    <Association Name="Partner_Orders"><End Type="NS.Partner" Multiplicity="1" Role="P"/><End Type="NS.Order" Multiplicity="*" Role="O"/>
      <ReferentialConstraint><Principal Role="P"><PropertyRef Name="PartnerID"/></Principal>
      <Dependent Role="O"><PropertyRef Name="PartnerID"/></Dependent></ReferentialConstraint></Association>
    <EntityContainer Name="C" m:IsDefaultEntityContainer="true">
      <EntitySet Name="Partners" EntityType="NS.Partner"/><EntitySet Name="Orders" EntityType="NS.Order"/>
      <AssociationSet Name="PO" Association="NS.Partner_Orders"><End EntitySet="Partners" Role="P"/><End EntitySet="Orders" Role="O"/></AssociationSet>
    </EntityContainer></Schema></edmx:DataServices></edmx:Edmx>
    """

    @Test func readsTypesAndAssociations() throws {
        let model = try ServiceModel.parse(Data(Self.edmx.utf8))
        let order = try #require(model.entityType(ofSet: "Orders"))
        #expect(order.key == ["OrderID"])
        #expect(order.propertyTypes["Amount"] == "Edm.Decimal")
        #expect(order.propertyTypes["Count"] == "Edm.Int64")
        #expect(order.propertyTypes["OrderID"] == "Edm.Guid")
        #expect(order.propertyTypes["Starts"] == "Edm.Time")
        #expect(order.propertyTypes["Stamp"] == "Edm.DateTimeOffset")

        let toPartner = try #require(order.navigation["ToPartner"])
        #expect(toPartner.targetType == "NS.Partner")
        #expect(!toPartner.isCollection)
        #expect(toPartner.constraints.map { [$0.0, $0.1] } == [["PartnerID", "PartnerID"]])
        #expect(model.targetSet(from: "Orders", navigation: "ToPartner") == "Partners")

        let toOrders = try #require(model.entityType(ofSet: "Partners")?.navigation["ToOrders"])
        #expect(toOrders.targetType == "NS.Order")
        #expect(toOrders.isCollection)
        #expect(toOrders.constraints.isEmpty)
        #expect(toOrders.targetConstraints.map { [$0.0, $0.1] } == [["PartnerID", "PartnerID"]])
        #expect(model.targetSet(from: "Partners", navigation: "ToOrders") == "Orders")
    }

    @Test func refusesAnUnknownAssociation() {
        let broken = Self.edmx.replacingOccurrences(of: "Relationship=\"NS.Partner_Orders\" FromRole=\"O\"", with: "Relationship=\"NS.Missing\" FromRole=\"O\"")
        let error = #expect(throws: OfflineODataError.self) { try ServiceModel.parse(Data(broken.utf8)) }
        #expect(error?.message.contains("NS.Missing") == true)
    }
}
