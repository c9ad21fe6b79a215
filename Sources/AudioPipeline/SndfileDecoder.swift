// SndfileDecoder: the one owner of one libsndfile handle, the AudioDecoder for FLAC, Ogg Vorbis and Ogg Opus. Why
// libsndfile and not libFLAC, libvorbisfile and libopusfile: scripts/compare-decoders measured them the same in
// length, gapless trimming and seeking, at speeds far above real time, and one library is one binding (README,
// "Formats"). No C type leaves this file.
import CSndfile
#if canImport(Glibc)
import Glibc
import TrackPaths
#endif

/// Decodes one FLAC, Ogg Vorbis or Ogg Opus file to 16-bit stereo PCM at the file's own rate.
///
/// libsndfile trims what the encoders add: Opus's pre-skip and end padding (from the final page's granule
/// position), Vorbis's by its granule positions, and FLAC is exact by construction; so frame 0 is the first real
/// sample and tracks cut from one recording join with no gap. Seeks are sample-accurate. Mono is delivered as two
/// identical channels; more than two channels are refused. Opus is always decoded at 48 kHz.
///
/// Not thread-safe: use an instance from one thread at a time (the decode worker's).
public final class SndfileDecoder: AudioDecoder {
    /// The format of the frames `decode(into:)` delivers (fixed for the whole file).
    public let format: AudioFormat

    /// The track's length in frames as the file's headers tell it (STREAMINFO, the last granule position).
    public let lengthFrames: Int?

    /// The track's tags and cover, from its Vorbis comments and PICTURE blocks.
    public let metadata: TrackMetadata

    /// The output frame the next `decode(into:)` starts at.
    public private(set) var positionFrame = 0

    /// Which of the three formats the file is.
    public let kind: AudioFileKind

    /// The libsndfile handle this object alone owns.
    private let handle: OpaquePointer

    /// The frames the container promises, to tell a damaged file from a whole one at its end: for Ogg the last
    /// page's granule position (less Opus's pre-skip), which libsndfile does not use when a page in the middle is
    /// lost; for FLAC STREAMINFO's count.
    private let promisedFrames: Int?

    /// Channels in the file: 1 (duplicated on output) or 2.
    private let fileChannels: Int

    /// Whether the file has one channel (delivered as two identical ones).
    public var isMono: Bool { fileChannels == 1 }

    /// The factor ReplayGain scales by, times libsndfile's 16-bit scale, once `scaleOutput(by:)` has set it: frames
    /// are then read as floats and converted here.
    private var outputFactor: Float?

    /// Where the floats are read when the output is scaled (`scratchFrames` frames), allocated by `scaleOutput(by:)`.
    private var floatScratch: UnsafeMutablePointer<Float>?

    /// Whether the end has been reached (or decoding failed); until the next seek.
    private var finished = false

    /// Opens the file at `path`, which `AudioFileKind.identify` found to be of `kind` (FLAC, Vorbis or Opus).
    ///
    /// Throws `.cannotOpen` when the file cannot be opened, `.badHeaders` when libsndfile cannot read its headers
    /// or finds another format in it than its signature announced, and `.unsupportedFormat` for more than two
    /// channels.
    public init(path: TrackPath, kind: AudioFileKind) throws(DecodeError) {
        precondition(kind != .mp3, "MPEG audio is decoded by MP3Decoder")
        self.kind = kind
        let descriptor = path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else {
            throw DecodeError(kind: .cannotOpen, message: String(cString: strerror(errno)))
        }
        var info = SF_INFO()
        // libsndfile closes the descriptor with the handle (SF_TRUE), and on a failed open does not: then it is ours.
        guard let opened = sf_open_fd(descriptor, Int32(SFM_READ), &info, Int32(SF_TRUE)) else {
            let reason = String(cString: sf_strerror(nil))
            close(descriptor)
            throw DecodeError(kind: .badHeaders, message: "libsndfile cannot read the headers: \(reason)")
        }
        handle = opened

        do throws(DecodeError) {
            try Self.check(info, is: kind)
            fileChannels = Int(info.channels)
            format = AudioFormat(sampleRate: Int(info.samplerate))
            lengthFrames = info.frames > 0 && info.frames < Int64(Int32.max) * 64 ? Int(info.frames) : nil
            let granuleFrames = kind == .flac ? nil : Self.lastGranuleFrames(descriptor, opus: kind == .opus)
            promisedFrames = [lengthFrames, granuleFrames].compactMap { $0 }.max()
            metadata = Self.readMetadata(descriptor, path: path, kind: kind)
            // Lossy decoders produce floats that may exceed full scale: clip them instead of letting them wrap.
            sf_command(opened, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        } catch {
            // The handle is ours from the start; deinit does not run for a failed init.
            sf_close(opened)
            throw error
        }
    }

    deinit {
        sf_close(handle)
        floatScratch?.deallocate()
    }

    /// Decodes into `buffer` (interleaved stereo samples) as many whole frames as fit.
    ///
    /// Returns `.frames(n)` with `n > 0` or `.finished`; the format never changes within a file. Throws
    /// `.decodeFailed` with libsndfile's reason when the data stops decoding, and when the audio ends short of the
    /// length the headers gave (truncated or damaged), each once the frames before have been delivered.
    public func decode(into buffer: UnsafeMutableBufferPointer<Int16>) throws(DecodeError) -> DecodeStep {
        precondition(buffer.count >= FrameRing.samplesPerFrame, "decode needs room for at least one frame")
        guard !finished, let base = buffer.baseAddress else { return .finished }
        let frames = buffer.count / FrameRing.samplesPerFrame
        if let outputFactor, let floatScratch {
            let got = readScaled(into: base, frames: frames, factor: outputFactor, scratch: floatScratch)
            if got > 0 {
                positionFrame += got
                return .frames(got)
            }
            return try end()
        }
        // Mono frames are read into the first half and spread to both channels in place, last frame first, so
        // every sample is read before a wider write reaches it.
        let got = Int(sf_readf_short(handle, base, sf_count_t(frames)))
        if got > 0 {
            if fileChannels == 1 {
                for index in stride(from: got - 1, through: 0, by: -1) {
                    let sample = base[index]
                    base[2 * index] = sample
                    base[2 * index + 1] = sample
                }
            }
            positionFrame += got
            return .frames(got)
        }
        return try end()
    }

    /// What a read of no frames means: the end (`.finished`), or a failure or a short file (throws).
    private func end() throws(DecodeError) -> DecodeStep {
        finished = true
        let status = sf_error(handle)
        // libsndfile may end a truncated FLAC with an error or without one, and skips a damaged Ogg page silently;
        // what gives them away is audio that ends short of the length the headers gave (STREAMINFO's count, the
        // last page's granule position). Reported after the frames that did decode, as libmpg123's damage is.
        let short = promisedFrames.flatMap { positionFrame < $0 ? $0 : nil }.map {
            "the audio ends after \(positionFrame) of the \(String($0)) frames its headers give: truncated or damaged"
        }
        if status != Int32(SF_ERR_NO_ERROR) {
            let reason = String(cString: sf_error_number(status))
            throw DecodeError(kind: .decodeFailed, message: short.map { "\(reason); \($0)" } ?? reason)
        }
        if let short {
            throw DecodeError(kind: .decodeFailed, message: "The file is damaged: \(short)")
        }
        return .finished
    }

    /// Moves to frame `frame` of the track (sample-accurate), so the next decode starts there.
    ///
    /// Frames at or beyond the end leave the decoder finished; negative frames mean 0.
    public func seek(toFrame frame: Int) throws(DecodeError) {
        let target = max(0, frame)
        if let lengthFrames, target >= lengthFrames {
            finished = true
            positionFrame = lengthFrames
            return
        }
        // libsndfile lands a Vorbis seek on the right frame, but the first block it decodes there can lack the
        // previous block's overlap: up to a few thousand frames that are not the track's (FormatDecoderTests saw samples
        // up to 11 000 off in the first 1 024 frames after 4 of its 45 seeks). So a lossy seek lands
        // `lossyPreroll` frames early and decodes its way to the target, which primes the decoder with real audio.
        let start = kind == .flac ? target : max(0, target - Self.lossyPreroll)
        guard sf_seek(handle, sf_count_t(start), SEEK_SET) == sf_count_t(start) else {
            throw DecodeError(kind: .seekFailed, message: String(cString: sf_strerror(handle)))
        }
        var remaining = target - start
        if remaining > 0 {
            let chunk = 1_024
            let discarded: Bool = withUnsafeTemporaryAllocation(of: Int16.self, capacity: chunk * fileChannels) {
                scratch in
                while remaining > 0 {
                    let got = Int(sf_readf_short(handle, scratch.baseAddress, sf_count_t(min(chunk, remaining))))
                    guard got > 0 else { return false }
                    remaining -= got
                }
                return true
            }
            guard discarded else {
                throw DecodeError(kind: .seekFailed, message: "the audio before the seek target does not decode")
            }
        }
        positionFrame = target
        finished = false
    }

    /// How far before its target a Vorbis or Opus seek lands: twice Vorbis's largest block (8192 frames), covering
    /// the overlap of any block, and more than Opus's recommended 80 ms of pre-roll at 48 kHz.
    private static let lossyPreroll = 16_384

    /// The track's length by its Ogg pages: the granule position of the last page (read from the end of the file,
    /// through `descriptor` with `pread`, leaving libsndfile's offset alone), less the pre-skip of an Opus stream's
    /// OpusHead. Nil when the pages cannot be read.
    private static func lastGranuleFrames(_ descriptor: Int32, opus: Bool) -> Int? {
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size > 27 else { return nil }
        let size = Int(status.st_size)
        // An Ogg page is at most 65 307 bytes, so the last one begins within that much of the end.
        let tailLength = min(size, 65_536 + 27)
        var tail = [UInt8](repeating: 0, count: tailLength)
        guard pread(descriptor, &tail, tailLength, off_t(size - tailLength)) == tailLength else { return nil }
        let capture = Array("OggS".utf8)
        // The last page is the one whose header is followed by exactly the rest of the file (the capture pattern
        // alone can occur inside audio data).
        func isLastPage(at offset: Int) -> Bool {
            guard tail[offset..<offset + 4].elementsEqual(capture), tail[offset + 4] == 0 else { return false }
            let segments = Int(tail[offset + 26])
            guard offset + 27 + segments <= tailLength else { return false }
            let body = tail[(offset + 27)..<(offset + 27 + segments)].reduce(0) { $0 + Int($1) }
            return offset + 27 + segments + body == tailLength
        }
        guard let start = stride(from: tailLength - 27, through: 0, by: -1).first(where: isLastPage) else {
            return nil
        }
        // Bytes 6-13 of a page header: the granule position, little-endian; -1 means no packet ends on the page.
        let granule = (0..<8).reduce(0) { $0 | Int(tail[start + 6 + $1]) << (8 * $1) }
        guard granule > 0 else { return nil }
        guard opus else { return granule }
        // OpusHead is the first page's only packet: its bytes 10-11 are the pre-skip, little-endian.
        var head = [UInt8](repeating: 0, count: 27 + 255 + 12)
        guard pread(descriptor, &head, head.count, 0) == head.count else { return nil }
        let packet = 27 + Int(head[26])
        let preSkip = Int(head[packet + 10]) | Int(head[packet + 11]) << 8
        return granule > preSkip ? granule - preSkip : nil
    }

    /// Refuses what libsndfile opened when it is not what the signature announced, or has too many channels.
    private static func check(_ info: SF_INFO, is kind: AudioFileKind) throws(DecodeError) {
        let container = Int(info.format) & SF_FORMAT_TYPEMASK
        let codec = Int(info.format) & SF_FORMAT_SUBMASK
        let matches: Bool
        switch kind {
        case .flac: matches = container == SF_FORMAT_FLAC
        case .vorbis: matches = container == SF_FORMAT_OGG && codec == SF_FORMAT_VORBIS
        case .opus: matches = container == SF_FORMAT_OGG && codec == SF_FORMAT_OPUS
        case .mp3: matches = false
        }
        guard matches else {
            throw DecodeError(kind: .badHeaders, message: 
                "libsndfile read format 0x\(String(Int(info.format), radix: 16)), not \(kind.displayName)")
        }
        guard info.channels == 1 || info.channels == 2 else {
            throw DecodeError(kind: .unsupportedFormat,
                              message: "\(info.channels) channels: only mono and stereo files are played")
        }
        guard info.samplerate > 0 else {
            throw DecodeError(kind: .badHeaders, message: "The headers give no sample rate")
        }
    }

    /// The tags and cover from the file's metadata blocks (FLAC) or comment header (Ogg), read by Earshot's own
    /// reader through `descriptor` with `pread`, which leaves libsndfile's offset alone.
    private static func readMetadata(_ descriptor: Int32, path: TrackPath, kind: AudioFileKind) -> TrackMetadata {
        guard let source = TagSource(descriptor: descriptor, path: path) else { return TrackMetadata() }
        return kind == .flac ? FLACTags.read(source) : OggTags.read(source, opus: kind == .opus)
    }
}

extension SndfileDecoder: ScalingDecoder {
    /// Scales every frame decoded from now on by `linear` (ReplayGain, asked before the first frame): frames are then
    /// read from libsndfile as floats and converted to 16 bits here with the gain folded into the conversion
    /// libsndfile would otherwise do, so the gain costs one multiply a sample and no pass of its own.
    func scaleOutput(by linear: Double) -> Bool {
        guard linear.isFinite, linear > 0 else { return false }
        // libsndfile's floats are its integers over 32768 for FLAC, and the codec's own floats for Vorbis and Opus,
        // which it turns into 16 bits times 32767: the same scales keep a factor of 1 sample-identical to its shorts.
        outputFactor = Float(linear * (kind == .flac ? 32_768 : 32_767))
        if floatScratch == nil {
            floatScratch = .allocate(capacity: Self.scratchFrames * fileChannels)
        }
        return true
    }

    /// Frames read as floats at a time when the output is scaled.
    static let scratchFrames = 4_096

    /// Reads up to `frames` frames as floats and writes them, scaled by `factor`, into `output` as 16-bit stereo.
    func readScaled(into output: UnsafeMutablePointer<Int16>, frames: Int, factor: Float,
                    scratch: UnsafeMutablePointer<Float>) -> Int {
        let got = Int(sf_readf_float(handle, scratch, sf_count_t(min(frames, Self.scratchFrames))))
        guard got > 0 else { return got }
        if fileChannels == 1 {
            for index in 0..<got {
                let sample = Self.sixteenBits(scratch[index] * factor)
                output[2 * index] = sample
                output[2 * index + 1] = sample
            }
        } else {
            for index in 0..<(got * 2) {
                output[index] = Self.sixteenBits(scratch[index] * factor)
            }
        }
        return got
    }

    /// `value` rounded to the nearest integer (ties to even, as libsndfile's `lrintf`) and saturated at the 16-bit
    /// range. Adding 1.5 x 2^23 to a float within ±2^22 leaves the integer in the low bits of its mantissa (the
    /// rounding is the float addition's own), which avoids a checked conversion: the loop vectorizes.
    @inline(__always)
    static func sixteenBits(_ value: Float) -> Int16 {
        let clamped = Swift.min(Swift.max(value, -32_768), 32_767)
        return Int16(truncatingIfNeeded: (clamped + 12_582_912).bitPattern)
    }
}
