/// The OData temporal text forms, parsed and written exactly as `$filter` reads them, for code that maps
/// them to its own types (the typed values of `ODataTyped`). Instants are seconds and nanoseconds since
/// 1970-01-01T00:00:00Z; times of day and durations are nanoseconds.
public enum TemporalText {
    /// Reads an `Edm.DateTimeOffset` (`2024-02-29T13:20:00.5+01:00`; V2's form without an offset is UTC).
    /// - Parameter text: the text.
    /// - Returns: the instant and the offset it was written in (minutes), or nil when `text` is not one.
    public static func instant(_ text: String) -> (seconds: Int64, nanoseconds: Int32, offsetMinutes: Int16)? {
        guard let value = Temporal.dateTimeOffset(text) ?? Temporal.dateTimeOffset(text + "Z") else { return nil }
        return (value.utcSeconds, value.nanos, value.offsetMinutes)
    }

    /// Writes an instant in UTC: `2024-02-29T12:20:00.5Z` (fraction only when not zero).
    /// - Parameters:
    ///   - seconds: seconds since the epoch.
    ///   - nanoseconds: the fraction of the second, 0..<1e9.
    /// - Returns: the canonical text.
    public static func instantText(seconds: Int64, nanoseconds: Int32) -> String {
        DateTimeOffset(utcSeconds: seconds, nanos: nanoseconds, offsetMinutes: 0).text
    }

    /// Reads an `Edm.Date` (`2024-02-29`) as days since 1970-01-01; nil when `text` is not one.
    /// - Parameter text: the text.
    public static func date(_ text: String) -> Int64? { Temporal.date(text) }

    /// Writes days since 1970-01-01 as an `Edm.Date`.
    /// - Parameter days: the day count.
    public static func dateText(days: Int64) -> String { Temporal.renderDate(days) }

    /// The year, month and day of a day count since 1970-01-01.
    /// - Parameter days: the day count.
    public static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) { Temporal.civil(days: days) }

    /// The day count since 1970-01-01 of a proleptic Gregorian date.
    /// - Parameters:
    ///   - year: the year.
    ///   - month: 1…12.
    ///   - day: 1…31.
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 { Temporal.days(year: year, month: month, day: day) }

    /// Reads an `Edm.TimeOfDay` (`13:20:00.5`) or V2's `Edm.Time` (`PT13H20M`) as nanoseconds since
    /// midnight; nil when `text` is neither.
    /// - Parameter text: the text.
    public static func timeOfDay(_ text: String) -> Int64? {
        if text.hasPrefix("PT"), let nanos = Temporal.duration(text), nanos >= 0, nanos < 86_400_000_000_000 { return nanos }
        return Temporal.timeOfDay(text)
    }

    /// Writes nanoseconds since midnight as an `Edm.TimeOfDay`.
    /// - Parameter nanoseconds: 0..<86,400 s.
    public static func timeOfDayText(nanoseconds: Int64) -> String { Temporal.renderTimeOfDay(nanoseconds) }

    /// Reads an `Edm.Duration` (`P1DT2H`, `-PT0.5S`) as nanoseconds; nil when `text` is not one.
    /// - Parameter text: the text.
    public static func duration(_ text: String) -> Int64? { Temporal.duration(text) }

    /// Writes nanoseconds as an `Edm.Duration` (`P1DT2H`).
    /// - Parameter nanoseconds: the duration.
    public static func durationText(nanoseconds: Int64) -> String { Temporal.renderDuration(nanoseconds) }
}
