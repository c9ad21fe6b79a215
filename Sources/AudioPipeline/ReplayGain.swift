// ReplayGain: the decoder wrapper that applies a track's gain (ReplayGainSettings.swift) on the decode thread, to the
// samples before they enter the ring, from each track's first sample: a gapless seam between two gains is
// sample-exact, with no ramp. The user's volume and a duck stay on the server's stream and never meet this gain.
import SystemSupport

/// The settings the decode thread reads at each track's start, set from any thread (the owner's). Lock-guarded: it
/// is read once per opened track, never on the real-time path.
public final class ReplayGainControl: @unchecked Sendable {
    private let lock = Lock()
    // Guarded by `lock`.
    private var settings = ReplayGainSettings()
    private var shuffled = false

    /// Creates a control with the default settings (off).
    public init() {}

    /// Sets the settings and whether the queue plays shuffled, for tracks opened from now on.
    public func set(_ settings: ReplayGainSettings, shuffled: Bool) {
        lock.withLock {
            self.settings = settings
            self.shuffled = shuffled
        }
    }

    /// The current settings and shuffle.
    public var current: (settings: ReplayGainSettings, shuffled: Bool) {
        lock.withLock { (settings, shuffled) }
    }

    /// `decoder` with the gain its tags call for applied to every frame it decodes, and named in its metadata
    /// (`ReplayGainTags.applied`); itself when the mode is off.
    public func applied(to decoder: any AudioDecoder) -> any AudioDecoder {
        let (settings, shuffled) = current
        guard settings.mode != .off else { return decoder }
        return GainedDecoder(decoder, gain: settings.gain(for: decoder.metadata.replayGain, shuffled: shuffled))
    }
}

/// A decoder whose frames are scaled by a fixed gain: the gain starts on the track's first sample and ends on its
/// last, whatever the chunks.
final class GainedDecoder: AudioDecoder {
    private let inner: any AudioDecoder
    /// The gain applied.
    let gain: AppliedGain

    init(_ inner: any AudioDecoder, gain: AppliedGain) {
        self.inner = inner
        self.gain = gain
    }

    var format: AudioFormat { inner.format }
    var lengthFrames: Int? { inner.lengthFrames }
    var metadata: TrackMetadata {
        var metadata = inner.metadata
        metadata.replayGain.applied = gain
        return metadata
    }
    var positionFrame: Int { inner.positionFrame }

    func decode(into buffer: UnsafeMutableBufferPointer<Int16>) throws(DecodeError) -> DecodeStep {
        let step = try inner.decode(into: buffer)
        if case .frames(let frames) = step {
            gain.apply(to: UnsafeMutableBufferPointer(rebasing: buffer.prefix(frames * format.channels)))
        }
        return step
    }

    func seek(toFrame frame: Int) throws(DecodeError) {
        try inner.seek(toFrame: frame)
    }
}
