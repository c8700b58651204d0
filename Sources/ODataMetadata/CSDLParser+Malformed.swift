import Foundation

/// What the XML parser's failure means, in words: the libxml2 error codes a `$metadata` document meets most,
/// and for an undeclared namespace prefix (`sap:label` without `xmlns:sap`) the prefix and the element.
extension CSDLParser {
    /// The error for XMLParser's failure `code` at `line`.
    func malformed(code: Int, line: Int) -> MetadataError {
        let open = stack.last.map { "<\($0)>" } ?? "document"
        if code == 201, let (prefix, element) = unboundPrefix(atLine: line) {
            return MetadataError(
                .malformedXML, element: element, line: line,
                "the namespace prefix `\(prefix)` is not declared (no xmlns:\(prefix)=\"…\" on this element or an "
                    + "enclosing one)")
        }
        let words: String? =
            switch code {
            case 4: "the document is empty"
            case 5: "there is content after the root element"
            case 9: "a character that XML does not allow"
            case 26: "an entity reference that is not declared"
            case 38: "a `<` inside an attribute value"
            case 39, 41: "an attribute without a quoted value"
            case 42: "an attribute given twice on one element"
            case 34, 44: "a quoted value that is never closed"
            case 45: "a comment that is never closed"
            case 65: "a space is missing between attributes"
            case 68: "a name is missing where XML needs one"
            case 73: "a start tag that is not closed with `>`"
            case 76: "an end tag that does not match the open element \(open)"
            case 77: "the document ends inside \(open)"
            case 201: "a namespace prefix that is not declared"
            default: nil
            }
        return MetadataError(
            .malformedXML, element: open, line: line,
            (words.map { $0 + " " } ?? "") + "(the XML parser's error \(code))")
    }

    /// The first `prefix:` on `line` (an element's or attribute's) whose prefix the document never declares, and the
    /// element that line starts or is in.
    private func unboundPrefix(atLine line: Int) -> (prefix: String, element: String)? {
        guard line >= 1, line <= lineStarts.count else { return nil }
        let start = lineStarts[line - 1]
        let end = line < lineStarts.count ? lineStarts[line] : bytes.count
        guard start < end, let text = String(bytes: bytes[start..<end], encoding: .utf8) else { return nil }
        let whole = String(decoding: bytes, as: UTF8.self)
        var element = stack.last.map { "<\($0)>" } ?? "document"
        if let tag = text.firstIndex(of: "<") {
            let name = text[text.index(after: tag)...].prefix { !$0.isWhitespace && $0 != ">" && $0 != "/" }
            let nameAttribute = text.range(of: "Name=\"").map { range in
                text[range.upperBound...].prefix { $0 != "\"" }
            }
            element = nameAttribute.map { "<\(name) Name=\"\($0)\">" } ?? "<\(name)>"
        }
        var index = text.startIndex
        while let colon = text[index...].firstIndex(of: ":") {
            var first = colon
            while first > text.startIndex,
                text[text.index(before: first)].isLetter || text[text.index(before: first)].isNumber
                    || text[text.index(before: first)] == "_" || text[text.index(before: first)] == "-"
            {
                first = text.index(before: first)
            }
            let prefix = String(text[first..<colon])
            let before = first > text.startIndex ? text[text.index(before: first)] : " "
            if !prefix.isEmpty, before == "<" || before == "/" || before.isWhitespace,
                prefix != "xmlns", prefix != "xml", !whole.contains("xmlns:\(prefix)=")
            {
                return (prefix, element)
            }
            index = text.index(after: colon)
        }
        return nil
    }
}
