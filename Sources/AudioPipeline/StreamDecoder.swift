// StreamDecoder: the AudioDecoder for an internet stream of MPEG audio (an `http://` or `https://` URL in the
// queue). A fetch thread (NetworkStream, StreamConnection.swift) reads the stream into a bounded byte buffer; this
// decoder, on the decode worker's thread, feeds what has arrived to libmpg123's feed API and delivers frames as any
// decoder does. It never waits long: with nothing received it returns no frames after a short wait, so the worker
// stays free to take new requests.
//
// This file decodes MPEG audio (libmpg123's feed API); Ogg Vorbis, Opus and FLAC streams go to libsndfile
// (SndfileStreamDecoder.swift); AAC has no decoder among the libraries Earshot links and is refused by its type.
//
// While the worker does not decode (the player paused, the ring full), the fetch thread keeps receiving into the
// buffer, so the show resumes where it paused; past the buffer's capacity its oldest bytes are dropped (counted).
import CMPG123
import NetworkStream
import SystemSupport
#if canImport(Glibc)
import Glibc
import TrackPaths
#endif

/// Decodes one internet stream (MP3) to 16-bit stereo PCM. Not seekable, no length; it ends when the server ends it.
public final class StreamDecoder: AudioDecoder, LiveMetadataSource {
    public private(set) var format: AudioFormat
    public let lengthFrames: Int? = nil
    public var metadata: TrackMetadata { connection.metadata }
    public private(set) var positionFrame = 0

    private let connection: StreamConnection
    private let handle: OpaquePointer
    private var finished = false
    // Decoding waits for the prebuffer (StreamConnection.prebufferBytes) at the start and after each flush.
    private var prebuffering = true
    private var scratch = [UInt8](repeating: 0, count: 16_384)

    /// Decodes `connection`'s MPEG audio; waits (on the decode worker's thread) until the output format is known,
    /// the stream ends, or the network fails (at most the fetch's silence limit).
    init(connection: StreamConnection, outputRate: Int?) throws(DecodeError) {
        guard libraryReady else { throw DecodeError(kind: .libraryFailure, message: "mpg123_init failed") }
        var creationError: Int32 = MPG123_OK.rawValue
        guard let newHandle = mpg123_new(nil, &creationError) else {
            throw DecodeError(kind: .libraryFailure, message: MP3Decoder.plainMessage(creationError))
        }
        handle = newHandle
        self.connection = connection
        format = AudioFormat(sampleRate: outputRate ?? 44_100)
        // Every stored property is set from here, so a throw below runs deinit, which frees the handle (the
        // connection stops its fetch when it goes).
        try MP3Decoder.configure(newHandle, rates: outputRate.map { [$0] } ?? MP3Decoder.nativeOutputRates)
        guard mpg123_open_feed(newHandle) == MPG123_OK.rawValue else {
            throw DecodeError(kind: .libraryFailure, message: MP3Decoder.handleMessage(newHandle))
        }
        format = try openFormat()
    }

    deinit {
        mpg123_delete(handle)
    }

    public func takeMetadataChange() -> TrackMetadata? {
        connection.takeMetadataChange()
    }

    public func decode(into output: UnsafeMutableBufferPointer<Int16>) throws(DecodeError) -> DecodeStep {
        if finished { return .finished }
        if prebuffering {
            guard connection.prebuffered() else { return .frames(0) }
            prebuffering = false
        }
        let wholeFrameSamples = output.count - output.count % FrameRing.samplesPerFrame
        var bytesDone = 0
        let result = mpg123_read(handle, output.baseAddress, wholeFrameSamples * MemoryLayout<Int16>.size, &bytesDone)
        let frames = bytesDone / FrameRing.bytesPerFrame
        positionFrame += frames
        switch result {
        case MPG123_OK.rawValue:
            return .frames(frames)
        case MPG123_NEW_FORMAT.rawValue:
            let newFormat = try MP3Decoder.currentFormat(handle)
            if newFormat != format, frames == 0 {
                format = newFormat
                return .formatChanged(newFormat)
            }
            return .frames(frames)
        case MPG123_NEED_MORE.rawValue:
            if frames > 0 { return .frames(frames) }
            switch try receive(waitingUntil: Condition.monotonicNanoseconds() + StreamConnection.waitNanoseconds) {
            case true: return .frames(0)
            case false:
                finished = true
                return .finished
            }
        default:
            if frames > 0 { return .frames(frames) }
            // A stream's bytes may be cut anywhere (a reconnect, bytes dropped from a full buffer): libmpg123
            // resyncs on the next frame header, so only its library failures end the stream.
            throw MP3Decoder.decodingError(handle, result: result)
        }
    }

    /// Rows 32 and 33: drops what was received, but for the newest prebuffer's worth, and what libmpg123 was fed (a new
    /// feed resyncs on the next frame header), so the decoding goes on at the live edge.
    public func rejoinLive() {
        connection.rejoinLive()
        // Reopening the feed forgets the bytes fed and not decoded; the format found again is the same.
        if mpg123_open_feed(handle) != MPG123_OK.rawValue { finished = true }
    }

    /// A live stream cannot seek: it goes on from what has arrived, whatever frame is asked for, and counts on from
    /// there (the worker asks for the frame last heard after a flush: an output lost, a reposition). Never throws,
    /// so a flush never costs the station itself.
    public func seek(toFrame frame: Int) throws(DecodeError) {
        // A stream the server ended has nothing more to give: the worker opens it afresh instead.
        if finished { throw DecodeError(kind: .cannotOpen, message: "The stream has ended") }
        positionFrame = max(0, frame)
        prebuffering = true
    }

    // Feeds what the buffer holds (waiting until `deadline` for the first byte): true when bytes came or may still
    // come, false when the server ended the stream; throws when the fetch failed.
    private func receive(waitingUntil deadline: UInt64) throws(DecodeError) -> Bool {
        let result = scratch.withUnsafeMutableBytes { connection.read(into: $0, waitingUntil: deadline) }
        switch result {
        case .bytes(let count):
            let fed = scratch.withUnsafeBytes {
                mpg123_feed(handle, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), count)
            }
            guard fed == MPG123_OK.rawValue else {
                throw DecodeError(kind: .libraryFailure, message: MP3Decoder.handleMessage(handle))
            }
            return true
        case .empty:
            return true
        case .seam:
            // A reconnection's bytes (RULES row 38): libmpg123 starts over on them, rather than decode a frame made
            // of the lost connection's cut end and the new one's start. The format found again is the same.
            guard mpg123_open_feed(handle) == MPG123_OK.rawValue else {
                throw DecodeError(kind: .libraryFailure, message: MP3Decoder.handleMessage(handle))
            }
            return true
        case .ended(let end):
            guard end.isClean else { throw DecodeError(kind: .decodeFailed, message: end.description) }
            return false
        }
    }

    // Reads until libmpg123 knows the output format.
    private func openFormat() throws(DecodeError) -> AudioFormat {
        while true {
            var rate = 0
            var channels: Int32 = 0
            var encoding: Int32 = 0
            let result = mpg123_getformat(handle, &rate, &channels, &encoding)
            if result == MPG123_OK.rawValue {
                return AudioFormat(sampleRate: rate, channels: Int(channels))
            }
            if result != MPG123_NEED_MORE.rawValue {
                throw DecodeError(kind: .notMPEGAudio, message: MP3Decoder.handleMessage(handle))
            }
            if connection.cancellation.abandonsOpen { throw StreamConnection.cancelled }
            let more: Bool
            do throws(DecodeError) {
                more = try receive(waitingUntil: Condition.monotonicNanoseconds() + StreamConnection.waitNanoseconds)
            } catch {
                throw DecodeError(kind: .cannotOpen, message: error.message)
            }
            guard more else {
                throw DecodeError(kind: .noAudio, message: "The stream ended before any MPEG audio came")
            }
        }
    }
}
