import ODataQuery

/// The comparisons of a local `$filter` that OData gives no meaning to, found through `$metadata` before
/// anything is evaluated.
///
/// OData promotes numeric operands only (URL Conventions, comparison operators: "when applied to operands
/// of numeric types, numeric promotion rules are applied"). A comparison of an `Edm.DateTimeOffset` with
/// an `Edm.Date` (`OrderDate lt 2024-03-01`), of a time of day with a date, or of a number with a date has
/// no defined result: a strict producer answers 400, a lenient one promotes, and an evaluator that did
/// neither would silently match nothing. The offline store refuses such a filter with a typed error that
/// says how to write it. Where a type is not known statically (a function without a fixed result type, a
/// path through an open type) nothing is refused.
enum FilterTypes {
    /// The types whose values only compare among themselves.
    private enum Kind: Equatable {
        case numeric
        case temporal(String)

        var name: String {
            switch self {
            case .numeric: return "a number"
            case .temporal(let edm): return edm
            }
        }
    }

    /// Throws when `filter`, over the entities of `set`, compares values of types OData does not compare.
    static func check(_ filter: FilterExpression, set: String, model: ServiceModel) throws(OfflineODataError) {
        try check(filter, scope: Scope(model: model, root: set, variables: [:]))
    }

    private struct Scope {
        let model: ServiceModel
        let root: String
        var variables: [String: String]  // lambda variable → entity set it ranges over
    }

    private static let comparisons: Set<BinaryOperator> = [.eq, .ne, .gt, .ge, .lt, .le]

    private static func check(_ expression: FilterExpression, scope: Scope) throws(OfflineODataError) {
        switch expression {
        case .binary(let op, let left, let right):
            if comparisons.contains(op) {
                try compare(left, right, scope: scope)
            } else if op == .in, case .list(let items) = right {
                for item in items { try compare(left, item, scope: scope) }
            }
            try check(left, scope: scope)
            try check(right, scope: scope)
        case .unary(_, let operand):
            try check(operand, scope: scope)
        case .function(_, let arguments), .list(let arguments):
            for argument in arguments { try check(argument, scope: scope) }
        case .lambda(let lambda):
            guard let predicate = lambda.predicate, lambda.base == nil else { return }
            var inner = scope
            if let variable = lambda.variable, let target = set(at: lambda.path, scope: scope) { inner.variables[variable] = target }
            try check(predicate, scope: inner)
        default:
            return
        }
    }

    private static func compare(_ left: FilterExpression, _ right: FilterExpression, scope: Scope) throws(OfflineODataError) {
        guard let leftKind = kind(of: left, scope: scope), let rightKind = kind(of: right, scope: scope), leftKind != rightKind else { return }
        var advice = ""
        switch (leftKind, rightKind) {
        case (.temporal("Edm.DateTimeOffset"), .temporal("Edm.Date")), (.temporal("Edm.Date"), .temporal("Edm.DateTimeOffset")):
            advice = "; compare date(…) of the Edm.DateTimeOffset with the date, or the Edm.DateTimeOffset with a date-time such as 2024-03-01T00:00:00Z"
        case (.temporal("Edm.DateTimeOffset"), .temporal("Edm.TimeOfDay")), (.temporal("Edm.TimeOfDay"), .temporal("Edm.DateTimeOffset")):
            advice = "; compare time(…) of the Edm.DateTimeOffset with the time of day"
        default:
            break
        }
        throw OfflineODataError(.invalidRequest, "$filter compares \(left) (\(leftKind.name)) with \(right) (\(rightKind.name)): OData defines no promotion between these types\(advice)")
    }

    /// The static type of an operand, when it is one whose values only compare among themselves.
    private static func kind(of expression: FilterExpression, scope: Scope) -> Kind? {
        switch expression {
        case .literal(let literal):
            switch literal {
            case .int, .decimal, .double: return .numeric
            case .date: return .temporal("Edm.Date")
            case .dateTimeOffset: return .temporal("Edm.DateTimeOffset")
            case .timeOfDay: return .temporal("Edm.TimeOfDay")
            case .duration: return .temporal("Edm.Duration")
            default: return nil
            }
        case .member(let path):
            guard let (set, property) = property(at: path, scope: scope),
                  let type = scope.model.entityType(ofSet: set)?.propertyTypes[property] else { return nil }
            return kind(ofEdm: type)
        case .function(let name, _):
            switch name.lowercased() {
            case "date": return .temporal("Edm.Date")
            case "time": return .temporal("Edm.TimeOfDay")
            case "now", "mindatetime", "maxdatetime": return .temporal("Edm.DateTimeOffset")
            case "year", "month", "day", "hour", "minute", "second", "fractionalseconds", "totaloffsetminutes",
                 "totalseconds", "length", "indexof", "round", "floor", "ceiling":
                return .numeric
            default: return nil
            }
        case .unary(.negate, let operand):
            return kind(of: operand, scope: scope)
        default:
            return nil
        }
    }

    private static func kind(ofEdm type: String) -> Kind? {
        switch type {
        case "Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Decimal", "Edm.Double", "Edm.Single":
            return .numeric
        case "Edm.DateTimeOffset", "Edm.DateTime": return .temporal("Edm.DateTimeOffset")  // V2's DateTime is an instant too
        case "Edm.Date", "Edm.TimeOfDay", "Edm.Duration": return .temporal(type)
        default: return nil
        }
    }

    /// The entity set and property a member path names (through navigation properties), if it names one.
    private static func property(at path: [String], scope: Scope) -> (set: String, property: String)? {
        guard let last = path.last, let set = set(at: Array(path.dropLast()), scope: scope) else { return nil }
        return (set, last)
    }

    /// The entity set a path of navigation properties leads to from the root or a lambda variable.
    private static func set(at path: [String], scope: Scope) -> String? {
        var segments = path[...]
        var set = scope.root
        if let first = segments.first {
            if first == "$it" {
                segments = segments.dropFirst()
            } else if let variable = scope.variables[first] {
                set = variable
                segments = segments.dropFirst()
            }
        }
        for segment in segments {
            guard let next = scope.model.targetSet(from: set, navigation: segment) else { return nil }
            set = next
        }
        return set
    }
}
