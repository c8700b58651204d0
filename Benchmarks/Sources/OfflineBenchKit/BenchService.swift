import BenchmarkKit
import Foundation
import ODataCore

/// The benchmarks' service (`Bench`, one set `Items` of ``Item``s) as CSDL, padded with about `paddingKiB` KiB of entity
/// types no set uses (SAP services' `$metadata` run to megabytes).
public func benchServiceCSDL(paddingKiB: Int = 0) -> String {
    var padding = ""
    var index = 0
    while padding.utf8.count < paddingKiB * 1024 {
        index += 1
        padding += "<EntityType Name=\"Pad\(index)\"><Key><PropertyRef Name=\"ID\"/></Key><Property Name=\"ID\" Type=\"Edm.Int32\" Nullable=\"false\"/>"
        for property in 0..<20 { padding += "<Property Name=\"Field\(property)\" Type=\"Edm.String\" MaxLength=\"40\"/>" }
        padding += "</EntityType>\n"
    }
    return """
        <?xml version="1.0" encoding="utf-8"?>
        <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
          <edmx:DataServices>
            <Schema Namespace="Bench" xmlns="http://docs.oasis-open.org/odata/ns/edm">
              <EntityType Name="Item">
                <Key><PropertyRef Name="ItemID"/></Key>
                <Property Name="ItemID" Type="Edm.Int32" Nullable="false"/>
                <Property Name="Name" Type="Edm.String"/>
                <Property Name="Category" Type="Edm.String"/>
                <Property Name="Price" Type="Edm.Double"/>
                <Property Name="Quantity" Type="Edm.Int32"/>
                <Property Name="Discontinued" Type="Edm.Boolean"/>
                <Property Name="Region" Type="Edm.String"/>
                <Property Name="Created" Type="Edm.DateTimeOffset"/>
              </EntityType>
              \(padding)
              <EntityContainer Name="Container">
                <EntitySet Name="Items" EntityType="Bench.Item"/>
              </EntityContainer>
            </Schema>
          </edmx:DataServices>
        </edmx:Edmx>
        """
}

/// An ``Item`` as the producer serves it (V4 JSON).
public func benchItemJSON(_ item: Item) -> JSONValue {
    .object(JSONObject([
        ("ItemID", .int(Int64(item.id))), ("Name", .string(item.name)), ("Category", .string(item.category)),
        ("Price", .double(item.price)), ("Quantity", .int(Int64(item.quantity))), ("Discontinued", .bool(item.discontinued)),
        ("Region", .string(item.region)), ("Created", .string(item.created)),
    ]))
}

/// Writes the producer's data directory for `items`: the CSDL and `Items.json`. Returns the payload's bytes.
@discardableResult
public func writeBenchData(_ items: [Item], to directory: String, paddingKiB: Int = 0) throws -> Int {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try benchServiceCSDL(paddingKiB: paddingKiB).write(toFile: directory + "/Bench.metadata.xml", atomically: true, encoding: .utf8)
    let payload = JSON.serialize(.object(JSONObject([("value", .array(items.map(benchItemJSON)))])))
    try Data(payload).write(to: URL(fileURLWithPath: directory + "/Items.json"))
    return payload.count
}
