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
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), byte]
            case UInt8(ascii: "/") where escapingSlashes: out += [UInt8(ascii: "\\"), byte]
            case 0x0A: out += Array(#"\n"#.utf8)
            case 0x0D: out += Array(#"\r"#.utf8)
            case 0x09: out += Array(#"\t"#.utf8)
            case 0x08: out += Array(#"\b"#.utf8)
            case 0x0C: out += Array(#"\f"#.utf8)
            case 0..<0x20: out += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func write(_ tree: Any, to out: inout [UInt8]) throws {
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
        case let value as String: appendString(value.utf8, escapingSlashes: true, to: &out)
        case let value as Substring: appendString(value.utf8, escapingSlashes: true, to: &out)
        case let value as [String: Any]:
            out.append(UInt8(ascii: "{"))
            for (index, key) in value.keys.sorted(by: keyOrder).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key.utf8, escapingSlashes: true, to: &out)
                out.append(UInt8(ascii: ":"))
                try write(value[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case let value as [Any]:
            out.append(UInt8(ascii: "["))
            for (index, element) in value.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                try write(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        default: throw UnsupportedValue()
        }
    }

    /// The order JSONEncoder's `.sortedKeys` used: by the keys' UTF-8 bytes (so `Zed` before `apple`).
    private static func keyOrder(_ left: String, _ right: String) -> Bool {
        left.utf8.lexicographicallyPrecedes(right.utf8)
    }
}
