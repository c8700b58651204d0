import ODataCore

/// Member paths (from the entity, a lambda variable or `$this`) and value expressions compiled to closures.
extension Compiler {
    /// A closure fetching a member path's JSON value; nil (no closure) when the path is not plain.
    mutating func fetchPath(_ path: [String]) throws(ODataError) -> Fetch {
        var segments = path[...]
        let base: Fetch
        guard let first = segments.first else { throw error("empty member path") }
        if first == "$it" {
            segments = segments.dropFirst()
            base = { root, extras in .object(root) }
        } else if first == "$this" {
            segments = segments.dropFirst()
            base = { root, extras in EvaluationContext.this(root, extras) }
        } else if let index = scope.lastIndex(of: first) {
            segments = segments.dropFirst()
            base = { root, extras in extras!.variables[index] }
        } else {
            // The common case: a member of the entity itself.
            if segments.count == 1 && !first.contains(".") && first != "$count" {
                let slot = MemberSlot(first)
                return { root, extras in
                    if let value = slot.lookup(root) { return value }
                    return extras?.navigation?.related(root, navigationProperty: slot.name)
                }
            }
            base = { root, extras in .object(root) }
        }
        var fetch = base
        for segment in segments {
            let previous = fetch
            if segment == "$count" {
                fetch = { root, extras in
                    guard case .array(let elements)? = previous(root, extras) else { return nil }
                    return .int(Int64(elements.count))
                }
            } else if segment.contains(".") {
                // A type cast: keep the value when its @odata.type names the type (or has none).
                let typeName = segment
                let shortName = "#" + segment
                fetch = { root, extras in
                    guard let value = previous(root, extras) else { return nil }
                    if case .object(let object) = value, case .string(let type)? = object["@odata.type"],
                        type != shortName && type != typeName
                    {
                        return .null
                    }
                    return value
                }
            } else {
                let slot = MemberSlot(segment)
                fetch = { root, extras in
                    guard case .object(let object)? = previous(root, extras) else { return nil }
                    if let value = slot.lookup(object) { return value }
                    return extras?.navigation?.related(object, navigationProperty: slot.name)
                }
            }
        }
        return fetch
    }

    // MARK: Values

    mutating func value(_ expression: FilterExpression) throws(ODataError) -> Evaluate {
        switch expression {
        case .literal(let literal):
            let constant = Value(literal)
            return { _, _ in constant }
        case .member(let path):
            let fetch = try fetchPath(path)
            return { root, extras in fetch(root, extras).map(Value.init) ?? .null }
        case .alias:
            return { _, _ in .null }
        case .list(let items):
            let values = try items.map { (item) throws(ODataError) in EvaluateBox(run: try value(item)) }
            return { root, extras in .list(values.map { $0.run(root, extras) }) }
        case .typeName(let name):
            throw error("type name '\(name)' is only allowed as an argument of cast or isof")
        case .unary(.negate, let operand):
            let o = try value(operand)
            return { root, extras in Arithmetic.negate(o(root, extras)) }
        case .binary(let op, let lhs, let rhs)
        where op == .add || op == .sub || op == .mul || op == .div || op == .divby || op == .mod:
            let l = try value(lhs)
            let r = try value(rhs)
            return { root, extras in Arithmetic.apply(op, l(root, extras), r(root, extras)) }
        case .unary(.not, _), .binary, .lambda:
            let t = try test(expression)
            return { root, extras in t(root, extras).value }
        case .function(let name, let arguments):
            return try function(name, arguments)
        case .call(let call):
            throw error("'\(call.name)(…)' is not evaluable offline: it needs the service")
        case .root(let path, let members):
            return { root, extras in
                guard var current = extras?.navigation?.resource(at: path) else { return .null }
                for member in members {
                    guard case .object(let object) = current, let next = object[member] else { return .null }
                    current = next
                }
                return Value(current)
            }
        }
    }
}
