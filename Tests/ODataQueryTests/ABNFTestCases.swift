import Foundation
import Testing

/// One test case of the OASIS OData ABNF test-case file (`odata-abnf-testcases.yaml`).
struct ABNFTestCase: Sendable, Hashable {
    /// The case's description (not unique in the file; see ``ABNFTestCases/identifiers(_:)``).
    var name: String
    /// The ABNF rule the input is matched against.
    var rule: String
    /// The text to match.
    var input: String
    /// Where a negative case stops matching (0 = the whole input); nil for a positive case.
    var failAt: Int?

    /// Whether the input must be rejected.
    var isNegative: Bool { failAt != nil }
}

/// A loader for exactly the YAML subset of the OASIS test-case file: a `TestCases:` block sequence
/// of mappings with the keys `Name`, `Rule`, `Input`, `FailAt` (others, such as the `Expect` lists,
/// are skipped). Values are plain scalars (possibly folded over several lines, tabs kept),
/// single-quoted scalars (`''` for a quote) or double-quoted scalars (escapes, folding, escaped
/// line breaks). Everything before `TestCases:` (header comments, `Constraints:`) is ignored.
enum ABNFTestCases {
    /// What went wrong while loading, with the 1-based line.
    struct LoadError: Error, CustomStringConvertible {
        /// The 1-based line number.
        var line: Int
        /// What was wrong.
        var message: String
        var description: String { "line \(line): \(message)" }
    }

    /// The bundled copy of the OASIS file.
    static func bundled() throws -> [ABNFTestCase] {
        guard let url = Bundle.module.url(forResource: "odata-abnf-testcases", withExtension: "yaml") else {
            throw LoadError(line: 0, message: "odata-abnf-testcases.yaml is not in the test bundle")
        }
        return try load(String(decoding: try Data(contentsOf: url), as: UTF8.self))
    }

    /// Unique identifiers: the name, or `name #n` (n-th occurrence in the file) for repeated names.
    static func identifiers(_ cases: [ABNFTestCase]) -> [String] {
        var totals: [String: Int] = [:]
        for testCase in cases { totals[testCase.name, default: 0] += 1 }
        var seen: [String: Int] = [:]
        return cases.map { testCase in
            guard totals[testCase.name]! > 1 else { return testCase.name }
            seen[testCase.name, default: 0] += 1
            return testCase.name + " #\(seen[testCase.name]!)"
        }
    }

    static func indentation(_ line: Substring) -> Int {
        line.prefix { $0 == " " }.count
    }

    static func isBlank(_ line: Substring) -> Bool {
        line.allSatisfy { $0 == " " || $0 == "\t" }
    }

    /// Parses the file's text.
    static func load(_ text: String) throws -> [ABNFTestCase] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasSuffix("\r") ? line.dropLast() : line
        }
        guard let header = lines.firstIndex(where: { $0 == "TestCases:" }) else {
            throw LoadError(line: 0, message: "no 'TestCases:' line")
        }
        var cases: [ABNFTestCase] = []
        var index = header + 1
        while index < lines.count {
            let line = lines[index]
            if isBlank(line) || line.drop(while: { $0 == " " }).hasPrefix("#") {
                index += 1
                continue
            }
            let itemIndent = indentation(line)
            guard line.dropFirst(itemIndent).hasPrefix("- ") else {
                throw LoadError(line: index + 1, message: "expected '- ' starting a test case")
            }
            let keyIndent = itemIndent + 2
            var fields: [String: String] = [:]
            var first = true
            while index < lines.count {
                let current = lines[index]
                if !first {
                    if isBlank(current) {
                        index += 1
                        continue
                    }
                    if indentation(current) != keyIndent { break }
                }
                let body = current.dropFirst(keyIndent)
                guard let colon = body.firstIndex(of: ":") else {
                    throw LoadError(line: index + 1, message: "expected 'Key: value'")
                }
                let key = String(body[body.startIndex..<colon])
                let rest = body[body.index(after: colon)...].drop { $0 == " " }
                // The value's lines: this one's rest, then more-indented or blank lines.
                var valueLines: [Substring] = [rest]
                var next = index + 1
                while next < lines.count, isBlank(lines[next]) || indentation(lines[next]) > keyIndent {
                    valueLines.append(lines[next])
                    next += 1
                }
                while valueLines.count > 1, isBlank(valueLines.last!) { valueLines.removeLast() }
                if ["Name", "Rule", "Input", "FailAt"].contains(key) {
                    fields[key] = try scalar(valueLines, line: index + 1)
                }
                index = next
                first = false
            }
            guard let name = fields["Name"], let rule = fields["Rule"], let input = fields["Input"] else {
                throw LoadError(line: index, message: "a test case needs Name, Rule and Input")
            }
            var failAt: Int?
            if let text = fields["FailAt"] {
                guard let offset = Int(text) else { throw LoadError(line: index, message: "FailAt '\(text)' is not a number") }
                failAt = offset
            }
            cases.append(ABNFTestCase(name: name, rule: rule, input: input, failAt: failAt))
        }
        return cases
    }

    /// A scalar from its lines (the first without indentation); blank leading lines are allowed.
    static func scalar(_ lines: [Substring], line: Int) throws -> String {
        var lines = lines
        while let first = lines.first, isBlank(first), lines.count > 1 { lines.removeFirst() }
        let joined = lines.map { String($0) }.joined(separator: "\n")
        let trimmed = joined.drop { $0 == " " || $0 == "\n" }
        switch trimmed.first {
        case "\"": return try quoted(Array(trimmed.dropFirst()), double: true, line: line)
        case "'": return try quoted(Array(trimmed.dropFirst()), double: false, line: line)
        default: return plain(lines)
        }
    }

    /// A plain scalar: lines trimmed and folded (one line break → space, n blank lines → n breaks);
    /// ` #` starts a comment.
    static func plain(_ lines: [Substring]) -> String {
        var result = ""
        var pendingBreaks = 0
        var started = false
        for line in lines {
            var content = line.drop { $0 == " " || $0 == "\t" }
            if let hash = content.firstRange(of: " #") { content = content[..<hash.lowerBound] }
            while let last = content.last, last == " " || last == "\t" { content = content.dropLast() }
            if content.isEmpty {
                if started { pendingBreaks += 1 }
                continue
            }
            if started { result += pendingBreaks == 0 ? " " : String(repeating: "\n", count: pendingBreaks) }
            result += content
            pendingBreaks = 0
            started = true
        }
        return result
    }

    /// A quoted scalar's characters after the opening quote, through the closing quote.
    static func quoted(_ chars: [Character], double: Bool, line: Int) throws -> String {
        var result: [Character] = []
        var protected = 0  // result.count up to which trailing whitespace must be kept (escapes)
        var i = 0
        let quote: Character = double ? "\"" : "'"
        func skipIndentation() {
            while i < chars.count, chars[i] == " " || chars[i] == "\t" { i += 1 }
        }
        while i < chars.count {
            let c = chars[i]
            if c == quote {
                if !double, i + 1 < chars.count, chars[i + 1] == "'" {
                    result.append("'")
                    protected = result.count
                    i += 2
                    continue
                }
                if i + 1 < chars.count, !chars[(i + 1)...].allSatisfy({ $0 == " " || $0 == "\n" || $0 == "\t" }) {
                    throw LoadError(line: line, message: "text after the closing quote")
                }
                return String(result)
            }
            if double && c == "\\" {
                guard i + 1 < chars.count else { break }
                let e = chars[i + 1]
                i += 2
                switch e {
                case "n": result.append("\n")
                case "t", "\t": result.append("\t")
                case "r": result.append("\r")
                case "0": result.append("\0")
                case " ": result.append(" ")
                case "\"": result.append("\"")
                case "/": result.append("/")
                case "\\": result.append("\\")
                case "\n":
                    skipIndentation()
                case "x", "u":
                    let count = e == "x" ? 2 : 4
                    guard i + count <= chars.count, let value = UInt32(String(chars[i..<i + count]), radix: 16),
                        let scalar = Unicode.Scalar(value)
                    else { throw LoadError(line: line, message: "bad \\\(e) escape") }
                    result.append(Character(scalar))
                    i += count
                default:
                    throw LoadError(line: line, message: "unsupported escape \\\(e)")
                }
                protected = result.count
                continue
            }
            if c == "\n" {
                // Folding: trailing white space goes, an empty line is a line break, else a space.
                while result.count > protected, let last = result.last, last == " " || last == "\t" { result.removeLast() }
                i += 1
                var breaks = 0
                while true {
                    skipIndentation()
                    if i < chars.count, chars[i] == "\n" {
                        breaks += 1
                        i += 1
                    } else {
                        break
                    }
                }
                if breaks == 0 { result.append(" ") } else { result.append(contentsOf: String(repeating: "\n", count: breaks)) }
                continue
            }
            result.append(c)
            i += 1
        }
        throw LoadError(line: line, message: "unterminated quoted scalar")
    }
}

@Suite struct ABNFTestCaseLoaderTests {
    @Test func loadsPlainQuotedAndFoldedScalars() throws {
        let text = """
            Constraints:
              action:
                - Ignored
            TestCases:
              # a comment
              - Name: plain with a\ttab
                Rule: commonExpr
                Input: $orderby=Name\tasc

              - Name: "quoted # not a comment"
                Rule: "null"
                FailAt: 3
                Input:
                  "ab\\
                  cd \\"e\\" \\x41
                  next

                  para\\t
                  \\  end"

              - Name: folded plain
                  scalar
                Rule: odataRelativeUri
                Input: 'it''s ["x",''y'']
                  folded'
                Expect:
                  - rule:text
                  - other:text
              - Name: last
                Rule: r
                Input: x # comment
            """
        let cases = try ABNFTestCases.load(text)
        #expect(cases.count == 4)
        #expect(cases[0] == ABNFTestCase(name: "plain with a\ttab", rule: "commonExpr", input: "$orderby=Name\tasc"))
        #expect(cases[1] == ABNFTestCase(name: "quoted # not a comment", rule: "null", input: "abcd \"e\" A next\npara\t   end", failAt: 3))
        #expect(cases[1].isNegative)
        #expect(cases[2] == ABNFTestCase(name: "folded plain scalar", rule: "odataRelativeUri", input: "it's [\"x\",'y'] folded"))
        #expect(cases[3].input == "x")
    }

    @Test func rejectsMalformedInput() {
        #expect(throws: ABNFTestCases.LoadError.self) { try ABNFTestCases.load("Other:\n") }
        #expect(throws: ABNFTestCases.LoadError.self) {
            try ABNFTestCases.load("TestCases:\n  - Name: a\n    Rule: b\n    Input: \"open\n")
        }
        #expect(throws: ABNFTestCases.LoadError.self) {
            try ABNFTestCases.load("TestCases:\n  - Name: a\n    Rule: b\n    Input: c\n    FailAt: x\n")
        }
        #expect(throws: ABNFTestCases.LoadError.self) { try ABNFTestCases.load("TestCases:\n  - Name: a\n") }
    }

    @Test func loadsTheBundledOASISFile() throws {
        let cases = try ABNFTestCases.bundled()
        #expect(cases.count == 840)
        #expect(cases.filter(\.isNegative).count == 79)
        #expect(Set(ABNFTestCases.identifiers(cases)).count == cases.count)
        #expect(cases.first?.input == "http://127.0.0.1:8080/MyService/")
        #expect(cases.contains { $0.input == "$orderby=Name\tasc" })
        #expect(cases.contains {
            $0.rule == "stringLiteral"
                && $0.input == "'ABCDEFGHIHJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&('')*+,;=:@'"
        })
        #expect(cases.contains { $0.input == "a1234567 89\rab\r\n              cdefABA" && $0.failAt == 8 })
        #expect(cases.contains {
            $0.input == "Products/$filter(@foo)/$filter(@bar)/$count?@foo=Age gt 3&@bar=Price lt 5&$filter=Price lt 6"
        })
        #expect(cases.contains { $0.input == #"Model.Available(complex={ "Name" : "double quote (\") in value" })"# })
    }
}
