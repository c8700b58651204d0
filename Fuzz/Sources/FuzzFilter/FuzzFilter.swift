import Foundation
import ODataCore
import ODataQuery

/// libFuzzer entry. An input starting with ``GrammarFuzz/marker`` is a stream of choices for the
/// grammar-aware generator (`Generator.swift`), whose output must satisfy the properties in
/// ``GrammarFuzz``; any other input is raw text for `$filter` parsing and compiling and for whole
/// query strings through `QueryOptions.parse`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    if size > 0 && bytes[0] == GrammarFuzz.marker {
        GrammarFuzz.run(bytes)
        return 0
    }
    let text = String(decoding: bytes, as: UTF8.self)
    _ = try? FilterExpression.parse(text)
    _ = try? CompiledFilter(parsing: text)
    _ = try? QueryOptions.parse(text)
    return 0
}

/// The grammar-aware mode: byte 0 is the marker, byte 1 picks an expression (even) or a whole query
/// string (odd), the rest are the generator's choices.
enum GrammarFuzz {
    static let marker: UInt8 = 0x00

    /// With `FUZZFILTER_LOG_ONLY` set, failures are printed and the run goes on (for triage).
    static let logOnly = ProcessInfo.processInfo.environment["FUZZFILTER_LOG_ONLY"] != nil

    struct Failure: Error {}

    static func fail(_ property: String, _ text: String, _ detail: String = "") throws(Failure) -> Never {
        let report = "FuzzFilter grammar property failed: \(property)\ntext: \(text)\n\(detail)"
        if logOnly {
            FileHandle.standardError.write(Data(("@@FAIL " + String(String.UnicodeScalarView(report.unicodeScalars.flatMap { $0 == "\n" ? Array(" ⏎ ".unicodeScalars) : $0 == "\r" ? ["␍"] : [$0] })) + "\n").utf8))
            throw Failure()
        }
        fatalError(report)
    }

    static let functions: FunctionTable = {
        var table = FunctionTable()
        try! table.register("inErrorState", arity: 0...2) { call in .bool(call.entity["@inErrorState"] == .bool(true)) }
        try! table.register("NS.custom", arity: 0...2) { call in call.arguments.first ?? .null }
        return table
    }()

    static let entities: [JSONObject] = [
        [
            "Name": "Milk", "Price": 2.5, "Qty": 3, "City": "Zürich", "Flag": true, "Born": "2024-02-29T13:20:00+01:00",
            "Tags": ["a", "b", "it's"], "Address": ["City": "Bern", "Lines": ["x", "y"]], "_id": "01234567-89ab-cdef-0123-456789abcdef",
            "Orders": [["Qty": 1, "Items": [["Name": "i1", "Tags": ["t"]]]], ["Qty": 9, "Items": []]], "x1": "P1D",
            "Ünï": "€", "@odata.type": "#NS.Customer", "@inErrorState": true,
        ],
        ["Name": nil, "Price": "NaN", "Qty": 9_223_372_036_854_775_807, "Tags": [], "Born": "13:20:00", "Address": nil],
        ["Name": "", "Price": -0.0, "Qty": -1, "Born": "2024-02-29", "Tags": [1, 2.5, nil, ["k": "v"]], "Orders": "not a list", "Items": 5],
        [:],
    ]

    struct Resolver: NavigationResolver {
        func related(_ entity: JSONObject, navigationProperty: String) -> JSONValue? {
            navigationProperty == "Items" ? [["Name": "r", "Qty": 2]] : nil
        }
        func resource(at path: ResourcePath) -> JSONValue? {
            .object(GrammarFuzz.entities[0])
        }
    }

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var generator = Generator(Choices(bytes: bytes, index: 2))
        if bytes.count > 1 && bytes[1] & 1 == 1 {
            try? checkQuery(generator.queryString())
        } else {
            try? checkExpression(generator.expression())
        }
    }

    /// The text parses; its printed form parses to the same tree; compiling and evaluating it over
    /// the entities (and sorting by it) does not crash.
    static func checkExpression(_ text: String) throws(Failure) {
        let tree: FilterExpression
        do { tree = try FilterExpression.parse(text) } catch { try fail("generated text parses", text, "\(error)") }
        let printed = tree.description
        let again: FilterExpression
        do { again = try FilterExpression.parse(printed) } catch { try fail("printed form parses", text, "printed: \(printed)\n\(error)") }
        guard again == tree else {
            try fail("printed form parses to the same tree", text, "printed: \(printed)\nreparsed: \(again.description)")
        }
        if let compiled = try? CompiledFilter(tree, functions: functions) {
            for entity in entities {
                _ = compiled.evaluate(entity, navigation: Resolver())
                _ = compiled.matches(entity)
            }
        }
        if let order = try? OrderBy([OrderBy.Item(tree, descending: true)]).compile(functions: functions) {
            _ = order.sorted(entities, navigation: Resolver())
        }
    }

    /// The query string parses; its `queryString` parses to equal options; applying them does not crash.
    static func checkQuery(_ query: String) throws(Failure) {
        let options: QueryOptions
        do { options = try QueryOptions.parse(query) } catch { try fail("generated query parses", query, "\(error)") }
        let printed = options.queryString
        let again: QueryOptions
        do { again = try QueryOptions.parse(printed) } catch { try fail("queryString parses", query, "printed: \(printed)\n\(error)") }
        guard again == options else {
            try fail("queryString parses to equal options", query, "printed: \(printed)\nreparsed: \(again.queryString)")
        }
        _ = try? QueryEvaluator.apply(options, to: entities, navigation: Resolver(), functions: functions)
        _ = try? QueryEvaluator.apply(options, to: entities, functions: functions, pageSize: 2)
    }
}
