/// A JSON value as OData payloads carry it: the one entity representation both stores,
/// the query engine and the fixture producer share.
///
/// Integers without a fraction or exponent stay exact (`int`); every other number is a
/// `double`. Objects keep their members in the order they were read or written.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer that fits in 64 bits, written without fraction or exponent.
    case int(Int64)
    /// Any other number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object with its members in order.
    case object(JSONObject)
}

/// A JSON object whose members keep their order; lookups are linear, which beats hashing
/// for the 5–30 members of a typical entity.
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// The member names, in order.
    public private(set) var keys: [String]
    /// The member values, in the order of ``keys``.
    public private(set) var values: [JSONValue]

    /// Creates an empty object.
    public init() {
        keys = []
        values = []
    }

    /// Creates an object from ordered members; a later duplicate name replaces an earlier one.
    /// - Parameter members: name and value pairs, in order.
    public init(_ members: [(String, JSONValue)]) {
        self.init()
        keys.reserveCapacity(members.count)
        values.reserveCapacity(members.count)
        for (key, value) in members { self[key] = value }
    }

    /// Creates an object from a literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }

    /// The number of members.
    public var count: Int { keys.count }

    /// Whether the object has no member.
    public var isEmpty: Bool { keys.isEmpty }

    /// The value of a member, or `nil` when absent; setting `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let index = keys.firstIndex(of: key) else { return nil }
            return values[index]
        }
        set {
            if let index = keys.firstIndex(of: key) {
                if let newValue {
                    values[index] = newValue
                } else {
                    keys.remove(at: index)
                    values.remove(at: index)
                }
            } else if let newValue {
                keys.append(key)
                values.append(newValue)
            }
        }
    }

    /// Reserves room for `count` members (for builders that know how many are coming).
    /// - Parameter count: the number of members.
    public mutating func reserveCapacity(_ count: Int) {
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
    }

    /// Appends a member without looking for a duplicate; for builders that know names are unique.
    /// - Parameters:
    ///   - value: the member's value.
    ///   - key: the member's name.
    public mutating func append(_ value: JSONValue, forKey key: String) {
        keys.append(key)
        values.append(value)
    }

    /// Iterates the members in order.
    public func makeIterator() -> Zip2Sequence<[String], [JSONValue]>.Iterator {
        zip(keys, values).makeIterator()
    }
}

extension JSONValue {
    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The object, when this is an object.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The array, when this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The boolean, when this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer, when this is an integer (or a double with an integral value).
    public var intValue: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.2e18: return Int64(value)
        default: return nil
        }
    }

    /// The number as a double, when this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The member of an object, or `nil` when this is not an object or has no such member.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// Creates a string value.
    public init(stringLiteral value: String) { self = .string(value) }
    /// Creates an integer value.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// Creates a double value.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// Creates a boolean value.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// Creates `null`.
    public init(nilLiteral: ()) { self = .null }
    /// Creates an array value.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Creates an object value, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
}

extension JSONValue: Codable {
    /// Reads any JSON value through a `Decoder` (integers stay integers).
    /// - Parameter decoder: the decoder.
    /// - Throws: `DecodingError` when the value is none of JSON's kinds.
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
            self = .array(elements)
            return
        }
        if let keyed = try? decoder.container(keyedBy: AnyKey.self) {
            var object = JSONObject()
            for key in keyed.allKeys { object.append(try keyed.decode(JSONValue.self, forKey: key), forKey: key.stringValue) }
            self = .object(object)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() { self = .null }
        else if let flag = try? single.decode(Bool.self) { self = .bool(flag) }
        else if let number = try? single.decode(Int64.self) { self = .int(number) }
        else if let number = try? single.decode(Double.self) { self = .double(number) }
        else { self = .string(try single.decode(String.self)) }
    }

    /// Writes the value through an `Encoder`.
    /// - Parameter encoder: the encoder.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let flag):
            var single = encoder.singleValueContainer()
            try single.encode(flag)
        case .int(let number):
            var single = encoder.singleValueContainer()
            try single.encode(number)
        case .double(let number):
            var single = encoder.singleValueContainer()
            try single.encode(number)
        case .string(let text):
            var single = encoder.singleValueContainer()
            try single.encode(text)
        case .array(let elements):
            var array = encoder.unkeyedContainer()
            for element in elements { try array.encode(element) }
        case .object(let object):
            var keyed = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in object { try keyed.encode(value, forKey: AnyKey(stringValue: key)) }
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
