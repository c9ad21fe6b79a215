// TagBytes: what Earshot's own tag readers (Vorbis comments in FLAC and Ogg, ID3v2 in MP3) share: the cover picture
// and the limits on it, bounded reads from a file or from memory, and the decoding of Vorbis comments and FLAC PICTURE
// structures. Every length read from a file is checked against what is left before it is used, so no input makes a
// reader crash, loop for long or allocate more than the limits below; a picture over its limit is skipped by its
// length without being read.
#if canImport(Glibc)
import Glibc
import TrackPaths
#endif

/// An embedded cover picture: its MIME type and where its bytes are.
public struct CoverPicture: Equatable, Sendable {
    /// Where the picture's bytes are.
    public enum Bytes: Equatable, Sendable {
        /// Decoded in memory (from an Ogg comment's base64, or an ID3 frame that had to be un-synchronised).
        case inline([UInt8])
        /// Stored as they are in a file, from `offset`: read only when the picture is written to the cache.
        case inFile(TrackPath, offset: Int)
    }

    /// The largest picture taken (8 MiB): larger ones are skipped. A FLAC block cannot exceed 16 MiB anyway, and a
    /// cover shown at a few hundred pixels never needs more.
    public static let maximumBytes = 8 << 20

    /// The MIME type the tag gives, for example "image/jpeg" (lower case).
    public var mimeType: String
    /// The picture's length in bytes (at most `maximumBytes`).
    public var byteCount: Int
    /// Where the bytes are.
    public var bytes: Bytes

    /// Creates a picture description.
    public init(mimeType: String, byteCount: Int, bytes: Bytes) {
        self.mimeType = mimeType
        self.byteCount = byteCount
        self.bytes = bytes
    }

    /// The picture's bytes, read from the file when they are there; nil when the file no longer holds them all.
    public func load() -> [UInt8]? {
        switch bytes {
        case .inline(let data):
            return data.count == byteCount ? data : nil
        case .inFile(let path, let offset):
            let descriptor = path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
            guard descriptor >= 0 else { return nil }
            defer { close(descriptor) }
            return TagSource(descriptor: descriptor, path: path)?.bytes(at: offset, count: byteCount)
        }
    }
}

/// Bytes a tag reader may read: a file through `pread` (which leaves the descriptor's offset alone) or an array.
/// A file's first `headBytes` are read at once and served from memory: a tag is read a field at a time, and a pread
/// a field made about 25 system calls of a FLAC file's comments (a third of a library scan's CPU went to the kernel).
struct TagSource {
    /// The total length in bytes.
    let size: Int
    /// The file's path when reading a file: pictures found there are described by offset, not read.
    let path: TrackPath?
    private let descriptor: Int32
    /// The whole source (an array), or a file's first bytes.
    private let memory: [UInt8]

    /// How much of a file is read at once when the source is made: tags and the first audio frame usually lie there.
    static let headBytes = 16_384

    /// A source reading the open file `descriptor` (not closed here); nil when its size cannot be read.
    init?(descriptor: Int32, path: TrackPath?) {
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size >= 0 else { return nil }
        self.size = Int(status.st_size)
        self.path = path
        self.descriptor = descriptor
        self.memory = Self.read(descriptor, upTo: min(size, Self.headBytes))
    }

    /// Up to `count` bytes from the start of the open file (fewer when a read fails or the file ends sooner).
    private static func read(_ descriptor: Int32, upTo count: Int) -> [UInt8] {
        var filled = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            while filled < count {
                let got = pread(descriptor, buffer.baseAddress! + filled, count - filled, off_t(filled))
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else { break }
                filled += got
            }
            initialized = filled
        }
        return bytes
    }

    /// A source reading `bytes`.
    init(bytes: [UInt8]) {
        size = bytes.count
        path = nil
        descriptor = -1
        memory = bytes
    }

    /// Whether `count` bytes at `offset` lie inside the source (no overflow for any values).
    func contains(offset: Int, count: Int) -> Bool {
        offset >= 0 && count >= 0 && offset <= size && count <= size - offset
    }

    /// Up to `count` bytes at `offset`, fewer at the source's end or when a read fails: one read for a walk over
    /// many small fields past the head (an MP3's frame headers).
    func block(at offset: Int, count: Int) -> [UInt8] {
        guard offset >= 0, offset < size, count > 0 else { return [] }
        let wanted = min(count, size - offset)
        if descriptor < 0 || wanted <= memory.count - offset { return Array(memory[offset..<offset + wanted]) }
        return [UInt8](unsafeUninitializedCapacity: wanted) { buffer, initialized in
            initialized = max(0, pread(descriptor, buffer.baseAddress!, wanted, off_t(offset)))
        }
    }

    /// Exactly `count` bytes at `offset`, or nil when they are not all there (or the read fails).
    func bytes(at offset: Int, count: Int) -> [UInt8]? {
        guard contains(offset: offset, count: count) else { return nil }
        if descriptor < 0 || count <= memory.count - offset { return Array(memory[offset..<offset + count]) }
        var result = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = result.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + filled, count - filled, off_t(offset + filled))
            }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            filled += got
        }
        return result
    }
}

/// A forward-only run of bytes a tag structure is read from: a range of a source, or an Ogg packet spread over pages.
protocol TagStream {
    /// The next `count` bytes, or nil when fewer are left (the stream is then at its end).
    mutating func take(_ count: Int) -> [UInt8]?
    /// Moves past `count` bytes without reading them; false when fewer are left.
    mutating func skip(_ count: Int) -> Bool
}

extension TagStream {
    /// A 32-bit little-endian number (Vorbis comments).
    mutating func littleEndian32() -> Int? {
        take(4).map { Int($0[0]) | Int($0[1]) << 8 | Int($0[2]) << 16 | Int($0[3]) << 24 }
    }

    /// A 32-bit big-endian number (FLAC PICTURE).
    mutating func bigEndian32() -> Int? {
        take(4).map { Int($0[0]) << 24 | Int($0[1]) << 16 | Int($0[2]) << 8 | Int($0[3]) }
    }
}

/// A contiguous range of a `TagSource`.
struct TagRange: TagStream {
    let source: TagSource
    /// The source offset of the next byte.
    private(set) var position: Int
    /// The source offset just past the range.
    let end: Int

    /// The range `start..<start + count` of `source`, clipped to the source's end.
    init(_ source: TagSource, start: Int, count: Int) {
        self.source = source
        position = min(max(0, start), source.size)
        end = position + min(max(0, count), source.size - position)
    }

    /// Bytes left in the range.
    var remaining: Int { end - position }

    mutating func take(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= remaining, let bytes = source.bytes(at: position, count: count) else {
            position = end
            return nil
        }
        position += count
        return bytes
    }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= remaining else {
            position = end
            return false
        }
        position += count
        return true
    }
}

/// What a tag reader found: the fields, the pictures, and why a picture was skipped.
struct TagFindings {
    var metadata = TrackMetadata()
    /// The pictures taken, each with its picture type (3 is the front cover in ID3 and FLAC alike).
    var pictures: [(type: Int, picture: CoverPicture)] = []
    /// The gains of ID3v2 RVA2 frames, which fill only what the TXXX frames left (wherever the frames stand).
    var volumeAdjustments = ReplayGainTags()

    /// Records a skipped picture's reason (the first one is kept).
    mutating func skipPicture(_ reason: String) {
        if metadata.coverProblem == nil { metadata.coverProblem = reason }
    }

    /// The metadata with the cover chosen: the front cover if there is one, else the first picture.
    var result: TrackMetadata {
        var chosen = metadata
        chosen.replayGain.fillMissing(from: volumeAdjustments)
        chosen.cover = (pictures.first { $0.type == 3 } ?? pictures.first)?.picture
        if chosen.cover != nil { chosen.coverProblem = nil }
        return chosen
    }

    /// Sets a text field from a Vorbis comment or ID3 frame name; the first value of each field wins.
    /// Text ends at a NUL: ID3v2.4 separates values with it (the first is taken), and in a Vorbis comment, where none
    /// belongs, what follows one is hidden by C-string code anyway (SQLite's text among it).
    mutating func set(_ field: TagField, _ rawValue: String) {
        let value = TagText.trimmed(String(rawValue.prefix { $0 != "\u{0}" }))
        guard let value else { return }
        func first(_ slot: inout String?, _ text: String?) { if slot == nil { slot = text } }
        switch field {
        case .title: first(&metadata.title, value)
        case .artist: first(&metadata.artist, value)
        case .album: first(&metadata.album, value)
        case .albumArtist: first(&metadata.albumArtist, value)
        case .trackNumber: if metadata.trackNumber == nil { metadata.trackNumber = TagText.trackNumber(value) }
        case .discNumber: if metadata.discNumber == nil { metadata.discNumber = TagText.trackNumber(value) }
        case .genre: first(&metadata.genre, ID3Genres.named(value, bareNumbers: false))
        case .id3Genre: first(&metadata.genre, ID3Genres.named(value, bareNumbers: true))
        case .date: first(&metadata.date, value)
        case .composer: first(&metadata.composer, value)
        case .musicBrainzTrack: first(&metadata.musicBrainz.track, value)
        case .musicBrainzAlbum: first(&metadata.musicBrainz.album, value)
        case .musicBrainzArtist: first(&metadata.musicBrainz.artist, value)
        case .musicBrainzAlbumArtist: first(&metadata.musicBrainz.albumArtist, value)
        }
    }
}

/// The text fields the readers take.
enum TagField {
    /// `genre` is a Vorbis GENRE, `id3Genre` an ID3v2 TCON (where a bare number is a reference to ID3's list too).
    case title, artist, album, albumArtist, trackNumber, discNumber, genre, id3Genre, date, composer
    case musicBrainzTrack, musicBrainzAlbum, musicBrainzArtist, musicBrainzAlbumArtist
}

/// Text helpers shared by the readers.
enum TagText {
    /// The longest text value read (64 KiB); longer ones are skipped by length.
    static let maximumTextBytes = 64 << 10

    /// `text` without surrounding white space, or nil if nothing is left.
    static func trimmed(_ text: String) -> String? {
        // By index, not through reversed views of a dropped slice: those made a library scan spend 13% of its CPU
        // here, a character at a time through generic wrappers. Most values have nothing to trim and come back as
        // they are; most begin and end with a visible ASCII character (its first and last characters then are no
        // white space), told by the two end bytes without breaking the text into characters (8% of a scan's reading
        // went to that).
        if let head = text.utf8.first, let tail = text.utf8.last, (0x21...0x7E).contains(head),
           (0x21...0x7E).contains(tail) {
            return text
        }
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
              let last = text.lastIndex(where: { !$0.isWhitespace }) else { return nil }
        if first == text.startIndex && text.index(after: last) == text.endIndex { return text }
        return String(text[first...last])
    }

    /// The number at the start of a track number field: "3/12" and "03" are 3; nil without a positive number.
    static func trackNumber(_ text: String) -> Int? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }.prefix(9)
        guard let number = Int(digits), number > 0 else { return nil }
        return number
    }

    /// Text that should be UTF-8: as UTF-8 when it is, else as Latin-1 (what taggers that write the wrong encoding
    /// write, "Bj\u{F6}rk"), so that no letter becomes a replacement character.
    static func utf8(_ bytes: some Collection<UInt8>) -> String {
        String(validating: bytes, as: UTF8.self) ?? latin1(bytes)
    }

    /// Latin-1 bytes as a string.
    static func latin1(_ bytes: some Collection<UInt8>) -> String {
        // ASCII (most tags) is the same bytes in UTF-8: copied whole rather than a scalar at a time.
        if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        return String(scalars)
    }

    /// A MIME type as tags give it: lower case, with the short forms some taggers write made whole.
    static func mimeType(_ bytes: [UInt8]) -> String {
        let text = latin1(bytes).lowercased()
        switch text {
        case "jpg", "jpeg", "image/jpg": return "image/jpeg"
        case "png": return "image/png"
        default: return text
        }
    }
}

/// Vorbis comments (in a FLAC VORBIS_COMMENT block and in an Ogg Vorbis or Opus comment header) and the FLAC
/// PICTURE structure (a FLAC block, or base64 in a `METADATA_BLOCK_PICTURE` comment).
enum VorbisComments {
    /// Most comments looked at: a header claiming more is read this far.
    static let maximumComments = 10_000

    /// The FLAC/Vorbis field names taken (compared in upper case).
    static let fields: [String: TagField] = [
        "TITLE": .title, "ARTIST": .artist, "ALBUM": .album, "ALBUMARTIST": .albumArtist,
        "ALBUM ARTIST": .albumArtist, "ALBUM_ARTIST": .albumArtist, "TRACKNUMBER": .trackNumber,
        "DISCNUMBER": .discNumber, "GENRE": .genre, "DATE": .date, "YEAR": .date, "COMPOSER": .composer,
        "MUSICBRAINZ_TRACKID": .musicBrainzTrack, "MUSICBRAINZ_ALBUMID": .musicBrainzAlbum,
        "MUSICBRAINZ_ARTISTID": .musicBrainzArtist, "MUSICBRAINZ_ALBUMARTISTID": .musicBrainzAlbumArtist,
    ]

    /// Reads a comment list (vendor string, count, comments) from `stream` into `findings`.
    static func read<Stream: TagStream>(_ stream: inout Stream, into findings: inout TagFindings) {
        guard let vendorLength = stream.littleEndian32(), stream.skip(vendorLength),
              let count = stream.littleEndian32() else { return }
        for _ in 0..<min(count, maximumComments) {
            guard let length = stream.littleEndian32() else { return }
            // The name comes first: read enough to find the '=' before deciding whether the value is wanted.
            let headLength = min(length, 32)
            guard let head = stream.take(headLength) else { return }
            let rest = length - headLength
            guard let equals = head.firstIndex(of: UInt8(ascii: "=")) else {
                guard stream.skip(rest) else { return }
                continue
            }
            let name = TagText.latin1(head[..<equals]).uppercased()
            let valueStart = Array(head[(equals + 1)...])
            if name == "METADATA_BLOCK_PICTURE" {
                // base64 makes 3 bytes of 4 characters: skip by length what would decode to too large a picture.
                if (valueStart.count + rest) / 4 * 3 > CoverPicture.maximumBytes + 64 << 10 {
                    findings.skipPicture("picture too large (a \(valueStart.count + rest)-character comment)")
                    guard stream.skip(rest) else { return }
                    continue
                }
                guard let tail = stream.take(rest) else { return }
                guard let decoded = Base64.decode(valueStart + tail) else {
                    findings.skipPicture("malformed picture comment (bad base64)")
                    continue
                }
                var picture = TagRange(TagSource(bytes: decoded), start: 0, count: decoded.count)
                readPicture(&picture, into: &findings)
                continue
            }
            if let gainField = ReplayGainTags.field(named: name), length <= 64 {
                guard let tail = stream.take(rest) else { return }
                findings.metadata.replayGain.take(gainField, String(decoding: valueStart + tail, as: UTF8.self))
                continue
            }
            guard let field = fields[name], length <= TagText.maximumTextBytes else {
                guard stream.skip(rest) else { return }
                continue
            }
            guard let tail = stream.take(rest) else { return }
            findings.set(field, TagText.utf8(valueStart + tail))
        }
    }

    /// Reads a FLAC PICTURE structure filling `range`: the picture is described by its place in the file (a file
    /// source) or copied (a memory source); one whose lengths run past the range, or over the limit, is skipped.
    static func readPicture(_ range: inout TagRange, into findings: inout TagFindings) {
        guard let type = range.bigEndian32(), let mimeLength = range.bigEndian32(), mimeLength <= 256,
              let mime = range.take(mimeLength), let descriptionLength = range.bigEndian32(),
              range.skip(descriptionLength), range.skip(16), let dataLength = range.bigEndian32()
        else {
            findings.skipPicture("malformed picture block (a length runs past its end)")
            return
        }
        guard dataLength <= range.remaining else {
            findings.skipPicture("malformed picture block (a length runs past its end)")
            return
        }
        guard dataLength <= CoverPicture.maximumBytes else {
            findings.skipPicture("picture too large (\(dataLength) bytes, at most \(CoverPicture.maximumBytes))")
            return
        }
        guard dataLength > 0 else { return }
        let mimeType = TagText.mimeType(mime)
        if let path = range.source.path {
            findings.pictures.append((type, CoverPicture(mimeType: mimeType, byteCount: dataLength,
                                                         bytes: .inFile(path, offset: range.position))))
        } else if let data = range.take(dataLength) {
            findings.pictures.append((type, CoverPicture(mimeType: mimeType, byteCount: dataLength,
                                                         bytes: .inline(data))))
        }
    }
}
