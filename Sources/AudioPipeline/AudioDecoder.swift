// AudioDecoder: what every decoder offers the decode thread (open, format, decode frames, seek to a frame; closing
// is the owner's deinit), the values they share, and the choice of decoder by what a file's first bytes say it is,
// never by its name: a FLAC called .mp3 plays as the FLAC it is.
#if canImport(Glibc)
import Glibc
import TrackPaths
#endif

/// The PCM format a decoder delivers: always 16-bit signed, interleaved stereo.
public struct AudioFormat: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Frames per second.
    public var sampleRate: Int
    /// Interleaved channels per frame; the decoders always deliver 2 (mono is duplicated).
    public var channels: Int

    /// Creates a format; `channels` defaults to the decoders' stereo output.
    public init(sampleRate: Int, channels: Int = 2) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// For example "44100 Hz, 2 ch, s16".
    public var description: String { "\(sampleRate) Hz, \(channels) ch, s16" }
}

/// What a file's tags say (ID3v2 or ID3v1 for MP3, Vorbis comments and PICTURE blocks for FLAC, Vorbis, Opus), as
/// Earshot's own readers find it (`ID3v2Tags`, `FLACTags`, `OggTags`).
public struct TrackMetadata: Equatable, Sendable {
    /// The track title, if tagged.
    public var title: String?
    /// The performing artist, if tagged.
    public var artist: String?
    /// The album, if tagged.
    public var album: String?
    /// The album's artist (ID3 TPE2, Vorbis ALBUMARTIST), if tagged.
    public var albumArtist: String?
    /// The track's number on its album: "3/12" is 3.
    public var trackNumber: Int?
    /// The disc's number in its set (ID3 TPOS, Vorbis DISCNUMBER): "2/3" is 2.
    public var discNumber: Int?
    /// The genre by name: ID3's numbered genres (ID3v1's genre byte, a TCON "(17)" or "17") as their names, and a
    /// "(4)Eurodisco" as its refinement, "Eurodisco" (ID3Genres).
    public var genre: String?
    /// The date as written (ID3 TDRC or TYER, Vorbis DATE), for example "1959" or "1959-08-17".
    public var date: String?
    /// The composer (ID3 TCOM, Vorbis COMPOSER).
    public var composer: String?
    /// MusicBrainz identifiers, where a tagger such as Picard wrote them.
    public var musicBrainz = MusicBrainzIDs()
    /// The cover picture (the front cover if tagged as one, else the first picture).
    public var cover: CoverPicture?
    /// The ReplayGain (or Opus R128) values the tags carry, and the ones dropped as bad.
    public var replayGain = ReplayGainTags()
    /// Why an embedded picture was not taken (too large, malformed), when none was: no path, no tag text.
    public var coverProblem: String?

    /// Whether the file embeds a picture, taken or not (too large, malformed).
    public var hasEmbeddedCover: Bool { cover != nil || coverProblem != nil }

    /// Creates metadata; every field defaults to untagged.
    public init(title: String? = nil, artist: String? = nil, album: String? = nil, albumArtist: String? = nil,
                trackNumber: Int? = nil, cover: CoverPicture? = nil, coverProblem: String? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
        self.albumArtist = albumArtist
        self.trackNumber = trackNumber
        self.cover = cover
        self.coverProblem = coverProblem
    }
}

/// The MusicBrainz identifiers a file's tags carry (ID3 TXXX "MusicBrainz ... Id" and UFID frames, Vorbis
/// MUSICBRAINZ_* comments), as the text written.
public struct MusicBrainzIDs: Equatable, Sendable {
    /// The recording (ID3 UFID of http://musicbrainz.org, Vorbis MUSICBRAINZ_TRACKID).
    public var track: String?
    /// The release.
    public var album: String?
    /// The track's artist.
    public var artist: String?
    /// The release's artist.
    public var albumArtist: String?

    /// Creates a set of identifiers; every one defaults to absent.
    public init(track: String? = nil, album: String? = nil, artist: String? = nil, albumArtist: String? = nil) {
        self.track = track
        self.album = album
        self.artist = artist
        self.albumArtist = albumArtist
    }
}

/// Why a file could not be opened, decoded or positioned, with the decoding library's own wording.
///
/// The message never contains the file's path or tag text, so it can be logged as it is.
public struct DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Kind: String, Equatable, Sendable {
        /// The path is missing, unreadable or not a regular file.
        case cannotOpen
        /// The file has no bytes at all.
        case empty
        /// The file has bytes (for example only an ID3 tag) but no MPEG audio frames.
        case noAudio
        /// The data is none of the formats Earshot plays (random bytes, WAV, AIFF...): it is not MPEG audio, and its
        /// first bytes announce neither FLAC nor Ogg.
        case notMPEGAudio
        /// The file announces FLAC or Ogg, but the headers that must follow are missing or damaged (an Opus file
        /// with no OpusHead, a FLAC file with no STREAMINFO), or the Ogg stream is neither Vorbis nor Opus.
        case badHeaders
        /// The audio's format cannot be delivered as 16-bit stereo (more than two channels, a rate libmpg123
        /// cannot convert).
        case unsupportedFormat
        /// Decoding failed part-way, or made no progress for too long.
        case decodeFailed
        /// A seek was refused.
        case seekFailed
        /// The library itself failed (no handle, bad parameter): not the file's fault.
        case libraryFailure
    }

    /// What kind of failure this is.
    public var kind: Kind
    /// A human-readable reason, from the library (`mpg123_strerror`, `sf_strerror`) or the decoder.
    public var message: String

    /// Creates an error of `kind` with `message`.
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// For example "notMPEGAudio: Failed to find valid MPEG data within limit on resync.".
    public var description: String { "\(kind.rawValue): \(message)" }
}

/// The outcome of one `AudioDecoder.decode(into:)` call.
public enum DecodeStep: Equatable, Sendable {
    /// This many frames were written at the start of the buffer.
    case frames(Int)
    /// Frames from now on are in this format (a stream that changes format mid-way); nothing written.
    case formatChanged(AudioFormat)
    /// The track is over; nothing written. Further calls keep returning `.finished` until a seek.
    case finished
}

/// One open audio file, decoded to 16-bit interleaved stereo: what the decode thread needs of any format.
///
/// Frame 0 is the track's first real sample (encoder delay, Opus's pre-skip, already removed) and the last frame is
/// its last real sample (padding removed), so tracks cut from one recording join with no gap. A decoder owns its
/// library handle and closes it in `deinit`. Not thread-safe: one thread at a time (the decode worker's).
public protocol AudioDecoder: AnyObject {
    /// The format of the frames `decode(into:)` delivers now.
    var format: AudioFormat { get }
    /// The track's length in output frames as its headers tell it when opened, if they do; a truncated file decodes
    /// to fewer.
    var lengthFrames: Int? { get }
    /// The track's tags and cover picture.
    var metadata: TrackMetadata { get }
    /// The output frame the next `decode(into:)` starts at.
    var positionFrame: Int { get }
    /// Decodes into `buffer` (interleaved stereo samples) as many whole frames as fit: `.frames(n)` with `n > 0`,
    /// `.formatChanged`, or `.finished` (a live stream with nothing received yet returns `.frames(0)` after a short
    /// wait). Throws once decoding has failed, after the frames decoded before it.
    func decode(into buffer: UnsafeMutableBufferPointer<Int16>) throws(DecodeError) -> DecodeStep
    /// Moves to output frame `frame` so the next decode starts there; beyond the end the decoder is finished.
    func seek(toFrame frame: Int) throws(DecodeError)
    /// Whether the audio is mono, delivered as two identical channels: what a loudness measurement needs to count
    /// the one channel as what it is (LoudnessMeter). False unless the decoder knows it.
    var isMono: Bool { get }
}

extension AudioDecoder {
    /// Streams and wrappers that do not know say stereo.
    public var isMono: Bool { false }
}

/// The formats Earshot plays and the decoder for each, chosen by content.
public enum AudioFileKind: String, Equatable, Sendable, CaseIterable {
    /// MPEG audio (layer III, and I/II), through libmpg123.
    case mp3
    /// FLAC (native, not in Ogg), through libsndfile.
    case flac
    /// Ogg Vorbis, through libsndfile.
    case vorbis
    /// Ogg Opus, through libsndfile.
    case opus

    /// The kind in words, for messages: for example "a FLAC file".
    public var displayName: String {
        switch self {
        case .mp3: return "MPEG audio"
        case .flac: return "a FLAC file"
        case .vorbis: return "an Ogg Vorbis file"
        case .opus: return "an Ogg Opus file"
        }
    }

    /// The file name endings (lower case, with the dot) a directory scan takes as music: what `earshot add DIR`
    /// queues. Names only choose which files to queue; what a file plays as is always its content.
    public static let fileExtensions = [".mp3", ".flac", ".ogg", ".oga", ".opus"]

    /// The MIME types of what plays, for MPRIS's `SupportedMimeTypes`.
    public static let mimeTypes = ["audio/mpeg", "audio/flac", "audio/ogg", "audio/vorbis", "audio/opus"]

    /// Opens the file at `path` with the decoder its content calls for.
    ///
    /// `outputRate` asks for every track at the rate already playing: libmpg123 converts MP3s to it; the other
    /// decoders deliver their own rate, and the decode worker announces the change (`.formatChange`).
    /// Files only: the decode worker opens internet streams too (`openDecoder(path:outputRate:cancellation:)`,
    /// StreamConnection.swift), which keeps the network out of what reads tags, pictures and loudness.
    public static func openDecoder(path: TrackPath, outputRate: Int? = nil) throws(DecodeError) -> any AudioDecoder {
        switch try identify(path) {
        case .mp3: return try MP3Decoder(path: path, outputRate: outputRate)
        case let kind: return try SndfileDecoder(path: path, kind: kind)
        }
    }

    /// What the file's first bytes say it is. Throws for files that cannot be read, are empty, or announce a
    /// format Earshot does not play; anything unannounced is left to libmpg123, which looks for MPEG frames.
    public static func identify(_ path: TrackPath) throws(DecodeError) -> AudioFileKind {
        try checkIsReadableFile(path)
        let head = try firstBytes(of: path, count: 64)
        func starts(with text: String, at offset: Int = 0) -> Bool {
            let bytes = Array(text.utf8)
            return head.count >= offset + bytes.count && Array(head[offset..<offset + bytes.count]) == bytes
        }
        if starts(with: "fLaC") { return .flac }
        if starts(with: "OggS") {
            // The first page holds the first packet alone: its identification header names the codec. The packet
            // starts after the 27-byte page header and the segment table, whose length is the page's byte 26.
            let packet = 27 + Int(head.count > 26 ? head[26] : 0)
            if starts(with: "\u{1}vorbis", at: packet) { return .vorbis }
            if starts(with: "OpusHead", at: packet) { return .opus }
            let what = starts(with: "OpusTags", at: packet) ? "an Opus stream with no OpusHead header"
                : starts(with: "\u{7F}FLAC", at: packet) ? "Ogg FLAC, which is not played (native FLAC is)"
                : "an Ogg stream whose first packet is neither Vorbis nor Opus"
            throw DecodeError(kind: .badHeaders, message: "The file is \(what)")
        }
        // libmpg123 can find a false frame header inside PCM samples and play a burst of noise before giving up, so
        // containers it would misread never reach it.
        let others = [("RIFF", "a RIFF/WAV file"), ("FORM", "an AIFF file")]
        if let (_, name) = others.first(where: { starts(with: $0.0) }) {
            throw DecodeError(kind: .notMPEGAudio, message: "The file is \(name), not a format Earshot plays")
        }
        return .mp3
    }

    /// Fails early, with the system's reason, for paths a library would open but not read (directories, FIFOs).
    private static func checkIsReadableFile(_ path: TrackPath) throws(DecodeError) {
        var info = stat()
        if path.withCString({ stat($0, &info) }) != 0 {
            throw DecodeError(kind: .cannotOpen, message: String(cString: strerror(errno)))
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw DecodeError(kind: .cannotOpen, message: "Is a directory, not an audio file")
        }
        // FIFOs and devices could block or never end; a music file is a regular file.
        if (info.st_mode & S_IFMT) != S_IFREG {
            throw DecodeError(kind: .cannotOpen, message: "Not a regular file")
        }
        if path.withCString({ access($0, R_OK) }) != 0 {
            throw DecodeError(kind: .cannotOpen, message: String(cString: strerror(errno)))
        }
        if info.st_size == 0 {
            throw DecodeError(kind: .empty, message: "The file is empty (0 bytes)")
        }
    }

    /// Up to `count` bytes from the start of the file (fewer for a shorter file).
    private static func firstBytes(of path: TrackPath, count: Int) throws(DecodeError) -> [UInt8] {
        let descriptor = path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else {
            throw DecodeError(kind: .cannotOpen, message: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, count - filled) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw DecodeError(kind: .cannotOpen, message: String(cString: strerror(errno))) }
            if got == 0 { break }
            filled += got
        }
        return Array(bytes.prefix(filled))
    }
}
