// The project's one URL grammar at the byte level: how text goes into a URL (`PercentEncoding`) and how it
// comes out (`PercentDecoding`), RFC 3986 both ways — a `+` is a plus, never a space (OData URLs are not
// form-encoded). Two types, one file: encoding never fails and decoding can, and `PercentDecoding` keeps the
// public name ODataQuery's callers already use.

/// Percent-encoding for the parts of OData URLs.
public enum PercentEncoding {
    // RFC 3986 unreserved plus the sub-delimiters and ':' '@' that OData URLs show literally.
    private static let pathAllowed = unreserved.adding("!$&'()*+,;=:@/")
    // In a query option name '&', '=', '+' and '#' would change the meaning, so they are encoded.
    private static let queryNameAllowed = unreserved.adding("!$'()*,;:@/?")
    // A value may keep '=' (servers split an option at its first '='; nested `$expand` options need it).
    private static let queryValueAllowed = queryNameAllowed.adding("=")
    private static let unreserved = ASCIISet().adding("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// A set of ASCII bytes as two bit masks: a membership test per byte without hashing.
    private struct ASCIISet: Sendable {
        private var low: UInt64 = 0
        private var high: UInt64 = 0

        func adding(_ characters: String) -> ASCIISet {
            var set = self
            for byte in characters.utf8 where byte < 128 {
                if byte < 64 { set.low |= 1 << byte } else { set.high |= 1 << (byte - 64) }
            }
            return set
        }

        func contains(_ byte: UInt8) -> Bool {
            byte < 64 ? low >> byte & 1 == 1 : byte < 128 && high >> (byte - 64) & 1 == 1
        }
    }

    /// Encodes a query option name.
    /// - Parameter text: unencoded text.
    /// - Returns: text safe as the name of a URL query option.
    public static func encodeQueryName(_ text: String) -> String {
        encode(text, allowed: queryNameAllowed, keepEncoded: false)
    }

    /// Encodes a query option value.
    /// - Parameter text: unencoded text.
    /// - Returns: text safe as the value of a URL query option.
    public static func encodeQueryValue(_ text: String) -> String {
        encode(text, allowed: queryValueAllowed, keepEncoded: false)
    }

    /// Encodes a resource path; `%XX` sequences already present are kept.
    /// - Parameter path: a resource path such as `Customers('ALFKI')/Orders`.
    /// - Returns: the path safe in a URL.
    public static func encodePath(_ path: String) -> String {
        encode(path, allowed: pathAllowed, keepEncoded: true)
    }

    private static func encode(_ text: String, allowed: ASCIISet, keepEncoded: Bool) -> String {
        // Most paths and values need no encoding: then the text itself is the answer, without a copy. Its bytes are
        // scanned in place (a `String.UTF8View` walk costs several times as much per byte).
        var scanned = text
        if scanned.withUTF8({ $0.allSatisfy { allowed.contains($0) } }) { return text }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        let hex = Array("0123456789ABCDEF".utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if allowed.contains(byte) {
                output.append(byte)
            } else if keepEncoded, byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                isHex(bytes[index + 1]), isHex(bytes[index + 2])
            {
                output.append(byte)
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }
}

/// RFC 3986 percent-decoding (`+` stays a plus: OData URLs are not form-encoded).
///
/// ```swift
/// try PercentDecoding.decodeString("Date%20gt%202024-03-01T10:00:00+01:00")  // "Date gt 2024-03-01T10:00:00+01:00"
/// ```
public enum PercentDecoding {
    /// Decodes every `%XX` into its byte; every other byte, `+` included, stays as it is.
    /// - Parameter text: percent-encoded text.
    /// - Returns: the decoded bytes.
    /// - Throws: ``ODataError`` `.invalidQueryOption` with the offset of a `%` not followed by two hex digits.
    public static func decode(_ text: String) throws(ODataError) -> [UInt8] {
        let bytes = Array(text.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) else {
                    throw ODataError(.invalidQueryOption, "invalid percent-encoding", offset: index)
                }
                result.append(high << 4 | low)
                index += 3
            } else {
                result.append(b)
                index += 1
            }
        }
        return result
    }

    /// Decodes as ``decode(_:)`` does and reads the bytes as UTF-8.
    /// - Parameter text: percent-encoded text.
    /// - Returns: the decoded text.
    /// - Throws: ``ODataError`` `.invalidQueryOption` for a bad `%` sequence or bytes that are not UTF-8.
    public static func decodeString(_ text: String) throws(ODataError) -> String {
        let bytes = try decode(text)
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw ODataError(.invalidQueryOption, "percent-decoded text is not valid UTF-8", offset: 0)
        }
        return string
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case 48...57: return b - 48
        case 65...70: return b - 55
        case 97...102: return b - 87
        default: return nil
        }
    }
}
