// The naming rules of the contract: OData names to Swift identifiers.

/// Swift names for OData names: lowerCamelCase members, UpperCamelCase types, keywords back-quoted, collisions
/// suffixed deterministically.
enum Naming {
    /// Swift keywords that must be back-quoted when used as a member name.
    static let keywords: Set<String> = [
        "associatedtype", "borrowing", "class", "consuming", "deinit", "enum", "extension", "fileprivate", "func",
        "import", "init", "inout", "internal", "let", "nonisolated", "open", "operator", "precedencegroup",
        "private", "protocol", "public", "rethrows", "static", "struct", "subscript", "typealias", "var", "break",
        "case", "catch", "continue", "default", "defer", "do", "else", "fallthrough", "for", "guard", "if", "in",
        "repeat", "return", "throw", "switch", "where", "while", "as", "false", "is", "nil", "self", "Self",
        "super", "throws", "true", "try", "await", "any", "some", "Any", "Type", "Protocol", "_",
    ]

    /// Member names the generated code declares itself (or that back-quoting cannot make usable): a property named
    /// so gets a `_2` suffix.
    static let reservedMembers: Set<String> = [
        "odata", "entityKey", "init", "write", "odataTypeName", "keyPropertyNames", "self", "super", "deinit",
        "subscript", "hashValue", "hash", "encode", "allCases", "rawValue", "_",
        // Members of ODataTyped's protocols (ODataValue, StructuredValue) the generated types inherit.
        "literal", "jsonValue", "properties", "decode", "read",
    ]

    /// Enum case names the generated enum (and `RawRepresentable`, `CaseIterable`) declares: suffixed `_2`.
    static let reservedEnumCases: Set<String> = [
        "odataTypeName", "allCases", "rawValue", "init", "self", "super", "deinit", "subscript", "hashValue", "hash",
        "encode", "description", "_",
    ]

    /// Names the generated code uses for runtime, Foundation and Swift types: a generated type named so gets the
    /// suffix `Type` (or `Type2` …).
    static let reservedTypes: Set<String> = [
        "Property", "Data", "Date", "Decimal", "UUID", "Duration", "EntitySet", "EntitySetProtocol", "DataQuery",
        "DataService", "DataServiceProvider", "DataServiceError", "String", "Bool", "Int", "Int8", "Int16",
        "Int32", "Int64", "UInt8", "UInt", "Float", "Double", "Error", "Type", "Protocol", "Self", "Any",
        "AnyObject", "Optional", "Array", "Dictionary", "Set", "Result", "Never", "Void", "Sendable", "Codable",
        "Hashable", "Equatable", "CodingKey", "CodingKeys", "CaseIterable", "RawRepresentable", "Encoder",
        "Decoder", "ODataValue", "StructuredValue", "EntityValue", "ODataEnum", "ODataMetadata", "EntityKey",
        "Indirect", "EntityReader", "EntityWriter", "ODataDate", "ODataTimeOfDay", "JSONValue", "ODataDefaults",
        "Foundation", "ODataTyped", "Swift", "Task", "Character",
    ]

    /// The words of an OData name: split at `_` and at anything that is not a letter or digit.
    private static func words(_ name: String) -> [String] {
        var words: [String] = []
        var current = ""
        for character in name {
            if character.isLetter || character.isNumber {
                current.append(character)
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// A name that starts with a digit gets a leading `_`; an empty one is `_`.
    private static func identifier(_ name: String) -> String {
        guard let first = name.first else { return "_" }
        return first.isNumber ? "_" + name : name
    }

    /// UpperCamelCase: `SAP__Message` → `SAPMessage`, `CT_Address` → `CTAddress`, `Order_Detail` → `OrderDetail`.
    static func upperCamel(_ name: String) -> String {
        identifier(words(name).map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined())
    }

    /// lowerCamelCase: `CustomerID` → `customerID`, `ID` → `id`, `SAP__Messages` → `sapMessages`,
    /// `to_Item` → `toItem`.
    static func lowerCamel(_ name: String) -> String {
        let upper = upperCamel(name)
        guard !upper.hasPrefix("_") else { return upper }
        let characters = Array(upper)
        var leadingUpper = 0
        while leadingUpper < characters.count, characters[leadingUpper].isUppercase { leadingUpper += 1 }
        switch leadingUpper {
        case 0:
            return upper
        case characters.count:
            return upper.lowercased()
        case 1:
            return characters[0].lowercased() + String(characters[1...])
        default:
            // `SAPMessages` → `sapMessages`: the run's last capital starts the next word, unless a digit follows.
            let next = characters[leadingUpper]
            let lowered = next.isLowercase ? leadingUpper - 1 : leadingUpper
            return String(characters[..<lowered]).lowercased() + String(characters[lowered...])
        }
    }

    /// The name as written in code: back-quoted if it is a keyword.
    static func quoted(_ identifier: String) -> String {
        keywords.contains(identifier) ? "`\(identifier)`" : identifier
    }

    /// Hands out unique names: a taken or reserved name gets a suffix from `suffix(n)` for n = 2, 3, ….
    struct Uniquer {
        private(set) var taken: Set<String>
        private let reserved: Set<String>
        private let firstNumber: Int
        private let suffix: @Sendable (String, Int) -> String

        /// Member names: `name_2`, `name_3`, ….
        static func members(reserving extra: Set<String> = []) -> Uniquer {
            Uniquer(reserved: Naming.reservedMembers.union(extra), firstNumber: 2) { "\($0)_\($1)" }
        }

        /// Enum case names: `name_2`, `name_3`, ….
        static func enumCases() -> Uniquer {
            Uniquer(reserved: Naming.reservedEnumCases, firstNumber: 2) { "\($0)_\($1)" }
        }

        /// Type names: `NameType`, `NameType2`, ….
        static func types(reserving extra: Set<String> = []) -> Uniquer {
            Uniquer(reserved: Naming.reservedTypes.union(extra), firstNumber: 1) { $1 == 1 ? "\($0)Type" : "\($0)Type\($1)" }
        }

        /// Method names: `name_2`, `name_3`, ….
        static func methods(reserving extra: Set<String> = []) -> Uniquer {
            Uniquer(reserved: extra, firstNumber: 2) { "\($0)_\($1)" }
        }

        private init(
            reserved: Set<String>, firstNumber: Int, suffix: @escaping @Sendable (String, Int) -> String
        ) {
            self.taken = []
            self.firstNumber = firstNumber
            self.reserved = reserved
            self.suffix = suffix
        }

        /// `base` if free, else the first free suffixed form; the result is then taken.
        mutating func unique(_ base: String) -> String {
            var candidate = base
            var number = firstNumber
            while taken.contains(candidate) || reserved.contains(candidate) {
                candidate = suffix(base, number)
                number += 1
            }
            taken.insert(candidate)
            return candidate
        }

        /// Marks a name as taken.
        mutating func take(_ name: String) {
            taken.insert(name)
        }
    }
}
