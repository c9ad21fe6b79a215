// The reading half of JSONTree: RFC 8259, with JSONDecoder's two leniencies kept so that what it read still reads
// (one trailing comma in an array or object, a UTF-8 byte-order mark first); no comments, no unescaped control
// characters, valid UTF-8 only, and a nesting limit so that a hostile control client's `[[[[...` cannot overflow
// the stack.

extension JSONTree {
    /// A cursor over one JSON text.
    struct Reader {
        /// How deep arrays and objects may nest: JSONDecoder's limit.
        static let maximumDepth = 512

        let bytes: [UInt8]
        var offset = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { offset = 3 }
        }

        mutating func skipWhitespace() {
            while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
        }

        private var malformed: Malformed { Malformed(offset: offset) }

        /// The value starting at `offset`; whitespace before it already skipped.
        mutating func value(depth: Int) throws(Malformed) -> Any {
            guard offset < bytes.count else { throw malformed }
            switch bytes[offset] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return try string()
            case UInt8(ascii: "t"): try literal("true"); return true
            case UInt8(ascii: "f"): try literal("false"); return false
            case UInt8(ascii: "n"): try literal("null"); return JSONNull()
            default: return try number()
            }
        }

        private mutating func literal(_ word: String) throws(Malformed) {
            guard bytes[offset...].starts(with: word.utf8) else { throw malformed }
            offset += word.utf8.count
        }

        private mutating func expect(_ byte: UInt8) throws(Malformed) {
            guard offset < bytes.count, bytes[offset] == byte else { throw malformed }
            offset += 1
        }

        private mutating func object(depth: Int) throws(Malformed) -> [String: Any] {
            guard depth <= Self.maximumDepth else { throw malformed }
            offset += 1
            var members: [String: Any] = [:]
            skipWhitespace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
                offset += 1
                return members
            }
            while true {
                skipWhitespace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw malformed }
                let key = try string()
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                members[key] = try value(depth: depth)
                skipWhitespace()
                guard offset < bytes.count else { throw malformed }
                if bytes[offset] == UInt8(ascii: "}") {
                    offset += 1
                    return members
                }
                try expect(UInt8(ascii: ","))
                skipWhitespace()
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
                    offset += 1
                    return members
                }
            }
        }

        private mutating func array(depth: Int) throws(Malformed) -> [Any] {
            guard depth <= Self.maximumDepth else { throw malformed }
            offset += 1
            var elements: [Any] = []
            skipWhitespace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
                offset += 1
                return elements
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth))
                skipWhitespace()
                guard offset < bytes.count else { throw malformed }
                if bytes[offset] == UInt8(ascii: "]") {
                    offset += 1
                    return elements
                }
                try expect(UInt8(ascii: ","))
                skipWhitespace()
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
                    offset += 1
                    return elements
                }
            }
        }

        /// A string: escapes decoded, surrogate pairs joined; a lone surrogate or bytes that are not UTF-8 are
        /// malformed.
        private mutating func string() throws(Malformed) -> String {
            offset += 1
            var scalars = String.UnicodeScalarView()
            var runStart = offset
            func flush(_ end: Int) throws(Malformed) {
                guard runStart < end else { return }
                guard let text = String(validating: bytes[runStart..<end], as: UTF8.self) else {
                    throw Malformed(offset: runStart)
                }
                scalars.append(contentsOf: text.unicodeScalars)
            }
            while offset < bytes.count {
                let byte = bytes[offset]
                if byte == UInt8(ascii: "\"") {
                    try flush(offset)
                    offset += 1
                    return String(scalars)
                }
                guard byte >= 0x20 else { throw malformed }
                guard byte == UInt8(ascii: "\\") else {
                    offset += 1
                    continue
                }
                try flush(offset)
                offset += 1
                guard offset < bytes.count else { throw malformed }
                let escaped = bytes[offset]
                offset += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                    scalars.append(Unicode.Scalar(escaped))
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"): scalars.append(try escapedScalar())
                default: throw Malformed(offset: offset - 1)
                }
                runStart = offset
            }
            throw malformed
        }

        /// The scalar of a `\uXXXX` escape (its `\u` already read), or of a surrogate pair of them.
        private mutating func escapedScalar() throws(Malformed) -> Unicode.Scalar {
            let first = try hexUnit()
            if (0xD800..<0xDC00).contains(first) {
                guard bytes[offset...].starts(with: #"\u"#.utf8) else { throw malformed }
                offset += 2
                let second = try hexUnit()
                guard (0xDC00..<0xE000).contains(second) else { throw malformed }
                let value = 0x10000 + (UInt32(first - 0xD800) << 10) + UInt32(second - 0xDC00)
                guard let scalar = Unicode.Scalar(value) else { throw malformed }
                return scalar
            }
            guard let scalar = Unicode.Scalar(UInt32(first)) else { throw malformed }
            return scalar
        }

        private mutating func hexUnit() throws(Malformed) -> UInt16 {
            guard offset + 4 <= bytes.count else { throw malformed }
            var unit: UInt16 = 0
            for byte in bytes[offset..<offset + 4] {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw malformed
                }
                unit = unit << 4 | UInt16(digit)
            }
            offset += 4
            return unit
        }

        /// A number in JSON's grammar: an Int when it is integral and fits (`100`, `1e2`, `5.0`, as JSONDecoder
        /// gave them to an Int), else a Double; one too large for a Double is malformed.
        private mutating func number() throws(Malformed) -> Any {
            let start = offset
            func digits() -> Int {
                let first = offset
                while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) {
                    offset += 1
                }
                return offset - first
            }
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            let integerStart = offset
            let integerDigits = digits()
            guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else {
                throw Malformed(offset: start)
            }
            var integral = true
            if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
                offset += 1
                guard digits() > 0 else { throw malformed }
                integral = false
            }
            if offset < bytes.count, bytes[offset] | 0x20 == UInt8(ascii: "e") {
                offset += 1
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
                    offset += 1
                }
                guard digits() > 0 else { throw malformed }
                integral = false
            }
            let text = String(decoding: bytes[start..<offset], as: UTF8.self)
            if integral, let value = Int(text) { return value }
            guard let value = Double(text), value.isFinite else { throw Malformed(offset: start) }
            if value.rounded() == value, let exact = Int(exactly: value) { return exact }
            return value
        }
    }
}
