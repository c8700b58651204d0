import Foundation
import ODataCore

/// OData V2 JSON values as their Edm types mean them, for local queries over a V2 service: `/Date(ms)/` and
/// `/Date(ms+offset)/` become ISO 8601 instants, decimals and Int64 sent as strings become numbers, GUIDs
/// lowercase, V2 times (`PT13H20M`) times of day. Entities are stored and answered as the producer sent them;
/// only `$filter`, `$search` and `$orderby` see these typed values, so a local query chooses what the producer
/// would.
enum V2Values {
    /// The annotation that carries an entity's position through a query.
    static let positionAnnotation = "@local.position"

    /// `entity` with its V2 values typed by the entity type its `@odata.id` names.
    static func typed(_ entity: JSONObject, model: ServiceModel) -> JSONObject {
        guard let reference = entity["@odata.id"]?.stringValue,
              let type = model.entityType(ofSet: String(reference.prefix { $0 != "(" }))
        else { return entity }
        var result = JSONObject()
        for (name, value) in entity {
            result.append(type.propertyTypes[name].map { typed(value, as: $0) } ?? value, forKey: name)
        }
        return result
    }

    /// One value as its Edm type means it; a value in no V2 form is kept.
    static func typed(_ value: JSONValue, as edmType: String) -> JSONValue {
        guard case .string(let text) = value else { return value }
        switch edmType {
        case "Edm.DateTime", "Edm.DateTimeOffset":
            return instant(text).map { .string($0) } ?? value
        case "Edm.Decimal", "Edm.Double", "Edm.Single":
            return Double(text).map { .double($0) } ?? value
        case "Edm.Int64", "Edm.Int32", "Edm.Int16", "Edm.Byte", "Edm.SByte":
            return Int64(text).map { .int($0) } ?? value
        case "Edm.Guid":
            return .string(text.lowercased())
        case "Edm.Time":
            return timeOfDay(text).map { .string($0) } ?? value
        default:
            return value
        }
    }

    /// `/Date(1700000000000)/` or `/Date(1700000000000+0060)/` (offset in minutes) → `2023-11-14T22:13:20Z`
    /// (with the offset when one is given); `nil` for another form.
    static func instant(_ text: String) -> String? {
        guard text.hasPrefix("/Date("), text.hasSuffix(")/") else { return nil }
        let body = text.dropFirst(6).dropLast(2)
        var digitsEnd = body.startIndex
        if digitsEnd < body.endIndex, body[digitsEnd] == "-" { digitsEnd = body.index(after: digitsEnd) }
        while digitsEnd < body.endIndex, body[digitsEnd].isASCII, body[digitsEnd].isNumber { digitsEnd = body.index(after: digitsEnd) }
        guard let milliseconds = Int64(body[..<digitsEnd]) else { return nil }
        var offsetMinutes = 0
        let rest = body[digitsEnd...]
        if !rest.isEmpty {
            guard let sign = rest.first, sign == "+" || sign == "-", let minutes = Int(rest.dropFirst()), rest.count == 5 else { return nil }
            offsetMinutes = sign == "-" ? -minutes : minutes
        }
        // The milliseconds count from the epoch in UTC; the offset says how the producer's local time reads.
        let local = Date(timeIntervalSince1970: Double(milliseconds) / 1000 + Double(offsetMinutes * 60))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: local)
        let fraction = ((milliseconds % 1000) + 1000) % 1000
        var iso = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", parts.year!, parts.month!, parts.day!, parts.hour!, parts.minute!, parts.second!)
        if fraction != 0 { iso += String(format: ".%03d", fraction) }
        if offsetMinutes == 0 { return iso + "Z" }
        let magnitude = abs(offsetMinutes)
        return iso + String(format: "%@%02d:%02d", offsetMinutes < 0 ? "-" : "+", magnitude / 60, magnitude % 60)
    }

    /// V2's `PT13H20M5S` → `13:20:05`; `nil` for another form.
    static func timeOfDay(_ text: String) -> String? {
        guard text.hasPrefix("PT") else { return nil }
        var hours = 0, minutes = 0
        var seconds = 0.0
        var number = ""
        for character in text.dropFirst(2) {
            switch character {
            case "H": hours = Int(number) ?? -1; number = ""
            case "M": minutes = Int(number) ?? -1; number = ""
            case "S": seconds = Double(number) ?? -1; number = ""
            default: number.append(character)
            }
        }
        guard number.isEmpty, hours >= 0, hours < 24, minutes >= 0, minutes < 60, seconds >= 0, seconds < 60 else { return nil }
        let whole = Int(seconds)
        var result = String(format: "%02d:%02d:%02d", hours, minutes, whole)
        if seconds != Double(whole) { result += String(format: "%.3f", seconds - Double(whole)).dropFirst() }
        return result
    }
}
