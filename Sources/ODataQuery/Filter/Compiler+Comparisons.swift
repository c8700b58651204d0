import ODataCore

/// The comparisons a filter compiles to: a chain of one logical operator flattened, the three-valued
/// order of two values, and the fast paths for a member compared with a constant or a constant list
/// (`eq`/`ne`/`lt`/… and `in` without a closure per operand).
extension Compiler {
    /// The operands of a chain of one logical operator, left to right, without recursion limits
    /// beyond the parser's depth limit.
    static func flatten(_ expression: FilterExpression, _ op: BinaryOperator) -> [FilterExpression] {
        var result: [FilterExpression] = []
        var pending: [FilterExpression] = [expression]
        while let next = pending.popLast() {
            if case .binary(let o, let l, let r) = next, o == op {
                pending.append(r)
                pending.append(l)
            } else {
                result.append(next)
            }
        }
        return result
    }

    /// A comparison as a 3-bit mask over (less, equal, greater), so one closure serves every operator.
    static func mask(_ op: BinaryOperator) -> UInt8 {
        switch op {
        case .lt: return 0b001
        case .eq: return 0b010
        case .gt: return 0b100
        case .le: return 0b011
        case .ge: return 0b110
        case .ne: return 0b101
        default: return 0
        }
    }

    @inline(__always)
    static func holds(_ mask: UInt8, _ order: Int) -> Tri {
        Tri(rawValue: (mask >> UInt8(truncatingIfNeeded: order + 1)) & 1)!
    }

    @inline(__always)
    static func order<T: Comparable>(_ x: T, _ y: T) -> Int {
        (x > y ? 1 : 0) - (x < y ? 1 : 0)
    }

    static func compare(_ op: BinaryOperator, _ a: Value, _ b: Value) -> Tri {
        switch op {
        case .eq: return Tri(Value.equals(a, b))
        case .ne: return Tri(!Value.equals(a, b))
        default:
            if a.isNull || b.isNull { return .false }
            guard let order = Value.compare(a, b) else { return .false }
            return holds(mask(op), order)
        }
    }

    static func mirrored(_ op: BinaryOperator) -> BinaryOperator {
        switch op {
        case .gt: return .lt
        case .ge: return .le
        case .lt: return .gt
        case .le: return .ge
        default: return op
        }
    }

    /// `member op literal` (or `literal op member`): fetch the JSON value and compare it with a
    /// pre-converted literal, skipping the general value machinery for the common shapes.
    mutating func fastComparison(_ op: BinaryOperator, _ lhs: FilterExpression, _ rhs: FilterExpression) throws(ODataError) -> TestBox? {
        var member = lhs
        var literal = rhs
        var swapped = false
        if case .literal = lhs, case .member = rhs {
            member = rhs
            literal = lhs
            swapped = true
        }
        let op = swapped ? Compiler.mirrored(op) : op
        guard case .member(let path) = member, case .literal(let lit) = literal else { return nil }
        if let slot = rootSlot(path) {
            return TestBox(run: fastComparison(op, slot, Value(lit)))
        }
        return TestBox(run: fastComparison(op, PathFetcher(try fetchPath(path)), Value(lit)))
    }

    /// A slot for a plain member of the entity itself (`Price`), nil for any other path.
    func rootSlot(_ path: [String]) -> MemberSlot? {
        guard path.count == 1, let name = path.first, !name.contains("."), !name.hasPrefix("$"), !scope.contains(name)
        else { return nil }
        return MemberSlot(name)
    }

    /// Generic over the fetcher so each closure captures one class reference and calls it
    /// directly (a captured closure inside a closure costs retains on every call).
    func fastComparison<F: Fetcher>(_ op: BinaryOperator, _ fetcher: F, _ constant: Value) -> Test {
        let fetch = fetcher
        let nullResult: Tri = op == .ne ? .true : .false
        let mask = Compiler.mask(op)
        switch constant {
        case .null:
            return { root, extras in
                let isNull = fetch(root, extras).map { $0 == .null } ?? true
                if op == .eq { return Tri(isNull) }
                if op == .ne { return Tri(!isNull) }
                return .false
            }
        case .int(let k):
            let dk = Double(k)
            return { root, extras in
                switch fetch(root, extras) {
                case .int(let x)?: return Compiler.holds(mask, Compiler.order(x, k))
                case .double(let x)?:
                    guard let order = Value.compareDoubles(x, dk) else { return nullResult }
                    return Compiler.holds(mask, order)
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .double(let k):
            return { root, extras in
                switch fetch(root, extras) {
                case .int(let x)?:
                    guard let order = Value.compareDoubles(Double(x), k) else { return nullResult }
                    return Compiler.holds(mask, order)
                case .double(let x)?:
                    guard let order = Value.compareDoubles(x, k) else { return nullResult }
                    return Compiler.holds(mask, order)
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .string(let k) where op == .eq || op == .ne:
            let wanted: Tri = op == .eq ? .true : .false
            let unwanted: Tri = op == .eq ? .false : .true
            return { root, extras in
                switch fetch(root, extras) {
                case .string(let x)?: return x == k ? wanted : unwanted
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .string(let k):
            return { root, extras in
                switch fetch(root, extras) {
                case .string(let x)?: return Compiler.holds(mask, Value.compareStrings(x, k))
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        case .dateTimeOffset(let k):
            return { root, extras in
                switch fetch(root, extras) {
                case .string(let x)?:
                    guard let d = Temporal.dateTimeOffset(x) else { return nullResult }
                    return Compiler.holds(mask, DateTimeOffset.compare(d, k))
                case nil, .null?: return nullResult
                case let other?: return Compiler.compare(op, Value(other), constant)
                }
            }
        default:
            return { root, extras in
                guard let v = fetch(root, extras) else { return nullResult }
                return Compiler.compare(op, Value(v), constant)
            }
        }
    }

    /// `member in (literal, …)`: integers and strings checked without building values.
    mutating func fastIn(_ lhs: FilterExpression, _ items: [FilterExpression]) throws(ODataError) -> TestBox? {
        guard case .member(let path) = lhs else { return nil }
        var ints: [Int64] = []
        var strings: [String] = []
        for item in items {
            switch item {
            case .literal(.int(let i)): ints.append(i)
            case .literal(.string(let s)): strings.append(s)
            default: return nil
            }
        }
        guard ints.isEmpty || strings.isEmpty else { return nil }
        if let slot = rootSlot(path) { return fastIn(slot, ints, strings) }
        return fastIn(PathFetcher(try fetchPath(path)), ints, strings)
    }

    func fastIn<F: Fetcher>(_ fetch: F, _ ints: [Int64], _ strings: [String]) -> TestBox {
        let intList = ints
        let stringList = strings
        if !intList.isEmpty {
            let doubles = intList.map(Double.init)
            return TestBox { root, extras in
                switch fetch(root, extras) {
                case .int(let x)?: return Tri(intList.contains(x))
                case .double(let x)?: return Tri(doubles.contains(x))
                case .string(let s)?:
                    guard case .int(let x)? = Value.number(s) else { return .false }
                    return Tri(intList.contains(x))
                default: return .false
                }
            }
        }
        return TestBox { root, extras in
            guard case .string(let x)? = fetch(root, extras) else { return .false }
            return Tri(stringList.contains(x))
        }
    }

    static func has(_ a: Value, _ b: Value) -> Tri {
        switch (a, b) {
        case (.null, _), (_, .null): return .null
        case (.int(let x), .int(let y)): return Tri(x & y == y)
        case (.string(let s), .enumMember(let m)), (.enumMember(let s), .enumMember(let m)):
            let present = Set(s.split(separator: ",").map { $0.trimmingSpaces })
            let wanted = m.split(separator: ",").map { $0.trimmingSpaces }
            return Tri(wanted.allSatisfy(present.contains))
        default: return .false
        }
    }
}
