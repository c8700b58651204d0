import ODataCore
import Testing
@testable import ODataQuery

/// Northwind's Products, a few of them, with a nested Category and Supplier.
let products: [JSONObject] = [
    ["ProductID": 1, "ProductName": "Chai", "UnitPrice": 18, "Discontinued": false, "CategoryID": 1,
     "Category": ["CategoryID": 1, "CategoryName": "Beverages"], "Region": nil],
    ["ProductID": 2, "ProductName": "Chang", "UnitPrice": 19.0, "Discontinued": false, "CategoryID": 1,
     "Category": ["CategoryID": 1, "CategoryName": "Beverages"], "Region": "North"],
    ["ProductID": 3, "ProductName": "Aniseed Syrup", "UnitPrice": 10, "Discontinued": false, "CategoryID": 2,
     "Category": ["CategoryID": 2, "CategoryName": "Condiments"], "Region": "South"],
    ["ProductID": 4, "ProductName": "Chef Anton's Cajun Seasoning", "UnitPrice": 22, "Discontinued": true, "CategoryID": 2,
     "Category": ["CategoryID": 2, "CategoryName": "Condiments"], "Region": nil],
    ["ProductID": 5, "ProductName": "Gumbo Mix", "UnitPrice": 21.35, "Discontinued": true, "CategoryID": 2,
     "Category": ["CategoryID": 2, "CategoryName": "Condiments"], "Region": "North"],
    ["ProductID": 6, "ProductName": "Boysenberry Spread", "UnitPrice": 25, "Discontinued": false, "CategoryID": 2,
     "Category": ["CategoryID": 2, "CategoryName": "Condiments"], "Region": "South"],
]

func ids(_ entities: [JSONObject]) -> [Int64] { entities.compactMap { $0["ProductID"]?.intValue } }

struct OrderCase: CustomTestStringConvertible, Sendable {
    let orderBy: String
    let expected: [Int64]
    var testDescription: String { orderBy }
}

@Suite struct QueryEvaluatorTests {
    func run(_ query: String, _ entities: [JSONObject] = products, navigation: (any NavigationResolver)? = nil) throws -> QueryResult {
        try QueryEvaluator.apply(QueryOptions.parse(query), to: entities, navigation: navigation)
    }

    @Test(arguments: [
        OrderCase(orderBy: "UnitPrice", expected: [3, 1, 2, 5, 4, 6]),
        OrderCase(orderBy: "UnitPrice desc", expected: [6, 4, 5, 2, 1, 3]),
        // Ties keep input order, in both directions.
        OrderCase(orderBy: "CategoryID", expected: [1, 2, 3, 4, 5, 6]),
        OrderCase(orderBy: "CategoryID desc", expected: [3, 4, 5, 6, 1, 2]),
        OrderCase(orderBy: "Discontinued,UnitPrice desc", expected: [6, 2, 1, 3, 4, 5]),
        // Nulls first ascending, last descending; ties among nulls stable.
        OrderCase(orderBy: "Region", expected: [1, 4, 2, 5, 3, 6]),
        OrderCase(orderBy: "Region desc", expected: [3, 6, 2, 5, 1, 4]),
        OrderCase(orderBy: "Region,ProductID desc", expected: [4, 1, 5, 2, 6, 3]),
        OrderCase(orderBy: "Category/CategoryName desc,ProductName", expected: [3, 6, 4, 5, 1, 2]),
        OrderCase(orderBy: "length(ProductName) desc", expected: [4, 6, 3, 5, 2, 1]),
        OrderCase(orderBy: "UnitPrice mod 2,ProductID", expected: [1, 3, 4, 2, 6, 5]),
        OrderCase(orderBy: "Missing,ProductID desc", expected: [6, 5, 4, 3, 2, 1]),
    ])
    func orderBy(_ c: OrderCase) throws {
        #expect(ids(try run("$orderby=" + c.orderBy).entities) == c.expected)
        // The comparator agrees with the sort.
        let compiled = try OrderBy.parse(c.orderBy).compile()
        let sorted = compiled.sorted(products)
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            #expect(compiled.compare(a, b) <= 0)
        }
    }

    @Test func pipelineRunsInOrder() throws {
        let result = try run("$filter=UnitPrice gt 10&$orderby=UnitPrice desc&$skip=1&$top=2&$count=true&$select=ProductName")
        #expect(result.count == 5)
        #expect(result.entities == [["ProductName": "Chef Anton's Cajun Seasoning"], ["ProductName": "Gumbo Mix"]])
        let noCount = try run("$top=1")
        #expect(noCount.count == nil)
        #expect(ids(noCount.entities) == [1])
        #expect(try run("$skip=100&$count=true").entities.isEmpty)
        #expect(try run("$skip=100&$count=true").count == 6)
        #expect(try run("$top=0").entities.isEmpty)
    }

    @Test func serverDrivenPaging() throws {
        var options = try QueryOptions.parse("$filter=ProductID gt 1&$count=true")
        var pages: [[Int64]] = []
        while true {
            let result = try QueryEvaluator.apply(options, to: products, pageSize: 2)
            #expect(result.count == 5)
            #expect(result.matchedCount == 5)
            pages.append(ids(result.entities))
            guard let next = result.nextPage else { break }
            options = next
        }
        #expect(pages == [[2, 3], [4, 5], [6]])
        // $top smaller than the page size: one page; $top spanning pages: the last page is cut.
        #expect(try QueryEvaluator.apply(QueryOptions.parse("$top=1"), to: products, pageSize: 2).nextPage == nil)
        let first = try QueryEvaluator.apply(QueryOptions.parse("$skip=1&$top=3"), to: products, pageSize: 2)
        #expect(ids(first.entities) == [2, 3])
        let next = try #require(first.nextPage)
        #expect(next.skip == 3 && next.top == 1)
        let second = try QueryEvaluator.apply(next, to: products, pageSize: 2)
        #expect(ids(second.entities) == [4])
        #expect(second.nextPage == nil)
        // Exactly a full last page has no next page.
        #expect(try QueryEvaluator.apply(QueryOptions.parse("$skip=4"), to: products, pageSize: 2).nextPage == nil)
    }

    @Test func searchFiltersOnStrings() throws {
        #expect(ids(try run("$search=condiments NOT syrup").entities) == [4, 5, 6])
        #expect(ids(try run("$search=\"gumbo mix\" OR chai").entities) == [1, 5])
    }

    @Test func selectProjects() throws {
        let entity: JSONObject = ["@odata.etag": "W/\"1\"", "ID": 1, "Name": "x", "Name@odata.type": "#String",
            "Address": ["City": "Berlin", "Street": "Main", "Geo": ["Lat": 1, "Lon": 2]], "Tags": ["a"]]
        let select = try Select.parse("Name,Address/City,Address/Geo/Lat")
        #expect(select.apply(to: entity) == ["@odata.etag": "W/\"1\"", "Name": "x", "Name@odata.type": "#String",
            "Address": ["City": "Berlin", "Geo": ["Lat": 1]]])
        #expect(try Select.parse("*").apply(to: entity) == entity)
        #expect(try Select.parse("ID,NS.*").apply(to: entity) == ["@odata.etag": "W/\"1\"", "ID": 1])
        #expect(try Select.parse("Tags").apply(to: entity, keeping: ["Name"]) == ["@odata.etag": "W/\"1\"", "Name": "x",
            "Name@odata.type": "#String", "Tags": ["a"]])
        #expect(try Select.parse("Address/NS.Special/City").apply(to: entity) == ["@odata.etag": "W/\"1\"", "Address": ["City": "Berlin"]])
    }

    struct Store: NavigationResolver {
        let orders: [Int64: [JSONObject]] = [
            1: [["OrderID": 10, "Freight": 5, "@odata.id": "Orders(10)", "Lines": [["Qty": 1], ["Qty": 3]]],
                ["OrderID": 11, "Freight": 50, "@odata.id": "Orders(11)", "Lines": []]],
            2: [["OrderID": 12, "Freight": 7, "@odata.id": "Orders(12)", "Lines": [["Qty": 9]]]],
        ]
        func related(_ entity: JSONObject, navigationProperty: String) -> JSONValue? {
            switch navigationProperty {
            case "Orders":
                guard case .int(let id)? = entity["ProductID"] else { return nil }
                return .array((orders[id] ?? []).map { .object($0) })
            case "Manager":
                guard case .int(let level)? = entity["Level"], level < 20 else { return nil }
                return ["Level": .int(level + 1)]
            default: return nil
            }
        }
    }

    @Test func expandUsesTheResolverAndNestedOptions() throws {
        let result = try run(
            "$filter=ProductID le 2&$expand=Orders($filter=Freight gt 6;$orderby=Freight desc;$select=OrderID;$count=true)&$select=ProductName",
            navigation: Store())
        #expect(result.entities == [
            ["ProductName": "Chai", "Orders": [["OrderID": 11, "@odata.id": "Orders(11)"]], "Orders@odata.count": 1],
            ["ProductName": "Chang", "Orders": [["OrderID": 12, "@odata.id": "Orders(12)"]], "Orders@odata.count": 1],
        ])
        let refs = try run("$filter=ProductID eq 1&$expand=Orders/$ref&$select=ProductID", navigation: Store())
        #expect(refs.entities == [["ProductID": 1, "Orders": [["@odata.id": "Orders(10)"], ["@odata.id": "Orders(11)"]]]])
        let counts = try run("$filter=ProductID eq 1&$expand=Orders/$count($filter=Freight gt 1)&$select=ProductID", navigation: Store())
        #expect(counts.entities == [["ProductID": 1, "Orders@odata.count": 2]])
        // Embedded navigation needs no resolver; a single-valued one is filtered to null.
        let embedded = try run("$filter=ProductID eq 3&$expand=Category($select=CategoryName)&$select=ProductID")
        #expect(embedded.entities == [["ProductID": 3, "Category": ["CategoryName": "Condiments"]]])
        let hidden = try run("$filter=ProductID eq 3&$expand=Category($filter=CategoryID eq 1)&$select=ProductID")
        #expect(hidden.entities == [["ProductID": 3, "Category": nil]])
    }

    @Test func levelsExpandRecursively() throws {
        let entity: JSONObject = ["Level": 1]
        let two = try run("$expand=Manager($levels=2)", [entity], navigation: Store())
        #expect(two.entities == [["Level": 1, "Manager": ["Level": 2, "Manager": ["Level": 3]]]])
        let max = try run("$expand=Manager($levels=max)", [entity], navigation: Store())
        var depth = 0
        var current: JSONValue? = .object(max.entities[0])
        while let next = current?["Manager"] {
            depth += 1
            current = next
        }
        #expect(depth == QueryEvaluator.maximumLevels)
    }

    @Test func lambdasOverResolvedNavigation() throws {
        let result = try run("$filter=Orders/any(o:o/Lines/any(l:l/Qty gt 2))&$select=ProductID", navigation: Store())
        #expect(ids(result.entities) == [1, 2])
        let all = try run("$filter=Orders/all(o:o/Freight lt 10)&$select=ProductID", navigation: Store())
        #expect(ids(all.entities) == [2, 3, 4, 5, 6])
    }

    @Test func inErrorStateCanBeAddedByTheOfflineStore() throws {
        var functions = FunctionTable()
        try functions.register("inErrorState") { call in .bool(call.entity["@sap.inErrorState"] == .bool(true)) }
        var entities = products
        entities[2]["@sap.inErrorState"] = true
        let options = try QueryOptions.parse("$filter=inErrorState()&$select=ProductID")
        let result = try QueryEvaluator.apply(options, to: entities, functions: functions)
        #expect(result.entities == [["ProductID": 3, "@sap.inErrorState": true]])
        #expect(throws: ODataError.self) { try QueryEvaluator.apply(options, to: entities) }
    }
}
