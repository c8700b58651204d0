import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures

/// Helpers over ODataCore's seeded generator.
extension SeededRandom {
    mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0..<items.count)] }
}

/// Structured generators for valid inputs, and a mutator that breaks them the way a bad peer or a
/// damaged network would: truncation, byte flips, insertions, duplication, interesting tokens.
struct InputFactory {
    var random: SeededRandom

    init(seed: UInt64) { random = SeededRandom(seed: seed) }

    static let words = ["", "a", "Name", "ÄÖÜ ünï", "it's", "quote\"d", "back\\slash", "tab\t", "\u{0}", "😀", "@odata.type", "__metadata", "d", "results", "value"]

    mutating func string() -> String { random.pick(Self.words) + (random.chance(0.2) ? String(random.int(0..<100_000)) : "") }

    /// A random JSON value of bounded depth; doubles are chosen to print and parse back exactly.
    mutating func json(depth: Int) -> JSONValue {
        let leaf = depth == 0 || random.chance(0.3)
        switch leaf ? random.int(0..<5) : random.int(5..<7) {
        case 0: return .null
        case 1: return .bool(random.chance(0.5))
        case 2: return .int(random.pick([0, -1, 1, Int64.max, Int64.min, Int64(random.int(-1000..<1000))]))
        case 3: return .double(random.pick([0.5, -2.25, 1e10, 3.125e-5]))
        case 4: return .string(string())
        case 5: return .array((0..<random.int(0..<5)).map { _ in json(depth: depth - 1) })
        default:
            var members: [(String, JSONValue)] = []
            var seen = Set<String>()
            for _ in 0..<random.int(0..<5) {
                let key = string()
                if seen.insert(key).inserted { members.append((key, json(depth: depth - 1))) }
            }
            return .object(JSONObject(members))
        }
    }

    mutating func entityObject(v2: Bool) -> JSONValue {
        var members: [(String, JSONValue)] = [("ID", .int(Int64(random.int(0..<1000)))), ("Name", .string(string()))]
        if v2 {
            members.append(("__metadata", .object(JSONObject([("uri", .string("Products(1)")), ("type", .string("NS.Product")), ("etag", .string("W/\"1\""))]))))
        } else {
            members.append(("@odata.etag", .string("W/\"\(random.int(0..<9))\"")))
            if random.chance(0.2) { members.append(("@removed", .object(JSONObject([("reason", .string("deleted"))])))) }
        }
        if random.chance(0.4) { members.append(("Extra", json(depth: 2))) }
        return .object(JSONObject(members))
    }

    /// A valid entity-set payload in the V4 (`value`) or V2 (`d.results` / `d` array) shape.
    mutating func entitySetPayload() -> [UInt8] {
        let v2 = random.chance(0.5)
        let entities = (0..<random.int(0..<6)).map { _ in entityObject(v2: v2) }
        let value: JSONValue
        if v2 {
            var inner: [(String, JSONValue)] = [("results", .array(entities))]
            if random.chance(0.3) { inner.append(("__next", .string("Products?$skiptoken=5"))) }
            if random.chance(0.3) { inner.append(("__count", .string("42"))) }
            value = random.chance(0.2) ? .object(JSONObject([("d", .array(entities))])) : .object(JSONObject([("d", .object(JSONObject(inner)))]))
        } else {
            var members: [(String, JSONValue)] = [("@odata.context", .string("$metadata#Products")), ("value", .array(entities))]
            if random.chance(0.3) { members.append(("@odata.nextLink", .string("Products?$skiptoken=5"))) }
            if random.chance(0.3) { members.append(("@odata.deltaLink", .string("Products?$deltatoken=7"))) }
            if random.chance(0.3) { members.append(("@odata.count", .int(42))) }
            value = .object(JSONObject(members))
        }
        return JSON.serialize(value)
    }

    mutating func entityPayload() -> [UInt8] {
        let v2 = random.chance(0.5)
        let entity = entityObject(v2: v2)
        return JSON.serialize(v2 ? .object(JSONObject([("d", entity)])) : entity)
    }

    /// An OData error body: V4 JSON, V2 JSON (`message.value`) or V2 XML.
    mutating func errorBody() -> [UInt8] {
        switch random.int(0..<3) {
        case 0:
            let details: JSONValue = .array((0..<random.int(0..<3)).map { _ in
                .object(JSONObject([("code", .string(string())), ("message", .string(string())), ("target", .string(string()))]))
            })
            return JSON.serialize(.object(JSONObject([("error", .object(JSONObject([
                ("code", .string(string())), ("message", .string(string())), ("target", .string("Name")),
                ("details", details), ("innererror", json(depth: 2)),
            ])))])))
        case 1:
            return JSON.serialize(.object(JSONObject([("error", .object(JSONObject([
                ("code", .string(string())), ("message", .object(JSONObject([("lang", .string("en")), ("value", .string(string()))]))),
            ])))])))
        default:
            let text = "<?xml version=\"1.0\" encoding=\"utf-8\"?><error xmlns=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\"><code>\(string())</code><message xml:lang=\"en\">\(string())</message></error>"
            return Array(text.utf8)
        }
    }

    mutating func request() -> ODataRequest {
        let method: HTTPRequest.Method = random.pick([.get, .post, .patch, .delete, .put])
        var options: [QueryOption] = []
        if random.chance(0.5) { options.append(.filter("Price gt \(random.int(0..<100)) and Name eq 'it''s'")) }
        if random.chance(0.3) { options.append(.top(random.int(0..<50))) }
        if random.chance(0.3) { options.append(.select(["ID", "Name"])) }
        var headers = HTTPFields()
        if random.chance(0.3) { headers[.ifMatch] = "W/\"3\"" }
        let body: Data? = method == .get || method == .delete ? nil : Data(JSON.serialize(json(depth: 2)))
        return ODataRequest(method: method, resourcePath: random.pick(["Products", "Products(1)", "Categories(2)/Products", "$1", "Orders(10248)/Order_Details"]),
                            queryOptions: options, headerFields: headers, body: body)
    }

    mutating func batchRequest() -> BatchRequest {
        var parts: [BatchRequest.Part] = []
        var nextID = 1
        for _ in 0..<random.int(0..<5) {
            if random.chance(0.4) {
                var members: [BatchRequest.ChangeSetRequest] = []
                for _ in 0..<random.int(1..<4) {
                    var member = request()
                    if member.method == .get { member.method = .post; member.body = Data("{}".utf8) }
                    members.append(.init(contentID: String(nextID), request: member))
                    nextID += 1
                }
                parts.append(.changeSet(members))
            } else {
                var read = request()
                read.method = .get
                read.body = nil
                parts.append(.request(read))
            }
        }
        return BatchRequest(parts: parts)
    }

    mutating func response() -> ODataResponse {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if random.chance(0.3) { headers[.eTag] = "W/\"\(random.int(0..<9))\"" }
        let status = random.pick([200, 201, 204, 304, 400, 404, 412, 500])
        let payload = status == 204 || status == 304 ? Data() : Data(JSON.serialize(json(depth: 2)))
        return ODataResponse(statusCode: status, headerFields: headers, payload: payload)
    }

    mutating func batchResponse() -> BatchResponse {
        var parts: [BatchResponse.Part] = []
        var nextID = 1
        for _ in 0..<random.int(0..<5) {
            if random.chance(0.4) {
                var members: [(contentID: String?, response: ODataResponse)] = []
                for _ in 0..<random.int(1..<4) { members.append((String(nextID), response())); nextID += 1 }
                parts.append(.changeSet(members))
            } else {
                parts.append(.response(response(), contentID: nil))
            }
        }
        return BatchResponse(parts: parts)
    }

    static let tokens: [[UInt8]] = [
        "{", "}", "[", "]", "\"", "\\", "\\u", "\\uD800", "\\u00", ":", ",", "-", "1e999999", "-0", "0.", "tru", "null",
        "\r\n", "\n", "\r\n\r\n", "--", "--batch", "--changeset", "Content-Type: multipart/mixed; boundary=x\r\n",
        "Content-Length: 99999999999999999999\r\n", "Content-Length: -5\r\n", "HTTP/1.1 ", "GET ", " HTTP/1.1\r\n", ": ",
        "\u{0}", "\u{FF}", "😀", "%", "%zz", "'", "(", ")",
    ].map { Array($0.utf8) }

    /// Applies 1–4 random mutations to a valid input.
    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        for _ in 0..<random.int(1..<5) {
            let position = bytes.isEmpty ? 0 : random.int(0..<bytes.count + 1)
            switch random.int(0..<9) {
            case 0: bytes = Array(bytes.prefix(position)) // truncation
            case 1 where !bytes.isEmpty: bytes[min(position, bytes.count - 1)] ^= UInt8(1 << random.int(0..<8))
            case 2 where !bytes.isEmpty: bytes[min(position, bytes.count - 1)] = UInt8.random(in: 0...255, using: &random)
            case 3: bytes.insert(contentsOf: random.pick(Self.tokens), at: position)
            case 4 where position < bytes.count:
                let end = min(bytes.count, position + random.int(1..<64))
                bytes.removeSubrange(position..<end)
            case 5 where position < bytes.count:
                let end = min(bytes.count, position + random.int(1..<256))
                bytes.insert(contentsOf: bytes[position..<end], at: position) // duplication
            case 6: bytes.insert(contentsOf: Array(repeating: random.pick(Array("[{\"a".utf8)), count: random.int(1..<2_000)), at: position)
            case 7: bytes.insert(contentsOf: (0..<random.int(1..<16)).map { _ in UInt8.random(in: 0...255, using: &random) }, at: position)
            default: bytes = Array(bytes.suffix(from: min(position, bytes.count))) // lost prefix
            }
        }
        return bytes
    }
}

/// Runs a seeded fuzz loop, printing the seed so a failure can be replayed.
/// - Returns: the elapsed seconds.
func fuzzLoop(_ name: String, seed: UInt64, iterations requested: Int, _ body: (inout InputFactory, Int) throws -> Void) rethrows -> Double {
    // Under a sanitizer (CI's second and third runs of the suite) half the inputs: the sanitizer looks for memory
    // errors and races in the same code paths, and the plain run covers every input.
    let iterations = Sanitizers.rounds(plain: requested, sanitized: (requested + 1) / 2)
    print("fuzz \(name): seed \(seed), \(iterations) inputs")
    var factory = InputFactory(seed: seed)
    let start = ContinuousClock.now
    for index in 0..<iterations { try body(&factory, index) }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print("fuzz \(name): done in \(String(format: "%.2f", seconds)) s")
    return seconds
}
