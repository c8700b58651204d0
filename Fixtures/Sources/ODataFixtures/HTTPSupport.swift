import Foundation
import HTTPTypes
import ODataCore

/// HTTP dates (IMF-fixdate, RFC 9110 §5.6.7) for `Last-Modified` and `If-Modified-Since`.
enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats seconds since 1970 as `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ seconds: Int64) -> String {
        let dayNumber = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - dayNumber * 86_400
        let (year, month, day) = civil(fromDays: dayNumber)
        let weekday = days[Int(((dayNumber % 7) + 7) % 7)]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(two(day)) \(months[Int(month) - 1]) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// Parses an IMF-fixdate; other (obsolete) forms give `nil`.
    static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int64(parts[1]),
            let monthIndex = months.firstIndex(of: String(parts[2])), let year = Int64(parts[3])
        else { return nil }
        let time = parts[4].split(separator: ":").compactMap { Int64($0) }
        guard time.count == 3 else { return nil }
        return days(fromCivil: year, Int64(monthIndex + 1), day) * 86_400 + time[0] * 3600 + time[1] * 60 + time[2]
    }

    /// Howard Hinnant's days-from-civil algorithm.
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// ETags: entities carry `W/"<version>"`, collections a hash of their payload.
enum ETag {
    /// The ETag of an entity version.
    static func entity(version: Int64) -> String { "W/\"\(version)\"" }

    /// The ETag of a payload: 64-bit FNV-1a of its bytes.
    static func payload(_ bytes: some Sequence<UInt8>) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "W/\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }

    /// Whether an `If-Match` / `If-None-Match` value lists an ETag (weak comparison; `*` matches).
    static func list(_ header: String, contains etag: String) -> Bool {
        let wanted = opaque(etag)
        for item in header.split(separator: ",") {
            let tag = item.trimmingCharacters(in: .whitespaces)
            if tag == "*" || opaque(tag) == wanted { return true }
        }
        return false
    }

    private static func opaque(_ tag: String) -> String { tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag }
}

/// The `Prefer` header's preferences (RFC 7240), names lower-cased.
struct Preferences {
    private(set) var values: [String: String] = [:]

    init(_ fields: HTTPFields) {
        for header in fields[values: .prefer] {
            for item in header.split(separator: ",") {
                let pair = item.split(separator: "=", maxSplits: 1)
                guard let name = pair.first?.trimmingCharacters(in: .whitespaces).lowercased(), !name.isEmpty else {
                    continue
                }
                let value = pair.count > 1 ? pair[1].trimmingCharacters(in: .whitespaces) : ""
                values[name] = value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
    }

    subscript(name: String) -> String? { values[name] }
}

extension HTTPField.Name {
    static let prefer = HTTPField.Name("Prefer")!
    static let preferenceApplied = HTTPField.Name("Preference-Applied")!
    static let odataVersion = HTTPField.Name("OData-Version")!
    static let odataEntityID = HTTPField.Name("OData-EntityId")!
    static let repeatabilityRequestID = HTTPField.Name("Repeatability-Request-ID")!
    static let repeatabilityFirstSent = HTTPField.Name("Repeatability-First-Sent")!
    static let repeatabilityResult = HTTPField.Name("Repeatability-Result")!
    static let xHTTPMethod = HTTPField.Name("X-HTTP-Method")!
    static let fixtureReplayed = HTTPField.Name("X-Fixture-Replayed")!
}

/// Query strings: split into decoded name/value pairs, and put back together.
///
/// Names and values are decoded by ODataCore's ``PercentDecoding``, as the client and ODataQuery decode them: RFC 3986,
/// a `+` is a plus (OData URLs are not form-encoded: `$filter=Date gt 2024-03-01T10:00:00+01:00` keeps its offset).
enum QueryString {
    /// The `name=value` pieces of a raw query string, still percent-encoded.
    static func pieces(_ raw: String) -> [String] {
        raw.split(separator: "&", omittingEmptySubsequences: true).map(String.init)
    }

    /// The decoded name of a piece (`%24top=5` → `$top`).
    /// - Throws: ``ServiceFailure`` 400 for a `%` that starts no `%XX` or bytes that are not UTF-8.
    static func name(of piece: String) throws -> String {
        try decode(String(piece.prefix { $0 != "=" }), in: piece)
    }

    /// The decoded value of a piece (empty without `=`).
    /// - Throws: ``ServiceFailure`` 400 for a `%` that starts no `%XX` or bytes that are not UTF-8.
    static func value(of piece: String) throws -> String {
        guard let equals = piece.firstIndex(of: "=") else { return "" }
        return try decode(String(piece[piece.index(after: equals)...]), in: piece)
    }

    private static func decode(_ text: String, in piece: String) throws -> String {
        try decoded(text, naming: "query option '\(piece)'")
    }

    /// Percent-decoded text (a query piece, a resource path).
    /// - Parameters:
    ///   - text: the text, percent-encoded.
    ///   - what: what it is, for the error (`path 'Products(1)'`).
    /// - Throws: ``ServiceFailure`` 400 for a `%` that starts no `%XX` or bytes that are not UTF-8.
    static func decoded(_ text: String, naming what: String) throws -> String {
        do { return try PercentDecoding.decodeString(text) } catch {
            throw ServiceFailure.badRequest("the \(what) is malformed: \(error.message)")
        }
    }
}
