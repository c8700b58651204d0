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
        switch expression {
        case .literal(let literal):
            printLiteral(literal, into: &out)
        case .member(let path):
            out += path.joined(separator: "/")
        case .alias(let name):
            out += "@" + name
        case .unary(let op, let operand):
            out += op == .not ? "not " : "-"
            let needsParens = precedence(operand) < 7 || (op == .negate && (isLiteral(operand) || startsWithMinus(operand)))
            printOperand(operand, parenthesized: needsParens, into: &out)
        case .binary(let op, let lhs, let rhs):
            let p = op.precedence
            printOperand(lhs, parenthesized: precedence(lhs) < p, into: &out)
            out += " " + op.rawValue + " "
            printOperand(rhs, parenthesized: precedence(rhs) <= p && !isList(rhs), into: &out)
        case .list(let items):
            out += "("
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                print(item, into: &out)
            }
            out += ")"
        case .function(let name, let arguments):
            out += name + "("
            for (index, argument) in arguments.enumerated() {
                if index > 0 { out += "," }
                print(argument, into: &out)
            }
            out += ")"
        case .typeName(let name):
            out += name
        case .lambda(let lambda):
            out += lambda.path.joined(separator: "/") + "/" + lambda.kind.rawValue + "("
            if let variable = lambda.variable, let predicate = lambda.predicate {
                out += variable + ":"
                print(predicate, into: &out)
            }
            out += ")"
        case .root(let path, let members):
            out += "$root/" + path.description
            for member in members { out += "/" + member }
        }
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

    private static func printOperand(_ expression: FilterExpression, parenthesized: Bool, into out: inout String) {
        if parenthesized { out += "(" }
        print(expression, into: &out)
        if parenthesized { out += ")" }
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
