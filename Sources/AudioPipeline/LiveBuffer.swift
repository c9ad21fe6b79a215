// The live buffer's link between the player and the fetch of the live stream the decoder has open (issue 40; RULES.md
// rows 24 and 32): how long a paused station is kept (`liveBufferMinutes`), whom its first overflow is reported to,
// and the counts status shows. The fetch thread writes, the decode thread reads, the owner only looks (a lock held
// for a few loads) and never waits.
import NetworkStream
import SystemSupport

/// What status shows of the live stream's buffer.
public struct LiveBufferCounts: Equatable, Sendable {
    /// The stream's queue index.
    public var index: Int
    /// The bytes received and not decoded yet.
    public var bytes: Int
    /// How long ago the oldest of them arrived, in milliseconds: how far the decoder is behind live, less the ring.
    public var milliseconds: Int
    /// The bytes dropped because the buffer was full or past its time (the stream went on without them).
    public var droppedBytes: UInt64
}

/// Joins the player to whichever live stream the decoder has open: one per player, shared with the decode worker.
public final class LiveBufferLink: Sendable {
    /// The most bytes a second a live buffer is sized for: 320 kbit/s, MP3's highest rate. A station sending more
    /// (a FLAC stream) fills the buffer in less time than `seconds`, which counts as an overflow like any other.
    public static let bytesPerSecondBound = 40_000

    /// How long a station that is not read (a paused player) is kept, in seconds (`liveBufferMinutes`).
    public let seconds: Double
    private let overflowed: @Sendable (Int) -> Void
    private let network: @Sendable (Int, LiveNetworkNotice) -> Void
    private let current = LockedValue<(index: Int, buffer: StreamByteBuffer, connection: WeakConnection?)?>(nil)

    /// A link keeping `seconds` of a station, reporting its first overflow to `overflowed` and what happens to its
    /// connection to `network`, each with the stream's index (on the fetch or decode thread: they must not wait).
    public init(seconds: Double = 30 * 60, overflowed: @escaping @Sendable (Int) -> Void = { _ in },
                network: @escaping @Sendable (Int, LiveNetworkNotice) -> Void = { _, _ in }) {
        self.seconds = seconds
        self.overflowed = overflowed
        self.network = network
    }

    /// Rows 38-41: the live stream at `index`, received into `buffer`, lost its connection, was answered again, or
    /// ran dry. Only the stream the link holds is reported: a notice of one it let go (another opened since) is stale,
    /// and that stream could not be reconnected anyway.
    func report(_ notice: LiveNetworkNotice, index: Int, from buffer: StreamByteBuffer) {
        guard current.withLock({ $0?.index == index && $0?.buffer === buffer }) else { return }
        network(index, notice)
    }

    /// The connection of the stream `makeBuffer` made a buffer for, so that the owner can reconnect or end it.
    func attach(_ connection: StreamConnection, index: Int) {
        current.withLock { open in
            guard open?.index == index, open?.buffer === connection.buffer else { return }
            open?.connection = WeakConnection(connection)
        }
    }

    /// Row 38: fetches live stream `index` again into its buffer, unless it is not open, or connected, or an
    /// attempt is under way. Starts a thread and returns: never waits for the network.
    public func reconnect(index: Int) -> LiveReconnectStart {
        guard let connection = connection(index: index) else { return .notOpen }
        return connection.reconnect() ? .started : .underWay
    }

    /// Row 39: live stream `index` ended: its decoder plays out what its buffer holds, then ends the track.
    public func end(index: Int) {
        connection(index: index)?.end()
    }

    private func connection(index: Int) -> StreamConnection? {
        current.withLock { open in open?.index == index ? open?.connection?.value : nil }
    }

    /// The counts of the stream open now, nil when none is.
    public var counts: LiveBufferCounts? {
        guard let open = current.withLock({ $0 }) else { return nil }
        let counts = open.buffer.counts
        return LiveBufferCounts(index: open.index, bytes: counts.stored,
                                milliseconds: Int(open.buffer.oldestAgeNanoseconds / 1_000_000),
                                droppedBytes: counts.dropped)
    }

    /// A buffer for live stream `index`, bounded by `seconds` in time and by `bytesPerSecondBound` in bytes, made the
    /// one status shows.
    func makeBuffer(index: Int) -> StreamByteBuffer {
        let capacity = Int(seconds * Double(Self.bytesPerSecondBound))
        let report = overflowed
        let buffer = StreamByteBuffer(capacity: capacity, maximumAgeNanoseconds: UInt64(seconds * 1e9)) {
            report(index)
        }
        current.withLock { $0 = (index, buffer, nil) }
        return buffer
    }

    /// The fetch of `buffer` is over: status shows it no more.
    func release(_ buffer: StreamByteBuffer) {
        current.withLock { if $0?.buffer === buffer { $0 = nil } }
    }
}

/// What happens to a live stream's connection, as the link reports it (the player makes the rules' events of it).
public enum LiveNetworkNotice: Equatable, Sendable {
    /// The connection was lost, or an attempt to reconnect failed, for this reason.
    case lost(LiveConnectionEnd)
    /// The fetch was answered with the stream: at the open, or an attempt to reconnect.
    case connected
    /// The decoder found nothing to decode while the connection is lost.
    case ranDry
}

/// How a live stream's connection ended, as the fetch said it: the server's and the network's facts, in the kinds the
/// player hands the rules (which decide what each means: EarshotCore's LiveNetwork.swift). The fetch's own types stay
/// here, off the owner's module.
public enum LiveConnectionEnd: String, Equatable, Sendable, CaseIterable {
    /// The server closed the stream cleanly (or the fetch was stopped).
    case serverClosed
    /// A plain web server (no ICY header) closed cleanly a response that announced no length.
    case plainResponseClosed
    /// The server answered 404 or 410: the mount is gone.
    case mountGone
    /// Any other refusal: another HTTP status (a proxy's 502 or 503 while its origin restarts), or no audio.
    case refused
    /// Nobody listened at the address.
    case connectionRefused
    /// The connection broke while receiving.
    case connectionLost
    /// Nothing came for the fetch's silence limit.
    case timedOut
    /// The host's name did not resolve.
    case unresolvedHost
    /// The certificate was not trusted, or TLS failed.
    case tls
    /// Anything else (too many redirects, a malformed address, libcurl missing).
    case other

    /// The kind of the fetch's `end`.
    public init(_ end: StreamEnd) {
        switch end {
        case .serverClosed, .completed, .stopped: self = .serverClosed
        case .plainResponseClosed: self = .plainResponseClosed
        case .refused(.httpStatus(404)), .refused(.httpStatus(410)): self = .mountGone
        case .refused: self = .refused
        case .failed(let failure):
            switch failure {
            case .connectionRefused: self = .connectionRefused
            case .connectionLost: self = .connectionLost
            case .timedOut: self = .timedOut
            case .unresolvedHost: self = .unresolvedHost
            case .certificateNotTrusted, .tlsFailed: self = .tls
            case .tooManyRedirects, .unsupportedScheme, .malformedURL, .libraryMissing, .other: self = .other
            }
        }
    }
}

/// What asking to reconnect a live stream did.
public enum LiveReconnectStart: Equatable, Sendable {
    /// A new fetch started into the stream's buffer.
    case started
    /// None: the stream is connected, or an attempt is under way; their report is on its way.
    case underWay
    /// None: no stream of that index is open (its decoder was let go).
    case notOpen
}

/// A connection the link does not keep alive: its decoder owns it.
final class WeakConnection: @unchecked Sendable {
    weak var value: StreamConnection?

    init(_ value: StreamConnection) {
        self.value = value
    }
}
