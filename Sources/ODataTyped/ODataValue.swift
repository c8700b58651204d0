public import Foundation
public import ODataCore
public import ODataQuery

/// A value a typed entity can hold: read from OData JSON, written as OData JSON for a service's version,
/// and written as a URL literal in keys and `$filter`.
///
/// The library conforms Swift's types for the Edm primitive types (`String`, `Bool`, `UInt8`, `Int8`,
/// `Int16`, `Int32`, `Int64`, `Float`, `Double`, `Decimal`, `UUID`, `Data`, `Date`, ``ODataDate``,
/// ``ODataTimeOfDay``, `Duration`, ``JSONValue``), `Optional` and `Array` of them; generated enums,
/// complex and entity types conform through ``ODataEnum`` and ``StructuredValue``.
public protocol ODataValue: Sendable {
    /// Reads one value at the reader's position.
    /// - Parameter reader: the reader.
    /// - Returns: the value.
    /// - Throws: ``DataServiceError`` `.typeMismatch` naming the property and what was found.
    static func read(from reader: inout EntityReader) throws(DataServiceError) -> Self
    /// The value as OData JSON for a service of `version` (V2 writes Int64 and decimals as strings,
    /// instants as `/Date(…)/`, times of day as `PT…`).
    /// - Parameter version: the service's version.
    func jsonValue(for version: ODataVersion) -> JSONValue
    /// The value as a literal of the query language (keys, `$filter`).
    var literal: Literal { get }
}

// MARK: Strings, booleans, numbers

extension String: ODataValue {
    /// Reads a JSON string.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> String { try reader.readString() }
    /// The string.
    public func jsonValue(for version: ODataVersion) -> JSONValue { .string(self) }
    /// A quoted string literal.
    public var literal: Literal { .string(self) }
}

extension Bool: ODataValue {
    /// Reads `true` or `false`.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Bool { try reader.readBool() }
    /// The boolean.
    public func jsonValue(for version: ODataVersion) -> JSONValue { .bool(self) }
    /// `true` or `false`.
    public var literal: Literal { .bool(self) }
}

/// The fixed-width integers of the Edm type system, read with a range check.
public protocol ODataInteger: ODataValue, FixedWidthInteger {}

extension ODataInteger {
    /// Reads an integer (a number, or a string in V2), refusing values out of the type's range.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Self {
        let value = try reader.readInt64()
        guard let exact = Self(exactly: value) else { throw reader.mismatch("\(value) is out of the range of \(Self.self)") }
        return exact
    }
    /// The number; an `Int64` is a string for a V2 service.
    public func jsonValue(for version: ODataVersion) -> JSONValue {
        version == .v2 && Self.bitWidth == 64 ? .string(String(self)) : .int(Int64(self))
    }
    /// An integer literal.
    public var literal: Literal { .int(Int64(self)) }
}

extension UInt8: ODataInteger {}
extension Int8: ODataInteger {}
extension Int16: ODataInteger {}
extension Int32: ODataInteger {}
extension Int64: ODataInteger {}

extension Double: ODataValue {
    /// Reads a number, or `INF`, `-INF`, `NaN` and V2's numbers as strings.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Double { try reader.readDouble() }
    /// The number (the JSON writer spells non-finite values as OData's strings).
    public func jsonValue(for version: ODataVersion) -> JSONValue { .double(self) }
    /// A double literal.
    public var literal: Literal { .double(self) }
}

extension Float: ODataValue {
    /// Reads a number as `Edm.Single`.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Float { Float(try reader.readDouble()) }
    /// The number.
    public func jsonValue(for version: ODataVersion) -> JSONValue { .double(Double(self)) }
    /// A double literal.
    public var literal: Literal { .double(Double(self)) }
}

extension Decimal: ODataValue {
    /// Reads a number exactly as written (or a string holding one: V2 and IEEE754Compatible).
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Decimal {
        let text = try reader.readNumberText()
        guard let value = Decimal(string: text, locale: posix), !value.isNaN else {
            throw reader.mismatch("'\(text)' is not a decimal")
        }
        return value
    }
    /// A string for a V2 service; for V4 an integer, or a number with the decimal's digits.
    public func jsonValue(for version: ODataVersion) -> JSONValue {
        let text = canonicalText
        if version == .v2 { return .string(text) }
        if let integer = Int64(text) { return .int(integer) }
        return .double(Double(text) ?? 0)
    }
    /// A decimal literal (always with a decimal point, so it reads back as a decimal).
    public var literal: Literal {
        let text = canonicalText
        return .decimal(text.contains(".") ? text : text + ".0")
    }

    private var canonicalText: String { description }
}

/// Decimal text is read with the POSIX locale (a `.` separator), made once.
private let posix = Locale(identifier: "en_US_POSIX")

// MARK: Identifiers and binary data

extension UUID: ODataValue {
    /// Reads a GUID string.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> UUID {
        let text = try reader.readString()
        guard let value = UUID(uuidString: text) else { throw reader.mismatch("'\(text)' is not a GUID") }
        return value
    }
    /// The GUID in lower case.
    public func jsonValue(for version: ODataVersion) -> JSONValue { .string(uuidString.lowercased()) }
    /// A GUID literal (`guid'…'` in V2).
    public var literal: Literal { .guid(uuidString.lowercased()) }
}

extension Data: ODataValue {
    /// Reads base64 or base64url text.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Data {
        let text = try reader.readString()
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while standard.utf8.count % 4 != 0 { standard += "=" }
        guard let value = Data(base64Encoded: standard) else { throw reader.mismatch("the value is not base64 text") }
        return value
    }
    /// base64url for V4 (the OData JSON format), base64 for V2.
    public func jsonValue(for version: ODataVersion) -> JSONValue {
        version == .v2 ? .string(base64EncodedString()) : .string(Self.base64URL(self))
    }
    /// A binary literal.
    public var literal: Literal { .binary(Self.base64URL(self)) }

    private static func base64URL(_ data: Data) -> String {
        String(data.base64EncodedString().compactMap { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 == "=" ? nil : $0 })
    }
}

extension JSONValue: ODataValue {
    /// Reads any value whole (`Edm.Untyped`, geography and geometry values).
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> JSONValue { try reader.readValue() }
    /// The value itself.
    public func jsonValue(for version: ODataVersion) -> JSONValue { self }
    /// A JSON literal.
    public var literal: Literal { .json(self) }
}

// MARK: Optional and collections

extension Optional: ODataValue where Wrapped: ODataValue {
    /// `nil` for `null` and for a V2 `__deferred` link; otherwise the wrapped value.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Wrapped? {
        if try reader.readNull() { return nil }
        if try reader.nextObjectStarts(with: "__deferred") {
            try reader.skipValue()
            return nil
        }
        return try Wrapped.read(from: &reader)
    }
    /// `null` or the wrapped value's JSON.
    public func jsonValue(for version: ODataVersion) -> JSONValue { self?.jsonValue(for: version) ?? .null }
    /// `null` or the wrapped value's literal.
    public var literal: Literal { self?.literal ?? .null }
}

extension Array: ODataValue where Element: ODataValue {
    /// Reads a JSON array, or V2's `{"results": [...]}`.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> [Element] {
        if try reader.peek() == .object {
            var results: [Element]?
            try reader.beginObject("collection")
            while let name = try reader.nextMember() {
                if name == "results" { results = try readArray(from: &reader) } else { try reader.skipValue() }
            }
            guard let results else { throw reader.mismatch("expected a collection, found an object without 'results'") }
            return results
        }
        return try readArray(from: &reader)
    }

    private static func readArray(from reader: inout EntityReader) throws(DataServiceError) -> [Element] {
        try reader.beginArray()
        var elements: [Element] = []
        while try reader.nextElement() { elements.append(try Element.read(from: &reader)) }
        return elements
    }

    /// A JSON array of the elements' JSON.
    public func jsonValue(for version: ODataVersion) -> JSONValue { .array(map { $0.jsonValue(for: version) }) }
    /// A JSON array literal.
    public var literal: Literal { .json(jsonValue(for: .v4)) }
}

// MARK: Enums

/// An enum type generated from `$metadata`: its raw values are the members' names.
public protocol ODataEnum: ODataValue, RawRepresentable<String>, CaseIterable, Codable, Hashable {
    /// The qualified type name (`NS.Color`).
    static var odataTypeName: String { get }
}

extension ODataEnum {
    /// Reads a member name; an unknown member is a type mismatch naming it.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Self {
        let text = try reader.readString()
        guard let value = Self(rawValue: text) else { throw reader.mismatch("'\(text)' is not a member of \(odataTypeName)") }
        return value
    }
    /// The member name.
    public func jsonValue(for version: ODataVersion) -> JSONValue { .string(rawValue) }
    /// An enum literal (`NS.Color'Red'`).
    public var literal: Literal { .enumMember(type: Self.odataTypeName, value: rawValue) }
}
