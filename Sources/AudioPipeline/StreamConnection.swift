// One internet stream's fetch as the decoders see it: the fetch thread and its bounded buffer, the format the
// response announced, and the station's tags as they change. Opening one waits (on the decode worker's thread,
// never the owner's) until the response is decided, then `StreamConnection.openDecoder` picks the decoder.
import NetworkStream
import SystemSupport
#if canImport(Glibc)
import TrackPaths
#endif

/// A live stream's decoder: its tags change while it plays (a station's ICY titles), which the decode worker reports,
/// and it can drop what it received to go on from the live edge (RULES.md rows 32 and 33).
public protocol LiveMetadataSource: AnyObject {
    /// The metadata, when it changed since the last call; nil otherwise.
    func takeMetadataChange() -> TrackMetadata?
    /// Drops what was received and not decoded, but for the newest prebuffer's worth, so that the decoding goes on
    /// at once, from the live edge.
    func rejoinLive()
}

/// What may end a stream decoder's waits for the network early: the decode worker stopping, a new start point taking
/// the track's place while the stream is still opening, or one elsewhere once it plays. Read on the decode worker's
/// thread, at each of its waits (a tenth of a second at most).
public struct StreamCancellation: Sendable {
    /// The worker is stopping: every wait ends.
    public var stopping: @Sendable () -> Bool
    /// A new start point is waiting: an open under way gives up (its failure is of a generation nobody hears).
    public var superseded: @Sendable () -> Bool
    /// A new start point is waiting that will not take up this decoder again (another track, or another path at its
    /// index): a wait of the open stream ends, and the decoder, let go, is never read again.
    public var leaving: @Sendable () -> Bool

    /// Creates a cancellation from the worker's three questions.
    public init(stopping: @escaping @Sendable () -> Bool, superseded: @escaping @Sendable () -> Bool,
                leaving: @escaping @Sendable () -> Bool) {
        self.stopping = stopping
        self.superseded = superseded
        self.leaving = leaving
    }

    /// Nothing cancels (a decoder opened outside the worker).
    public static let never = StreamCancellation(stopping: { false }, superseded: { false }, leaving: { false })

    /// Whether an open under way should give up.
    var abandonsOpen: Bool { stopping() || superseded() }
}

/// The fetch of one stream, shared by its decoder: started on open, stopped when the decoder goes.
final class StreamConnection: @unchecked Sendable {
    /// The most bytes held for a stream the player does not read (paused): 30 minutes at 320 kbit/s.
    static let defaultBufferBytes = 30 * 60 * 320_000 / 8
    /// How long one wait for bytes lasts before the waiter looks again.
    static let waitNanoseconds: UInt64 = 100_000_000

    /// The bytes held before decoding starts, at the open and after each flush: at the live edge the ring would
    /// otherwise hold only what arrived ahead of real time (nothing, at a server's own pace), and the output would
    /// run dry at the first late packet. 2 s at 192 kbit/s, 3 s at 128.
    static let prebufferBytes = 49_152

    /// The bytes received and not yet decoded.
    let buffer: StreamByteBuffer
    /// What ends the waits early.
    let cancellation: StreamCancellation
    private let url: String
    private let limits: StreamLimits
    private let fetcher: LockedValue<StreamFetcher?>
    private let shared: LockedValue<SharedState>
    private let live: (link: LiveBufferLink, index: Int)?

    /// What the fetch threads and the decode thread share.
    struct SharedState {
        var metadata = TrackMetadata()
        var changed = false
        var format: StreamFormat?
        /// A live stream's connection is lost (reported, and not answered again yet): the buffer stays open.
        var down = false
        /// The decoder found nothing to decode since the connection was lost, and that was reported.
        var dryReported = false
        /// A reconnection's fetch is under way (started, and neither answered nor ended yet): another waits for it.
        var attempting = false
    }

    /// Starts fetching `url` into a buffer of `bufferBytes`, or into the buffer `live` makes for track `index`.
    init(url: String, bufferBytes: Int, limits: StreamLimits, cancellation: StreamCancellation,
         live: (link: LiveBufferLink, index: Int)? = nil) {
        self.cancellation = cancellation
        self.url = url
        self.limits = limits
        self.live = live
        shared = LockedValue(SharedState())
        fetcher = LockedValue(nil)
        buffer = live.map { $0.link.makeBuffer(index: $0.index) } ?? StreamByteBuffer(capacity: bufferBytes)
        if let live { live.link.attach(self, index: live.index) }
        startFetch()
    }

    deinit {
        fetcher.withLock { $0?.stop() }
        live?.link.release(buffer)
    }

    // Starts a fetch of the address into the buffer. A live stream's fetch leaves the buffer open when its connection
    // is lost after the stream started: the rules decide whether another fetch takes it up (RULES rows 38-41).
    private func startFetch() {
        let shared = shared, buffer = buffer
        var report: (@Sendable (LiveNetworkNotice) -> Void)?
        if let link = live?.link, let index = live?.index {
            report = { notice in link.report(notice, index: index, from: buffer) }
        }
        let started = StreamFetcher(url: url, buffer: buffer, limits: limits,
                                    finishesBuffer: report == nil) { [report] notice in
            switch notice {
            case .started(let format, let station):
                let reconnected = shared.withLock { state -> Bool in
                    state.down = false
                    state.attempting = false
                    guard state.format == nil else { return true }
                    state.format = format
                    state.metadata.album = station
                    state.changed = true
                    return false
                }
                // A reconnection's bytes start a new stream (an Ogg stream's headers, a FLAC stream's, or an MP3 frame
                // cut anywhere): its decoder starts over there. This notice comes before the connection's first byte.
                if reconnected { buffer.markSeam() }
                // Every start, the first too: a station opened afresh ends whatever reconnection the rules kept.
                report?(.connected)
            case .title(let title):
                shared.withLock { $0.metadata.title = title.isEmpty ? nil : title; $0.changed = true }
            case .ended(let end):
                // A fetch stopped (its decoder gone, or replaced by another) has nothing to tell a live stream's rules,
                // and must not end a buffer another fetch may be filling.
                guard let report, end != .stopped else { return }
                // The loss is reported in the section that marks the connection down: the decode thread reports its
                // dry buffer only once it sees `down`, so that report always reaches the rules after the loss (the
                // rules drop a dry report with no reconnection). The report only yields into the owner's inbox.
                let playing = shared.withLock { state -> Bool in
                    guard state.format != nil else { return false }
                    state.attempting = false
                    state.down = true
                    state.dryReported = false
                    if end != .completed { report(.lost(LiveConnectionEnd(end))) }
                    return true
                }
                // Before the stream started (its open fails), stopped, or a file sent whole (an announced length): the
                // buffer ends as a file's does, and the track with it.
                guard playing, end != .completed else { return buffer.finish(end) }
            }
        }
        // Only one fetch fills the buffer: one replaced (which should have ended already) is stopped.
        fetcher.withLock { current in
            current?.stop()
            current = started
        }
        started.start()
    }

    /// Row 38: fetches the address again into the same buffer, which the decoder goes on reading. Only while the
    /// connection is lost and no attempt is under way (false otherwise: the connection, or the attempt's answer, is
    /// on its way to the rules already).
    func reconnect() -> Bool {
        let begins = shared.withLock { state -> Bool in
            guard state.down, !state.attempting else { return false }
            state.attempting = true
            return true
        }
        guard begins else { return false }
        startFetch()
        return true
    }

    /// Row 39: the stream ended: the decoder reads what the buffer holds, then finds its end.
    func end() {
        buffer.finish(.serverClosed)
    }

    /// Reads from the buffer as `StreamByteBuffer.read` does, and reports once per loss that the decoder found nothing
    /// to decode while the connection is down (row 40).
    func read(into destination: UnsafeMutableRawBufferPointer, waitingUntil deadline: UInt64)
        -> StreamByteBuffer.ReadResult {
        let result = buffer.read(into: destination, waitingUntil: deadline)
        guard result == .empty, let live else { return result }
        let dry = shared.withLock { state -> Bool in
            guard state.down, !state.dryReported else { return false }
            state.dryReported = true
            return true
        }
        if dry { live.link.report(.ranDry, index: live.index, from: buffer) }
        return result
    }

    /// Drops what the buffer holds but the newest prebuffer's worth (a rejoin of live).
    func rejoinLive() {
        buffer.discardAll(keepingNewest: Self.prebufferBytes)
    }

    /// The tags now (the station's name as the album, its ICY title as the title).
    var metadata: TrackMetadata { shared.withLock { $0.metadata } }

    /// The tags when they changed since the last call.
    func takeMetadataChange() -> TrackMetadata? {
        shared.withLock { state in
            guard state.changed else { return nil }
            state.changed = false
            return state.metadata
        }
    }

    /// The error of an open given up for a stop or a new start point.
    static let cancelled = DecodeError(kind: .cannotOpen, message: "Opening the stream was given up")

    /// Whether the prebuffer is held (or the stream ended); waits a short while for it.
    func prebuffered() -> Bool {
        let deadline = Condition.monotonicNanoseconds() + Self.waitNanoseconds
        return buffer.waitForStored(atLeast: Self.prebufferBytes, until: deadline)
    }

    /// Waits until the response is decided: the format it announced, or throws why it cannot play.
    func awaitFormat() throws(DecodeError) -> StreamFormat {
        while true {
            if let format = shared.withLock({ $0.format }) { return format }
            if cancellation.abandonsOpen { throw Self.cancelled }
            // The fetch reports the format before its first byte reaches the buffer; no byte is taken here.
            switch buffer.waitForBytes(until: Condition.monotonicNanoseconds() + Self.waitNanoseconds) {
            case .ended(let end):
                if let format = shared.withLock({ $0.format }) { return format }
                throw DecodeError(kind: .cannotOpen, message: end.description)
            default:
                continue
            }
        }
    }

    /// Opens the decoder the stream's format calls for: libsndfile for Ogg and FLAC, libmpg123 for MPEG audio and
    /// for a stream whose type its server left open.
    static func openDecoder(
        url: TrackPath, outputRate: Int?, bufferBytes: Int = defaultBufferBytes, limits: StreamLimits = StreamLimits(),
        cancellation: StreamCancellation, live: (link: LiveBufferLink, index: Int)? = nil
    ) throws(DecodeError) -> any AudioDecoder {
        guard let text = url.string else {
            throw DecodeError(kind: .cannotOpen, message: "The stream's address is not valid UTF-8")
        }
        let connection = StreamConnection(url: text, bufferBytes: bufferBytes, limits: limits,
                                          cancellation: cancellation, live: live)
        switch try connection.awaitFormat() {
        case .ogg, .flac: return try SndfileStreamDecoder(connection: connection)
        case .mp3, .unknown: return try StreamDecoder(connection: connection, outputRate: outputRate)
        }
    }
}

extension AudioFileKind {
    /// Opens a track for the decode worker: a file as `openDecoder(path:outputRate:)` does, or an internet stream
    /// (`path.isStreamURL`), fetched and opened by its type, whose waits for the network end early as `cancellation`
    /// says, into the buffer `live` makes for it when given (the player's `liveBufferMinutes`).
    public static func openDecoder(
        path: TrackPath, outputRate: Int?, cancellation: StreamCancellation,
        live: (link: LiveBufferLink, index: Int)? = nil
    ) throws(DecodeError) -> any AudioDecoder {
        if path.isStreamURL {
            return try StreamConnection.openDecoder(url: path, outputRate: outputRate, cancellation: cancellation,
                                                    live: live)
        }
        return try openDecoder(path: path, outputRate: outputRate)
    }
}
