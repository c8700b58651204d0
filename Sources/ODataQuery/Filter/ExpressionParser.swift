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

    mutating func parseIdentifier(_ name: String, start: Token, depth: Int) throws(ODataError) -> (FilterExpression, Int) {
        if token.kind == .openParen && !token.spaceBefore {
            if name == "any" || name == "all" {
                throw error("'\(name)' needs a collection path before it", at: token.start)
            }
            return try parseCall(name, start: start, depth: depth)
        }
        if name == "$root" {
            return try parseRoot(start: start)
        }
        if name.contains("."), !(token.kind == .slash && !token.spaceBefore) {
            // A qualified name alone is neither a property nor a call (`Model.Available` needs `()`).
            throw error("expected '(' or '/' after '\(name)'", at: token.start)
        }
        return try parsePath([name], base: nil, depth: depth)
    }

    /// A path and what follows it: member segments, annotations, bound calls (`Model.F()`,
    /// `$filter(…)`, `$count(…)`), and a final lambda. `base` is a call the path continues.
    mutating func parsePath(_ start: [String], base: FilterExpression?, depth: Int) throws(ODataError) -> (FilterExpression, Int) {
        var base = base
        var path = start
        var height = 1
        func combine(_ base: FilterExpression?, _ path: [String]) -> FilterExpression? {
            guard let base else { return path.isEmpty ? nil : .member(path) }
            guard case .call(var call) = base, !path.isEmpty else { return base }
            call.members += path
            return .call(call)
        }
        while token.kind == .slash && !token.spaceBefore {
            try advance()
            let segment: String
            switch token.kind {
            case .identifier(let name) where !token.spaceBefore: segment = name
            case .alias(let name) where !token.spaceBefore: segment = "@" + name
            default: throw error("expected a property name after '/'", at: token.start)
            }
            let segmentToken = token
            try advance()
            if (segment == "any" || segment == "all") && token.kind == .openParen && !token.spaceBefore {
                let (lambda, lambdaHeight) = try parseLambda(path: path, kind: segment == "any" ? .any : .all, at: segmentToken, depth: depth)
                guard let base, case .lambda(var withBase) = lambda else { return (lambda, lambdaHeight) }
                withBase.base = base
                return (.lambda(withBase), lambdaHeight + height)
            }
            guard path.count < ExpressionParser.maximumDepth else {
                throw error("path longer than \(ExpressionParser.maximumDepth) segments", at: segmentToken.start)
            }
            if token.kind == .openParen && !token.spaceBefore {
                try checkDepth(depth + height)
                let open = token
                let (arguments, argumentsHeight) = try parseArguments(segment, depth: depth + height)
                // Bound functions take named parameters; only `$filter(…)` takes a positional one.
                if segment != "$filter" && arguments.contains(where: { $0.name == nil }) || segment == "$filter" && arguments.count != 1 {
                    throw error("unexpected '(' after '\(segment)'", at: open.start)
                }
                var call = OperationCall(base: combine(base, path), name: segment, arguments: arguments)
                if token.kind == .openParen && !token.spaceBefore {
                    // A key predicate after the call (`$filter(…)(ID='Sugar')`): up to the matching ')'.
                    call.key = try parseKeyPredicate()
                }
                base = .call(call)
                height += argumentsHeight + 1
                path = []
                continue
            }
            path.append(segment)
        }
        return (combine(base, path)!, height)
    }

    /// A key predicate; the token is on `(`. Reads the raw text up to the matching `)` outside quotes.
    mutating func parseKeyPredicate() throws(ODataError) -> KeyPredicate {
        let bytes = lexer.bytes
        let open = token.start
        var index = token.end
        var inString = false
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "'") {
                inString.toggle()
            } else if b == UInt8(ascii: ")") && !inString {
                break
            }
            index += 1
        }
        guard index < bytes.count else { throw error("expected ')' to close '(' at \(open)", at: index) }
        let key: KeyPredicate
        do {
            key = try KeyPredicate.parse(lexer.text((open + 1)..<index))
        } catch {
            throw self.error("invalid key predicate: \(error.message)", at: open + 1 + (error.offset ?? 0))
        }
        lexer.position = index + 1
        try advance()
        return key
    }

    /// `name(…)` after `(`: arguments, positional or named (`Word=Name`); the token is on `(`.
    mutating func parseArguments(_ name: String, depth: Int) throws(ODataError) -> ([OperationCall.Argument], Int) {
        try advance()  // (
        var arguments: [OperationCall.Argument] = []
        var height = 0
        let typed = name == "cast" || name == "isof"
        if token.kind != .closeParen {
            while true {
                if token.kind == .end {
                    throw error("expected an argument or ')' in call of '\(name)'", at: token.start)
                }
                var argumentName: String?
                if case .identifier(let parameter) = token.kind, peekIsEquals() {
                    try advance()
                    try advance()  // =
                    argumentName = parameter
                } else if let previous = arguments.last, previous.name != nil {
                    throw error("expected a named argument (Name=value) in call of '\(name)'", at: token.start)
                }
                if argumentName == nil, arguments.contains(where: { $0.name != nil }) {
                    throw error("expected a named argument (Name=value) in call of '\(name)'", at: token.start)
                }
                let argument: FilterExpression
                let argumentHeight: Int
                if typed, argumentName == nil, case .identifier(let typeName) = token.kind, typeName.contains("."),
                    lexer.position >= lexer.bytes.count || peekIsArgumentEnd()
                {
                    try advance()
                    argument = .typeName(typeName)
                    argumentHeight = 1
                } else {
                    if token.kind == .closeParen || token.kind == .comma {
                        throw error("expected an argument in call of '\(name)'", at: token.start)
                    }
                    (argument, argumentHeight) = try parseExpression(minimum: 0, depth: depth + 1)
                }
                arguments.append(OperationCall.Argument(argumentName, argument))
                height = max(height, argumentHeight)
                if token.kind == .comma {
                    try advance()
                    continue
                }
                break
            }
        }
        guard token.kind == .closeParen else {
            throw error("expected ',' or ')' in call of '\(name)', found \(describe(token))", at: token.start)
        }
        try advance()
        return (arguments, height)
    }

    mutating func parseCall(_ name: String, start: Token, depth: Int) throws(ODataError) -> (FilterExpression, Int) {
        if name.lowercased() == "not" || binaryOperator(Token(kind: .identifier(name), start: 0, end: 0, spaceBefore: false)) != nil {
            throw error("'\(name)' is an operator, not a function", at: start.start)
        }
        let (parsed, height) = try parseArguments(name, depth: depth)
        let named = parsed.contains { $0.name != nil }
        if named || token.kind == .slash && !token.spaceBefore {
            // A function with named parameters, or one whose result a path continues: not canonical.
            guard ExpressionParser.canonicalFunctions[name] == nil || !named else {
                throw error("function '\(name)' takes positional arguments", at: start.start)
            }
            return try parsePath([], base: .call(OperationCall(base: nil, name: name, arguments: parsed)), depth: depth + height)
        }
        var arguments = parsed.map(\.value)
        if let arity = ExpressionParser.canonicalFunctions[name] {
            guard arity.contains(arguments.count) else {
                let expected = arity.lowerBound == arity.upperBound
                    ? "\(arity.lowerBound)" : "\(arity.lowerBound) or \(arity.upperBound)"
                throw error(
                    "function '\(name)' takes \(expected) argument\(arity.upperBound == 1 ? "" : "s"), got \(arguments.count)",
                    at: start.start)
            }
            if name == "cast" || name == "isof" {
                // 4.01 allows an unqualified type name (`isof(Customer)`).
                if case .member(let path) = arguments.last!, path.count == 1, !path[0].hasPrefix("$"), !path[0].hasPrefix("@") {
                    arguments[arguments.count - 1] = .typeName(path[0])
                }
                guard case .typeName = arguments.last! else {
                    throw error("the last argument of '\(name)' must be a qualified type name", at: start.start)
                }
            }
        }
        return (.function(name, arguments), height + 1)
    }

    /// Whether the next non-space byte after the current token is `=` (a named argument).
    func peekIsEquals() -> Bool {
        var index = lexer.position
        while index < lexer.bytes.count && Lexer.isSpace(lexer.bytes[index]) { index += 1 }
        return index < lexer.bytes.count && lexer.bytes[index] == UInt8(ascii: "=")
    }

    /// Whether the next non-space byte after the current token ends an argument (`,` or `)`).
    func peekIsArgumentEnd() -> Bool {
        var index = lexer.position
        while index < lexer.bytes.count && Lexer.isSpace(lexer.bytes[index]) { index += 1 }
        return index < lexer.bytes.count && (lexer.bytes[index] == UInt8(ascii: ",") || lexer.bytes[index] == UInt8(ascii: ")"))
    }

    mutating func parseLambda(path: [String], kind: Lambda.Kind, at segment: Token, depth: Int) throws(ODataError) -> (FilterExpression, Int) {
        try advance()  // (
        if token.kind == .closeParen {
            guard kind == .any else { throw error("expected a range variable in 'all'", at: token.start) }
            try advance()
            return (.lambda(Lambda(path: path, kind: .any, variable: nil, predicate: nil)), 1)
        }
        guard case .identifier(let variable) = token.kind else {
            throw error("expected a range variable in '\(kind.rawValue)'", at: token.start)
        }
        guard Lexer.isIdentifierStart(variable.utf8.first!), variable.utf8.first != 36, !variable.contains(".") else {
            throw error("invalid range variable name '\(variable)'", at: token.start)
        }
        try advance()
        guard token.kind == .colon else {
            throw error("expected ':' after range variable '\(variable)'", at: token.start)
        }
        try advance()
        if token.kind == .closeParen || token.kind == .end {
            throw error("expected a predicate after '\(variable):'", at: token.start)
        }
        variables.append(variable)
        let (predicate, height) = try parseExpression(minimum: 0, depth: depth + 1)
        variables.removeLast()
        guard token.kind == .closeParen else {
            throw error("expected ')' to close '\(kind.rawValue)', found \(describe(token))", at: token.start)
        }
        try advance()
        return (.lambda(Lambda(path: path, kind: kind, variable: variable, predicate: predicate)), height + 1)
    }

    /// `$root/EntitySet(key)/…/Property`: the resource path up to the last key predicate, then members.
    mutating func parseRoot(start: Token) throws(ODataError) -> (FilterExpression, Int) {
        guard token.kind == .slash && !token.spaceBefore else {
            throw error("expected '/' after '$root'", at: token.start)
        }
        // Take the raw text up to the first space or unbalanced ')' / ',' / ']'; quotes may contain them.
        let bytes = lexer.bytes
        var index = token.end
        var depth = 0
        var inString = false
        while index < bytes.count {
            let b = bytes[index]
            if inString {
                if b == UInt8(ascii: "'") {
                    if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "'") { index += 1 } else { inString = false }
                }
            } else if b == UInt8(ascii: "'") {
                inString = true
            } else if b == UInt8(ascii: "(") {
                depth += 1
            } else if b == UInt8(ascii: ")") {
                if depth == 0 { break }
                depth -= 1
            } else if (b == UInt8(ascii: ",") || b == UInt8(ascii: "]")) && depth == 0 || Lexer.isSpace(b) && depth == 0 {
                // `]` ends it inside an expression array (`[$root/People(1)/Name,Name]`).
                break
            }
            index += 1
        }
        let raw = lexer.text(token.end..<index)
        let resource: ResourcePath
        do {
            resource = try ResourcePath.parse(raw)
        } catch {
            throw self.error("invalid $root path: \(error.message)", at: token.end + (error.offset ?? 0))
        }
        // Trailing segments without key predicates after the last keyed one are member names.
        var segments = resource.segments
        var members: [String] = []
        while let last = segments.last, last.key == nil, segments.count > 1, case .name(let name) = last.kind {
            members.insert(name, at: 0)
            segments.removeLast()
        }
        lexer.position = index
        try advance()
        return (.root(ResourcePath(segments: segments), members), 1)
    }
}
