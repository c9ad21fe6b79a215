// MP3Decoder: the one owner of one libmpg123 handle, the AudioDecoder for MPEG audio. It opens a file, settles the
// output format (always 16-bit signed stereo at 44.1 or 48 kHz), reads the tags and decodes straight into the
// caller's buffer. No C type leaves this file.
import CMPG123
#if canImport(Glibc)
import Glibc
import TrackPaths
#endif

/// Decodes one MPEG audio file (layer III, and I/II as libmpg123 allows) to 16-bit stereo PCM.
///
/// Native 44.1 and 48 kHz are kept; other MPEG rates (8 to 32 kHz, MPEG-2 and 2.5) are converted to
/// 44.1 kHz by libmpg123's own resampler. Mono is delivered as two identical channels. Gapless
/// (LAME/Info tag) trimming is on, so frame 0 is the first real sample of the track.
///
/// Not thread-safe: use an instance from one thread at a time (the decode worker's).
public final class MP3Decoder: AudioDecoder {
    /// The output rates accepted without conversion.
    public static let nativeOutputRates = [44_100, 48_000]

    /// Whether this libmpg123 can convert other rates (its "NtoM" resampler is built in).
    public static var canConvertRates: Bool {
        mpg123_feature2(Int32(MPG123_FEATURE_DECODE_NTOM.rawValue)) != 0
    }

    /// The format of the frames `decode(into:)` delivers now.
    public private(set) var format: AudioFormat

    /// The rate stored in the file's frame headers, before any conversion.
    public let nativeSampleRate: Int

    /// The track's length in output frames, from the Info tag or a scan, as known when opened.
    ///
    /// A truncated file decodes to fewer frames than this; compare with `positionFrame` at the end.
    public let lengthFrames: Int?

    /// The track's tags and cover picture (ID3v2, completed from ID3v1).
    public let metadata: TrackMetadata

    /// The output frame the next `decode(into:)` starts at.
    public var positionFrame: Int {
        max(0, mpg123_tell(handle))
    }

    /// The libmpg123 handle this object alone owns.
    private let handle: OpaquePointer

    /// The file the handle reads, in large blocks (see MP3FileReader.swift); it outlives the handle's use of it.
    private let reader: MP3FileReader

    /// A step libmpg123 reported together with frames, held back to report on the next call.
    private var heldStep: HeldStep?

    /// Whether libmpg123 has said the track is done.
    private var finished = false

    /// Consecutive decode calls that produced no frames, to give up on data that never decodes.
    private var callsWithoutProgress = 0

    /// After this many calls in a row without a frame, decoding is declared failed.
    private static let progressLimit = 256

    /// What to report on the next `decode(into:)` call before decoding further.
    private enum HeldStep {
        case formatChanged(AudioFormat)
        case failure(DecodeError)
    }

    /// Opens the file at `path`, settles the output format and reads the tags.
    ///
    /// Throws `.cannotOpen` for missing, unreadable or non-regular paths, `.empty` for zero bytes,
    /// `.noAudio` for tag-only files, `.notMPEGAudio` for other data and `.unsupportedFormat` for rates
    /// this build cannot deliver.
    ///
    /// With `outputRate` (44100 or 48000) every track is delivered at that rate, converted by libmpg123 when
    /// its own rate differs: a queue then plays on one stream, with no gap for a rate change between tracks.
    public init(path: TrackPath, outputRate: Int? = nil) throws(DecodeError) {
        guard libraryReady else {
            throw DecodeError(kind: .libraryFailure, message: "mpg123_init failed")
        }
        try Self.checkIsReadableFile(path)

        var creationError: Int32 = MPG123_OK.rawValue
        guard let newHandle = mpg123_new(nil, &creationError) else {
            throw DecodeError(kind: .libraryFailure, message: Self.plainMessage(creationError))
        }
        handle = newHandle

        do throws(DecodeError) {
            let rates = outputRate.map { [$0] } ?? Self.nativeOutputRates
            try Self.configure(newHandle, rates: rates)
            // libmpg123 walks every frame a LAME/Xing tag claims where it must reach one: with a rate conversion
            // its gapless set-up at open (a 2 KB file whose tag claimed 1.4 billion frames took 25 s of CPU), and
            // at the file's own rate a seek into the claimed middle (a 2.5 KB file took 33 s); both found by
            // fuzzing. A tag that claims more frames than the file's bytes can hold is read as plain data
            // instead; an honest tag (also that of a truncated file) is kept.
            if Self.infoTagOverclaims(path) {
                let ignoreTag = Int(MPG123_IGNORE_INFOFRAME.rawValue)
                guard mpg123_param2(newHandle, Int32(MPG123_ADD_FLAGS.rawValue), ignoreTag, 0) == MPG123_OK.rawValue
                else { throw DecodeError(kind: .libraryFailure, message: Self.handleMessage(newHandle)) }
            }
            // The raw bytes: a name that is not UTF-8 opens as it is.
            reader = try MP3FileReader(path: path)
            guard MP3FileReader.install(on: newHandle),
                  mpg123_open_handle(newHandle, reader.handle) == MPG123_OK.rawValue else {
                throw DecodeError(kind: .cannotOpen, message: Self.handleMessage(newHandle))
            }
            let tag = Self.readID3v2(path)
            let opened = try Self.detectFormat(newHandle, rates: rates, hasID3v2: tag.hasTag)
            format = opened.format
            nativeSampleRate = opened.nativeRate
            lengthFrames = Self.measureLength(newHandle)
            metadata = Self.readMetadata(newHandle, id3v2: tag.metadata)
        } catch {
            // The handle is ours from the start; deinit does not run for a failed init.
            mpg123_close(newHandle)
            mpg123_delete(newHandle)
            throw error
        }
    }

    /// Opens the file at the path spelled by `path` (its UTF-8 bytes); see `init(path: TrackPath, outputRate:)`.
    public convenience init(path: String, outputRate: Int? = nil) throws(DecodeError) {
        try self.init(path: TrackPath(path), outputRate: outputRate)
    }

    deinit {
        mpg123_close(handle)
        mpg123_delete(handle)
    }

    /// Decodes into `buffer` (interleaved stereo samples) as many whole frames as fit.
    ///
    /// Returns `.frames(n)` with `n > 0`, `.formatChanged` when the stream changes format mid-way
    /// (the frames before were all delivered), or `.finished`. A truncated file simply finishes.
    /// Throws `.decodeFailed` (or `.unsupportedFormat`) when the data stops decoding; once the
    /// frames decoded before the failure have been delivered.
    public func decode(into buffer: UnsafeMutableBufferPointer<Int16>) throws(DecodeError) -> DecodeStep {
        precondition(buffer.count >= FrameRing.samplesPerFrame, "decode needs room for at least one frame")
        if let held = heldStep {
            heldStep = nil
            switch held {
            case .formatChanged(let newFormat):
                format = newFormat
                return .formatChanged(newFormat)
            case .failure(let error):
                finished = true
                throw error
            }
        }
        while !finished {
            let wholeFrameSamples = buffer.count - buffer.count % FrameRing.samplesPerFrame
            var bytesDone = 0
            let result = mpg123_read(handle, buffer.baseAddress, wholeFrameSamples * MemoryLayout<Int16>.size,
                                     &bytesDone)
            let frames = bytesDone / FrameRing.bytesPerFrame
            try noteProgress(frames: frames)

            switch result {
            case MPG123_OK.rawValue:
                if frames > 0 {
                    return .frames(frames)
                }
            case MPG123_DONE.rawValue:
                // libmpg123 may hand over the track's last frames together with DONE.
                finished = true
                if frames > 0 {
                    return .frames(frames)
                }
            case MPG123_NEW_FORMAT.rawValue:
                let newFormat = try Self.currentFormat(handle)
                // A re-setup to the same output format is invisible to the listener: keep going.
                if newFormat != format {
                    if frames > 0 {
                        heldStep = .formatChanged(newFormat)
                        return .frames(frames)
                    }
                    format = newFormat
                    return .formatChanged(newFormat)
                }
                if frames > 0 {
                    return .frames(frames)
                }
            default:
                var error = Self.decodingError(handle, result: result)
                // The file opened as MPEG audio, so a lost sync now means damage, not the wrong kind of file.
                if error.kind == .notMPEGAudio {
                    error.kind = .decodeFailed
                }
                if frames > 0 {
                    heldStep = .failure(error)
                    return .frames(frames)
                }
                finished = true
                throw error
            }
        }
        return .finished
    }

    /// Moves to output frame `frame` of the track (sample-accurate), so the next decode starts there.
    ///
    /// Frames beyond the end leave the decoder finished; negative frames mean 0.
    public func seek(toFrame frame: Int) throws(DecodeError) {
        let result = mpg123_seek(handle, off_t(max(0, frame)), SEEK_SET)
        if result < 0 {
            throw DecodeError(kind: .seekFailed, message: Self.handleMessage(handle))
        }
        heldStep = nil
        finished = false
        callsWithoutProgress = 0
    }

    // MARK: - Opening

    /// Fails early, with the system's reason, for paths libmpg123 would open but not read (directories), and refuses
    /// files whose first bytes announce another format (`AudioFileKind.identify`).
    private static func checkIsReadableFile(_ path: TrackPath) throws(DecodeError) {
        let kind = try AudioFileKind.identify(path)
        guard kind == .mp3 else {
            throw DecodeError(kind: .notMPEGAudio, message: "The file is \(kind.displayName), not MPEG audio")
        }
    }

    /// Sets the handle's flags and the table of output formats it may choose from.
    static func configure(_ handle: OpaquePointer, rates: [Int]) throws(DecodeError) {
        // ADD_FLAGS, never FLAGS: replacing the defaults loses flags libmpg123 needs to resync and
        // to set up the output for damaged files. SKIP_ID3V2: libmpg123 would read the whole ID3v2 tag into memory
        // (a 50 MB cover with it); ID3v2Tags reads what is wanted of it instead.
        let flags = Int(MPG123_QUIET.rawValue | MPG123_GAPLESS.rawValue | MPG123_SKIP_ID3V2.rawValue)
        guard mpg123_param2(handle, Int32(MPG123_ADD_FLAGS.rawValue), flags, 0) == MPG123_OK.rawValue else {
            throw DecodeError(kind: .libraryFailure, message: handleMessage(handle))
        }
        guard mpg123_format_none(handle) == MPG123_OK.rawValue else {
            throw DecodeError(kind: .libraryFailure, message: handleMessage(handle))
        }
        // Only stereo is allowed, so mono streams are duplicated into both channels by libmpg123.
        // Only these rates are allowed, so any other native rate goes through its resampler.
        for rate in rates {
            let accepted = mpg123_format(handle, rate, Int32(MPG123_STEREO.rawValue),
                                         Int32(MPG123_ENC_SIGNED_16.rawValue))
            guard accepted == MPG123_OK.rawValue else {
                throw DecodeError(kind: .libraryFailure, message: handleMessage(handle))
            }
        }
    }

    /// Parses up to the first audio frame and returns the output format libmpg123 settled on.
    private static func detectFormat(_ handle: OpaquePointer, rates: [Int], hasID3v2: Bool) throws(DecodeError)
        -> (format: AudioFormat, nativeRate: Int) {
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        // Also clears the "new format" flag, so the first decode call goes straight to audio.
        let result = mpg123_getformat(handle, &rate, &channels, &encoding)
        let nativeRate = nativeRate(handle)
        if result == MPG123_DONE.rawValue {
            // The end came before any frame: either a file holding only tags, or data in which the
            // resync search ran out of file before its limit (random bytes can do that).
            if hasID3v2 || mpg123_meta_check(handle) & MPG123_ID3 != 0 {
                throw DecodeError(kind: .noAudio, message: "The file holds ID3 tags but no MPEG audio frames")
            }
            throw DecodeError(kind: .notMPEGAudio, message: "No MPEG audio frames found in the file")
        }
        if result != MPG123_OK.rawValue {
            if mpg123_errcode(handle) == MPG123_BAD_OUTFORMAT.rawValue {
                throw unsupportedRate(nativeRate)
            }
            throw decodingError(handle, result: result)
        }
        let format = try validated(rate: rate, channels: channels, encoding: encoding, rates: rates)
        return (format, nativeRate ?? format.sampleRate)
    }

    /// The format libmpg123 decodes to now, checked against what this decoder promises.
    static func currentFormat(_ handle: OpaquePointer) throws(DecodeError) -> AudioFormat {
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        guard mpg123_getformat(handle, &rate, &channels, &encoding) == MPG123_OK.rawValue else {
            throw decodingError(handle, result: MPG123_ERR.rawValue)
        }
        return try validated(rate: rate, channels: channels, encoding: encoding, rates: nativeOutputRates)
    }

    /// Turns libmpg123's format triple into an `AudioFormat`, refusing anything unexpected.
    private static func validated(
        rate: Int, channels: Int32, encoding: Int32, rates: [Int]
    ) throws(DecodeError) -> AudioFormat {
        // The format table allows nothing else; this guards against a library that ignores it.
        guard rates.contains(rate),
              channels == Int32(MPG123_STEREO.rawValue),
              encoding == Int32(MPG123_ENC_SIGNED_16.rawValue) else {
            throw DecodeError(kind: .unsupportedFormat,
                              message: "libmpg123 chose \(rate) Hz, \(channels) channels, encoding \(encoding)")
        }
        return AudioFormat(sampleRate: rate, channels: Int(channels))
    }

    /// Whether the frame last parsed is single-channel (libmpg123 delivers it as two identical channels).
    public var isMono: Bool {
        var info = mpg123_frameinfo2()
        return mpg123_info2(handle, &info) == MPG123_OK.rawValue && info.mode == Int32(MPG123_M_MONO.rawValue)
    }

    /// The sample rate written in the stream's frame headers, if a frame has been parsed.
    private static func nativeRate(_ handle: OpaquePointer) -> Int? {
        var info = mpg123_frameinfo2()
        guard mpg123_info2(handle, &info) == MPG123_OK.rawValue, info.rate > 0 else { return nil }
        return info.rate
    }

    /// The error for a stream whose rate can be neither kept nor converted.
    private static func unsupportedRate(_ nativeRate: Int?) -> DecodeError {
        let rateText = nativeRate.map { "\($0) Hz" } ?? "Its sample rate"
        let reason = canConvertRates
            ? "cannot be converted to 44100 Hz by libmpg123"
            : "needs conversion to 44100 Hz, and this libmpg123 was built without its resampler"
        return DecodeError(kind: .unsupportedFormat,
                           message: "\(rateText) is not 44100 or 48000 Hz and \(reason)")
    }

    /// The fewest bytes any MPEG audio frame takes, with room to spare (the smallest real ones, MPEG-2.5 layer III
    /// at 8 kbps, take 48): a LAME/Xing tag claiming more frames than the file has room for is lying.
    static let minimumFrameBytes = 16

    /// Whether the file's LAME/Xing tag cannot be believed: it claims more frames than the file can hold, or the
    /// probe finds no frame to take a format from (a tag in front of frames that only a converting handle accepts
    /// sent that handle on the same walk; found by fuzzing). Probed with a handle of its own that accepts every
    /// format, so that no conversion (and no walk over the claimed frames) is set up.
    private static func infoTagOverclaims(_ path: TrackPath) -> Bool {
        guard let probe = mpg123_new(nil, nil) else { return false }
        defer { mpg123_delete(probe) }
        let probeFlags = Int(MPG123_QUIET.rawValue | MPG123_SKIP_ID3V2.rawValue)
        guard mpg123_param2(probe, Int32(MPG123_ADD_FLAGS.rawValue), probeFlags, 0)
            == MPG123_OK.rawValue, mpg123_format_all(probe) == MPG123_OK.rawValue,
            path.withCString({ mpg123_open(probe, $0) }) == MPG123_OK.rawValue
        else { return false }
        defer { mpg123_close(probe) }
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        guard mpg123_getformat(probe, &rate, &channels, &encoding) == MPG123_OK.rawValue else { return true }
        var status = stat()
        guard path.withCString({ stat($0, &status) }) == 0 else { return false }
        let claimedFrames = Int(mpg123_framelength(probe))
        return claimedFrames > Int(status.st_size) / minimumFrameBytes
    }

    /// The exact length when cheap: the Info tag's count if there is one, else a header scan.
    private static func measureLength(_ handle: OpaquePointer) -> Int? {
        var encoderDelay = -1
        var unused = 0.0
        let tagged = mpg123_getstate2(handle, Int32(MPG123_ENC_DELAY.rawValue), &encoderDelay, &unused)
            == MPG123_OK.rawValue && encoderDelay >= 0
        // Without a LAME/Info tag the length is a guess from the file size; a scan reads only frame
        // headers (no decoding) and makes it exact. With a tag the tag is exact, and keeping it
        // also lets callers detect truncation (a scan would measure the damaged file instead).
        if !tagged {
            _ = mpg123_scan(handle)
        }
        let length = mpg123_length(handle)
        return length >= 0 ? length : nil
    }

    // MARK: - Tags

    /// The ID3v2 tag at the start of the file, read by `ID3v2Tags`, and the LAME tag's gains (nothing when the file
    /// cannot be read).
    private static func readID3v2(_ path: TrackPath) -> (metadata: TrackMetadata, hasTag: Bool) {
        let descriptor = path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { return (TrackMetadata(), false) }
        defer { close(descriptor) }
        guard let source = TagSource(descriptor: descriptor, path: path) else { return (TrackMetadata(), false) }
        var found = ID3v2Tags.read(source)
        // The LAME tag's gains count only where the ID3v2 tag gave none.
        found.metadata.replayGain.fillMissing(from: LAMETag.replayGain(source))
        return found
    }

    /// The ID3v2 fields, completed from ID3v1 (Latin-1, read by libmpg123 from the file's last 128 bytes; the genre a
    /// number in ID3's list, 255 for none).
    private static func readMetadata(_ handle: OpaquePointer, id3v2: TrackMetadata) -> TrackMetadata {
        var metadata = id3v2
        var version1: UnsafeMutablePointer<mpg123_id3v1>?
        var version2: UnsafeMutablePointer<mpg123_id3v2>?
        guard mpg123_id3(handle, &version1, &version2) == MPG123_OK.rawValue, let tag = version1?.pointee else {
            return metadata
        }
        metadata.title = metadata.title ?? latin1Text(tag.title)
        metadata.artist = metadata.artist ?? latin1Text(tag.artist)
        metadata.album = metadata.album ?? latin1Text(tag.album)
        metadata.date = metadata.date ?? latin1Text(tag.year)
        metadata.genre = metadata.genre ?? ID3Genres.name(Int(tag.genre))
        // ID3v1.1: a zero at comment byte 28 makes byte 29 the track number.
        let comment = withUnsafeBytes(of: tag.comment) { Array($0) }
        if metadata.trackNumber == nil, comment.count == 30, comment[28] == 0, comment[29] != 0 {
            metadata.trackNumber = Int(comment[29])
        }
        return metadata
    }

    /// An ID3v1 fixed-width field (NUL- or space-padded Latin-1), or nil if blank.
    private static func latin1Text<Field>(_ field: Field) -> String? {
        withUnsafeBytes(of: field) { bytes in
            let used = bytes.prefix { $0 != 0 }
            var scalars = String.UnicodeScalarView()
            scalars.append(contentsOf: used.map { Unicode.Scalar($0) })
            return nonBlank(String(scalars))
        }
    }

    /// `text` without surrounding white space, or nil if nothing is left.
    private static func nonBlank(_ text: String) -> String? {
        let trimmed = text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
        return trimmed.isEmpty ? nil : String(trimmed)
    }

    // MARK: - Errors and progress

    /// Counts calls that yield nothing, so garbage that never decodes cannot keep a caller looping.
    private func noteProgress(frames: Int) throws(DecodeError) {
        if frames > 0 {
            callsWithoutProgress = 0
            return
        }
        callsWithoutProgress += 1
        if callsWithoutProgress > Self.progressLimit {
            finished = true
            throw DecodeError(kind: .decodeFailed,
                              message: "No audio decoded after \(Self.progressLimit) attempts; giving up")
        }
    }

    /// The typed error for a failed open-time parse or decode call.
    static func decodingError(_ handle: OpaquePointer, result: Int32) -> DecodeError {
        let code = result == MPG123_ERR.rawValue ? mpg123_errcode(handle) : result
        let message = result == MPG123_ERR.rawValue ? handleMessage(handle) : plainMessage(result)
        switch code {
        case MPG123_RESYNC_FAIL.rawValue, MPG123_OUT_OF_SYNC.rawValue:
            return DecodeError(kind: .notMPEGAudio, message: message)
        case MPG123_BAD_OUTFORMAT.rawValue:
            return DecodeError(kind: .unsupportedFormat, message: message)
        default:
            return DecodeError(kind: .decodeFailed, message: message)
        }
    }

    /// libmpg123's description of the handle's last error.
    static func handleMessage(_ handle: OpaquePointer) -> String {
        guard let text = mpg123_strerror(handle) else { return "Unknown libmpg123 error" }
        return String(cString: text)
    }

    /// libmpg123's description of an error code.
    static func plainMessage(_ code: Int32) -> String {
        guard let text = mpg123_plain_strerror(code) else { return "Unknown libmpg123 error \(code)" }
        return String(cString: text)
    }
}

/// Whether `mpg123_init` succeeded; evaluated once per process, thread-safely, on first use.
///
/// Since libmpg123 1.27 the call does nothing, but older libraries need it before `mpg123_new`.
let libraryReady: Bool = mpg123_init() == MPG123_OK.rawValue

extension MP3Decoder: ScalingDecoder {
    /// libmpg123's output volume (no ReplayGain of its own is asked: MPG123_RVA stays off), applied in its synthesis:
    /// ReplayGain's gain costs nothing more than decoding. Set before the first frame is decoded.
    func scaleOutput(by linear: Double) -> Bool {
        mpg123_volume(handle, linear) == MPG123_OK.rawValue
    }
}
