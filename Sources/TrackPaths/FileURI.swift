// The `file://` URI form of a path, for MPRIS (`xesam:url`, `OpenUri`) and for playlists' `file://` entries. A
// name's bytes need not be UTF-8, so every byte that is not a plain path character travels as a percent-escape
// (RFC 3986): the URI is ASCII whatever the name, and decoding it gives back the same bytes.

extension TrackPath {
    /// A `file://` URI for this absolute path: every byte that is not an unreserved character, a sub-delimiter,
    /// `:`, `@` or `/` (RFC 3986 path characters) is percent-escaped, so the URI is ASCII whatever the name's
    /// bytes, and a name that is not UTF-8 survives the round trip through `percentDecodedBytes(_:)`.
    public var fileURI: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var uri = Array("file://".utf8)
        for byte in bytes {
            if Self.uriPathCharacters.contains(byte) {
                uri.append(byte)
            } else {
                uri += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: uri, as: UTF8.self)
    }

    /// `text` (a URI's percent-encoded path) with every `%HH` replaced by its byte; nil for a malformed escape.
    public static func percentDecodedBytes(_ text: String) -> [UInt8]? {
        percentDecodedBytes(bytes: text.utf8)
    }

    /// `text` (a URI's percent-encoded path, as bytes) with every `%HH` replaced by its byte; nil for a malformed
    /// escape. Other bytes are kept as they are, UTF-8 or not.
    public static func percentDecodedBytes(bytes text: some Sequence<UInt8>) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = text.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// The bytes of a URI path that may appear unescaped.
    private static let uriPathCharacters = Set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/".utf8)

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
