import Foundation
import ODataCore
import ODataQuery

// The operations the fixture's Northwind `$metadata` declares (`Fixture.metadata.xml`), served as a producer serves
// them: V4 functions as `GET Name(P=lit,Q=@q)?@q=json` (bound ones after their binding's path), V4 actions as `POST`
// with a JSON body, V2 function imports as `GET|POST Name?P=lit` with Gateway's result forms (`{"d": {"Name": 7}}`,
// `{"d": {"results": […]}}`). An operation another document declares and that is not implemented here answers 501.

extension FixtureService {
    /// What an operation call is bound to, or nothing.
    private enum Binding {
        case none
        case entity(set: String, predicate: String)
        case collection(set: String, members: [String]?)
    }

    /// Answers a request whose path names an operation of the model; nil for any other request.
    func operation(_ request: IncomingRequest, state: inout State) throws -> OutgoingResponse? {
        guard !model.operations.isEmpty else { return nil }
        let path = try QueryString.decoded(request.path, naming: "path '\(request.path)'")
        let segments = Self.split(path, at: "/")
        guard let last = segments.last else { return nil }
        let name = String(last.prefix { $0 != "(" })
        guard let operation = model.operations[name], operation.isBound == (segments.count > 1) else { return nil }
        let method = request.method
        guard method == (operation.isAction ? "POST" : "GET") else {
            throw ServiceFailure(405, "MethodNotAllowed", "\(operation.isAction ? "the action" : "the function") \(name) is called with \(operation.isAction ? "POST" : "GET"), not \(method)")
        }
        let arguments = try self.arguments(of: operation, segment: last, request: request)
        var binding = Binding.none
        if operation.isBound {
            let bindingPath = segments.dropLast().joined(separator: "/")
            switch try resolve(bindingPath, data: state.data) {
            case .entity(let set, let predicate): binding = .entity(set: set, predicate: predicate)
            case .collection(let set, let members, _): binding = .collection(set: set, members: members)
            default: throw ServiceFailure.badRequest("\(name) must be bound to an entity or a collection, not '\(bindingPath)'")
            }
        }
        return try execute(operation, arguments: arguments, binding: binding, state: &state)
    }

    // MARK: Arguments

    /// The call's arguments by parameter name, as JSON values.
    private func arguments(
        of operation: ServiceModel.Operation, segment: String, request: IncomingRequest
    ) throws -> [String: JSONValue] {
        var texts: [String: String] = [:]
        var query: [String: String] = [:]
        for piece in QueryString.pieces(request.query) { query[try QueryString.name(of: piece)] = try QueryString.value(of: piece) }
        var values: [String: JSONValue] = [:]
        if isV2 {
            for parameter in operation.parameters { texts[parameter.name] = query[parameter.name] }
        } else if operation.isAction {
            guard !request.body.isEmpty else { return [:] }
            return try bodyObject(request).reduce(into: values) { $0[$1.0] = $1.1 }
        } else {
            guard let open = segment.firstIndex(of: "("), segment.hasSuffix(")") else {
                throw ServiceFailure.badRequest("the function \(operation.name) is called with parentheses: \(operation.name)(…)")
            }
            let inside = String(segment[segment.index(after: open)..<segment.index(before: segment.endIndex)])
            for argument in Self.split(inside, at: ",") where !argument.isEmpty {
                guard let equals = argument.firstIndex(of: "=") else {
                    throw ServiceFailure.badRequest("the argument '\(argument)' of \(operation.name) is not Name=value")
                }
                let name = String(argument[..<equals])
                var text = String(argument[argument.index(after: equals)...])
                if text.hasPrefix("@") {
                    guard let aliased = query[text] else { throw ServiceFailure.badRequest("the parameter alias \(text) has no value") }
                    text = aliased
                }
                texts[name] = text
            }
        }
        for (name, text) in texts {
            guard operation.parameters.contains(where: { $0.name == name }) else {
                throw ServiceFailure.badRequest("\(operation.name) has no parameter \(name)")
            }
            values[name] = try Self.value(text, parameter: name)
        }
        return values
    }

    /// A parameter value from its URL text: JSON for `{…}` and `[…]`, else a literal (V2's `10M` decimals too).
    private static func value(_ text: String, parameter: String) throws -> JSONValue {
        if text.hasPrefix("{") || text.hasPrefix("[") {
            do { return try JSON.parse(text) } catch { throw ServiceFailure.badRequest("the value of \(parameter) is not JSON: \(error.message)") }
        }
        var literal = text
        if let suffix = literal.last, "MmDdFfLl".contains(suffix), Double(literal.dropLast()) != nil { literal.removeLast() }
        let expression: FilterExpression
        do { expression = try FilterExpression.parse(literal) } catch {
            throw ServiceFailure.badRequest("the value of \(parameter) is no literal: \(error.message)")
        }
        guard case .literal(let value) = expression else { throw ServiceFailure.badRequest("the value of \(parameter) is no literal") }
        switch value {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .int(let number): return .int(number)
        case .decimal(let text): return Double(text).map(JSONValue.double) ?? .string(text)
        case .double(let number): return .double(number)
        case .string(let text), .guid(let text), .date(let text), .timeOfDay(let text), .dateTimeOffset(let text): return .string(text)
        default: throw ServiceFailure.badRequest("the value of \(parameter) has a type no operation here takes")
        }
    }

    /// Splits at `separator` outside quotes, parentheses, brackets and braces.
    private static func split(_ text: String, at separator: Character) -> [String] {
        var parts: [String] = []
        var current = ""
        var depth = 0
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if "([{".contains(character) {
                depth += 1
            } else if ")]}".contains(character) {
                depth -= 1
            } else if character == separator, depth == 0 {
                parts.append(current)
                current = ""
                continue
            }
            current.append(character)
        }
        parts.append(current)
        return parts
    }

    // MARK: The operations

    private func execute(
        _ operation: ServiceModel.Operation, arguments: [String: JSONValue], binding: Binding, state: inout State
    ) throws -> OutgoingResponse {
        func number(_ name: String) throws -> Double {
            guard let value = arguments[name]?.doubleValue else { throw ServiceFailure.badRequest("\(operation.name) needs a number \(name)") }
            return value
        }
        func products(where include: (JSONObject) -> Bool) throws -> [String] {
            let type = try state.data.entityType(of: "Products")
            return try state.data.entities(in: "Products").filter(include).compactMap { EntityKey.predicate(of: $0, type: type) }
        }
        switch (operation.name, binding) {
        case ("CustomerCount", .none):
            let country = arguments["Country"] ?? .null
            let count = try state.data.entities(in: "Customers").filter { country.isNull || $0["Country"] == country }.count
            return primitive(.int(Int64(count)), type: "Edm.Int32", of: operation)
        case ("ProductsInCategory", .none):
            let category = try number("CategoryID")
            return try entities(try products { $0["CategoryID"]?.doubleValue == category }, set: "Products", data: state.data)
        case ("ProductsByPrice", .none):
            guard let range = arguments["Range"]?.objectValue, let low = range["Min"]?.doubleValue, let high = range["Max"]?.doubleValue else {
                throw ServiceFailure.badRequest("ProductsByPrice needs a Range with Min and Max")
            }
            return try entities(try products { ($0["UnitPrice"]?.doubleValue).map { low <= $0 && $0 <= high } ?? false }, set: "Products", data: state.data)
        case ("CategoryStock", .none):
            let category = try number("CategoryID")
            let members = try state.data.entities(in: "Products").filter { $0["CategoryID"]?.doubleValue == category }
            let units = members.reduce(Int64(0)) { $0 + ($1["UnitsInStock"]?.intValue ?? 0) }
            let discontinued = members.filter { $0["Discontinued"] == .bool(true) }.count
            var body: JSONObject = ["@odata.context": .string(serviceRoot + "$metadata#NorthwindModel.StockSummary")]
            body.append(.int(Int64(members.count)), forKey: "Products")
            body.append(.int(units), forKey: "UnitsInStock")
            body.append(.int(Int64(discontinued)), forKey: "Discontinued")
            return .json(200, isV2 ? ["d": [operation.name: .object(body)]] : .object(body))
        case ("RaisePrices", .none):
            let category = try number("CategoryID")
            let factor = 1 + (try number("Percent")) / 100
            var changed: [JSONValue] = []
            for product in try state.data.entities(in: "Products") where product["CategoryID"]?.doubleValue == category {
                guard let id = product["ProductID"], let price = product["UnitPrice"]?.doubleValue else { continue }
                try state.data.update(in: "Products", key: ["ProductID": id], changes: ["UnitPrice": .double((price * factor * 100).rounded() / 100)])
                changed.append(id)
            }
            return primitive(.array(changed), type: "Collection(Edm.Int32)", of: operation)
        case ("NorthwindModel.OrderCount", .entity("Customers", let predicate)):
            let customer = state.data.stored(in: "Customers", predicate: predicate)!.value["CustomerID"] ?? .null
            let count = try state.data.entities(in: "Orders").filter { $0["CustomerID"] == customer }.count
            return primitive(.int(Int64(count)), type: "Edm.Int32", of: operation)
        case ("NorthwindModel.MostExpensive", .collection("Products", let members)):
            let type = try state.data.entityType(of: "Products")
            let candidates = try collectionEntities(set: "Products", members: members, data: state.data)
            guard let top = candidates.max(by: { ($0["UnitPrice"]?.doubleValue ?? 0) < ($1["UnitPrice"]?.doubleValue ?? 0) }),
                  let predicate = EntityKey.predicate(of: top, type: type) else { return OutgoingResponse(status: 204) }
            return entityResponse(200, set: "Products", predicate: predicate, data: state.data)
        case ("NorthwindModel.Discontinue", .entity("Products", let predicate)):
            let key = state.data.stored(in: "Products", predicate: predicate)!.value["ProductID"] ?? .null
            try state.data.update(in: "Products", key: ["ProductID": key], changes: ["Discontinued": .bool(true)])
            return entityResponse(200, set: "Products", predicate: predicate, data: state.data)
        case ("NorthwindModel.Restock", .entity("Products", let predicate)):
            let product = state.data.stored(in: "Products", predicate: predicate)!.value
            guard let units = arguments["Units"]?.intValue else { throw ServiceFailure.badRequest("Restock needs Units") }
            let stock = (product["UnitsInStock"]?.intValue ?? 0) + units
            try state.data.update(in: "Products", key: ["ProductID": product["ProductID"] ?? .null], changes: ["UnitsInStock": .int(stock)])
            return OutgoingResponse(status: 204)
        default:
            throw ServiceFailure(501, "NotImplemented", "the fixture declares \(operation.name) but does not implement it for this binding")
        }
    }

    /// A primitive or collection-of-primitives result: V4 `{"value": …}`; V2 Gateway's `{"d": {"Name": …}}` or
    /// `{"d": {"results": […]}}`.
    private func primitive(_ value: JSONValue, type: String, of operation: ServiceModel.Operation) -> OutgoingResponse {
        if isV2 {
            if case .array = value { return .json(200, ["d": ["results": value]]) }
            return .json(200, ["d": [operation.name: value]])
        }
        return .json(200, ["@odata.context": .string(serviceRoot + "$metadata#" + type), "value": value])
    }

    /// A collection of entities, as a read of the set writes it.
    private func entities(_ predicates: [String], set: String, data: FixtureData) throws -> OutgoingResponse {
        let values: [JSONValue] = predicates.compactMap { predicate in
            data.stored(in: set, predicate: predicate).map { .object(annotated($0, set: set, predicate: predicate)) }
        }
        let body: JSONObject = ["@odata.context": .string(serviceRoot + "$metadata#" + set), "value": .array(values)]
        return .json(200, .object(isV2 ? V2Envelope.collection(body, nextLink: v2NextLink.withLock { $0 }) : body))
    }
}
