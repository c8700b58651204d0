import Foundation
import ODataCore
import Testing

/// The pull reader is as strict as `JSON.parse`: what one refuses, the other refuses, at the same offset.
@Suite struct JSONReaderTests {
    /// Reads a whole document through the reader, building the same tree `JSON.parse` builds.
    private func pull(_ reader: inout JSONReader) throws(ODataError) -> JSONValue {
        switch try reader.peek() {
        case .object:
            var object = JSONObject()
            try reader.beginObject()
            while let name = try reader.nextMember() { object[name] = try pull(&reader) }
            return .object(object)
        case .array:
            var array: [JSONValue] = []
            try reader.beginArray()
            while try reader.nextElement() { array.append(try pull(&reader)) }
            return .array(array)
        case .string: return .string(try reader.readString())
        case .number: return try reader.readValue()
        case .bool: return .bool(try reader.readBool())
        case .null:
            _ = try reader.readNull()
            return .null
        }
    }

    private func read(_ text: String) -> Result<JSONValue, ODataError> {
        Result { () throws(ODataError) in
            try JSON.withReader(Array(text.utf8)) { (reader: inout JSONReader) throws(ODataError) in
                let value = try pull(&reader)
                try reader.end()
                return value
            }
        }
    }

    @Test(arguments: [
        #"{"a":[1,2.5,"x",true,false,null,{"b":{}}],"c":[]}"#, #"  [ ]  "#, #"{"e":"\u00e9\n"}"#, "\u{FEFF}{}",
        #"{,"a":1}"#, #"{"a":1,}"#, #"[1,]"#, #"[,1]"#, #"{"a" 1}"#, #"{"a":1"b":2}"#, #"[1 2]"#, "{", "[", #"{"a":"#,
        #"{"a":01}"#, #"{"a":tru}"#, #"{} {}"#, String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
    ])
    func agreesWithTheTreeParser(_ text: String) {
        let tree = Result { () throws(ODataError) in try JSON.parse(text) }
        let pulled = read(text)
        switch (tree, pulled) {
        case (.success(let a), .success(let b)): #expect(a == b)
        case (.failure(let a), .failure(let b)): #expect(a == b && a.offset == b.offset, "\(a) vs \(b)")
        default: Issue.record("the parser and the reader disagree on \(text.prefix(40)): \(tree) vs \(pulled)")
        }
    }

    @Test func skipsPeeksAndRereadsNames() throws {
        let text = #"{"__deferred":{"uri":"x"},"skip":[1,{"a":[2]}],"keep":"yes"}"#
        let kept = try JSON.withReader(Array(text.utf8)) { (reader: inout JSONReader) throws(ODataError) -> String? in
            #expect(try reader.firstMemberName() == "__deferred")
            try reader.beginObject()
            var kept: String?
            var offset = 0
            while let name = try reader.nextMember(nameOffset: &offset) {
                #expect(reader.string(at: offset) == name)
                if name == "keep" { kept = try reader.readString() } else { try reader.skipValue() }
            }
            try reader.end()
            return kept
        }
        #expect(kept == "yes")
    }
}
