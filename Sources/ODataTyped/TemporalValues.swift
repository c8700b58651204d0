public import Foundation
public import ODataCore
public import ODataQuery

/// An `Edm.Date`: a day of the proleptic Gregorian calendar, without time or time zone.
public struct ODataDate: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Days since 1970-01-01.
    public var daysSinceEpoch: Int64

    /// 1970-01-01.
    public init() { daysSinceEpoch = 0 }

    /// A date from its parts; nil for a day that does not exist.
    /// - Parameters:
    ///   - year: the year.
    ///   - month: 1…12.
    ///   - day: 1…31.
    public init?(year: Int, month: Int, day: Int) {
        let days = TemporalText.days(year: Int64(year), month: Int64(month), day: Int64(day))
        let back = TemporalText.civil(days: days)
        guard back.year == year, back.month == month, back.day == day else { return nil }
        daysSinceEpoch = days
    }

    /// A date from its text (`2024-02-29`); nil for other text.
    /// - Parameter text: the text.
    public init?(_ text: String) {
        guard let days = TemporalText.date(text) else { return nil }
        daysSinceEpoch = days
    }

    /// The year, month and day.
    public var components: (year: Int, month: Int, day: Int) {
        let parts = TemporalText.civil(days: daysSinceEpoch)
        return (Int(parts.year), Int(parts.month), Int(parts.day))
    }

    /// `2024-02-29`.
    public var description: String { TemporalText.dateText(days: daysSinceEpoch) }

    /// Earlier days first.
    public static func < (lhs: ODataDate, rhs: ODataDate) -> Bool { lhs.daysSinceEpoch < rhs.daysSinceEpoch }

    /// Reads the date's text.
    /// - Parameter decoder: the decoder.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = ODataDate(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not an Edm.Date"))
        }
        self = value
    }

    /// Writes the date's text.
    /// - Parameter encoder: the encoder.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension ODataDate: ODataValue {
    /// Reads `2024-02-29`.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> ODataDate {
        let text = try reader.readString()
        guard let value = ODataDate(text) else { throw reader.mismatch("'\(text)' is not an Edm.Date") }
        return value
    }
    /// The date's text.
    public func jsonValue(for version: ODataVersion) -> JSONValue { .string(description) }
    /// A date literal.
    public var literal: Literal { .date(description) }
}

/// An `Edm.TimeOfDay` (V2: `Edm.Time`): a time on a clock, without date or time zone, to the nanosecond.
public struct ODataTimeOfDay: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Nanoseconds since midnight.
    public var nanosecondsSinceMidnight: Int64

    /// Midnight.
    public init() { nanosecondsSinceMidnight = 0 }

    /// A time from its parts; nil when out of range.
    /// - Parameters:
    ///   - hour: 0…23.
    ///   - minute: 0…59.
    ///   - second: 0…59.
    ///   - nanosecond: 0…999,999,999.
    public init?(hour: Int, minute: Int, second: Int = 0, nanosecond: Int = 0) {
        guard (0..<24).contains(hour), (0..<60).contains(minute), (0..<60).contains(second),
              (0..<1_000_000_000).contains(nanosecond) else { return nil }
        nanosecondsSinceMidnight = (Int64(hour) * 3600 + Int64(minute) * 60 + Int64(second)) * 1_000_000_000 + Int64(nanosecond)
    }

    /// A time from its text: `13:20:00.5`, or V2's `PT13H20M`; nil for other text.
    /// - Parameter text: the text.
    public init?(_ text: String) {
        guard let nanos = TemporalText.timeOfDay(text) else { return nil }
        nanosecondsSinceMidnight = nanos
    }

    /// `13:20:00.5`.
    public var description: String { TemporalText.timeOfDayText(nanoseconds: nanosecondsSinceMidnight) }

    /// Earlier times first.
    public static func < (lhs: ODataTimeOfDay, rhs: ODataTimeOfDay) -> Bool {
        lhs.nanosecondsSinceMidnight < rhs.nanosecondsSinceMidnight
    }

    /// Reads the time's text.
    /// - Parameter decoder: the decoder.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = ODataTimeOfDay(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not an Edm.TimeOfDay"))
        }
        self = value
    }

    /// Writes the time's text.
    /// - Parameter encoder: the encoder.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension ODataTimeOfDay: ODataValue {
    /// Reads `13:20:00` or V2's `PT13H20M`.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> ODataTimeOfDay {
        let text = try reader.readString()
        guard let value = ODataTimeOfDay(text) else { throw reader.mismatch("'\(text)' is not a time of day") }
        return value
    }
    /// `13:20:00` for V4, `PT13H20M` for V2.
    public func jsonValue(for version: ODataVersion) -> JSONValue {
        .string(version == .v2 ? TemporalText.durationText(nanoseconds: nanosecondsSinceMidnight) : description)
    }
    /// A time-of-day literal (`time'PT…'` in V2).
    public var literal: Literal { .timeOfDay(description) }
}

extension Date: ODataValue {
    /// Reads an instant: ISO 8601 with or without an offset (`Edm.DateTimeOffset`, V2 `Edm.DateTime`
    /// in ISO form), or V2's `/Date(ms)/` and `/Date(ms+offset)/`.
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Date {
        let text = try reader.readString()
        if text.hasPrefix("/Date(") {
            guard let value = v2Date(text) else { throw reader.mismatch("'\(text)' is not a V2 date") }
            return value
        }
        guard let instant = TemporalText.instant(text) else { throw reader.mismatch("'\(text)' is not a date-time") }
        return Date(timeIntervalSince1970: Double(instant.seconds) + Double(instant.nanoseconds) / 1e9)
    }

    /// ISO 8601 in UTC for V4; `/Date(ms)/` for V2.
    public func jsonValue(for version: ODataVersion) -> JSONValue {
        if version == .v2 { return .string("/Date(\(Int64((timeIntervalSince1970 * 1000).rounded())))/") }
        return .string(isoText)
    }

    /// A date-time literal in UTC (`datetime'…'` in V2).
    public var literal: Literal { .dateTimeOffset(isoText) }

    /// The instant in UTC, to the millisecond's precision of a `Date` rounded to microseconds.
    private var isoText: String {
        let micros = (timeIntervalSince1970 * 1_000_000).rounded()
        let seconds = Int64((micros / 1_000_000).rounded(.down))
        let nanos = Int32((micros - Double(seconds) * 1_000_000) * 1000)
        return TemporalText.instantText(seconds: seconds, nanoseconds: nanos)
    }

    /// `/Date(1700000000000)/` or `/Date(1700000000000+0060)/`: milliseconds since the epoch in UTC.
    private static func v2Date(_ text: String) -> Date? {
        guard text.hasSuffix(")/") else { return nil }
        let body = text.dropFirst(6).dropLast(2)
        var end = body.startIndex
        if end < body.endIndex, body[end] == "-" { end = body.index(after: end) }
        while end < body.endIndex, body[end].isASCII, body[end].isNumber { end = body.index(after: end) }
        guard let milliseconds = Int64(body[..<end]) else { return nil }
        let rest = body[end...]
        guard rest.isEmpty || (rest.count == 5 && (rest.first == "+" || rest.first == "-") && Int(rest.dropFirst()) != nil) else { return nil }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension Duration: ODataValue {
    /// Reads an ISO 8601 duration (`P1DT2H`, `-PT0.5S`).
    public static func read(from reader: inout EntityReader) throws(DataServiceError) -> Duration {
        let text = try reader.readString()
        guard let nanos = TemporalText.duration(text) else { throw reader.mismatch("'\(text)' is not a duration") }
        return .nanoseconds(nanos)
    }
    /// The duration's ISO 8601 text.
    public func jsonValue(for version: ODataVersion) -> JSONValue { .string(TemporalText.durationText(nanoseconds: nanoseconds)) }
    /// A duration literal.
    public var literal: Literal { .duration(TemporalText.durationText(nanoseconds: nanoseconds)) }

    private var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// Defaults the generated initialisers use for non-optional properties.
public enum ODataDefaults {
    /// The all-zero GUID.
    public static let guid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    /// 1970-01-01T00:00:00Z.
    public static let date = Date(timeIntervalSince1970: 0)
}
