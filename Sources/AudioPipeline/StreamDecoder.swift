// StreamDecoder: the AudioDecoder for an internet stream (an `http://` or `https://` URL in the queue). A fetch
// thread (NetworkStream) reads the stream into a bounded byte buffer; this decoder, on the decode worker's thread,
// feeds what has arrived to libmpg123's feed API and delivers frames as any decoder does. It never waits long: with
// nothing received it returns no frames after a short wait, so the worker stays free to take new requests.
//
// Formats: MP3 (libmpg123's feed API). Ogg Vorbis, Opus and FLAC streams are refused with a clear error: libsndfile
// reads them through virtual I/O that must answer seeks and a length, which a live stream has not (its Ogg reader
// seeks to the end to find the duration); AAC has no decoder among the libraries Earshot links.
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

/// A decoder whose tags change while it plays (a station's ICY titles): the decode worker reports each change.
public protocol LiveMetadataSource: AnyObject {
    /// The metadata, when it changed since the last call; nil otherwise.
    func takeMetadataChange() -> TrackMetadata?
}

/// Decodes one internet stream (MP3) to 16-bit stereo PCM. Not seekable, no length; it ends when the server ends it.
public final class StreamDecoder: AudioDecoder, LiveMetadataSource {
    /// The most bytes held for a stream the player does not read (paused): 30 minutes at 320 kbit/s.
    public static let defaultBufferBytes = 30 * 60 * 320_000 / 8
    /// How long one decode call waits for bytes before it returns no frames.
    static let waitNanoseconds: UInt64 = 100_000_000

    public private(set) var format: AudioFormat
    public let lengthFrames: Int? = nil
    public var metadata: TrackMetadata { shared.withLock { $0.metadata } }
    public private(set) var positionFrame = 0

    /// The bytes received and not yet decoded.
    public let buffer: StreamByteBuffer
    private let fetcher: StreamFetcher
    private let handle: OpaquePointer
    private let shared: LockedValue<(metadata: TrackMetadata, changed: Bool)>
    private var finished = false
    private var scratch = [UInt8](repeating: 0, count: 16_384)

    /// Starts fetching `url` and waits (on the decode worker's thread) until the stream's format is known, the
    /// server refuses, or the network fails (at most the fetch's silence limit).
    public init(
        url: TrackPath, outputRate: Int? = nil, bufferBytes: Int = StreamDecoder.defaultBufferBytes,
        limits: StreamLimits = StreamLimits()
    ) throws(DecodeError) {
        guard libraryReady, let url = url.string else {
            throw DecodeError(kind: .cannotOpen, message: "The stream's address is not valid UTF-8")
        }
        var creationError: Int32 = MPG123_OK.rawValue
        guard let newHandle = mpg123_new(nil, &creationError) else {
            throw DecodeError(kind: .libraryFailure, message: MP3Decoder.plainMessage(creationError))
        }
        handle = newHandle
        let shared = LockedValue((metadata: TrackMetadata(), changed: false))
        let started = LockedValue<StreamFormat?>(nil)
        self.shared = shared
        buffer = StreamByteBuffer(capacity: bufferBytes)
        fetcher = StreamFetcher(url: url, buffer: buffer, limits: limits) { notice in
            switch notice {
            case .started(let format, let station):
                started.withLock { $0 = format }
                shared.withLock { $0.metadata.album = station; $0.changed = true }
            case .title(let title):
                shared.withLock { $0.metadata.title = title.isEmpty ? nil : title; $0.changed = true }
            case .ended:
                break
            }
        }
        format = AudioFormat(sampleRate: outputRate ?? 44_100)
        // Every stored property is set from here, so a throw below runs deinit, which stops the fetch and frees
        // the handle.
        try MP3Decoder.configure(newHandle, rates: outputRate.map { [$0] } ?? MP3Decoder.nativeOutputRates)
        guard mpg123_open_feed(newHandle) == MPG123_OK.rawValue else {
            throw DecodeError(kind: .libraryFailure, message: MP3Decoder.handleMessage(newHandle))
        }
        fetcher.start()
        format = try openFormat(started: started)
        shared.withLock { $0.changed = false }
    }

    deinit {
        fetcher.stop()
        mpg123_delete(handle)
    }

    public func takeMetadataChange() -> TrackMetadata? {
        shared.withLock { state in
            guard state.changed else { return nil }
            state.changed = false
            return state.metadata
        }
    }

    public func decode(into output: UnsafeMutableBufferPointer<Int16>) throws(DecodeError) -> DecodeStep {
        if finished { return .finished }
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
            switch try receive(waitingUntil: Condition.monotonicNanoseconds() + Self.waitNanoseconds) {
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

    /// A live stream cannot seek: only its start (frame 0, where it is opened) is accepted.
    public func seek(toFrame frame: Int) throws(DecodeError) {
        guard frame == positionFrame else {
            throw DecodeError(kind: .seekFailed, message: "A live stream cannot seek")
        }
    }

    // Feeds what the buffer holds (waiting until `deadline` for the first byte): true when bytes came or may still
    // come, false when the server ended the stream; throws when the fetch failed.
    private func receive(waitingUntil deadline: UInt64) throws(DecodeError) -> Bool {
        let result = scratch.withUnsafeMutableBytes { buffer.read(into: $0, waitingUntil: deadline) }
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
        case .ended(.serverClosed), .ended(.stopped):
            return false
        case .ended(let end):
            throw DecodeError(kind: .decodeFailed, message: end.description)
        }
    }

    // Reads until libmpg123 knows the output format; refuses formats other than MP3.
    private func openFormat(started: LockedValue<StreamFormat?>) throws(DecodeError) -> AudioFormat {
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
            if let kind = started.withLock({ $0 }), kind == .ogg || kind == .flac {
                throw DecodeError(kind: .unsupportedFormat, message:
                    "The stream is \(kind == .ogg ? "Ogg" : "FLAC"); Earshot plays MP3 streams only")
            }
            let more: Bool
            do throws(DecodeError) {
                more = try receive(waitingUntil: Condition.monotonicNanoseconds() + Self.waitNanoseconds)
            } catch {
                throw DecodeError(kind: .cannotOpen, message: error.message)
            }
            guard more else {
                throw DecodeError(kind: .noAudio, message: "The stream ended before any MPEG audio came")
            }
        }
    }
}
