import ODataCore

/// Renders expression trees as canonical query text.
enum ExpressionPrinter {
    /// The precedence of a node as an operand: binary operators theirs, unary 7, everything else 9.
    static func precedence(_ expression: FilterExpression) -> Int {
        switch expression {
        case .binary(let op, _, _): return op.precedence
        case .unary: return 7
        case .literal(.int(let v)) where v < 0: return 7
        case .literal(.decimal(let t)) where t.hasPrefix("-"): return 7
        case .literal(.double(let d)) where d < 0: return 7
        case .literal(.duration(let t)) where t.hasPrefix("-"): return 9
        default: return 9
        }
    }

    static func print(_ expression: FilterExpression, into out: inout String) {
        // V4 text has a form for every node, so this never throws.
        try? print(expression, version: .v4, into: &out)
    }

    /// Renders `expression` for a service of `version`. V2 text writes literals with V2 prefixes and
    /// suffixes (`datetime'…'`, `guid'…'`, `time'PT…'`, `1.5M`), `contains(a,b)` as `substringof(b,a)` and
    /// `x in (a,b)` as `(x eq a or x eq b)`.
    /// - Throws: ``ODataError`` `.invalidQueryOption` for what V2 cannot express (lambdas, `has`, `divby`,
    ///   enum literals, `$root`).
    static func print(_ expression: FilterExpression, version: ODataVersion, into out: inout String) throws(ODataError) {
        if version == .v2 { try checkV2(expression) }
        switch expression {
        case .literal(let literal):
            if version == .v2 { try printLiteralV2(literal, into: &out) } else { printLiteral(literal, into: &out) }
        case .member(let path):
            out += path.joined(separator: "/")
        case .alias(let name):
            out += "@" + name
        case .unary(let op, let operand):
            out += op == .not ? "not " : "-"
            let needsParens = precedence(operand) < 7 || (op == .negate && (isLiteral(operand) || startsWithMinus(operand)))
            try printOperand(operand, parenthesized: needsParens, version: version, into: &out)
        case .binary(.in, let lhs, .list(let items)) where version == .v2:
            // V2 has no `in`: the same test as a disjunction of equalities.
            out += "("
            for (index, item) in items.enumerated() {
                if index > 0 { out += " or " }
                try print(.binary(.eq, lhs, item), version: version, into: &out)
            }
            out += ")"
        case .binary(let op, let lhs, let rhs):
            let p = op.precedence
            try printOperand(lhs, parenthesized: precedence(lhs) < p, version: version, into: &out)
            out += " " + op.rawValue + " "
            if op == .in, case .list(let items) = rhs {
                // After `in`, `(a)` is a list of one.
                try printItems(items, version: version, into: &out)
            } else {
                try printOperand(rhs, parenthesized: precedence(rhs) <= p && !isList(rhs), version: version, into: &out)
            }
        case .list(let items) where items.count == 1:
            // Elsewhere `(a)` is just `a` in parentheses, and `[a]` may be a JSON array: an expression
            // array of one parenthesized item (`[(a)]`) is neither.
            out += "[("
            try print(items[0], version: version, into: &out)
            out += ")]"
        case .list(let items):
            try printItems(items, version: version, into: &out)
        case .function("contains", let arguments) where version == .v2 && arguments.count == 2:

            out += "substringof("
            try print(arguments[1], version: version, into: &out)
            out += ","
            try print(arguments[0], version: version, into: &out)
            out += ")"
        case .function(let name, let arguments):
            out += name + "("
            for (index, argument) in arguments.enumerated() {
                if index > 0 { out += "," }
                try print(argument, version: version, into: &out)
            }
            out += ")"
        case .typeName(let name):
            out += name
        case .lambda(let lambda):
            if let base = lambda.base {
                try print(base, version: version, into: &out)
                out += "/"
            }
            out += lambda.path.map { $0 + "/" }.joined() + lambda.kind.rawValue + "("
            if let variable = lambda.variable, let predicate = lambda.predicate {
                out += variable + ":"
                try print(predicate, version: version, into: &out)
            }
            out += ")"
        case .root(let path, let members):
            out += "$root/" + path.description
            for member in members { out += "/" + member }
        case .call(let call):
            if let base = call.base {
                try print(base, version: version, into: &out)
                out += "/"
            }
            out += call.name + "("
            for (index, argument) in call.arguments.enumerated() {
                if index > 0 { out += call.name.hasPrefix("$") ? ";" : "," }
                if let name = argument.name { out += name + "=" }
                try print(argument.value, version: version, into: &out)
            }
            out += ")"
            if let key = call.key { out += key.description }
            for member in call.members { out += "/" + member }
        }
    }

    /// `(a,b,…)`.
    private static func printItems(_ items: [FilterExpression], version: ODataVersion, into out: inout String) throws(ODataError) {
        out += "("
        for (index, item) in items.enumerated() {
            if index > 0 { out += "," }
            try print(item, version: version, into: &out)
        }
        out += ")"
    }

    private static func isLiteral(_ expression: FilterExpression) -> Bool {
        if case .literal = expression { return true }
        return false
    }

    private static func isList(_ expression: FilterExpression) -> Bool {
        if case .list = expression { return true }
        return false
    }

    /// Whether the operand's text would merge with a leading minus into one literal (`-5`, `-INF`,
    /// a negative-year date).
    private static func startsWithMinus(_ expression: FilterExpression) -> Bool {
        var text = ""
        print(expression, into: &text)
        guard let first = text.utf8.first else { return false }
        return first == UInt8(ascii: "-") || Lexer.isDigit(first) || text.hasPrefix("INF")
    }

    private static func printOperand(_ expression: FilterExpression, parenthesized: Bool, version: ODataVersion,
                                     into out: inout String) throws(ODataError) {
        if parenthesized { out += "(" }
        try print(expression, version: version, into: &out)
        if parenthesized { out += ")" }
    }

    /// Refuses the nodes V2 has no syntax for.
    private static func checkV2(_ expression: FilterExpression) throws(ODataError) {
        func refuse(_ what: String) -> ODataError {
            ODataError(.invalidQueryOption, "OData V2 has no \(what); this filter can only be sent to a V4 service")
        }
        switch expression {
        case .lambda(let lambda): throw refuse("lambda operator '\(lambda.kind.rawValue)'")
        case .binary(.has, _, _): throw refuse("'has' operator")
        case .binary(.divby, _, _): throw refuse("'divby' operator")
        case .binary(.in, _, let rhs) where !isList(rhs): throw refuse("'in' over a collection-valued expression")
        case .literal(.enumMember): throw refuse("enum literals")
        case .literal(.json): throw refuse("JSON literals")
        case .root: throw refuse("'$root' paths")
        case .call: throw refuse("bound functions, named parameters or '$filter(…)' segments")
        default: break
        }
    }

    /// A literal in V2 form.
    static func printLiteralV2(_ literal: Literal, into out: inout String) throws(ODataError) {
        switch literal {
        case .decimal(let text): out += text + "M"
        case .double(let value):
            guard value.isFinite else { out += value.isNaN ? "NaN" : value < 0 ? "-INF" : "INF"; return }
            out += "\(value)d"
        case .guid(let value): out += "guid'" + value + "'"
        case .dateTimeOffset(let text) where text.hasSuffix("Z"): out += "datetime'" + text.dropLast() + "'"
        case .dateTimeOffset(let text): out += "datetimeoffset'" + text + "'"
        case .date(let text): out += "datetime'" + text + "T00:00:00'"
        case .timeOfDay(let text):
            guard let nanos = Temporal.timeOfDay(text) else { throw ODataError(.invalidQueryOption, "invalid time of day '\(text)'") }
            out += "time'" + Temporal.renderDuration(nanos) + "'"
        default: printLiteral(literal, into: &out)
        }
    }

    static func printLiteral(_ literal: Literal, into out: inout String) {
        switch literal {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .decimal(let text): out += text
        case .double(let value): out += renderDouble(value)
        case .string(let value): out += quote(value)
        case .guid(let value), .date(let value), .timeOfDay(let value), .dateTimeOffset(let value): out += value
        case .duration(let value): out += "duration'" + value + "'"
        case .binary(let value): out += "binary'" + value + "'"
        case .enumMember(let type, let value): out += type + "'" + value + "'"
        case .geo(let kind, let text): out += kind + "'" + text + "'"
        case .json(let value): out += JSON.string(value)
        }
    }

    /// A double as a literal that reads back as a double: always with an exponent.
    static func renderDouble(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-INF" : "INF" }
        let text = "\(value)"
        if text.contains("e") || text.contains("E") { return text }
        return text + "e0"
    }

    /// A string in single quotes with embedded quotes doubled.
    static func quote(_ value: String) -> String {
        var result = "'"
        for character in value {
            if character == "'" { result += "''" } else { result.append(character) }
        }
        return result + "'"
    }
}
