// What a radio server answers, read as pure values: the response's head (status line and headers, line by line as
// libcurl hands them over), what kind of body it announces, and the ICY metadata interleaved with the audio.
// Standard library only: scripts/fuzz compiles this file alone (the `icy` target).

/// Why a response cannot be played as a stream, each a reason the user is told in words.
public enum StreamRefusal: Error, Equatable, Sendable {
    /// The server answered with an HTTP status other than success (404, 500, ...).
    case httpStatus(Int)
    /// The body is a web page or other text, not audio.
    case notAudio
    /// The body is a playlist (M3U, PLS, HLS) where audio was expected.
    case playlist
    /// The body's type is one Earshot does not decode (video, AAC, ...), named by its content type's kind.
    case unsupportedType
    /// The response's head is larger than any real server's: too many lines or a line too long.
    case headTooLarge
    /// `icy-metaint` is not a number in the range real servers use (a claim of a gigabyte between titles).
    case metadataIntervalOutOfRange
}

/// The audio formats a stream may announce.
public enum StreamFormat: String, Equatable, Sendable {
    case mp3
    case ogg
    case flac
    /// No type, or a generic one (`application/octet-stream`): the decoder decides by the bytes.
    case unknown
}

/// One response's head as libcurl reports it: a status line, then header lines, then an empty line; a redirect's
/// head and the final response's come one after the other, and each status line starts a new head.
public struct ResponseHead: Equatable, Sendable {
    /// The longest header line kept (a line beyond it refuses the response).
    public static let maximumLineBytes = 8192
    /// The most header lines one response may have.
    public static let maximumLines = 200
    /// The largest `icy-metaint` accepted: real servers send 8192 to 32768 bytes of audio between titles.
    public static let maximumMetadataInterval = 262_144
    /// The longest station name kept, in characters.
    public static let maximumNameCharacters = 200

    /// The status code of the latest status line (0 before one came).
    public private(set) var status = 0
    /// The `content-type` header's media type, lowercased, without parameters.
    public private(set) var contentType: String?
    /// The `icy-metaint` header's text, as sent.
    public private(set) var metadataIntervalText: String?
    /// The station's name from `icy-name`, decoded and trimmed.
    public private(set) var stationName: String?
    /// Whether the head announces the body's length (`content-length`): a file, which ends, not a stream.
    public private(set) var announcesLength = false
    /// Whether the server speaks ICY, as stations' servers do (Icecast, SHOUTcast): an `ICY` status line, or any
    /// `icy-` or `ice-` header. A plain web server's response has none.
    public private(set) var speaksICY = false
    /// Whether the head is complete (its empty line came).
    public private(set) var isComplete = false
    /// Set when the head broke a limit; the response is refused.
    public private(set) var tooLarge = false
    private var lines = 0

    /// An empty head, before the first status line.
    public init() {}

    /// Reads one line as libcurl gives it (with its CR LF, or none).
    public mutating func feed(line raw: [UInt8]) {
        var line = raw[...]
        while let last = line.last, last == 0x0A || last == 0x0D { line = line.dropLast() }
        if raw.count > Self.maximumLineBytes { tooLarge = true; return }
        if Self.isStatusLine(line) {
            // A new response (after a redirect or a 100 Continue): forget the previous one's headers.
            self = ResponseHead()
            status = Self.statusCode(line)
            speaksICY = line.starts(with: Array("ICY ".utf8))
            lines = 1
            return
        }
        if line.isEmpty { isComplete = true; return }
        lines += 1
        if lines > Self.maximumLines { tooLarge = true; return }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        let value = Self.trimmed(line[line.index(after: colon)...])
        if name.hasPrefix("icy-") || name.hasPrefix("ice-") { speaksICY = true }
        switch name {
        case "content-type":
            let type = String(decoding: value, as: UTF8.self).lowercased()
            contentType = String(type.split(separator: ";", omittingEmptySubsequences: false).first ?? "")
                .trimmingSpaces()
        case "icy-metaint": metadataIntervalText = String(decoding: value, as: UTF8.self)
        case "content-length": announcesLength = !value.isEmpty
        case "icy-name":
            let text = String(TextBytes.decode(Array(value)).prefix(Self.maximumNameCharacters)).trimmingSpaces()
            stationName = text.isEmpty ? nil : text
        default: break
        }
    }

    /// The interval of audio bytes between ICY metadata blocks: nil when the server sends none, else the number,
    /// or the refusal when it is not one in range.
    public var metadataInterval: Result<Int?, StreamRefusal> {
        guard let text = metadataIntervalText?.trimmingSpaces() else { return .success(nil) }
        guard !text.isEmpty, text.count <= 12, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(text), value >= 1, value <= Self.maximumMetadataInterval
        else { return .failure(.metadataIntervalOutOfRange) }
        return .success(value)
    }

    /// What the head announces, given the first bytes of the body (up to 16, for a type the head leaves open):
    /// the format to decode, or why not.
    public func verdict(firstBytes: [UInt8]) -> Result<StreamFormat, StreamRefusal> {
        if tooLarge { return .failure(.headTooLarge) }
        guard (200...299).contains(status) else { return .failure(.httpStatus(status)) }
        if case .failure(let refusal) = metadataInterval { return .failure(refusal) }
        let sniffed = Self.sniff(firstBytes)
        switch contentType ?? "" {
        case "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg", "audio/mpa":
            return sniffed == .some(.failure(.notAudio)) ? .failure(.notAudio) : .success(.mp3)
        case "audio/ogg", "application/ogg", "audio/opus", "audio/vorbis", "audio/x-ogg":
            return sniffed == .some(.failure(.notAudio)) ? .failure(.notAudio) : .success(.ogg)
        case "audio/flac", "audio/x-flac":
            return sniffed == .some(.failure(.notAudio)) ? .failure(.notAudio) : .success(.flac)
        case "audio/x-mpegurl", "audio/mpegurl", "application/vnd.apple.mpegurl", "application/x-mpegurl",
             "audio/x-scpls", "application/pls+xml", "audio/scpls":
            return .failure(.playlist)
        case "", "application/octet-stream", "binary/octet-stream", "audio/x-unknown":
            return sniffed ?? .success(.unknown)
        case let type where type.hasPrefix("text/") || type.hasSuffix("+xml") || type == "application/xhtml+xml"
            || type == "application/json" || type == "application/xml":
            return .failure(.notAudio)
        default:
            return .failure(.unsupportedType)
        }
    }

    /// What the body's first bytes show, when they show anything: a format, a page or a playlist.
    static func sniff(_ bytes: [UInt8]) -> Result<StreamFormat, StreamRefusal>? {
        func starts(_ text: String) -> Bool { bytes.starts(with: Array(text.utf8)) }
        if starts("OggS") { return .success(.ogg) }
        if starts("fLaC") { return .success(.flac) }
        if starts("ID3") { return .success(.mp3) }
        if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0 { return .success(.mp3) }
        if starts("#EXTM3U") || starts("[playlist]") || starts("[Playlist]") { return .failure(.playlist) }
        // A page or JSON is text from its first byte (a UTF-8 byte-order mark aside). Audio is not, though any of
        // its bytes may happen to be `<` or `{`: a station's burst starts wherever the stream was, not at a frame
        // (a fresh-clone run met one, and refused an Icecast mount as a page), so one byte decides nothing.
        let head = Array(bytes.prefix(16))
        let body = head.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(head.dropFirst(3)) : head
        guard body.allSatisfy({ $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || (0x20...0x7E).contains($0) }) else {
            return nil
        }
        let text = String(decoding: body, as: UTF8.self).drop { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }
        if text.hasPrefix("<") || text.hasPrefix("{") { return .failure(.notAudio) }
        return nil
    }

    static func isStatusLine(_ line: ArraySlice<UInt8>) -> Bool {
        line.starts(with: Array("HTTP/".utf8)) || line.starts(with: Array("ICY ".utf8))
    }

    static func statusCode(_ line: ArraySlice<UInt8>) -> Int {
        let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
        guard fields.count >= 2, fields[1].count == 3, fields[1].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return 0
        }
        return fields[1].reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var value = bytes
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        return value
    }
}

/// Text from a server, which may be UTF-8 or (older SHOUTcast stations) Latin-1.
enum TextBytes {
    /// The bytes as UTF-8 when they are valid UTF-8, else as Latin-1 (every byte a character); control characters
    /// become spaces.
    static func decode(_ bytes: [UInt8]) -> String {
        let text: String
        if let utf8 = String(validating: bytes, as: UTF8.self) {
            text = utf8
        } else {
            text = String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        }
        return String(String.UnicodeScalarView(text.unicodeScalars.map {
            $0.value < 0x20 || $0.value == 0x7F ? " " : $0
        }))
    }
}

extension String {
    /// The text without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" })!
        return String(scalars[first...last])
    }
}
