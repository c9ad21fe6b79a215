// Untyped JSON for the control protocol, the configuration file and the state file (what Foundation's
// JSONSerialization was). A tree is `[String: Any]`, `[Any]`, `String`, `Bool`, `Int` (a number that is integral
// and fits), `Double` (any other number) or `JSONNull`. Read and written here rather than through
// FoundationEssentials' JSONDecoder and JSONEncoder, so the product does not link FoundationEssentials at all.
//
// Threading: none of its own. EarshotJSON is pure (no I/O, no lock, no clock): it runs on whichever thread calls it,
// the owner's among them (it writes its replies with it), and waits on nothing.

/// JSON's `null` inside a tree (what NSNull was).
public struct JSONNull: Sendable, Hashable {
    /// The null value.
    public init() {}
}

/// Reads and writes untyped JSON trees.
public enum JSONTree {
    /// Why a tree could not be written: it held a value JSON has no form for.
    public struct UnsupportedValue: Error {}

    /// Why bytes are not one JSON text (RFC 8259), and the byte offset where reading stopped.
    public struct Malformed: Error {
        /// The offset of the first byte that could not be read.
        public let offset: Int
    }

    /// Why a JSON text's top level is not what the caller needs.
    public struct NotAnObjectOrArray: Error {}

    /// The tree of one JSON text, whose top level must be an object or an array (as JSONSerialization required).
    public static func parse(_ bytes: some Collection<UInt8>) throws -> Any {
        let tree = try parseValue(bytes)
        guard tree is [String: Any] || tree is [Any] else { throw NotAnObjectOrArray() }
        return tree
    }

    /// The tree of one JSON text of any kind, a bare number or string included.
    public static func parseValue(_ bytes: some Collection<UInt8>) throws(Malformed) -> Any {
        var reader = Reader(bytes: Array(bytes))
        reader.skipWhitespace()
        let tree = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.offset == reader.bytes.count else { throw Malformed(offset: reader.offset) }
        return tree
    }

    /// The tree as JSON text on one line, object keys sorted, `/` escaped: what JSONEncoder with `.sortedKeys`
    /// wrote, so replies read the same as before.
    public static func text(_ tree: Any) throws -> String {
        var out: [UInt8] = []
        try write(tree, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends valid UTF-8 `bytes` as a JSON string: quote, backslash and control characters escaped (lowercase
    /// hexadecimal, as JSONEncoder wrote them), and `/` too when `escapingSlashes`.
    public static func appendString(_ bytes: some Sequence<UInt8>, escapingSlashes: Bool, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(byte)
            case UInt8(ascii: "/") where escapingSlashes: out.append(UInt8(ascii: "\\")); out.append(byte)
            case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
            case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
            case 0..<0x20:
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0x0F))
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The lowercase hexadecimal digit of `nibble` (0-15).
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// A string as JSON: its bytes at once when none needs escaping (the keys and kinds of every reply), else byte by
    /// byte.
    private static func appendString(_ value: String, to out: inout [UInt8]) {
        var plain = value
        let clean = plain.withUTF8 { bytes in
            bytes.allSatisfy { byte in
                byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte != UInt8(ascii: "/")
            }
        }
        guard clean else { return appendString(value.utf8, escapingSlashes: true, to: &out) }
        out.append(UInt8(ascii: "\""))
        plain.withUTF8 { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\""))
    }

    private static func write(_ tree: Any, to out: inout [UInt8]) throws {
        // The types replies are made of, told by their exact type first: a cast of a boxed `[String: Int]` to
        // `[String: Any]` would build a new dictionary, boxing every value, on the owner's thread for every reply.
        switch ObjectIdentifier(type(of: tree)) {
        case ObjectIdentifier(String.self): return appendString(tree as! String, to: &out)
        case ObjectIdentifier(Int.self): return out.append(contentsOf: String(tree as! Int).utf8)
        case ObjectIdentifier(Bool.self): return out.append(contentsOf: (tree as! Bool ? "true" : "false").utf8)
        case ObjectIdentifier([String: Any].self): return try writeObject(tree as! [String: Any], to: &out)
        case ObjectIdentifier([String: Int].self): return try writeObject(tree as! [String: Int], to: &out)
        case ObjectIdentifier([Any].self): return try writeArray(tree as! [Any], to: &out)
        case ObjectIdentifier([String].self): return try writeArray(tree as! [String], to: &out)
        default: break
        }
        switch tree {
        case is JSONNull: out += "null".utf8
        case let value as Bool: out += (value ? "true" : "false").utf8
        case let value as Int: out += String(value).utf8
        case let value as Int32: out += String(value).utf8
        case let value as Int64: out += String(value).utf8
        case let value as UInt32: out += String(value).utf8
        case let value as Double:
            guard value.isFinite else { throw UnsupportedValue() }
            // JSONEncoder wrote an integral double without its ".0".
            var text = value.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            out += text.utf8
        case let value as String: appendString(value, to: &out)
        case let value as Substring: appendString(value.utf8, escapingSlashes: true, to: &out)
        case let value as [String: Any]: try writeObject(value, to: &out)
        case let value as [Any]: try writeArray(value, to: &out)
        default: throw UnsupportedValue()
        }
    }

    private static func writeObject<Value>(_ object: [String: Value], to out: inout [UInt8]) throws {
        out.append(UInt8(ascii: "{"))
        // Keys and positions are sorted, not the entries: copying a boxed value is dearer than a key and an index.
        let order = object.indices.map { (key: object.keys[$0], index: $0) }.sorted { keyOrder($0.key, $1.key) }
        for (count, entry) in order.enumerated() {
            if count > 0 { out.append(UInt8(ascii: ",")) }
            appendString(entry.key, to: &out)
            out.append(UInt8(ascii: ":"))
            try write(object.values[entry.index], to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func writeArray<Element>(_ array: [Element], to out: inout [UInt8]) throws {
        out.append(UInt8(ascii: "["))
        for (index, element) in array.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            try write(element, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// The order JSONEncoder's `.sortedKeys` used: by the keys' UTF-8 bytes (so `Zed` before `apple`).
    private static func keyOrder(_ left: String, _ right: String) -> Bool {
        var left = left, right = right
        return left.withUTF8 { leftBytes in
            right.withUTF8 { rightBytes in
                for index in 0..<min(leftBytes.count, rightBytes.count) where leftBytes[index] != rightBytes[index] {
                    return leftBytes[index] < rightBytes[index]
                }
                return leftBytes.count < rightBytes.count
            }
        }
    }
}
