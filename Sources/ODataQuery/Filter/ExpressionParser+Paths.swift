import ODataCore

/// What follows an identifier: member paths with key predicates and casts, function and action calls with
/// their arguments, `any`/`all` lambdas, and `$root` paths.
extension ExpressionParser {
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
