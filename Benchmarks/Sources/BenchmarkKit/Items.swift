import Foundation

/// One generated `Bench.Item` of the offline benchmarks: 8 properties, about 152 bytes of JSON.
public struct Item: Sendable {
    public var id: Int
    public var name: String
    public var category: String
    public var price: Double
    public var quantity: Int
    public var discontinued: Bool
    public var region: String
    public var created: String
}

/// The 20 categories (`C0`…`C19`) items are spread over.
public let itemCategories = (0..<20).map { "C\($0)" }
/// The 4 regions items are spread over.
public let itemRegions = ["North", "South", "East", "West"]

/// Generates items with keys 1, 2, 3…, the same for every run (xorshift from a fixed seed): names `Item 0`…`Item 99999`,
/// 20 categories, prices 0–199.99, quantities 0–999, one in five discontinued, 4 regions, 336 creation days of 2024.
public struct ItemGenerator {
    private var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
    private var id = 0

    public init() {}

    private mutating func random() -> UInt64 {
        seed ^= seed << 13
        seed ^= seed >> 7
        seed ^= seed << 17
        return seed
    }

    /// The next item.
    public mutating func next() -> Item {
        id += 1
        return Item(id: id, name: "Item \(random() % 100_000)", category: itemCategories[Int(random() % 20)],
                    price: Double(random() % 20_000) / 100, quantity: Int(random() % 1_000), discontinued: random() % 5 == 0,
                    region: itemRegions[Int(random() % 4)],
                    created: String(format: "2024-%02d-%02dT10:00:00Z", Int(random() % 12) + 1, Int(random() % 28) + 1))
    }
}

/// The first `count` items of ``ItemGenerator``.
public func makeItems(count: Int) -> [Item] {
    var generator = ItemGenerator()
    return (0..<count).map { _ in generator.next() }
}
