// `Bench.Item` as odata-proxygen would generate it: the typed side of the key lookup
// (`DataService.fetchEntity`), decoded straight from the answer's bytes.
import Foundation
import ODataCore
import ODataTyped

/// `Bench.Item` (entity type). Key: `ItemID`.
public struct TypedItem: EntityValue {
    /// The qualified type name.
    public static let odataTypeName = "Bench.Item"
    /// The key properties.
    public static let keyPropertyNames = ["ItemID"]
    /// The entity set `Items`.
    public static let set = EntitySet<TypedItem>("Items")

    /// `ItemID`, the key.
    public var itemID: Int32
    /// `name`.
    public var name: String?
    /// `category`.
    public var category: String?
    /// `price`.
    public var price: Double?
    /// `quantity`.
    public var quantity: Int32?
    /// `discontinued`.
    public var discontinued: Bool?
    /// `region`.
    public var region: String?
    /// `created`.
    public var created: Date?
    /// OData metadata.
    public var odata = ODataMetadata()

    /// Every property at its default.
    public init() {
        itemID = 0
    }

    /// Reads a value from OData JSON.
    public init(from reader: inout EntityReader) throws(DataServiceError) {
        self.init()
        try reader.beginObject(Self.odataTypeName)
        while let member = try reader.nextMember() {
            switch member {
            case "ItemID": itemID = try reader.read(Int32.self)
            case "Name": name = try reader.read(String?.self)
            case "Category": category = try reader.read(String?.self)
            case "Price": price = try reader.read(Double?.self)
            case "Quantity": quantity = try reader.read(Int32?.self)
            case "Discontinued": discontinued = try reader.read(Bool?.self)
            case "Region": region = try reader.read(String?.self)
            case "Created": created = try reader.read(Date?.self)
            default: try reader.readOther(member, into: &odata)
            }
        }
    }

    /// Writes the properties.
    public func write(to writer: inout EntityWriter) {
        writer.write("ItemID", itemID)
        writer.write("Name", name)
        writer.write("Category", category)
        writer.write("Price", price)
        writer.write("Quantity", quantity)
        writer.write("Discontinued", discontinued)
        writer.write("Region", region)
        writer.write("Created", created)
        writer.writeOther(odata)
    }

    /// The key.
    public var entityKey: EntityKey { EntityKey(("ItemID", itemID)) }

    private enum CodingKeys: String, CodingKey {
        case itemID = "ItemID", name = "Name", category = "Category", price = "Price", quantity = "Quantity"
        case discontinued = "Discontinued", region = "Region", created = "Created"
    }
}
