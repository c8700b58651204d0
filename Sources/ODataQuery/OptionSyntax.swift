import ODataCore

/// The shared item syntax of `$select` and `$expand`: comma-separated paths with optional
/// `/$ref` or `/$count` and `(nested;options)`.
enum OptionSyntax {
    /// Stands for a percent-encoded `;` in a `$expand`/`$select` value until its nested options are split.
    static let encodedSemicolon = "\u{E03B}"

    struct ParsedItem {
        var path: [String]
        var isRef = false
        var isCount = false
        var options: QueryOptions?
    }

    /// Splits at `separator` outside quotes and parentheses; returns pieces with start offsets.
    static func split(_ bytes: ArraySlice<UInt8>, at separator: UInt8, base: Int, option: String) throws(ODataError) -> [(ArraySlice<UInt8>, Int)] {
        var pieces: [(ArraySlice<UInt8>, Int)] = []
        var depth = 0
        var inString = false
        var quote: UInt8 = 0
        var start = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let b = bytes[index]
            if inString {
                // `'…'` strings, and `"…"` JSON strings and $search phrases (with `\` escapes).
                if b == quote { inString = false } else if quote == UInt8(ascii: "\""), b == UInt8(ascii: "\\") { index += 1 }
            } else if b == UInt8(ascii: "'") || b == UInt8(ascii: "\"") {
                inString = true
                quote = b
            } else if b == UInt8(ascii: "(") {
                depth += 1
                if depth > ExpressionParser.maximumDepth {
                    throw ODataError(.invalidQueryOption, "in \(option): nested deeper than \(ExpressionParser.maximumDepth) levels", offset: base + index)
                }
            } else if b == UInt8(ascii: ")") {
                depth -= 1
                if depth < 0 {
                    throw ODataError(.invalidQueryOption, "in \(option): unbalanced ')'", offset: base + index)
                }
            } else if b == separator && depth == 0 {
                pieces.append((bytes[start..<index], base + start))
                start = index + 1
            }
            index += 1
        }
        if inString { throw ODataError(.invalidQueryOption, "in \(option): unterminated string literal", offset: base + bytes.endIndex) }
        if depth > 0 { throw ODataError(.invalidQueryOption, "in \(option): expected ')'", offset: base + bytes.endIndex) }
        pieces.append((bytes[start..<bytes.endIndex], base + start))
        return pieces
    }

    /// `Qualified.Term` or `Qualified.Term#Qualifier` (after the `@`).
    static func isAnnotation(_ text: Substring) -> Bool {
        let parts = text.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        func isName(_ s: Substring) -> Bool {
            guard let first = s.utf8.first, Lexer.isIdentifierStart(first), first != 36 else { return false }
            return s.utf8.allSatisfy { Lexer.isIdentifierPart($0) || $0 == UInt8(ascii: ".") }
        }
        return parts.allSatisfy(isName) && parts[0].contains(".")
    }

    static func items(_ text: String, base: Int, option: String, allowsRef: Bool) throws(ODataError) -> [ParsedItem] {
        let bytes = Array(text.utf8)
        var result: [ParsedItem] = []
        for (piece, offset) in try split(bytes[...], at: UInt8(ascii: ","), base: 0, option: option) {
            result.append(try item(piece, offset: offset, option: option, allowsRef: allowsRef, all: bytes))
        }
        return result
    }

    static func item(_ piece: ArraySlice<UInt8>, offset: Int, option: String, allowsRef: Bool, all: [UInt8]) throws(ODataError) -> ParsedItem {
        func fail(_ message: String, _ at: Int) -> ODataError {
            ODataError(.invalidQueryOption, "in \(option): \(message)", offset: at)
        }
        var slice = piece
        while let first = slice.first, Lexer.isSpace(first) { slice = slice.dropFirst() }
        while let last = slice.last, Lexer.isSpace(last) { slice = slice.dropLast() }
        guard !slice.isEmpty else { throw fail("expected a path", offset) }
        var pathEnd = slice.endIndex
        var nested: ArraySlice<UInt8>?
        if let open = slice.firstIndex(of: UInt8(ascii: "(")) {
            guard slice.last == UInt8(ascii: ")") else { throw fail("expected ',' or the end after ')'", slice.endIndex) }
            pathEnd = open
            nested = slice[(open + 1)..<(slice.endIndex - 1)]
            // `$select=Model.F(Location,Kind)`: a function's parameter names pick an overload; they stay
            // part of the last segment.
            if !allowsRef, let inner = nested, !inner.isEmpty,
                inner.allSatisfy({ Lexer.isIdentifierPart($0) || $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: ".") }),
                inner.first.map(Lexer.isIdentifierStart) == true
            {
                pathEnd = slice.endIndex
                nested = nil
            }
        }
        let pathText = String(decoding: slice[slice.startIndex..<pathEnd], as: UTF8.self)
        var segments = pathText.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard segments.count <= ExpressionParser.maximumDepth else {
            throw fail("path longer than \(ExpressionParser.maximumDepth) segments", slice.startIndex)
        }
        var parsed = ParsedItem(path: [])
        if allowsRef, let last = segments.last, last == "$ref" || last == "$count", segments.count > 1 {
            parsed.isRef = last == "$ref"
            parsed.isCount = last == "$count"
            segments.removeLast()
        }
        var position = slice.startIndex
        for (n, segment) in segments.enumerated() {
            let valid: Bool
            if segment == "*" {
                valid = n == segments.count - 1
            } else if segment.hasSuffix(".*") {
                valid = segment.count > 2 && !allowsRef
            } else if segment == "$value" {
                valid = allowsRef && segments.count == 1  // `$expand=$value` expands a media stream
            } else if segment.hasPrefix("@") {
                valid = isAnnotation(segment.dropFirst())
            } else if let open = segment.utf8.firstIndex(of: UInt8(ascii: "(")), n == segments.count - 1, segment.hasSuffix(")") {
                // A function with its parameter names (`MostPopularName(Location,Kind)`).
                let name = segment.utf8[..<open]
                valid = name.first.map(Lexer.isIdentifierStart) == true
                    && name.allSatisfy { Lexer.isIdentifierPart($0) || $0 == UInt8(ascii: ".") }
            } else {
                valid = !segment.isEmpty && Lexer.isIdentifierStart(segment.utf8.first!) && segment.utf8.first != 36
                    && segment.utf8.allSatisfy { Lexer.isIdentifierPart($0) || $0 == UInt8(ascii: ".") }
            }
            guard valid else {
                throw fail(segment.isEmpty ? "expected a property name" : "invalid path segment '\(segment)'", position)
            }
            position += segment.utf8.count + 1
        }
        parsed.path = segments
        if let nested {
            if nested.isEmpty { parsed.options = QueryOptions() } else {
                var pairs: [(name: String, value: String)] = []
                var offsets: [Int] = []
                for (option, optionOffset) in try split(nested, at: UInt8(ascii: ";"), base: 0, option: option) {
                    guard let eq = option.firstIndex(of: UInt8(ascii: "=")) else {
                        throw fail("expected '=' in nested option", optionOffset)
                    }
                    pairs.append((String(decoding: option[option.startIndex..<eq], as: UTF8.self),
                        String(decoding: option[(eq + 1)...], as: UTF8.self).replacing(encodedSemicolon, with: ";")))
                    offsets.append(eq + 1)
                }
                do throws(ODataError) {
                    let options = try QueryOptions.build(pairs, nested: true, baseOffsets: offsets)
                    // `/$count(…)` takes $filter and $search; `/$ref(…)` adds $orderby, $skip, $top, $count.
                    let restricted: [String] = parsed.isCount
                        ? ["$count", "$orderby", "$skip", "$top", "$select", "$expand", "$levels"]
                        : parsed.isRef ? ["$select", "$expand", "$levels"] : []
                    for (index, pair) in pairs.enumerated() where restricted.contains(pair.name.lowercased()) {
                        throw ODataError(
                            .invalidQueryOption, "\(pair.name) is not allowed after /\(parsed.isCount ? "$count" : "$ref")",
                            offset: offsets[index] - pair.name.utf8.count - 1)
                    }
                    parsed.options = options
                } catch {
                    // Nested errors name the nested option; offsets are already in this value.
                    throw ODataError(.invalidQueryOption, "in \(option): \(error.message)", offset: error.offset)
                }
            }
        }
        _ = all
        return parsed
    }
}
