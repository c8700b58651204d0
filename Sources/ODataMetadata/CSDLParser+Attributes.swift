import Foundation

/// The parser's readers of names, attributes and bytes, apart from its element handling.
extension CSDLParser {
    /// The offset of the first byte that is not valid UTF-8, or nil.
    static func invalidUTF8Offset(_ data: Data) -> Int? {
        var decoder = UTF8()
        var iterator = data.makeIterator()
        var offset = 0
        var consumed = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                offset += UTF8.width(scalar)
                consumed = offset
            case .emptyInput:
                return nil
            case .error:
                return consumed
            }
        }
    }

    /// The name without its namespace prefix (`edmx:Edmx` → `Edmx`).
    static func localName(_ name: String) -> String {
        guard let colon = name.utf8.lastIndex(of: UInt8(ascii: ":")) else { return name }
        return String(name[name.utf8.index(after: colon)...])
    }

    /// An attribute by its local name, whatever its prefix (`m:DataServiceVersion`).
    static func prefixed(_ local: String, _ attributes: [String: String]) -> String? {
        if let value = attributes[local] { return value }
        for key in attributes.keys.sorted() where localName(key) == local { return attributes[key] }
        return nil
    }

    /// A required attribute's value, trimmed; a missing or empty one is an error at `location`.
    static func required(
        _ name: String, _ attributes: [String: String], _ location: CSDLLocation
    ) throws(MetadataError) -> String {
        guard let value = attributes[name]?.trimmedOfWhitespace, !value.isEmpty else {
            throw MetadataError(
                .missingAttribute, element: location.element, line: location.line,
                "the required attribute \(name) is missing or empty")
        }
        return value
    }

    /// An XML boolean (`true`, `false`, `1`, `0`, any case), nil for anything else.
    static func bool(_ value: String?) -> Bool? {
        switch value?.lowercased() {
        case "true", "1": true
        case "false", "0": false
        default: nil
        }
    }
}
