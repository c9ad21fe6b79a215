// What the decode worker tells its controller (DecodeWorker.swift), where each track's audio begins in its ring,
// and the place in the queue a ring frame maps back to.

/// What the decode worker reports, in the order it happens, on the worker thread.
///
/// Every `ringFrame` is a value of `FrameRing.totalFramesWritten`: the consumer has played up to that
/// point when its `totalFramesRead` (less its own output latency) reaches it.
public enum DecodeNotice: Sendable, Equatable {
    /// The worker took the start point of ring generation `generation` (`reposition`): its audio begins at
    /// `ringFrame`, and every notice before this one belongs to an older generation.
    case restarted(generation: Int, ringFrame: Int)
    /// The track at `index` begins at `ringFrame` (after a reposition it begins mid-track).
    case trackStarted(index: Int, ringFrame: Int, format: AudioFormat, lengthFrames: Int?, metadata: TrackMetadata)
    /// The live stream at `index` changed its tags (a station's new ICY title) in the audio decoded up to
    /// `ringFrame`.
    case metadataChanged(index: Int, ringFrame: Int, metadata: TrackMetadata)
    /// The track at `index` could not be opened or stopped decoding, the `failuresInARow`th track in a row to fail
    /// (with none opened fine between). The worker waits for `skipFailedTrack` to name the track it tries next.
    case trackFailed(index: Int, error: DecodeError, failuresInARow: Int)
    /// The track at `index` was decoded to its end, which is at `ringFrame`.
    case trackDecoded(index: Int, ringFrame: Int)
    /// Frames from `ringFrame` on will be in format `to`. The worker writes none of them until
    /// `continueAfterFormatChange()`: play out to `ringFrame`, re-create the stream, then call it.
    case formatChange(from: AudioFormat, to: AudioFormat, ringFrame: Int)
    /// No track is left after `ringFrame`; the worker idles until `load`, `append` or `reposition`.
    case queueFinished(ringFrame: Int)
    /// The ring holds at least the frames asked for with `noticeWhenBuffered(frames:)` (once per request).
    case buffered(readableFrames: Int)
}

/// Where one track's audio begins in the ring, so ring frames map back to track frames.
struct TrackMarker: Equatable, Sendable {
    /// The ring frame (a `totalFramesWritten` value) of the marker's first frame.
    var ringFrame: Int
    /// Index of the track in the queue.
    var trackIndex: Int
    /// Format of the frames from here on.
    var format: AudioFormat
    /// The track frame at `ringFrame` (non-zero after a seek or a mid-track format change).
    var startFrame: Int
    /// The track's length in frames, if known.
    var lengthFrames: Int?
}

/// A place in the queue: a track and an output frame within it.
public struct TrackPosition: Equatable, Sendable {
    /// Index of the track in the worker's queue.
    public var trackIndex: Int
    /// Output frame within that track (0 is its first sample).
    public var frame: Int
    /// The rate the track's frames are played at, to turn `frame` into time.
    public var sampleRate: Int

    /// Creates a position.
    public init(trackIndex: Int, frame: Int, sampleRate: Int) {
        self.trackIndex = trackIndex
        self.frame = frame
        self.sampleRate = sampleRate
    }
}
