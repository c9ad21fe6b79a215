// TrackPath: a file path as the kernel sees it, a sequence of bytes. Linux file names need not be UTF-8
// (a name copied from an old FAT stick or a Latin-1 archive holds bytes such as 0xE9), and a Swift String
// cannot hold such bytes: converting replaces them with U+FFFD, and the path then names another file (or
// none). So paths travel as bytes from argv or readdir to open(2), and become text only to be shown.
//
// Two text forms, for two purposes:
// - `jsonValue` / Codable, lossless: a path that is valid UTF-8 is a JSON string, as it always was; any other
//   path is an object `{"base64": "..."}` holding its bytes. The JSON type tells them apart, so no string
//   path can be mistaken for an encoded one. The control protocol and the state file use this form.
// - `displayText`, for people: valid UTF-8 as it is, every other byte as `\xHH`, control characters as
//   `\xHH` and a backslash as `\\`. It is always valid UTF-8 and one line, and different paths show
//   differently, but it is not read back.
import Glibc

/// A file path as raw bytes (no NUL), which may or may not be valid UTF-8.
public struct TrackPath: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The path's bytes, without a terminating NUL.
    public let bytes: [UInt8]

    /// The path made of `bytes`; nil when they hold a NUL (which no file name can contain) or are empty.
    public init?(bytes: some Sequence<UInt8>) {
        let bytes = Array(bytes)
        guard !bytes.isEmpty, !bytes.contains(0) else { return nil }
        self.bytes = bytes
    }

    /// The path made of `bytes` that are known to be a path (non-empty, no NUL): a TrackList's, which holds only
    /// bytes it took from TrackPath values.
    init(validBytes bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The path spelled by `text` (its UTF-8 bytes). A NUL in `text` ends the path there, as it would for open(2).
    public init(_ text: String) {
        bytes = Array(text.utf8.prefix { $0 != 0 })
    }

    /// A path written in source code.
    public init(stringLiteral text: String) {
        self.init(text)
    }

    /// Whether this names an internet stream rather than a file: it starts with `http://` or `https://` (the scheme
    /// in any case). A queued file's path is absolute, starting with `/`, so the two never meet.
    public var isStreamURL: Bool {
        let lowered = bytes.prefix(8).map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
        return lowered.starts(with: Array("http://".utf8)) || lowered.starts(with: Array("https://".utf8))
    }

    /// The path as text when its bytes are valid UTF-8; nil otherwise (use `displayText` to show it).
    public var string: String? {
        String(validating: bytes, as: UTF8.self)
    }

    /// The path for people to read: always valid UTF-8 on one line (see the top of this file).
    public var displayText: String {
        var text = ""
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var consumed = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                consumed += encoded.count
                let scalar = Unicode.UTF8.decode(encoded)
                if scalar == "\\" {
                    text += "\\\\"
                } else if scalar.properties.generalCategory == .control {
                    // C0, DEL and C1 controls: a newline or an escape sequence must not reach a terminal.
                    for byte in encoded { text += Self.hexEscape(byte) }
                } else {
                    text.unicodeScalars.append(scalar)
                }
            case .error(let length):
                for byte in bytes[consumed..<consumed + length] { text += Self.hexEscape(byte) }
                consumed += length
            case .emptyInput:
                return text
            }
        }
    }

    /// The display text.
    public var description: String { displayText }

    /// Calls `body` with the path as a NUL-terminated C string (for open(2), stat(2), libmpg123).
    public func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try (bytes + [0]).withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }

    private static func hexEscape(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".unicodeScalars)
        return "\\x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
    }
}

// MARK: - The lossless JSON form

extension TrackPath: Codable {
    /// The key of the object form, which holds the bytes of a path that is not valid UTF-8.
    public static let base64Key = "base64"

    /// The path as a value of an untyped JSON tree (JSONTree, JSONSerialization): a string when it is valid UTF-8,
    /// else `{"base64": "..."}`.
    public var jsonValue: Any {
        if let string { return string }
        return [Self.base64Key: Base64.encode(bytes)]
    }

    /// The path a JSON value (as JSONTree or JSONSerialization reads it) holds in either form; nil for anything
    /// else, an empty path or one holding a NUL.
    public init?(jsonValue: Any) {
        if let text = jsonValue as? String {
            guard !text.isEmpty, !text.utf8.contains(0) else { return nil }
            self.init(text)
        } else if let object = jsonValue as? [String: Any], object.count == 1,
                  let encoded = object[Self.base64Key] as? String, let decoded = Base64.decode(encoded.utf8) {
            self.init(bytes: decoded)
        } else {
            return nil
        }
    }

    private struct EncodedBytes: Codable {
        var base64: String
    }

    /// Reads either form.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let bytes: [UInt8]
        if let text = try? container.decode(String.self) {
            bytes = Array(text.utf8)
        } else {
            let encoded = try container.decode(EncodedBytes.self)
            guard let decoded = Base64.decode(encoded.base64.utf8) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid base64 path")
            }
            bytes = decoded
        }
        guard let path = TrackPath(bytes: bytes) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "empty path or a NUL in it")
        }
        self = path
    }

    /// Writes a string when the path is valid UTF-8, else the base64 object.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let string {
            try container.encode(string)
        } else {
            try container.encode(EncodedBytes(base64: Base64.encode(bytes)))
        }
    }
}
