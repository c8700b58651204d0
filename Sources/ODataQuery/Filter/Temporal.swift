/// Parsers and calendar arithmetic for the OData temporal literals (`Edm.Date`, `Edm.TimeOfDay`,
/// `Edm.DateTimeOffset`, `Edm.Duration`), shared by the lexer and the evaluator.
///
/// Entities carry these values as JSON strings (OData V4 JSON), so the evaluator parses them on the
/// fly; the parsers work on UTF-8 bytes and allocate nothing.
enum Temporal {
    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The year, month and day of a day count since 1970-01-01 (`civil_from_days`).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    static func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // MARK: Byte scanning

    struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index: Int

        init(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int = 0) {
            self.bytes = bytes
            self.index = index
        }

        var atEnd: Bool { index >= bytes.count }
        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func take(_ byte: UInt8) -> Bool {
            if index < bytes.count && bytes[index] == byte {
                index += 1
                return true
            }
            return false
        }

        /// Exactly `count` decimal digits.
        mutating func digits(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for offset in 0..<count {
                let byte = bytes[index + offset]
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            index += count
            return value
        }

        /// One or more decimal digits (at most 18).
        mutating func number() -> Int64? {
            var value: Int64 = 0
            let start = index
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57, index - start < 18 {
                value = value * 10 + Int64(bytes[index] - 48)
                index += 1
            }
            return index > start ? value : nil
        }

        /// A fraction after a dot, as nanoseconds (digits beyond nine are read and dropped).
        mutating func fractionNanos() -> Int64? {
            let start = index
            var value: Int64 = 0
            var scale = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if scale < 9 {
                    value = value * 10 + Int64(bytes[index] - 48)
                    scale += 1
                }
                index += 1
            }
            guard index > start else { return nil }
            while scale < 9 {
                value *= 10
                scale += 1
            }
            return value
        }
    }

    // MARK: Date

    /// `[-]YYYY-MM-DD` (four or more year digits) → days since the epoch.
    static func scanDate(_ s: inout Scanner) -> Int64? {
        let negative = s.take(UInt8(ascii: "-"))
        let start = s.index
        // Four to nine year digits: enough for any calendar, and the day arithmetic cannot overflow.
        guard let yearDigits = s.number(), s.index - start >= 4, s.index - start <= 9 else { return nil }
        if s.index - start > 4 && s.bytes[start] == UInt8(ascii: "0") { return nil }
        let year = negative ? -yearDigits : yearDigits
        guard s.take(UInt8(ascii: "-")), let month = s.digits(2), s.take(UInt8(ascii: "-")), let day = s.digits(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year, month) else { return nil }
        return days(year: year, month: month, day: day)
    }

    /// `HH:MM[:SS[.fffffffff]]` → nanoseconds since midnight.
    static func scanTimeOfDay(_ s: inout Scanner) -> Int64? {
        guard let hour = s.digits(2), s.take(UInt8(ascii: ":")), let minute = s.digits(2) else { return nil }
        guard hour < 24, minute < 60 else { return nil }
        var second: Int64 = 0
        var nanos: Int64 = 0
        if s.take(UInt8(ascii: ":")) {
            guard let sec = s.digits(2), sec < 60 else { return nil }
            second = sec
            if s.take(UInt8(ascii: ".")) {
                guard let fraction = s.fractionNanos() else { return nil }
                nanos = fraction
            }
        }
        return ((hour * 60 + minute) * 60 + second) * 1_000_000_000 + nanos
    }

    /// A date-time with `Z` or `±HH:MM`.
    static func scanDateTimeOffset(_ s: inout Scanner) -> DateTimeOffset? {
        guard let day = scanDate(&s), s.take(UInt8(ascii: "T")) || s.take(UInt8(ascii: "t")),
            let time = scanTimeOfDay(&s)
        else { return nil }
        var offsetMinutes: Int64 = 0
        if s.take(UInt8(ascii: "Z")) || s.take(UInt8(ascii: "z")) {
            offsetMinutes = 0
        } else {
            let sign: Int64
            if s.take(UInt8(ascii: "+")) {
                sign = 1
            } else if s.take(UInt8(ascii: "-")) {
                sign = -1
            } else {
                return nil
            }
            guard let hours = s.digits(2), s.take(UInt8(ascii: ":")), let minutes = s.digits(2), hours <= 23,
                minutes < 60
            else { return nil }
            offsetMinutes = sign * (hours * 60 + minutes)
        }
        let localSeconds = day * 86_400 + time / 1_000_000_000
        return DateTimeOffset(
            utcSeconds: localSeconds - offsetMinutes * 60, nanos: Int32(time % 1_000_000_000),
            offsetMinutes: Int16(offsetMinutes))
    }

    /// `[-]P[nD][T[nH][nM][n[.f]S]]` → nanoseconds (saturating).
    static func scanDuration(_ s: inout Scanner) -> Int64? {
        let negative = s.take(UInt8(ascii: "-"))
        guard s.take(UInt8(ascii: "P")) else { return nil }
        var total: Int64 = 0
        var any = false
        func add(_ value: Int64, _ unit: Int64) -> Bool {
            let (product, overflow1) = value.multipliedReportingOverflow(by: unit)
            let (sum, overflow2) = total.addingReportingOverflow(product)
            if overflow1 || overflow2 { return false }
            total = sum
            return true
        }
        let save = s.index
        if let days = s.number() {
            if s.take(UInt8(ascii: "D")) {
                guard add(days, 86_400_000_000_000) else { return nil }
                any = true
            } else {
                s.index = save
            }
        }
        if s.take(UInt8(ascii: "T")) {
            var anyTime = false
            if let value = number(&s, unit: UInt8(ascii: "H")) {
                guard add(value, 3_600_000_000_000) else { return nil }
                anyTime = true
            }
            if let value = number(&s, unit: UInt8(ascii: "M")) {
                guard add(value, 60_000_000_000) else { return nil }
                anyTime = true
            }
            let before = s.index
            if let whole = s.number() {
                var nanos: Int64 = 0
                if s.take(UInt8(ascii: ".")) {
                    guard let fraction = s.fractionNanos() else { return nil }
                    nanos = fraction
                }
                if s.take(UInt8(ascii: "S")) {
                    guard add(whole, 1_000_000_000), add(nanos, 1) else { return nil }
                    anyTime = true
                } else {
                    s.index = before
                }
            }
            guard anyTime else { return nil }
            any = true
        }
        guard any else { return nil }
        return negative ? -total : total
    }

    private static func number(_ s: inout Scanner, unit: UInt8) -> Int64? {
        let save = s.index
        if let value = s.number(), s.take(unit) { return value }
        s.index = save
        return nil
    }

    // MARK: Whole-string parsers

    static func parseWhole<T>(_ text: String, _ scan: (inout Scanner) -> T?) -> T? {
        var text = text
        return text.withUTF8 { buffer in
            var scanner = Scanner(buffer)
            guard let value = scan(&scanner), scanner.atEnd else { return nil }
            return value
        }
    }

    static func date(_ text: String) -> Int64? { parseWhole(text, scanDate) }
    static func timeOfDay(_ text: String) -> Int64? { parseWhole(text, scanTimeOfDay) }
    static func dateTimeOffset(_ text: String) -> DateTimeOffset? { parseWhole(text, scanDateTimeOffset) }
    static func duration(_ text: String) -> Int64? { parseWhole(text, scanDuration) }

    // MARK: Rendering

    static func renderDate(_ days: Int64) -> String {
        let (y, m, d) = civil(days: days)
        return pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2)
    }

    static func renderTimeOfDay(_ nanos: Int64) -> String {
        let seconds = nanos / 1_000_000_000
        var text = pad(seconds / 3600, 2) + ":" + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
        let fraction = nanos % 1_000_000_000
        if fraction != 0 {
            var digits = pad(fraction, 9)
            while digits.hasSuffix("0") { digits.removeLast() }
            text += "." + digits
        }
        return text
    }

    static func renderDuration(_ nanos: Int64) -> String {
        var text = nanos < 0 ? "-P" : "P"
        let magnitude = nanos.magnitude
        let days = magnitude / 86_400_000_000_000
        var rest = magnitude % 86_400_000_000_000
        if days > 0 { text += "\(days)D" }
        if rest > 0 || days == 0 {
            text += "T"
            let hours = rest / 3_600_000_000_000
            rest %= 3_600_000_000_000
            let minutes = rest / 60_000_000_000
            rest %= 60_000_000_000
            if hours > 0 { text += "\(hours)H" }
            if minutes > 0 { text += "\(minutes)M" }
            if rest > 0 || (hours == 0 && minutes == 0) {
                text += "\(rest / 1_000_000_000)"
                let fraction = rest % 1_000_000_000
                if fraction != 0 {
                    var digits = pad(Int64(fraction), 9)
                    while digits.hasSuffix("0") { digits.removeLast() }
                    text += "." + digits
                }
                text += "S"
            }
        }
        return text
    }

    static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value.magnitude)
        let padding = String(repeating: "0", count: max(0, width - digits.count))
        return (value < 0 ? "-" : "") + padding + digits
    }
}

/// An instant with the UTC offset it was written in (`Edm.DateTimeOffset`).
struct DateTimeOffset: Hashable, Sendable {
    /// Seconds since 1970-01-01T00:00:00Z.
    var utcSeconds: Int64
    /// The fraction of the second, in nanoseconds.
    var nanos: Int32
    /// The offset from UTC the value was written in, in minutes.
    var offsetMinutes: Int16

    /// Orders instants regardless of their offsets.
    static func compare(_ a: DateTimeOffset, _ b: DateTimeOffset) -> Int {
        if a.utcSeconds != b.utcSeconds { return a.utcSeconds < b.utcSeconds ? -1 : 1 }
        if a.nanos != b.nanos { return a.nanos < b.nanos ? -1 : 1 }
        return 0
    }

    /// Seconds since the epoch in the value's own offset (local wall-clock time).
    var localSeconds: Int64 { utcSeconds + Int64(offsetMinutes) * 60 }

    /// Days since the epoch of the local date.
    var localDays: Int64 {
        let s = localSeconds
        return s >= 0 ? s / 86_400 : (s - 86_399) / 86_400
    }

    /// Nanoseconds since local midnight.
    var localTimeNanos: Int64 {
        (localSeconds - localDays * 86_400) * 1_000_000_000 + Int64(nanos)
    }

    /// The instant moved by a number of nanoseconds, keeping its offset; nil on overflow.
    func adding(nanoseconds: Int64) -> DateTimeOffset? {
        let total = Int64(nanos) + nanoseconds % 1_000_000_000
        var seconds = utcSeconds.addingReportingOverflow(nanoseconds / 1_000_000_000)
        if seconds.overflow { return nil }
        var newNanos = total
        if newNanos < 0 {
            newNanos += 1_000_000_000
            seconds.partialValue -= 1
        } else if newNanos >= 1_000_000_000 {
            newNanos -= 1_000_000_000
            seconds.partialValue += 1
        }
        return DateTimeOffset(utcSeconds: seconds.partialValue, nanos: Int32(newNanos), offsetMinutes: offsetMinutes)
    }

    /// The canonical text, in the value's own offset.
    var text: String {
        var result = Temporal.renderDate(localDays) + "T" + Temporal.renderTimeOfDay(localTimeNanos)
        if offsetMinutes == 0 {
            result += "Z"
        } else {
            let magnitude = Int64(offsetMinutes.magnitude)
            result += (offsetMinutes < 0 ? "-" : "+") + Temporal.pad(magnitude / 60, 2) + ":"
                + Temporal.pad(magnitude % 60, 2)
        }
        return result
    }
}
