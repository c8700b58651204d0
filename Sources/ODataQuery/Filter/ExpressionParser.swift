import ODataCore

/// A precedence-climbing parser over ``Lexer`` tokens, with a depth limit and exact error offsets.
///
/// Error offsets are UTF-8 offsets into the option value (0-based). A missing operand is reported
/// where it should begin: after the operator and the whitespace that must follow it, so
/// `Price gt` reports "expected an expression after 'gt' at 9".
struct ExpressionParser {
    /// The deepest nesting (parentheses, calls, unary operators, operator chains) accepted.
    static let maximumDepth = 100

    /// The canonical functions with the argument counts they accept.
    static let canonicalFunctions: [String: ClosedRange<Int>] = [
        "contains": 2...2, "startswith": 2...2, "endswith": 2...2, "length": 1...1, "indexof": 2...2,
        "substring": 2...3, "matchesPattern": 2...2, "tolower": 1...1, "toupper": 1...1, "trim": 1...1,
        "concat": 2...2, "year": 1...1, "month": 1...1, "day": 1...1, "hour": 1...1, "minute": 1...1,
        "second": 1...1, "fractionalseconds": 1...1, "totalseconds": 1...1, "date": 1...1, "time": 1...1,
        "totaloffsetminutes": 1...1, "now": 0...0, "mindatetime": 0...0, "maxdatetime": 0...0,
        "round": 1...1, "floor": 1...1, "ceiling": 1...1, "cast": 1...2, "isof": 1...2,
        "hassubset": 2...2, "hassubsequence": 2...2,
        "geo.distance": 2...2, "geo.length": 1...1, "geo.intersects": 2...2,
    ]

    var lexer: Lexer
    var token: Token
    let aliases: [String: String]
    var aliasDepth: Int
    var variables: [String] = []
    var lexError: ODataError?

    init(_ text: String, aliases: [String: String], aliasDepth: Int = 0) {
        lexer = Lexer(text)
        self.aliases = aliases
        self.aliasDepth = aliasDepth
        token = Token(kind: .end, start: 0, end: 0, spaceBefore: false)
    }

    func error(_ message: String, at offset: Int) -> ODataError {
        ODataError(.invalidQueryOption, message, offset: offset)
    }

    mutating func advance() throws(ODataError) {
        token = try lexer.next()
    }

    /// Parses the whole value as one expression.
    mutating func parseWhole() throws(ODataError) -> FilterExpression {
        try advance()
        if token.kind == .end { throw error("expected an expression", at: token.start) }
        let (expression, _) = try parseExpression(minimum: 0, depth: 0)
        guard token.kind == .end else {
            throw error("expected an operator or the end of the expression, found \(describe(token))", at: token.start)
        }
        return expression
    }

    func describe(_ token: Token) -> String {
        switch token.kind {
        case .end: return "the end"
        default: return "'" + lexer.text(token.start..<token.end) + "'"
        }
    }

    /// The binary operator a token names; operator keywords are case-insensitive in OData 4.01.
    func binaryOperator(_ token: Token) -> BinaryOperator? {
        guard case .identifier(let name) = token.kind else { return nil }
        if let op = BinaryOperator(rawValue: name) { return op }
        return name.utf8.count <= 5 ? BinaryOperator(rawValue: name.lowercased()) : nil
    }

    /// Whether a token is the keyword `word` (any case).
    static func isKeyword(_ token: Token, _ word: String) -> Bool {
        guard case .identifier(let name) = token.kind else { return false }
        return name == word || name.utf8.count == word.utf8.count && name.lowercased() == word
    }

    /// Requires whitespace after an operator keyword and an operand after it.
    mutating func expectOperand(after name: String, end: Int) throws(ODataError) {
        switch token.kind {
        case .end:
            throw error("expected an expression after '\(name)'", at: max(token.start, end + 1))
        case .closeParen, .comma:
            throw error("expected an expression after '\(name)'", at: token.start)
        default:
            if binaryOperator(token) != nil {
                throw error("expected an expression after '\(name)', found \(describe(token))", at: token.start)
            }
            if !token.spaceBefore {
                throw error("expected whitespace after '\(name)'", at: token.start)
            }
        }
    }

    /// Parses operators of at least `minimum` precedence; returns the tree and its height.
    mutating func parseExpression(minimum: Int, depth: Int) throws(ODataError) -> (FilterExpression, Int) {
        // The right side of `has` and `in` is a primary expression: no unary operator there.
        var (lhs, height) = minimum > 8 ? try parsePrimary(depth: depth) : try parseUnary(depth: depth)
        while let op = binaryOperator(token), op.precedence >= minimum {
            guard token.spaceBefore else {
                throw error("expected whitespace before '\(op.rawValue)'", at: token.start)
            }
            let operatorToken = token
            try advance()
            try expectOperand(after: op.rawValue, end: operatorToken.end)
            let rhs: FilterExpression
            let rhsHeight: Int
            if op == .in && token.kind == .openParen {
                (rhs, rhsHeight) = try parseList(depth: depth + 1)
            } else {
                (rhs, rhsHeight) = try parseExpression(minimum: op.precedence + 1, depth: depth + 1)
            }
            height = max(height, rhsHeight) + 1
            if height + depth > ExpressionParser.maximumDepth {
                throw error(
                    "expression nested deeper than \(ExpressionParser.maximumDepth) levels", at: operatorToken.start)
            }
            lhs = .binary(op, lhs, rhs)
        }
        return (lhs, height)
    }

    mutating func checkDepth(_ depth: Int) throws(ODataError) {
        if depth > ExpressionParser.maximumDepth {
            throw error("expression nested deeper than \(ExpressionParser.maximumDepth) levels", at: token.start)
        }
    }

    mutating func parseUnary(depth: Int) throws(ODataError) -> (FilterExpression, Int) {
        try checkDepth(depth)
        if ExpressionParser.isKeyword(token, "not") {
            let notToken = token
            try advance()
            if token.kind == .openParen || token.spaceBefore && token.kind != .end && binaryOperator(token) == nil {
                let (operand, height) = try parseExpression(minimum: 7, depth: depth + 1)
                return (.unary(.not, operand), height + 1)
            }
            if binaryOperator(token) != nil || token.kind == .end || token.kind == .closeParen || token.kind == .comma {
                // `not` used as a property name (`not eq true`) is a member.
                if token.kind != .end && token.kind != .closeParen && token.kind != .comma {
                    return (.member(["not"]), 1)
                }
                throw error("expected an expression after 'not'", at: max(token.start, notToken.end + 1))
            }
            throw error("expected whitespace after 'not'", at: token.start)
        }
        if token.kind == .minus {
            let minusToken = token
            try advance()
            if token.kind == .end || token.kind == .closeParen || token.kind == .comma {
                throw error("expected an expression after '-'", at: max(token.start, minusToken.end))
            }
            let (operand, height) = try parseExpression(minimum: 7, depth: depth + 1)
            return (negate(operand), height + 1)
        }
        return try parsePostfix(depth: depth)
    }

    /// Folds a minus into a numeric literal so `- 5` and `-5` are the same tree.
    func negate(_ operand: FilterExpression) -> FilterExpression {
        switch operand {
        case .literal(.int(let value)) where value != .min: return .literal(.int(-value))
        case .literal(.decimal(let text)):
            return .literal(.decimal(text.hasPrefix("-") ? String(text.dropFirst()) : "-" + text))
        case .literal(.double(let value)): return .literal(.double(-value))
        default: return .unary(.negate, operand)
        }
    }

    /// A primary expression (`has`/`in` are handled by ``parseExpression`` at precedence 8).
    mutating func parsePostfix(depth: Int) throws(ODataError) -> (FilterExpression, Int) {
        try parsePrimary(depth: depth)
    }

    mutating func parsePrimary(depth: Int) throws(ODataError) -> (FilterExpression, Int) {
        try checkDepth(depth)
        let start = token
        switch token.kind {
        case .literal(let literal):
            try advance()
            return (.literal(literal), 1)
        case .alias(let name):
            try advance()
            let followedByPath = token.kind == .slash && !token.spaceBefore
            // An annotation (`@Core.Messages`, `@Measures.Currency#Reporting`) is a member.
            if name.contains(".") || name.contains("#") { return try parsePath(["@" + name], base: nil, depth: depth) }
            guard let value = aliases[name] else {
                // An alias without a value followed by a path stays a path from the alias.
                if followedByPath { return try parsePath(["@" + name], base: nil, depth: depth) }
                return (.alias(name), 1)
            }
            guard aliasDepth < 8 else {
                throw error("parameter alias @\(name) refers to aliases too deeply", at: start.start)
            }
            var inner = ExpressionParser(value, aliases: aliases, aliasDepth: aliasDepth + 1)
            do {
                let expression = try inner.parseWhole()
                if followedByPath, case .member(let path) = expression {
                    return try parsePath(path, base: nil, depth: depth)
                }
                return (expression, 1)
            } catch {
                throw self.error(
                    "invalid value of parameter alias @\(name): \(error.message) at \(error.offset ?? 0)",
                    at: start.start)
            }
        case .openParen:
            try advance()
            if token.kind == .closeParen { throw error("expected an expression after '('", at: token.start) }
            let (first, height) = try parseExpression(minimum: 0, depth: depth + 1)
            if token.kind == .comma {
                var items = [first]
                var maxHeight = height
                while token.kind == .comma {
                    try advance()
                    let (item, itemHeight) = try parseExpression(minimum: 0, depth: depth + 1)
                    items.append(item)
                    maxHeight = max(maxHeight, itemHeight)
                }
                try expectClose(openedAt: start.start)
                return (.list(items), maxHeight + 1)
            }
            try expectClose(openedAt: start.start)
            return (first, height)
        case .identifier(let name):
            try advance()
            return try parseIdentifier(name, start: start, depth: depth)
        case .openBracket:
            // An array of expressions that is not JSON (`["Miller",'Smith']`, `[FirstName,LastName]`): a
            // list. When it is no list of expressions either, the JSON error is the one reported.
            let jsonError = lexer.jsonError
            do throws(ODataError) {
                lexer.arrayDepth += 1
                try advance()
                var items: [FilterExpression] = []
                var height = 0
                while true {
                    let (item, itemHeight) = try parseExpression(minimum: 0, depth: depth + 1)
                    items.append(item)
                    height = max(height, itemHeight)
                    guard token.kind == .comma else { break }
                    try advance()
                }
                guard token.kind == .closeBracket else {
                    throw error("expected ']' to close '[' at \(start.start), found \(describe(token))", at: token.start)
                }
                lexer.arrayDepth -= 1
                try advance()
                return (.list(items), height + 1)
            } catch {
                throw jsonError ?? error
            }
        case .end:
            throw error("expected an expression", at: token.start)
        default:
            throw error("expected an expression, found \(describe(token))", at: token.start)
        }
    }

    mutating func expectClose(openedAt offset: Int) throws(ODataError) {
        guard token.kind == .closeParen else {
            throw error("expected ')' to close '(' at \(offset), found \(describe(token))", at: token.start)
        }
        try advance()
    }

    /// `(a,b,c)` after `in`: always a list, even with one item.
    mutating func parseList(depth: Int) throws(ODataError) -> (FilterExpression, Int) {
        let open = token
        try advance()
        if token.kind == .closeParen {
            try advance()
            return (.list([]), 1)
        }
        var items: [FilterExpression] = []
        var height = 0
        while true {
            let (item, itemHeight) = try parseExpression(minimum: 0, depth: depth + 1)
            items.append(item)
            height = max(height, itemHeight)
            if token.kind == .comma {
                try advance()
                continue
            }
            break
        }
        try expectClose(openedAt: open.start)
        return (.list(items), height + 1)
    }
}
