// Splitting a URI into the parts Earshot reads, for MPRIS OpenUri and `file://` entries in playlists.

/// The parts of a URI (RFC 3986) that OpenUri and playlists need: scheme, host and the still percent-encoded path. What
/// URLComponents gave, without FoundationEssentials, and as leniently: a character a URI should have escaped (a space,
/// a non-ASCII letter) stays in the path as its own bytes, which is what URLComponents' escaping and
/// `TrackPath.percentDecodedBytes` made of it.
public struct URIParts {
    /// The scheme, as written; nil when the text has none (a relative reference).
    public var scheme: String?
    /// The authority's host, without user information or port; nil when there is no authority (`//`).
    public var host: String?
    /// The path's bytes, percent-escapes left in place (and any other byte as written, UTF-8 or not).
    public var percentEncodedPathBytes: [UInt8]

    /// The path, percent-escapes left in place.
    public var percentEncodedPath: String { String(decoding: percentEncodedPathBytes, as: UTF8.self) }

    /// The parts of `text`; nil when it is not a URI (a colon in the first segment of a text without a scheme).
    public init?(_ text: String) {
        self.init(bytes: text.utf8)
    }

    /// The parts of a URI given as bytes, for a playlist line that need not be UTF-8: a byte of a name that a
    /// Latin-1 playlist wrote bare stays that byte in `percentEncodedPathBytes` (a String would make it U+FFFD).
    public init?(bytes text: some Collection<UInt8>) {
        let bytes = Array(text)
        var rest = bytes[...]
        // A scheme is a letter then letters, digits, `+`, `-` or `.`, ended by the first `:`, before any `/?#`.
        if let colon = rest.firstIndex(of: UInt8(ascii: ":")),
           let first = rest.first, Self.isLetter(first),
           rest[..<colon].allSatisfy({ Self.isLetter($0) || Self.isDigit($0) || "+-.".utf8.contains($0) }) {
            scheme = String(decoding: rest[..<colon], as: UTF8.self)
            rest = rest[(colon + 1)...]
        } else if let colon = rest.firstIndex(of: UInt8(ascii: ":")),
                  !rest[..<colon].contains(where: { "/?#".utf8.contains($0) }) {
            // Without a scheme, a colon in the first segment makes the text no URI at all (RFC 3986, 4.2).
            return nil
        }
        // The query and fragment end the path; neither user reads them.
        if let end = rest.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            rest = rest[..<end]
        }
        if rest.starts(with: "//".utf8) {
            rest = rest.dropFirst(2)
            let authorityEnd = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
            var authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
            // A port follows the last `:`, unless that colon is inside an IPv6 literal's brackets.
            if let colon = authority.lastIndex(of: UInt8(ascii: ":")),
               !authority[colon...].contains(UInt8(ascii: "]")) {
                authority = authority[..<colon]
            }
            host = String(decoding: authority, as: UTF8.self)
            rest = rest[authorityEnd...]
        }
        // A `%` that starts no escape stands for itself, as URLComponents made it (`%25`).
        var path: [UInt8] = []
        var index = rest.startIndex
        while index < rest.endIndex {
            let isEscape = index + 2 < rest.endIndex && Self.isHexDigit(rest[index + 1])
                && Self.isHexDigit(rest[index + 2])
            if rest[index] == UInt8(ascii: "%") && !isEscape {
                path += "%25".utf8
            } else {
                path.append(rest[index])
            }
            index += 1
        }
        percentEncodedPathBytes = path
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
    }

}
