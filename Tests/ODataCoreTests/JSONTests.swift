import Testing
@testable import ODataCore

@Suite struct JSONTests {
    @Test func parsesScalarsExactly() throws {
        #expect(try JSON.parse("null") == .null)
        #expect(try JSON.parse("true") == .bool(true))
        #expect(try JSON.parse("9007199254740993") == .int(9_007_199_254_740_993))
        #expect(try JSON.parse("-0.5e2") == .double(-50))
        #expect(try JSON.parse("32.38") == .double(32.38))
        #expect(try JSON.parse(#""a\"b\\c\u00e9\ud83d\ude00""#) == .string("a\"b\\cé😀"))
    }

    @Test func objectsKeepMemberOrder() throws {
        let value = try JSON.parse(#"{"z":1,"a":{"k":[1,2,{"x":null}]},"m":"v"}"#)
        let object = try #require(value.objectValue)
        #expect(object.keys == ["z", "a", "m"])
        #expect(value["a"]?["k"]?.arrayValue?.count == 3)
        #expect(JSON.string(value) == #"{"z":1,"a":{"k":[1,2,{"x":null}]},"m":"v"}"#)
    }

    @Test func roundTripsThroughTheWriter() throws {
        let value: JSONValue = ["s": "line\nbreak \"quoted\" \u{1}", "d": 1.5, "i": -3, "b": false, "n": nil, "a": [1.0, "x"]]
        #expect(try JSON.parse(JSON.serialize(value)) == value)
    }

    @Test(arguments: [
        ("", 0, "expected a JSON value"),
        ("{", 1, "member name"),
        (#"{"a" 1}"#, 5, "expected ':'"),
        ("[1,]", 3, "expected a JSON value"),
        ("[1 2]", 3, "expected ',' or ']'"),
        ("01", 0, "leading zeros"),
        (#""abc"#, 0, "unterminated string"),
        (#""\x""#, 1, "invalid escape"),
        ("tru", 0, "expected 'true'"),
        ("1 1", 2, "end of the input"),
        (#""\ud800""#, 7, "lone high surrogate"),
    ])
    func malformedInputIsATypedErrorWithOffset(input: String, offset: Int, fragment: String) {
        do {
            _ = try JSON.parse(input)
            Issue.record("expected an error for \(input)")
        } catch {
            #expect(error == .malformedJSON)
            #expect(error.offset == offset, "\(error)")
            #expect(error.message.contains(fragment), "\(error)")
        }
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: ODataError.self) { try JSON.parse(deep) }
    }
}
