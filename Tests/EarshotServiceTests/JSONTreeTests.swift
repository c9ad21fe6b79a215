// JSONTree, the product's own JSON reader and writer (it replaced JSONDecoder and JSONEncoder): the trees it reads,
// the texts it refuses, and the text it writes, which is what JSONEncoder with sorted keys wrote.
import Foundation
import Testing
@testable import EarshotJSON

@Suite("JSON tree")
struct JSONTreeTests {
    @Test("reads every kind of value, escapes and surrogate pairs included; integral numbers are Ints")
    func readsValues() throws {
        let text = #" {"s":"a\"\\\/\b\f\n\r\t\u00e9\ud83c\udfb5","i":-12,"e":1e2,"f":5.0,"d":0.25,"t":true,"n":null,"#
            + #""a":[[],{}]} "#
        let tree = try #require(try JSONTree.parse(Array(text.utf8)) as? [String: Any])
        #expect(tree["s"] as? String == "a\"\\/\u{08}\u{0C}\n\r\té🎵")
        #expect(tree["i"] as? Int == -12)
        #expect(tree["e"] as? Int == 100)
        #expect(tree["f"] as? Int == 5)
        #expect(tree["d"] as? Double == 0.25)
        #expect(tree["t"] as? Bool == true)
        #expect(tree["n"] is JSONNull)
        #expect((tree["a"] as? [Any])?.count == 2)
        #expect(try JSONTree.parseValue(Array("42".utf8)) as? Int == 42)
        // JSONDecoder's leniencies, kept: one trailing comma, and a byte-order mark first.
        #expect((try JSONTree.parse(Array("[1,2,]".utf8)) as? [Any])?.count == 2)
        #expect((try JSONTree.parse(Array(#"{"a":1,}"#.utf8)) as? [String: Any])?.count == 1)
        #expect((try JSONTree.parse([0xEF, 0xBB, 0xBF] + Array("[]".utf8)) as? [Any])?.isEmpty == true)
    }

    @Test("refuses what JSONDecoder refused", arguments: [
        "", " ", "[", "[,]", "{,}", "[1,,2]", "[01]", "[1.]", "[.5]", "[-]", "[1e]", "['a']", #"["\x"]"#,
        "[\"\u{01}\"]", #"["\ud800"]"#, #"["\udc00"]"#, "[1] x", "[tru]", "[1e400]", "{1:2}", #"{"a" 1}"#,
        "[NaN]", "// c\n[]",
    ])
    func refusesMalformed(text: String) {
        #expect(throws: JSONTree.Malformed.self) { try JSONTree.parseValue(Array(text.utf8)) }
        #expect(throws: (any Error).self) { try JSONSerialization.jsonObject(with: Data(text.utf8)) }
    }

    @Test("refuses bytes that are not UTF-8 and nesting deeper than 512, without overflowing the stack")
    func refusesBadBytesAndDepth() {
        #expect(throws: JSONTree.Malformed.self) { try JSONTree.parseValue([0x5B, 0x22, 0xFF, 0x22, 0x5D]) }
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect(throws: JSONTree.Malformed.self) { try JSONTree.parseValue(deep) }
        let allowed = Array(String(repeating: "[", count: 512).utf8) + Array(String(repeating: "]", count: 512).utf8)
        #expect(throws: Never.self) { try JSONTree.parseValue(allowed) }
    }

    @Test("an object or array at the top level, as JSONSerialization required")
    func topLevel() {
        #expect(throws: JSONTree.NotAnObjectOrArray.self) { try JSONTree.parse(Array("\"a\"".utf8)) }
    }

    @Test("writes what JSONEncoder wrote with sorted keys: slashes escaped, integral doubles without .0")
    func writesAsJSONEncoder() throws {
        let tree: [String: Any] = [
            "path": "/a \"b\"\n\u{01}é", "count": 3, "ratio": 0.5, "whole": 2.0, "on": false, "none": JSONNull(),
            "list": [1, "x"] as [Any], "Zed": 1, "apple": 2,
        ]
        #expect(try JSONTree.text(tree) == #"{"Zed":1,"apple":2,"count":3,"list":[1,"x"],"none":null,"on":false,"#
            + #""path":"\/a \"b\"\n\u0001é","ratio":0.5,"whole":2}"#)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let strings = ["path": "/a \"b\"\n\u{01}é", "Zed": "z", "apple": "a", "a10": "x", "a9": "y", "queued": "q",
                       "queueLength": "l"]
        #expect(try JSONTree.text(strings) == String(decoding: try encoder.encode(strings), as: UTF8.self))
        let numbers = [2.0, 0.5, 1e20, 1e-7, 123_456_789_012.0]
        #expect(try JSONTree.text(numbers) == String(decoding: try encoder.encode(numbers), as: UTF8.self))
        #expect(throws: JSONTree.UnsupportedValue.self) { try JSONTree.text([Double.nan]) }
    }

    @Test("collections of one type (a status's counts by kind, its lists of kinds) write as the same in Any do")
    func writesTypedCollections() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Keys in UTF-8 byte order: "z" (7A) before "é" (C3 A9), "" first, a prefix before what extends it.
        let counts = ["é": 1, "z": 2, "": 3, "ab": 4, "a": 5, "Z": -6, "a/b\"": 7]
        let kinds = ["request \"x\"", "a/b", "\u{01}", "é"]
        #expect(try JSONTree.text(counts) == String(decoding: try encoder.encode(counts), as: UTF8.self))
        #expect(try JSONTree.text(kinds) == String(decoding: try encoder.encode(kinds), as: UTF8.self))
        let nested: [String: Any] = ["counts": counts, "kinds": kinds, "flags": [true, false], "none": [String]()]
        let boxed: [String: Any] = [
            "counts": counts as [String: Any], "kinds": kinds as [Any], "flags": [true, false] as [Any],
            "none": [Any](),
        ]
        #expect(try JSONTree.text(nested) == (try JSONTree.text(boxed)))
        #expect(try JSONTree.text(nested).hasPrefix(#"{"counts":{"":3,"Z":-6,"a":5,"a\/b\"":7,"ab":4,"z":2,"é":1}"#))
    }
}
