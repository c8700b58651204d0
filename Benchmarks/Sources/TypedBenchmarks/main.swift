// Typed decoding: a V4 page of Northwind Orders read three ways, side by side in one run —
//   typed   QueryResult<Order>.decode: generated code reading straight from the bytes (ODataTyped),
//   tree    ODataPayload.decodeEntitySet: the JSONValue tree every untyped read builds,
//   Codable Foundation's JSONDecoder into the same generated types (their Codable conformance).
// Targets (issue 15): typed ≤ 1.5× the tree, and ≥ 2× faster than JSONDecoder. Sizes 1k, 10k, 100k show growth.
import BenchmarkKit
import Foundation
import NorthwindProxies
import ODataCore
import ODataTyped

struct Page: Decodable { let value: [Order] }

func payload(_ count: Int) -> Data {
    var text = #"{"@odata.context":"$metadata#Orders","value":["#
    let cities = ["Berlin", "Reims", "Seattle", "Rio de Janeiro", "London", "México D.F.", "Luleå"]
    for i in 0..<count {
        if i > 0 { text += "," }
        let day = 1 + i % 28, month = 1 + i % 12
        let date = String(format: "199%d-%02d-%02dT00:00:00Z", 6 + i % 3, month, day)
        let shipped = i % 5 == 0 ? "null" : "\"" + String(format: "199%d-%02d-%02dT00:00:00Z", 6 + i % 3, month, min(day + 1, 28)) + "\""
        text += #"{"@odata.etag":"W/\"\#(i)\"","OrderID":\#(10248 + i),"CustomerID":"C\#(i % 91)","EmployeeID":\#(1 + i % 9),"#
        text += #""OrderDate":"\#(date)","RequiredDate":"\#(date)","ShippedDate":\#(shipped),"ShipVia":\#(1 + i % 3),"#
        text += #""Freight":\#(Double(i % 1000) + 0.25),"ShipName":"Ship \#(i)","ShipAddress":"\#(i) Main Street","#
        text += #""ShipCity":"\#(cities[i % cities.count])","ShipRegion":\#(i % 4 == 0 ? "\"RJ\"" : "null"),"#
        text += #""ShipPostalCode":"\#(10000 + i % 9000)","ShipCountry":"Country \#(i % 21)"}"#
    }
    return Data((text + "]}").utf8)
}

print(machineDescription())
let sizes = (ProcessInfo.processInfo.environment["TYPED_BENCH_SIZES"] ?? "1000,10000,100000").split(separator: ",").compactMap { Int($0) }
var rows: [[String]] = []
for size in sizes {
    let bytes = payload(size)
    // Check that the three agree before timing them.
    let typed = try QueryResult<Order>.decode(bytes)
    let tree = try ODataPayload.decodeEntitySet(bytes)
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    let codable = try decoder.decode(Page.self, from: bytes)
    precondition(typed.entities.count == size && tree.entities.count == size && codable.value.count == size)
    precondition(typed.entities.map(\.orderID) == codable.value.map(\.orderID) && typed.entities[7].shipCity == codable.value[7].shipCity)

    let iterations = max(5, 2_000_000 / size / 10)
    var samples: [String: Samples] = [:]
    // Interleaved rounds, so drift on a shared machine hits all three alike.
    var timings: [String: [Double]] = ["typed": [], "tree": [], "codable": []]
    for _ in 0..<iterations {
        for (name, body) in [("typed", { _ = try QueryResult<Order>.decode(bytes) }),
                             ("tree", { _ = try ODataPayload.decodeEntitySet(bytes) }),
                             ("codable", { _ = try decoder.decode(Page.self, from: bytes) })] as [(String, () throws -> Void)] {
            let start = DispatchTime.now().uptimeNanoseconds
            try body()
            timings[name, default: []].append(Double(DispatchTime.now().uptimeNanoseconds - start))
        }
    }
    for (name, values) in timings { samples[name] = Samples(name: name, nanoseconds: values) }
    let typedMedian = samples["typed"]!.median, treeMedian = samples["tree"]!.median, codableMedian = samples["codable"]!.median
    rows.append([
        "\(size)", "\(bytes.count / 1024) KiB",
        formatDuration(typedMedian), formatDuration(treeMedian), formatDuration(codableMedian),
        String(format: "%.2f×", typedMedian / treeMedian), String(format: "%.2f×", codableMedian / typedMedian),
        formatDuration(typedMedian / Double(size)),
    ])
}
printTable(title: "Decoding a page of Orders (medians, interleaved rounds)",
           header: ["entities", "payload", "typed", "JSONValue tree", "JSONDecoder", "typed / tree (≤ 1.5×)", "JSONDecoder / typed (≥ 2×)", "typed per entity"],
           rows: rows)
