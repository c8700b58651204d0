import Foundation
import ODataMetadata
import Testing
@testable import ODataProxyGenerator

/// Operations as generated methods (#44, part 3): imports on the service, bound operations taking their entity or
/// entity set, V2 function imports with their HTTP method, overloads, names that collide, and what cannot be typed
/// listed with the reason. The fixture's and RealServices' methods are compiled with the package (their proxies).
struct OperationGeneratorTests {
    private func lines(_ source: String, after marker: String, count: Int = 3) -> String {
        guard let range = source.range(of: marker) else { return "" }
        return source[range.lowerBound...].split(separator: "\n", omittingEmptySubsequences: false).prefix(count).joined(separator: "\n")
    }

    @Test func importsAndBoundOperationsOfTheFixture() throws {
        let source = try Support.generate(Support.fixture)
        #expect(lines(source, after: "    /// The function import `CustomerCount`") == """
                /// The function import `CustomerCount`: returns `Edm.Int32`.
                public func customerCount(country: String? = nil) async throws -> Int32 {
                    try await self.dataService.call(OperationCall(.function, "CustomerCount", parameters: [OperationParameter("Country", country)]), returning: Int32.self)
            """)
        #expect(source.contains(
            "    public func productsByPrice(range: PriceRange) async throws -> [Product] {\n"
                + "        try await self.dataService.call(OperationCall(.function, \"ProductsByPrice\", parameters: [OperationParameter(\"Range\", range)], entitySet: \"Products\"), returning: [Product].self)\n"))
        #expect(source.contains("    public func raisePrices(categoryID: Int32, percent: Decimal) async throws -> [Int32] {\n"))
        #expect(source.contains("OperationCall(.action, \"RaisePrices\", parameters: [OperationParameter(\"CategoryID\", categoryID), OperationParameter(\"Percent\", percent)])"))
        #expect(source.contains("    public func orderCount(_ customer: Customer) async throws -> Int32 {\n"))
        #expect(source.contains("binding: .entity(customer)"))
        #expect(source.contains("    public func mostExpensive(in set: EntitySet<Product> = Self.products) async throws -> Product {\n"))
        #expect(source.contains("    public func restock(_ product: Product, units: Int16) async throws {\n"
            + "        try await self.dataService.call(OperationCall(.action, \"NorthwindModel.Restock\", parameters: [OperationParameter(\"Units\", units)], binding: .entity(product)))\n"))
        #expect(!source.contains("Not generated (use `dataService` for these):\n//   function"))
        #expect(!source.contains("//   action"))
    }

    @Test func v2FunctionImportsKeepTheirHTTPMethod() throws {
        let xml = """
            <edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx" \
            xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
            <edmx:DataServices m:DataServiceVersion="2.0"><Schema Namespace="GW" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">
            <EntityType Name="SalesOrder"><Key><PropertyRef Name="SalesOrderID"/></Key>
            <Property Name="SalesOrderID" Type="Edm.String" Nullable="false"/></EntityType>
            <ComplexType Name="Result"><Property Name="Text" Type="Edm.String"/></ComplexType>
            <EntityContainer Name="GW_Entities" m:IsDefaultEntityContainer="true">
            <EntitySet Name="SalesOrderSet" EntityType="GW.SalesOrder"/>
            <FunctionImport Name="SalesOrder_Confirm" ReturnType="GW.SalesOrder" EntitySet="SalesOrderSet" m:HttpMethod="POST">
            <Parameter Name="SalesOrderID" Type="Edm.String" Mode="In" Nullable="false"/></FunctionImport>
            <FunctionImport Name="RegenerateAllData" ReturnType="GW.Result" m:HttpMethod="POST">
            <Parameter Name="NoOfSalesOrders" Type="Edm.Int32" Mode="In"/></FunctionImport>
            <FunctionImport Name="Find" ReturnType="Collection(GW.SalesOrder)" EntitySet="SalesOrderSet">
            <Parameter Name="set" Type="Edm.String" Mode="In"/><Parameter Name="in" Type="Edm.DateTime" Mode="In" Nullable="false"/></FunctionImport>
            <FunctionImport Name="Ping" m:HttpMethod="GET"/>
            </EntityContainer></Schema></edmx:DataServices></edmx:Edmx>
            """
        let source = try ProxyGenerator(serviceName: nil, sourceName: "gw.xml").generate(metadata: Data(xml.utf8))
        #expect(source.contains("    public func salesOrderConfirm(salesOrderID: String) async throws -> SalesOrder {\n"
            + "        try await self.dataService.call(OperationCall(.function, \"SalesOrder_Confirm\", parameters: [OperationParameter(\"SalesOrderID\", salesOrderID)], httpMethod: \"POST\", entitySet: \"SalesOrderSet\"), returning: SalesOrder.self)\n"))
        #expect(source.contains("    public func regenerateAllData(noOfSalesOrders: Int32? = nil) async throws -> ResultType {\n"))
        // `set` is the label of a collection binding and `in` a keyword: both stay usable.
        #expect(source.contains("    public func find(set_2: String? = nil, `in`: Date) async throws -> [SalesOrder] {\n"))
        #expect(source.contains("[OperationParameter(\"set\", set_2), OperationParameter(\"in\", `in`)], entitySet: \"SalesOrderSet\")"))
        #expect(source.contains("    public func ping() async throws {\n        try await self.dataService.call(OperationCall(.function, \"Ping\"))\n"))
    }

    @Test func overloadsNameCollisionsAndWhatCannotBeTyped() throws {
        let xml = """
            <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
            <edmx:DataServices><Schema Namespace="S" xmlns="http://docs.oasis-open.org/odata/ns/edm">
            <EntityType Name="Item"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32" Nullable="false"/></EntityType>
            <EntityType Name="Loose"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32" Nullable="false"/></EntityType>
            <Function Name="Near" IsBound="true"><Parameter Name="item" Type="S.Item"/><ReturnType Type="Collection(S.Item)"/></Function>
            <Function Name="Near" IsBound="true"><Parameter Name="items" Type="Collection(S.Item)"/><Parameter Name="n" Type="Edm.Int32"/><ReturnType Type="S.Item"/></Function>
            <Function Name="Near" IsBound="true"><Parameter Name="items" Type="Collection(S.Item)"/><Parameter Name="m" Type="Edm.Int32"/><ReturnType Type="S.Item"/></Function>
            <Function Name="Near" IsBound="true"><Parameter Name="items" Type="Collection(S.Item)"/><Parameter Name="m" Type="Edm.Int32"/><ReturnType Type="Edm.String"/></Function>
            <Function Name="FetchItems"><ReturnType Type="Edm.Int32"/></Function>
            <Function Name="Orphan"><ReturnType Type="Edm.Int32"/></Function>
            <Function Name="Broken"><Parameter Name="x" Type="S.Missing"/><ReturnType Type="Edm.Int32"/></Function>
            <Action Name="Sweep" IsBound="true"><Parameter Name="all" Type="Collection(S.Loose)"/></Action>
            <EntityContainer Name="C"><EntitySet Name="Items" EntityType="S.Item"/>
            <FunctionImport Name="FetchItems" Function="S.FetchItems"/><FunctionImport Name="Broken" Function="S.Broken"/>
            </EntityContainer></Schema></edmx:DataServices></edmx:Edmx>
            """
        let source = try ProxyGenerator(serviceName: nil, sourceName: "s.xml").generate(metadata: Data(xml.utf8))
        // Overloads by binding and by parameter names share the name; the same signature again gets a suffix.
        #expect(source.contains("    public func near(_ item: Item) async throws -> [Item] {\n"))
        #expect(source.contains("    public func near(in set: EntitySet<Item> = Self.items, n: Int32? = nil) async throws -> Item {\n"))
        #expect(source.contains("    public func near(in set: EntitySet<Item> = Self.items, m: Int32? = nil) async throws -> Item {\n"))
        #expect(source.contains("    public func near_2(in set: EntitySet<Item> = Self.items, m: Int32? = nil) async throws -> String {\n"))
        // An import named like an entity set's method does not replace it.
        #expect(source.contains("    public func fetchItems(matching query: DataQuery<Item> = DataQuery()) async throws -> [Item] {\n"))
        #expect(source.contains("    public func fetchItems_2() async throws -> Int32 {\n"))
        // What cannot be called or typed is listed with why.
        #expect(source.contains("//   function import `Broken` in `C` (the type of `x` names nothing)\n"))
        #expect(source.contains("//   action `S.Sweep` (bound to a collection of a type that no entity set of the service has)\n"))
        #expect(source.contains("//   function `S.Orphan` (unbound, and no import names it)\n"))
        #expect(!source.contains("func orphan"))
    }
}
