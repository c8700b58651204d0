/// A structure-aware generator for FuzzFilter: the fuzzer's bytes are a stream of choices that
/// build expression text (and whole query strings) from the grammar ODataQuery supports. Every
/// text it builds is meant to be valid, so a parse error is a finding. When the bytes run out,
/// every choice is 0, which always picks a leaf, so generation ends.

/// The fuzzer's bytes as choices.
struct Choices {
    let bytes: UnsafeBufferPointer<UInt8>
    var index: Int

    var exhausted: Bool { index >= bytes.count }

    mutating func byte() -> Int {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return Int(bytes[index])
    }

    /// 0..<n (0 once exhausted).
    mutating func pick(_ n: Int) -> Int { n <= 1 ? 0 : byte() % n }

    mutating func pick<T>(_ items: [T]) -> T { items[pick(items.count)] }

    /// True with about `percent` % probability; false once exhausted.
    mutating func chance(_ percent: Int) -> Bool { byte() >= 256 - percent * 256 / 100 }

    /// A number in 0...max, small values likelier.
    mutating func small(_ max: Int) -> Int { min(max, byte() % (max + 1)) }
}

struct Generator {
    var c: Choices
    /// Lambda range variables in scope, innermost last.
    var variables: [String] = []
    /// Nesting left.
    var budget = 7
    /// Building a query string (aliases may have values there).
    var inQuery = false
    /// Building an alias value: no aliases in it (an alias referring to itself is an error).
    var noAliases = false

    static let properties = ["Name", "Price", "Qty", "City", "Tags", "Orders", "Address", "Items", "Born", "Flag", "Ünï", "_id", "x1"]
    static let collections = ["Tags", "Orders", "Items", "Orders/Items", "Address/Lines"]
    static let canonical: [(String, ClosedRange<Int>)] = [
        ("contains", 2...2), ("startswith", 2...2), ("endswith", 2...2), ("length", 1...1), ("indexof", 2...2),
        ("substring", 2...3), ("matchesPattern", 2...2), ("tolower", 1...1), ("toupper", 1...1), ("trim", 1...1),
        ("concat", 2...2), ("year", 1...1), ("month", 1...1), ("day", 1...1), ("hour", 1...1), ("minute", 1...1),
        ("second", 1...1), ("fractionalseconds", 1...1), ("totalseconds", 1...1), ("date", 1...1), ("time", 1...1),
        ("totaloffsetminutes", 1...1), ("now", 0...0), ("mindatetime", 0...0), ("maxdatetime", 0...0),
        ("round", 1...1), ("floor", 1...1), ("ceiling", 1...1), ("hassubset", 2...2), ("hassubsequence", 2...2),
        ("geo.distance", 2...2), ("geo.length", 1...1), ("geo.intersects", 2...2),
    ]
    static let operators = ["and", "or", "eq", "ne", "gt", "ge", "lt", "le", "has", "in", "add", "sub", "mul", "div", "divby", "mod"]

    init(_ choices: Choices) { c = choices }

    // MARK: - Small pieces

    /// Required whitespace (RWS).
    mutating func rws() -> String { c.pick([" ", " ", " ", "  ", "\t", "\n", " \r\n "]) }

    /// Optional whitespace (BWS).
    mutating func bws() -> String { c.chance(20) ? rws() : "" }

    /// A keyword in one of its case variants (4.01 operators, `not`, `true` … are case-insensitive).
    mutating func keyword(_ word: String) -> String {
        switch c.pick(6) {
        case 1: return word.uppercased()
        case 2: return word.prefix(1).uppercased() + word.dropFirst()
        case 3:
            var out = ""
            for ch in word { out += c.chance(50) ? ch.uppercased() : String(ch) }
            return out
        default: return word
        }
    }

    mutating func digits(_ count: Int) -> String {
        var out = ""
        for _ in 0..<count { out += String(c.pick(10)) }
        return out
    }

    mutating func padded(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    // MARK: - Literals

    mutating func stringLiteral() -> String {
        let pieces = ["", "a", "it''s", "''", " ", "Ünï", "€", "%20", "&", "#", ";", "(x)", ",", "\"", "\\", "/", "@p", "$it",
                      " eq ", "''''", "\t", "😀", "=", "+"]
        var out = "'"
        for _ in 0..<c.small(4) { out += c.pick(pieces) }
        return out + "'"
    }

    mutating func intLiteral() -> String {
        switch c.pick(8) {
        case 0: return String(c.byte())
        case 1: return "-" + String(c.byte())
        case 2: return c.pick(["9223372036854775807", "-9223372036854775808", "0", "-0", "2147483648"])
        case 3: return "+" + String(c.byte())
        case 4: return "99999999999999999999"  // too large for Int64: a decimal
        case 5: return String(c.byte()) + c.pick(["L", "l"])
        default: return String(c.byte() * 257 + c.byte())
        }
    }

    mutating func decimalLiteral() -> String {
        switch c.pick(5) {
        case 0: return String(c.byte()) + "." + digits(1 + c.small(4))
        case 1: return "-" + String(c.byte()) + "." + digits(1 + c.small(3))
        case 2: return c.pick(["0.0", "-0.0", "007.50", "1.5M", "20m", "+0.314", "1234567890123456789012.5"])
        default: return String(c.byte()) + ".5"
        }
    }

    mutating func doubleLiteral() -> String {
        switch c.pick(6) {
        case 0: return c.pick(["INF", "-INF", "NaN"])
        case 1: return String(c.byte()) + "." + digits(1 + c.small(3)) + c.pick(["e", "E"]) + c.pick(["", "+", "-"]) + String(c.small(30))
        case 2: return c.pick(["1e308", "1e400", "-1e400", "4.9e-324", "1e-400", "-0.0e0", "+0.314e+1"])
        case 3: return String(c.byte()) + c.pick(["d", "D", "f", "F"])
        default: return String(c.byte()) + "e" + String(c.small(5))
        }
    }

    mutating func date() -> String {
        let year = 1 + c.byte() * 37 % 9999
        let month = 1 + c.pick(12)
        let days = [31, year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        let day = 1 + c.pick(days[month - 1])
        let sign = c.chance(5) ? "-" : ""
        // Four digits, or more without a leading zero (ABNF: "0" 3DIGIT / oneToNine 3*DIGIT).
        return sign + (c.chance(5) ? String(10_000 + year) : padded(year, 4)) + "-" + padded(month, 2) + "-" + padded(day, 2)
    }

    mutating func timeOfDay() -> String {
        var out = padded(c.pick(24), 2) + ":" + padded(c.pick(60), 2)
        if c.pick(4) != 0 {
            out += ":" + padded(c.pick(60), 2)
            if c.chance(40) { out += "." + digits(1 + c.small(11)) }
        }
        return out
    }

    mutating func dateTimeOffset() -> String {
        let zone: String
        switch c.pick(4) {
        case 0: zone = "Z"
        case 1: zone = "z"
        default: zone = c.pick(["+", "-"]) + padded(c.pick(24), 2) + ":" + padded(c.pick(60), 2)
        }
        return date() + c.pick(["T", "T", "t"]) + timeOfDay() + zone
    }

    mutating func duration() -> String {
        var out = c.chance(20) ? "-P" : "P"
        let days = c.chance(50)
        if days { out += String(c.byte() * 13) + "D" }
        var time = ""
        if c.chance(50) { time += String(c.pick(30)) + "H" }
        if c.chance(50) { time += String(c.pick(90)) + "M" }
        if c.chance(50) || (!days && time.isEmpty) {
            time += String(c.byte()) + (c.chance(30) ? "." + digits(1 + c.small(9)) : "") + "S"
        }
        if !time.isEmpty { out += "T" + time }
        return out
    }

    mutating func guid() -> String {
        let hex = Array("0123456789abcdefABCDEF")
        var out = ""
        for (n, length) in [8, 4, 4, 4, 12].enumerated() {
            if n > 0 { out += "-" }
            for _ in 0..<length { out.append(hex[c.pick(hex.count)]) }
        }
        return out
    }

    mutating func binary() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        if c.chance(20) {
            let hex = Array("0123456789abcdefABCDEF")
            var body = ""
            for _ in 0..<(2 * c.small(4)) { body.append(hex[c.pick(hex.count)]) }
            return c.pick(["X", "x"]) + "'" + body + "'"
        }
        // Base64url of whole groups, or a tail of 2 or 3 characters (never 1), padded or not.
        var body = ""
        for _ in 0..<(4 * c.small(3)) { body.append(alphabet[c.pick(alphabet.count)]) }
        let tail = c.pick([0, 2, 3])
        for _ in 0..<tail { body.append(alphabet[c.pick(alphabet.count)]) }
        if tail > 0 && c.chance(50) { body += String(repeating: "=", count: 4 - tail) }
        return "binary'" + body + "'"
    }

    mutating func geo() -> String {
        let bodies = ["Point(1 2)", "SRID=4326;Point(-122.1 47.6)", "LineString(1 2,3 4)", "Polygon((0 0,1 0,1 1,0 0))",
                      "MultiPoint((1 2),(3 4))", "MultiLineString((1 2,3 4))", "MultiPolygon(((0 0,1 0,1 1,0 0)))",
                      "Collection(Point(1 2))", "SRID=0;MultiPoint()"]
        return c.pick(["geography", "geometry"]) + "'" + c.pick(bodies) + "'"
    }

    mutating func enumLiteral() -> String {
        let members = ["Red", "Blue", "4", "-1", "+2", "Red,Blue", "Red,4"]
        return c.pick(["NS.Color", "Model.Flags", "A.B.C"]) + "'" + c.pick(members) + "'"
    }

    mutating func jsonValue(_ depth: Int) -> String {
        switch depth <= 0 ? c.pick(5) : c.pick(7) {
        case 0: return String(c.byte())
        case 1: return c.pick(["\"a\"", "\"\\\"q\\\"\"", "\"\\u00e9\"", "\"it's\"", "\"\"", "\"a b\""])
        case 2: return c.pick(["true", "false", "null"])
        case 3: return c.pick(["1.5", "-2e3", "0"])
        case 4: return "\"" + c.pick(["x", "y", "Name"]) + "\""
        case 5:
            var items: [String] = []
            for _ in 0..<c.small(3) { items.append(jsonValue(depth - 1)) }
            return "[" + items.joined(separator: c.pick([",", ", "])) + "]"
        default:
            var members: [String] = []
            for n in 0..<c.small(3) { members.append("\"k\(n)\"" + c.pick([":", " : "]) + jsonValue(depth - 1)) }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    mutating func literal() -> String {
        switch c.pick(22) {
        case 0: return intLiteral()
        case 1: return stringLiteral()
        case 2: return keyword(c.pick(["true", "false"]))
        case 3: return keyword("null")
        case 4: return decimalLiteral()
        case 5: return doubleLiteral()
        case 6: return date()
        case 7: return c.chance(20) ? "date'" + date() + "'" : date()
        case 8: return dateTimeOffset()
        case 9: return c.chance(20) ? "datetimeoffset'" + dateTimeOffset() + "'" : dateTimeOffset()
        case 10: return timeOfDay()
        case 11: return c.chance(20) ? "timeofday'" + timeOfDay() + "'" : timeOfDay()
        case 12: return "duration'" + duration() + "'"
        case 13: return duration()
        case 14: return guid()
        case 15: return "guid'" + guid() + "'"
        case 16: return enumLiteral()
        case 17: return binary()
        case 18: return geo()
        case 19: return c.chance(50) ? "[" + jsonValue(2) + "]" : "{\"a\":" + jsonValue(2) + "}"
        case 20: return stringLiteral()
        default: return intLiteral()
        }
    }

    // MARK: - Paths

    mutating func property() -> String { c.pick(Generator.properties) }

    /// A member path: from the entity, `$it`, `$this`, a range variable or an alias; with type casts,
    /// annotations and a final `$count`.
    mutating func memberPath() -> String {
        var segments: [String] = []
        switch c.pick(8) {
        case 1 where !variables.isEmpty: segments.append(c.pick(variables))
        case 2: segments.append(c.pick(["$it", "$this"]))
        case 3: segments.append(c.pick(["$it", "$this"]))
            if c.chance(70) { segments.append(property()) }
            return segments.joined(separator: "/")
        case 4 where !noAliases && !inQuery: segments.append("@p")  // in a query @p may have a value that is no path
        case 5 where !variables.isEmpty: return c.pick(variables)  // the range variable itself (`t eq 'a'`)
        default: break
        }
        for _ in 0..<(1 + c.small(2)) {
            switch c.pick(10) {
            case 0: segments.append(c.pick(["NS.Special", "Model.Derived"]))
            default: segments.append(property())
            }
        }
        switch c.pick(10) {
        case 0: segments.append("$count")
        case 1: segments.append(c.pick(["@Core.Messages", "@Measures.Currency#Reporting"]))
        default: break
        }
        // A qualified name cannot end a path that has no other segment (`NS.Special` alone is no member).
        if segments.count == 1, segments[0].contains(".") && !segments[0].hasPrefix("@") { segments.append("Name") }
        return segments.joined(separator: "/")
    }

    mutating func collectionPath() -> String {
        if !variables.isEmpty && c.chance(40) { return c.pick(variables) + "/" + c.pick(["Tags", "Items"]) }
        return c.pick(Generator.collections)
    }

    // MARK: - Expressions

    /// A common expression: a chain of unary operands joined by binary operators.
    mutating func expression() -> String {
        guard budget > 0, !c.exhausted else { return primary() }
        budget -= 1
        defer { budget += 1 }
        var out = unary()
        for _ in 0..<c.small(3) {
            let op = c.pick(Generator.operators)
            out += rws() + keyword(op) + rws()
            if op == "in" {
                out += inRightSide()
            } else if op == "has" {
                out += c.chance(60) ? enumLiteral() : primary()
            } else {
                out += unary()
            }
        }
        return out
    }

    /// `not x`, `-x`, or a primary.
    mutating func unary() -> String {
        switch c.pick(10) {
        case 0 where budget > 0:
            budget -= 1
            defer { budget += 1 }
            if c.chance(30) { return keyword("not") + "(" + bws() + expression() + bws() + ")" }
            return keyword("not") + rws() + unary()
        case 1 where budget > 0:
            budget -= 1
            defer { budget += 1 }
            return "-" + bws() + unary()
        default:
            return primary()
        }
    }

    /// The right side of `in`: a list, a JSON or expression array, or a collection path.
    mutating func inRightSide() -> String {
        switch c.pick(5) {
        case 0: return "()"
        case 1: return "[" + c.pick(["\"a\"", "1", "\"a\",\"b\"", "1,2.5,null", "[1]"]) + "]"
        case 2:
            var items: [String] = []
            for _ in 0..<(1 + c.small(2)) { items.append(c.chance(50) ? "'x'" : primary()) }
            return "[" + items.joined(separator: ",") + "]"
        case 3: return collectionPath()
        default:
            var items: [String] = []
            for _ in 0..<(1 + c.small(3)) { items.append(c.chance(60) ? literal() : expression()) }
            return "(" + bws() + items.joined(separator: bws() + "," + bws()) + bws() + ")"
        }
    }

    mutating func arguments(_ count: Int) -> String {
        var items: [String] = []
        for _ in 0..<count { items.append(expression()) }
        return items.joined(separator: bws() + "," + bws())
    }

    /// A primary expression: a literal, path, call, lambda, `$root` path, JSON, or a parenthesized
    /// expression.
    mutating func primary() -> String {
        guard budget > 0, !c.exhausted else { return c.chance(50) ? literal() : memberPath() }
        budget -= 1
        defer { budget += 1 }
        switch c.pick(16) {
        case 0, 1: return literal()
        case 2, 3: return memberPath()
        case 4, 5:
            let (name, arity) = c.pick(Generator.canonical)
            let count = arity.lowerBound + c.pick(arity.count)
            return name + "(" + bws() + arguments(count) + bws() + ")"
        case 6: return "(" + bws() + expression() + bws() + ")"
        case 7: return lambda()
        case 8:
            let name = c.pick(["cast", "isof"])
            let type = c.pick(["Edm.String", "Edm.Int32", "Edm.Decimal", "Edm.Double", "Edm.Boolean", "Edm.DateTimeOffset", "NS.Customer", "Customer"])
            if c.chance(40) { return name + "(" + type + ")" }
            return name + "(" + expression() + "," + bws() + type + bws() + ")"
        case 9: return c.pick(["inErrorState", "NS.custom"]) + "(" + arguments(c.small(2)) + ")"
        case 10: return serviceCall()
        case 11: return root()
        case 12: return "[" + arguments(1 + c.small(2)) + "]"
        case 13 where !noAliases: return "@" + c.pick(["p", "q1", "Core.Messages"])
        case 14: return "(" + arguments(2 + c.small(1)) + ")"
        default: return literal()
        }
    }

    mutating func lambda() -> String {
        let path = collectionPath()
        if c.chance(20) { return path + "/any(" + bws() + ")" }
        let variable = c.pick(["x", "o", "d", "item", "t\(variables.count)"])
        let kind = keywordLambda()
        variables.append(variable)
        let predicate = expression()
        variables.removeLast()
        return path + "/" + kind + "(" + bws() + variable + bws() + ":" + bws() + predicate + bws() + ")"
    }

    /// `any`/`all` are path segments, matched exactly (not keywords).
    mutating func keywordLambda() -> String { c.pick(["any", "all"]) }

    /// Functions of the service and path segments with arguments: parsed and printed, compiled as
    /// "not evaluable offline".
    mutating func serviceCall() -> String {
        switch c.pick(6) {
        case 0:
            var named: [String] = []
            for n in 0..<c.small(2) { named.append(c.pick(["a", "Word", "n"]) + "\(n)=" + expression()) }
            return "Model.F(" + named.joined(separator: ",") + ")" + (c.chance(40) ? "/" + property() : "")
        case 1: return c.pick(["Products", "Orders"]) + "/Model.BestProduct()/" + property()
        case 2: return c.pick(["Addresses", "Orders"]) + "/$filter(" + expression() + ")/$count"
        case 3: return c.pick(["Items", "Orders"]) + "/$count($filter=" + expression() + ")"
        case 4: return "Products/$filter(" + expression() + ")(" + c.pick(["1", "'Sugar'", "ID=1"]) + ")/Name"
        default: return "Products/Model.BestProduct()/" + c.pick(["Tags", "Emails"]) + "/any()"
        }
    }

    mutating func root() -> String {
        let key = c.pick(["('ALFKI')", "(1)", "(ID=1,Name='a b')", "('O''Neil')", "(" + guid() + ")"])
        return "$root/" + c.pick(["Customers", "Orders", "People"]) + key + (c.chance(70) ? "/" + property() : "")
    }

    // MARK: - Query strings

    /// One option's value percent-encoded: only what the query syntax needs (`%`, `&`, `#`, and
    /// `;` when `semicolons`), or every byte outside the unreserved set.
    mutating func encode(_ text: String, semicolons: Bool, keepSemicolons: Bool = false) -> String {
        let everything = c.chance(30)
        let hex = Array("0123456789ABCDEF")
        var out = ""
        for b in text.utf8 {
            let unreserved = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "~")
            let must = b == UInt8(ascii: "%") || b == UInt8(ascii: "&") || b == UInt8(ascii: "#")
                || (semicolons && b == UInt8(ascii: ";")) || b < 0x20 || b >= 0x80
            let keep = keepSemicolons && b == UInt8(ascii: ";")
            if !keep && (must || (everything && !unreserved)) {
                out += "%" + String(hex[Int(b >> 4)]) + String(hex[Int(b & 0xF)])
            } else {
                out += String(decoding: [b], as: UTF8.self)
            }
        }
        return out
    }

    mutating func orderBy() -> String {
        var items: [String] = []
        for _ in 0..<(1 + c.small(2)) {
            var item = expression()
            if c.chance(40) { item += rws() + keyword(c.pick(["asc", "desc"])) }
            items.append(item)
        }
        return items.joined(separator: c.pick([",", ", "]))
    }

    mutating func select() -> String {
        var items: [String] = []
        for _ in 0..<(1 + c.small(2)) {
            items.append(c.pick(["Name", "Address/City", "*", "NS.*", "@Core.Messages", "Model.F(Location,Kind)", "Orders", "NS.Special/Name"]))
        }
        return items.joined(separator: ",")
    }

    mutating func search(nested: Bool) -> String {
        let terms = ["blue", "green", "\"light green\"", "\"a;b\"", "red", "NOT red", "(blue OR red)"]
        var out = c.pick(terms)
        for _ in 0..<c.small(2) {
            out += c.pick([" ", " AND ", " OR ", " and "]) + c.pick(terms)
        }
        // A `;` inside a nested $search does not survive `queryString` (a known limit, documented in
        // ABNFConformanceTests and docs/notes/query.md): no `;` in nested ones.
        return nested ? out.replacingOccurrences(of: ";", with: "") : out
    }

    mutating func expand(depth: Int) -> String {
        var items: [String] = []
        for _ in 0..<(1 + c.small(2)) {
            var item = c.pick(["Orders", "Customer", "Items", "*", "Orders/Items", "NS.Special/Orders"])
            if item != "*" && c.chance(20) { item += c.pick(["/$ref", "/$count"]) }
            if c.chance(50) {
                var nested: [String] = []
                var used: Set<String> = []
                for _ in 0..<(1 + c.small(3)) {
                    let option = c.pick(item.hasSuffix("/$count") ? ["$filter", "$search"]
                        : item.hasSuffix("/$ref") ? ["$filter", "$search", "$orderby", "$skip", "$top", "$count"]
                        : ["$filter", "$orderby", "$top", "$skip", "$select", "$expand", "$levels", "$count", "$search"])
                    guard used.insert(option).inserted else { continue }
                    switch option {
                    case "$filter": nested.append(keyword(option) + "=" + expression())
                    case "$orderby": nested.append(option + "=" + orderBy())
                    case "$top", "$skip": nested.append(option + "=" + String(c.byte()))
                    case "$select": nested.append(option + "=" + select())
                    case "$expand" where depth > 0: nested.append(option + "=" + expand(depth: depth - 1))
                    case "$levels": nested.append(option + "=" + c.pick(["1", "2", "max"]))
                    case "$count": nested.append(option + "=" + c.pick(["true", "false"]))
                    case "$search": nested.append(option + "=" + search(nested: true))
                    default: break
                    }
                }
                if !nested.isEmpty { item += "(" + nested.joined(separator: ";") + ")" }
            }
            items.append(item)
        }
        return items.joined(separator: ",")
    }

    /// A whole query string of generated parts, each system option at most once.
    mutating func queryString() -> String {
        inQuery = true
        var parts: [String] = []
        var used: Set<String> = []
        let options = ["$filter", "$orderby", "$select", "$expand", "$top", "$skip", "$count", "$search", "$levels",
                       "$skiptoken", "$deltatoken", "$format", "$compute", "$apply", "$index", "$schemaversion", "@p", "@q1", "custom"]
        for _ in 0..<(1 + c.small(5)) {
            let option = c.pick(options)
            guard used.insert(option).inserted || option == "custom" else { continue }
            let name = option.hasPrefix("$") && c.chance(15) ? keyword(option) : option
            let value: String
            switch option {
            case "$filter": value = encode(expression(), semicolons: false)
            case "$orderby": value = encode(orderBy(), semicolons: false)
            case "$select": value = encode(select(), semicolons: false, keepSemicolons: true)
            case "$expand": value = encode(expand(depth: 2), semicolons: false, keepSemicolons: true)
            case "$top", "$skip": value = String(c.byte() * 1000)
            case "$count": value = c.pick(["true", "false"])
            case "$search": value = encode(search(nested: false), semicolons: true)
            case "$levels": value = c.pick(["0", "3", "max"])
            case "$skiptoken", "$deltatoken": value = encode(c.pick(["abc", "1,2", "'x y'", "%"]), semicolons: false)
            case "$format": value = c.pick(["json", "application/json;odata.metadata=none"]).replacingOccurrences(of: ";", with: "%3B")
            case "$compute", "$apply": value = encode(c.pick(["Price mul Qty as Total", "aggregate(Price with sum as Total)"]), semicolons: false)
            case "$index": value = c.pick(["0", "-3", "12"])
            case "$schemaversion": value = c.pick(["1.0", "*"])
            case "@p", "@q1":
                noAliases = true
                value = encode(expression(), semicolons: false)
                noAliases = false
            default: value = encode(c.pick(["x", "a b", "", "1&2"]), semicolons: false)
            }
            parts.append((option == "custom" ? c.pick(["debug", "x-y", "sap-client"]) : name) + "=" + value)
        }
        return (c.chance(20) ? "?" : "") + parts.joined(separator: "&")
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        replacing(target, with: replacement)
    }
}
