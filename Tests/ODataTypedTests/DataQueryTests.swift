import Foundation
import NorthwindProxies
import ODataCore
import ODataQuery
import ODataTyped
import Testing

/// Typed queries render exact OData text for V4 and V2, and what a version cannot express is a typed error.
@Suite struct DataQueryTests {
    private func options<E>(_ query: DataQuery<E>, _ version: ODataVersion = .v4) throws -> [String] {
        try query.queryOptions(for: version).map { "\($0.name)=\($0.value)" }
    }

    @Test func filterOrderExpandSelectTopSkipCount() throws {
        let query = DataQuery<Customer>()
            .filter(Customer.country == "Germany" && Customer.city.startsWith("B"))
            .filter(!(Customer.region == nil) || Customer.companyName.toLower().contains("o'neil"))
            .orderBy(Customer.city, .descending)
            .orderBy(Customer.companyName)
            .select(Customer.customerID, Customer.companyName)
            .expand(Customer.orders) { $0.filter(Order.freight > Decimal(string: "10.5")!).orderBy(Order.orderDate).top(2) }
            .skip(5).top(10).count()
        #expect(try options(query) == [
            "$filter=Country eq 'Germany' and startswith(City,'B') and (not (Region eq null) or contains(tolower(CompanyName),'o''neil'))",
            "$orderby=City desc,CompanyName",
            "$select=CustomerID,CompanyName",
            "$expand=Orders($filter=Freight gt 10.5;$orderby=OrderDate;$top=2)",
            "$skip=5", "$top=10", "$count=true",
        ])
    }

    @Test func v2FormsOfLiteralsFunctionsAndCount() throws {
        let day = try #require(ISO8601DateFormatter().date(from: "2024-02-29T13:20:00Z"))
        let query = DataQuery<Order>()
            .filter(Order.orderDate >= day && Order.freight < Decimal(string: "12.5")! && Order.shipCity.contains("rl"))
            .filter(Order.shipCountry.in(["Germany", "France"]))
            .expand(Order.customer).count()
        #expect(try options(query, .v2) == [
            "$filter=OrderDate ge datetime'2024-02-29T13:20:00' and Freight lt 12.5M and substringof('rl',ShipCity) and (ShipCountry eq 'Germany' or ShipCountry eq 'France')",
            "$expand=Customer", "$inlinecount=allpages",
        ])
        #expect(try options(query) == [
            "$filter=OrderDate ge 2024-02-29T13:20:00Z and Freight lt 12.5 and contains(ShipCity,'rl') and ShipCountry in ('Germany','France')",
            "$expand=Customer", "$count=true",
        ])
    }

    @Test func lambdasNestVariablesAndAreRefusedForV2() throws {
        let query = DataQuery<Customer>().filter(Customer.orders.any { o in
            o[Order.freight] > Decimal(100) && o[Order.orderDetails].all { d in d[OrderDetail.quantity] >= 2 }
        })
        #expect(try query.filterText(for: .v4) == "Orders/any(x0:x0/Freight gt 100.0 and x0/Order_Details/all(x1:x1/Quantity ge 2))")
        #expect(throws: DataServiceError.self) { try query.filterText(for: .v2) }
        do { _ = try query.filterText(for: .v2) } catch {
            #expect(error == .invalidQuery && error.message.contains("lambda"))
        }
        let nested = DataQuery<Customer>().expand(Customer.orders) { $0.top(1) }
        #expect(throws: DataServiceError.self) { try nested.queryOptions(for: .v2) }
    }

    @Test func keysAreWrittenPerVersion() throws {
        #expect(try Customer(customerID: "O'K").entityKey.predicate(for: .v4) == "('O''K')")
        let detail = OrderDetail(orderID: 10248, productID: 11)
        #expect(try detail.entityKey.predicate(for: .v4) == "(OrderID=10248,ProductID=11)")
        let guid = try #require(UUID(uuidString: "01234567-89AB-CDEF-0123-456789ABCDEF"))
        #expect(try EntityKey(("ID", guid)).predicate(for: .v2) == "(guid'01234567-89ab-cdef-0123-456789abcdef')")
        #expect(try EntityKey(("ID", guid)).predicate(for: .v4) == "(01234567-89ab-cdef-0123-456789abcdef)")
        #expect(throws: DataServiceError.self) { try EntityKey().predicate(for: .v4) }
    }

    @Test func offlineFunctionsAndArithmetic() throws {
        let query = DataQuery<NorthwindProxies.Product>().filter(OfflineQueryFunction.inErrorState() || OfflineQueryFunction.isDeleteError())
        #expect(try query.filterText(for: .v4) == "inErrorState() or isDeleteError()")
        let priced = DataQuery<NorthwindProxies.Product>().filter(NorthwindProxies.Product.unitPrice * Decimal(2) > Decimal(string: "30.25")! && NorthwindProxies.Product.orderDetails.count() == 1)
        #expect(try priced.filterText(for: .v4) == "UnitPrice mul 2.0 gt 30.25 and Order_Details/$count eq 1")
    }
}

/// The property test of the issue: random typed queries render, parse back with `ODataQuery`, and give the
/// very tree the builder made — for V4, and for V2 after V2's rewrites.
@Suite struct DataQueryRoundTripTests {
    /// A seeded generator (a seed names a whole run), drawing integers below a bound.
    private struct Random {
        var generator: SeededRandom
        mutating func next(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &generator) }
    }

    private static let texts = ["Berlin", "O'Neil", "a b&c", "Ünïcødé", "%20", "", "x=y;z"]

    private func comparison(_ random: inout Random, v2: Bool) -> QueryFilter<Order> {
        let text = Self.texts[random.next(Self.texts.count)]
        let number = Int32(random.next(2000)) - 1000
        let decimal = Decimal(string: "\(random.next(100000)).\(random.next(100))")!
        let instant = Date(timeIntervalSince1970: Double(random.next(2_000_000_000)))
        switch random.next(v2 ? 12 : 14) {
        case 0: return Order.shipCity == text
        case 1: return Order.shipCity != text
        case 2: return Order.employeeID < number
        case 3: return Order.employeeID >= number
        case 4: return Order.freight > decimal
        case 5: return Order.orderDate <= instant
        case 6: return Order.shipName.startsWith(text)
        case 7: return Order.shipName.contains(text)
        case 8: return Order.shipCity.toUpper().length() == number
        case 9: return Order.orderDate.year() == number
        case 10: return Order.shipRegion == nil
        case 11: return Order.employeeID + number == Order.shipVia
        case 12: return Order.shipCountry.in([text, "France"])
        default: return Order.orderDetails.any { d in d[OrderDetail.quantity] > Int16(number % 100) }
        }
    }

    private func filter(_ random: inout Random, depth: Int, v2: Bool) -> QueryFilter<Order> {
        guard depth > 0, random.next(3) != 0 else { return comparison(&random, v2: v2) }
        switch random.next(3) {
        case 0: return filter(&random, depth: depth - 1, v2: v2) && filter(&random, depth: depth - 1, v2: v2)
        case 1: return filter(&random, depth: depth - 1, v2: v2) || filter(&random, depth: depth - 1, v2: v2)
        default: return !filter(&random, depth: depth - 1, v2: v2)
        }
    }

    /// V2 writes `contains(a,b)` as `substringof(b,a)`; the parsed V2 text is compared after rewriting back.
    private func fromV2(_ expression: FilterExpression) -> FilterExpression {
        switch expression {
        case .function("substringof", let arguments) where arguments.count == 2: return .function("contains", [fromV2(arguments[1]), fromV2(arguments[0])])
        case .function(let name, let arguments): return .function(name, arguments.map(fromV2))
        case .unary(let op, let operand): return .unary(op, fromV2(operand))
        case .binary(let op, let lhs, let rhs): return .binary(op, fromV2(lhs), fromV2(rhs))
        default: return expression
        }
    }

    @Test(arguments: [ODataVersion.v4, .v2])
    func twoThousandRandomFiltersParseBackToTheSameTree(version: ODataVersion) throws {
        var random = Random(generator: SeededRandom(seed: version == .v4 ? 17 : 29))
        for _ in 0..<2000 {
            let built = filter(&random, depth: 4, v2: version == .v2)
            let text = try #require(try DataQuery<Order>().filter(built).filterText(for: version))
            let parsed = try FilterExpression.parse(text)
            let back = version == .v2 ? fromV2(parsed) : parsed
            #expect(back == built.expression, "\(text)")
            if back != built.expression { return }
        }
    }

    @Test func orderByAndExpandTextParseBack() throws {
        let query = DataQuery<Order>().orderBy(Order.shipCity.toLower(), .descending).orderBy(Order.freight)
        let options = try query.queryOptions(for: .v4)
        let orderBy = try #require(options.first { $0.name == "$orderby" }?.value)
        let parsed = try OrderBy.parse(orderBy)
        #expect(parsed.items == [.init(Order.shipCity.toLower().expression, descending: true), .init(Order.freight.expression)])
    }
}
