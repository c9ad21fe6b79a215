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
    private let current = LockedValue<(index: Int, buffer: StreamByteBuffer)?>(nil)

    /// A link keeping `seconds` of a station, reporting its first overflow to `overflowed` with the stream's index
    /// (on the fetch thread: it must not wait).
    public init(seconds: Double = 30 * 60, overflowed: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.seconds = seconds
        self.overflowed = overflowed
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
        current.withLock { $0 = (index, buffer) }
        return buffer
    }

    /// The fetch of `buffer` is over: status shows it no more.
    func release(_ buffer: StreamByteBuffer) {
        current.withLock { if $0?.buffer === buffer { $0 = nil } }
    }
}
