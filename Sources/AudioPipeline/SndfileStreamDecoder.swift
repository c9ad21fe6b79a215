// SndfileStreamDecoder: Ogg Vorbis, Ogg Opus and FLAC internet streams through libsndfile's virtual I/O. libsndfile
// was written for files: it reads a header and seeks back to re-read it, and its Ogg reader asks for the file's
// length and seeks near the end to find the last granule position. A stream has neither, so the reader here:
// - keeps the stream's first 256 KiB, so seeks back into the head (the header re-read) are answered from memory;
// - claims a length of 1 TiB, and refuses any seek past what has arrived: the Ogg reader then takes the length as
//   unknown and reads on;
// - waits (on the decode worker's thread) for bytes as a file read would, until the stream ends, the fetch fails
//   (which it does after the silence limit, 10 s), the worker stops or is given another track (a `next` while the
//   station is dry): a read that returned nothing would be taken for the end. A wait given up leaves libsndfile
//   holding a short read, which it may have taken for the end (libFLAC does): that decoder is never read again.
// Checked with libsndfile 1.2.0 (Debian 12): FLAC, Ogg Vorbis and Ogg Opus decode whole from a forward-only source.
// A chained Ogg stream (a new logical stream at each title, as some Icecast sources send) is not followed past its
// first link by libsndfile: that link's end is the track's end. A reconnection's new stream is followed: the buffer
// marks where it begins, and libsndfile is opened afresh there.
import CSndfile
import NetworkStream
import SystemSupport

/// Decodes one Ogg Vorbis, Ogg Opus or FLAC internet stream to 16-bit stereo PCM. Not seekable, no length.
///
/// A reconnection (RULES row 38) makes the server start the stream over: a new Ogg stream with its own headers, or a
/// new FLAC stream header, after the last bytes of the connection lost. libsndfile cannot go on across that, so the
/// buffer marks where the new connection's bytes begin (a seam): the decoder decodes everything before it, then opens
/// libsndfile afresh on the bytes after it and counts its frames on, so only what the network lost is missing.
final class SndfileStreamDecoder: AudioDecoder, LiveMetadataSource {
    private(set) var format: AudioFormat
    let lengthFrames: Int? = nil
    var metadata: TrackMetadata { connection.metadata }
    private(set) var positionFrame = 0

    private let connection: StreamConnection
    private var stream: OpenedStream
    private var finished = false
    // Decoding waits for the prebuffer (StreamConnection.prebufferBytes) at the start and after each flush.
    private var prebuffering = true
    // A wait for the network was given up (the worker stops or leaves the station): libsndfile's state cannot be
    // trusted past that short read, so the decoder decodes nothing more and refuses a seek (the worker opens anew).
    private var interrupted = false

    /// Opens `connection`'s stream with libsndfile; waits for its headers (at most the fetch's silence limit).
    init(connection: StreamConnection) throws(DecodeError) {
        self.connection = connection
        // (Never nil on a first open: only a reopening takes a clean end for the station's.)
        guard let opened = try Self.open(connection, reopening: false) else {
            throw DecodeError(kind: .cannotOpen, message: "the stream ended before its headers")
        }
        stream = opened
        format = stream.format
    }

    func takeMetadataChange() -> TrackMetadata? {
        connection.takeMetadataChange()
    }

    func decode(into buffer: UnsafeMutableBufferPointer<Int16>) throws(DecodeError) -> DecodeStep {
        guard !interrupted else { return .frames(0) }
        guard !finished, let base = buffer.baseAddress else { return .finished }
        if prebuffering {
            guard connection.prebuffered() else { return .frames(0) }
            prebuffering = false
        }
        let got = stream.read(into: base, frames: buffer.count / FrameRing.samplesPerFrame)
        if stream.reader.gaveUp {
            // The frames decoded before the wait are whole; what libsndfile made of the short read is not looked at.
            interrupted = true
            positionFrame += got
            return .frames(got)
        }
        if got > 0 {
            positionFrame += got
            return .frames(got)
        }
        let reader = stream.reader
        if reader.atSeam {
            // What came before the reconnection is decoded (its cut last packet, and libsndfile's complaint about
            // it, are what the network lost): the new connection's stream is opened from its first byte.
            let opened: OpenedStream?
            do throws(DecodeError) {
                opened = try Self.open(connection, reopening: true)
            } catch {
                // A wait for the new headers given up (the worker leaves the station) is no failure of the station.
                guard error == StreamConnection.cancelled else { throw error }
                interrupted = true
                return .frames(0)
            }
            guard let reopened = opened else {
                finished = true
                return .finished
            }
            stream = reopened
            guard stream.format == format else {
                format = stream.format
                return .formatChanged(format)
            }
            return .frames(0)
        }
        finished = true
        if let end = reader.end, !end.isClean {
            throw DecodeError(kind: .decodeFailed, message: end.description)
        }
        if let status = stream.errorMessage {
            throw DecodeError(kind: .decodeFailed, message: status)
        }
        return .finished
    }

    /// Rows 32 and 33 for Ogg and FLAC: libsndfile reads its container from the first byte on and cannot resync
    /// after a cut, so the bytes received are kept: the rejoin drops the ring only (docs/radio.md).
    func rejoinLive() {}

    /// A live stream cannot seek: it goes on from what has arrived, whatever frame is asked for, and counts on from
    /// there (the worker asks for the frame last heard after a flush: an output lost, a reposition). Never throws,
    /// so a flush never costs the station itself.
    func seek(toFrame frame: Int) throws(DecodeError) {
        if interrupted { throw StreamConnection.cancelled }
        positionFrame = max(0, frame)
        prebuffering = true
    }

    // Opens libsndfile on the connection's bytes from where the buffer is read now: the stream's first byte, or a
    // seam's. A seam reached before the headers were read whole (the new connection lost again at once) starts it
    // over at the next connection's bytes. Nil only when reopening: the stream ended cleanly before the new
    // connection's headers were whole (it was lost again, and the rules then ended the station): the station's end,
    // as for MP3, not a broken stream.
    private static func open(_ connection: StreamConnection, reopening: Bool) throws(DecodeError) -> OpenedStream? {
        while true {
            let reader = ForwardReader(connection: connection, givesUpWhenSuperseded: !reopening)
            do throws(DecodeError) {
                return try OpenedStream(reader: reader)
            } catch {
                if reader.atSeam { continue }
                if reopening, !reader.gaveUp, let end = reader.end, end.isClean, end != .stopped { return nil }
                throw error
            }
        }
    }
}

/// libsndfile open on one connection's stream: its handle, closed when it goes, and what its headers said.
private final class OpenedStream {
    let reader: ForwardReader
    let format: AudioFormat
    private let handle: OpaquePointer
    private let channels: Int

    /// Opens `reader`'s stream; waits for its headers (at most the fetch's silence limit).
    init(reader: ForwardReader) throws(DecodeError) {
        self.reader = reader
        var io = SF_VIRTUAL_IO(
            get_filelen: { _ in ForwardReader.claimedLength },
            seek: { offset, whence, context in ForwardReader.from(context).seek(Int(offset), whence) },
            read: { destination, count, context in ForwardReader.from(context).read(destination, Int(count)) },
            write: { _, _, _ in 0 },
            tell: { context in sf_count_t(ForwardReader.from(context).position) })
        var info = SF_INFO()
        let context = Unmanaged.passUnretained(reader).toOpaque()
        guard let opened = sf_open_virtual(&io, Int32(SFM_READ), &info, context) else {
            if reader.gaveUp { throw StreamConnection.cancelled }
            if let end = reader.end, !end.isClean || end == .stopped {
                throw DecodeError(kind: .cannotOpen, message: end.description)
            }
            throw DecodeError(kind: .badHeaders, message:
                "libsndfile cannot read the stream's headers: \(String(cString: sf_strerror(nil)))")
        }
        handle = opened
        reader.opened = true
        channels = Int(info.channels)
        format = AudioFormat(sampleRate: Int(info.samplerate))
        // Every stored property is set: a throw from here runs deinit, which closes the handle.
        guard channels == 1 || channels == 2 else {
            throw DecodeError(kind: .unsupportedFormat, message: "The stream has \(channels) channels")
        }
        sf_command(opened, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
    }

    deinit {
        sf_close(handle)
    }

    /// Decodes up to `frames` stereo frames into `base` (a mono stream's samples doubled); 0 at its end.
    func read(into base: UnsafeMutablePointer<Int16>, frames: Int) -> Int {
        let got = Int(sf_readf_short(handle, base, sf_count_t(frames)))
        if channels == 1, got > 0 {
            for index in stride(from: got - 1, through: 0, by: -1) {
                base[2 * index + 1] = base[index]
                base[2 * index] = base[index]
            }
        }
        return got
    }

    /// libsndfile's error, when it has one.
    var errorMessage: String? {
        let status = sf_error(handle)
        return status == Int32(SF_ERR_NO_ERROR) ? nil : String(cString: sf_error_number(status))
    }
}

/// libsndfile's view of a stream: forward reads that wait for the network, and seeks within the kept head.
private final class ForwardReader {
    /// The length claimed to libsndfile (it has no other way to say "unknown" that the Ogg reader accepts).
    static let claimedLength: sf_count_t = 1 << 40
    /// The bytes kept from the stream's start, for libsndfile's seeks back into the header.
    static let headBytes = 262_144

    let connection: StreamConnection
    let cancellation: StreamCancellation
    /// Whether any new start point ends a wait before libsndfile has opened the stream: at the track's open (the start
    /// point takes its place), not at a reopen after a seam (the track plays on, unless the worker leaves it).
    let givesUpWhenSuperseded: Bool
    /// Set once libsndfile has opened the stream: from then on a stop, or a start point elsewhere, ends a wait.
    var opened = false
    /// The reads reached a seam: every byte of this stream was read, and the bytes after it are another stream's.
    private(set) var atSeam = false
    /// A wait ended for a stop or a new start point, with a short read.
    private(set) var gaveUp = false
    private var head: [UInt8] = []
    private var received = 0
    private(set) var position = 0
    /// How the stream ended, once it did.
    private(set) var end: StreamEnd?

    init(connection: StreamConnection, givesUpWhenSuperseded: Bool) {
        self.connection = connection
        self.givesUpWhenSuperseded = givesUpWhenSuperseded
        cancellation = connection.cancellation
    }

    // Whether the worker's commands end a wait for bytes: a stop; at the track's open any new start point; otherwise
    // one that leaves this track (one that takes it up again, as a resume after a flush does, waits on with it).
    private var waitEnds: Bool {
        if cancellation.stopping() { return true }
        return !opened && givesUpWhenSuperseded ? cancellation.superseded() : cancellation.leaving()
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> ForwardReader {
        Unmanaged<ForwardReader>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Moves to `offset` (from the start, or the current position): within what has arrived, and within the kept
    /// head when going back; -1 otherwise (never past what arrived: the end is unknown).
    func seek(_ offset: Int, _ whence: Int32) -> sf_count_t {
        let target: Int
        switch whence {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = position + offset
        default: return -1
        }
        guard target >= 0, target <= received, target == received || target < head.count else { return -1 }
        position = target
        return sf_count_t(position)
    }

    /// Copies `count` bytes to `destination`, waiting for the network as needed; fewer only at the stream's end.
    func read(_ destination: UnsafeMutableRawPointer?, _ count: Int) -> sf_count_t {
        guard let destination, !atSeam else { return 0 }
        var done = 0
        while done < count {
            if position < received {
                // Behind what arrived: only the kept head can answer.
                guard position < head.count else { break }
                let part = min(head.count - position, count - done)
                head.withUnsafeBytes {
                    (destination + done).copyMemory(from: $0.baseAddress! + position, byteCount: part)
                }
                position += part
                done += part
                continue
            }
            let room = UnsafeMutableRawBufferPointer(start: destination + done, count: count - done)
            let deadline = Condition.monotonicNanoseconds() + StreamConnection.waitNanoseconds
            switch connection.read(into: room, waitingUntil: deadline) {
            case .bytes(let got):
                if head.count < Self.headBytes, head.count == received {
                    let kept = min(got, Self.headBytes - head.count)
                    head.append(contentsOf: UnsafeRawBufferPointer(start: destination + done, count: kept))
                }
                received += got
                position += got
                done += got
            case .empty:
                // A short read is libsndfile's end of file: only the worker's own commands end the wait (its decoder
                // is then let go), never a pause in the network (the fetch itself fails after its silence limit).
                if waitEnds {
                    gaveUp = true
                    return sf_count_t(done)
                }
            case .ended(let reason):
                end = reason
                return sf_count_t(done)
            case .seam:
                // A seam before this stream's first byte (the reconnection came before any byte was read) starts
                // nothing: the stream begins after it. Past that, it is this stream's end for libsndfile.
                guard received > 0 else { continue }
                atSeam = true
                return sf_count_t(done)
            }
        }
        return sf_count_t(done)
    }
}
