// TrackHeaders: what a library scan needs of a track (its kind, tags, rate and length) read from the file's own
// headers, without opening a decoder. Opening libmpg123 (two handles, one of them only to check a lying Info tag) or
// libsndfile with libFLAC for each file was most of a scan's CPU; the same facts lie in a few headers:
// - FLAC: STREAMINFO, the first metadata block, holds the rate and the total samples, which is where libsndfile
//   takes its length from (so the two agree by construction);
// - MP3 without a Xing/Info/VBRI frame: libmpg123 measures such a file by walking its frame headers (`mpg123_scan`),
//   and so does this, frame by frame from the end of the ID3v2 tag to the ID3v1 tag or the file's end.
// Only a file whose headers settle every fact is answered; anything else (Ogg, a Xing/Info/VBRI frame with its
// gapless trim, free-format or mixed frames, bytes between frames, a cut last frame, more than two channels, a
// FLAC with no sample count) gives nil and is read through its decoder, as before, errors and all.
import TrackPaths
#if canImport(Glibc)
import Glibc
#endif

/// A track as its headers describe it.
public struct TrackHeaderFacts: Sendable {
    /// The format.
    public var kind: AudioFileKind
    /// The tags, as the decoder reads them.
    public var metadata: TrackMetadata
    /// The file's own sample rate.
    public var sampleRate: Int
    /// What plays, in seconds.
    public var seconds: Double
}

/// Reads `TrackHeaderFacts` without a decoder.
public enum TrackHeaders {
    /// The facts of the file at `path`, or nil when its headers do not settle them all (the decoder is then asked).
    public static func read(_ path: TrackPath) -> TrackHeaderFacts? {
        // O_NONBLOCK: a file swapped for a FIFO since the walk saw it must not hold the scanner in open(2) (it is
        // then no regular file, and left to the decoder's own checks); a regular file's reads are not affected.
        let descriptor = path.withCString { open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size > 0,
              let source = TagSource(descriptor: descriptor, path: path),
              let magic = source.bytes(at: 0, count: 4) else { return nil }
        if magic.elementsEqual("fLaC".utf8) { return flac(source) }
        // What AudioFileKind.identify gives to other readers, or refuses, is left to it.
        if magic.elementsEqual("OggS".utf8) || magic.elementsEqual("RIFF".utf8) || magic.elementsEqual("FORM".utf8) {
            return nil
        }
        return mp3(source)
    }

    // MARK: - FLAC

    /// The facts of a native FLAC file: STREAMINFO for the rate and length, and the tags as SndfileDecoder reads them.
    static func flac(_ source: TagSource) -> TrackHeaderFacts? {
        // The first block must be STREAMINFO (type 0, 34 bytes).
        guard let block = source.bytes(at: 4, count: 4 + 34), block[0] & 0x7F == 0,
              block[1] == 0, block[2] == 0, block[3] == 34 else { return nil }
        let info = Array(block[4...])
        let rate = Int(info[10]) << 12 | Int(info[11]) << 4 | Int(info[12]) >> 4
        let channels = Int(info[12] >> 1 & 7) + 1
        let bits = (Int(info[12] & 1) << 4 | Int(info[13]) >> 4) + 1
        let total = Int(info[13] & 0x0F) << 32 | info[14..<18].reduce(0) { $0 << 8 | Int($1) }
        // As SndfileDecoder takes them: mono or stereo, a rate, and a length it believes (libsndfile reads 8, 16 and
        // 24-bit FLAC; other widths go to it to decide).
        guard rate > 0, channels <= 2, [8, 16, 24].contains(bits), total > 0, total < Int(Int32.max) * 64,
              metadataIsWhole(source) else {
            return nil
        }
        return TrackHeaderFacts(kind: .flac, metadata: FLACTags.read(source), sampleRate: rate,
                                seconds: Double(total) / Double(rate))
    }

    /// Whether the FLAC file's metadata blocks are what libFLAC reads without complaint: one STREAMINFO first, then
    /// only padding, application, seek table, Vorbis comment and picture blocks, each inside the file and the comment
    /// and picture blocks filled exactly by their fields, the last one flagged, and a frame's sync code after it.
    /// libFLAC refuses lying sizes in them (and libsndfile the file) where the tag reader reads up to the lie: such a
    /// file goes to the decoder, which says why.
    static func metadataIsWhole(_ source: TagSource) -> Bool {
        var offset = 4
        for index in 0..<FLACTags.maximumBlocks {
            guard let header = source.bytes(at: offset, count: 4) else { return false }
            let type = header[0] & 0x7F
            let length = Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            let start = offset + 4
            guard source.contains(offset: start, count: length), (type == 0) == (index == 0) else { return false }
            switch type {
            case 0, 1, 2: break
            case 3: guard length % 18 == 0 else { return false }
            case 4: guard commentsFill(TagRange(source, start: start, count: length)) else { return false }
            case 6: guard pictureFills(TagRange(source, start: start, count: length)) else { return false }
            default: return false
            }
            offset = start + length
            if header[0] & 0x80 != 0 {
                guard let sync = source.bytes(at: offset, count: 2) else { return false }
                return sync[0] == 0xFF && sync[1] & 0xFE == 0xF8
            }
        }
        return false
    }

    /// Whether a Vorbis comment block is exactly its vendor string and its counted comments.
    static func commentsFill(_ block: TagRange) -> Bool {
        var block = block
        guard let vendor = block.littleEndian32(), block.skip(vendor), var count = block.littleEndian32() else {
            return false
        }
        while count > 0 {
            guard let length = block.littleEndian32(), block.skip(length) else { return false }
            count -= 1
        }
        return block.remaining == 0
    }

    /// Whether a PICTURE block is exactly its fields: type, MIME type, description, four sizes and the data.
    static func pictureFills(_ block: TagRange) -> Bool {
        var block = block
        guard block.skip(4), let mime = block.bigEndian32(), block.skip(mime), let description = block.bigEndian32(),
              block.skip(description), block.skip(16), let data = block.bigEndian32(), block.skip(data) else {
            return false
        }
        return block.remaining == 0
    }

    // MARK: - MP3

    /// The facts of an MPEG layer III file whose frames follow each other without a gap from the end of its ID3v2 tag
    /// (if any) to its ID3v1 tag (if any) or its end, all of one version, rate and channel count, and whose first
    /// frame is no Xing/Info/VBRI header.
    static func mp3(_ source: TagSource) -> TrackHeaderFacts? {
        var start = 0
        if let id3 = source.bytes(at: 0, count: 10), id3.prefix(3).elementsEqual("ID3".utf8) {
            guard id3[6..<10].allSatisfy({ $0 < 0x80 }) else { return nil }
            start = 10 + id3[6..<10].reduce(0) { $0 << 7 | Int($1) } + (id3[5] & 0x10 != 0 ? 10 : 0)
        }
        var end = source.size
        let version1 = source.size >= 128 + start ? source.bytes(at: source.size - 128, count: 128) : nil
        let hasVersion1 = version1.map { $0.prefix(3).elementsEqual("TAG".utf8) } ?? false
        if hasVersion1 { end -= 128 }
        guard let first = source.bytes(at: start, count: 4), let header = MPEGFrameHeader(first),
              !hasInfoFrame(source, at: start, header: header),
              let frames = countFrames(source, from: start, to: end, like: header) else { return nil }
        var metadata = ID3v2Tags.read(source).metadata
        metadata.replayGain.fillMissing(from: LAMETag.replayGain(source))
        if hasVersion1, let version1 { ID3v1Tag.fill(&metadata, from: version1) }
        return TrackHeaderFacts(kind: .mp3, metadata: metadata, sampleRate: header.rate,
                                seconds: Double(frames * header.samples) / Double(header.rate))
    }

    /// Whether the frame at `offset` carries a Xing, Info or VBRI header (libmpg123 then takes the length from it).
    static func hasInfoFrame(_ source: TagSource, at offset: Int, header: MPEGFrameHeader) -> Bool {
        let places = [offset + 4 + header.sideInfo, offset + 6 + header.sideInfo, offset + 36]
        return places.contains { place in
            guard let word = source.bytes(at: place, count: 4) else { return false }
            return word.elementsEqual("Xing".utf8) || word.elementsEqual("Info".utf8) || word.elementsEqual("VBRI".utf8)
        }
    }

    /// Bytes read at a time by the frame walk.
    static let walkBlockBytes = 65_536

    /// The number of frames like `first` that fill `start..<end` of the file exactly, or nil when anything else is met.
    static func countFrames(_ source: TagSource, from start: Int, to end: Int, like first: MPEGFrameHeader) -> Int? {
        var block: [UInt8] = []
        var blockStart = 0
        var offset = start
        var frames = 0
        while offset < end {
            guard offset + 4 <= end else { return nil }
            if offset + 4 > blockStart + block.count {
                blockStart = offset
                block = source.block(at: offset, count: min(walkBlockBytes, end - offset))
                guard block.count >= 4 else { return nil }
            }
            let at = offset - blockStart
            guard let header = MPEGFrameHeader(block[at..<at + 4]), header.isLike(first) else { return nil }
            offset += header.bytes
            frames += 1
        }
        return offset == end && frames > 0 ? frames : nil
    }
}

/// One MPEG audio layer III frame header (four bytes), as far as a length needs it; free-format and reserved values
/// are refused.
struct MPEGFrameHeader {
    /// 3 for MPEG 1, 2 for MPEG 2, 0 for MPEG 2.5.
    var version: UInt8
    /// The rate in Hz.
    var rate: Int
    /// Whether the frame is mono.
    var mono: Bool
    /// The frame's length in bytes.
    var bytes: Int

    /// Samples per channel in a frame.
    var samples: Int { version == 3 ? 1152 : 576 }

    /// The side information's length, after which a Xing/Info header stands.
    var sideInfo: Int { version == 3 ? (mono ? 17 : 32) : (mono ? 9 : 17) }

    private static let rates: [UInt8: [Int]] = [3: [44100, 48000, 32000], 2: [22050, 24000, 16000],
                                               0: [11025, 12000, 8000]]
    private static let version1Bitrates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    private static let version2Bitrates = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]

    init?(_ word: some Collection<UInt8>) {
        guard word.count == 4 else { return nil }
        let b = Array(word)
        // Sync, then layer III (layer bits 01).
        guard b[0] == 0xFF, b[1] & 0xE0 == 0xE0, b[1] >> 1 & 3 == 1 else { return nil }
        let version = b[1] >> 3 & 3
        let bitrateIndex = Int(b[2] >> 4)
        let rateIndex = Int(b[2] >> 2 & 3)
        guard let rates = Self.rates[version], bitrateIndex != 0, bitrateIndex != 15, rateIndex != 3 else {
            return nil
        }
        self.version = version
        rate = rates[rateIndex]
        mono = b[3] >> 6 == 3
        let kilobits = (version == 3 ? Self.version1Bitrates : Self.version2Bitrates)[bitrateIndex]
        bytes = (version == 3 ? 144_000 : 72_000) * kilobits / rate + Int(b[2] >> 1 & 1)
    }

    /// Whether `other` is of the same version, rate and channel count.
    func isLike(_ other: MPEGFrameHeader) -> Bool {
        version == other.version && rate == other.rate && mono == other.mono
    }
}

/// The ID3v1 tag (the file's last 128 bytes, "TAG" first): fixed-width Latin-1 fields, the genre a number in ID3's
/// list, and in ID3v1.1 a track number in the comment's last byte. Fills only what the ID3v2 tag left empty.
enum ID3v1Tag {
    static func fill(_ metadata: inout TrackMetadata, from tag: [UInt8]) {
        guard tag.count == 128 else { return }
        func text(_ range: Range<Int>) -> String? {
            TagText.trimmed(TagText.latin1(tag[range].prefix { $0 != 0 }))
        }
        metadata.title = metadata.title ?? text(3..<33)
        metadata.artist = metadata.artist ?? text(33..<63)
        metadata.album = metadata.album ?? text(63..<93)
        metadata.date = metadata.date ?? text(93..<97)
        metadata.genre = metadata.genre ?? ID3Genres.name(Int(tag[127]))
        if metadata.trackNumber == nil, tag[125] == 0, tag[126] != 0 {
            metadata.trackNumber = Int(tag[126])
        }
    }
}
