// Base64 (RFC 4648) for the lossless JSON form of a path that is not UTF-8, and for pictures in Ogg comments: here,
// the lowest layer both use, instead of FoundationEssentials' Data, which the product no longer links.

/// Standard base64 (RFC 4648), strictly: only the alphabet, padding at the end only.
public enum Base64 {
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    /// The bytes `text` encodes, or nil when it is not base64.
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        var body = Array(text)[...]
        var padding = 0
        while padding < 2, body.last == UInt8(ascii: "=") {
            body.removeLast()
            padding += 1
        }
        guard (body.count + padding) % 4 == 0, body.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(body.count / 4 * 3 + 2)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in body {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        return output
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `bytes` as base64 text, padded with `=` to a multiple of four characters.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var group: [UInt8] = []
        group.reserveCapacity(3)
        for byte in bytes {
            group.append(byte)
            if group.count == 3 {
                appendGroup(group, to: &output)
                group.removeAll(keepingCapacity: true)
            }
        }
        if !group.isEmpty { appendGroup(group, to: &output) }
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the four characters of one to three bytes, padding for the missing ones.
    private static func appendGroup(_ group: [UInt8], to output: inout [UInt8]) {
        let value = group.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << UInt32(16 - 8 * $1.offset) }
        for index in 0..<4 {
            if index > group.count {
                output.append(UInt8(ascii: "="))
            } else {
                output.append(alphabet[Int(value >> UInt32(18 - 6 * index) & 0x3F)])
            }
        }
    }
}
