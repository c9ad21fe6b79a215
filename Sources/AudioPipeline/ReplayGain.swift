// ReplayGain: which gain a track gets (the mode, the preamp, the fallback for untagged files, the peak's limit), as
// a pure value; and the decoder wrapper that applies it on the decode thread, to the samples before they enter the
// ring, from each track's first sample: a gapless seam between two gains is sample-exact, with no ramp. The user's
// volume and a duck stay on the server's stream and never meet this gain.
#if canImport(Glibc)
import Glibc
#endif
import SystemSupport

/// Which of a file's gains is used.
public enum ReplayGainMode: String, Equatable, Sendable, CaseIterable {
    /// No gain: files play as they are.
    case off
    /// Each track at the reference loudness.
    case track
    /// Each album at the reference loudness, its tracks keeping their levels relative to each other.
    case album
    /// Album gain while the queue plays in order, track gain under shuffle (as foobar2000 and Strawberry do).
    case auto
}

/// Where an applied gain came from.
public enum ReplayGainSource: String, Equatable, Sendable {
    /// The mode is off.
    case off
    /// The file's track gain.
    case trackTag
    /// The file's album gain.
    case albumTag
    /// The file has no usable value: the configured fallback.
    case fallback
}

/// The user's ReplayGain settings: the mode, a preamp added to tagged gains, and the gain for untagged files.
public struct ReplayGainSettings: Equatable, Sendable {
    /// Which gain is used.
    public var mode: ReplayGainMode
    /// Added to a tagged gain, in dB.
    public var preampDb: Double
    /// The gain of a file with no usable value, in dB (no preamp is added to it).
    public var fallbackDb: Double

    /// Creates settings; the defaults are off (a file plays as it is until the user chooses), 0 dB, 0 dB.
    public init(mode: ReplayGainMode = .off, preampDb: Double = 0, fallbackDb: Double = 0) {
        self.mode = mode
        self.preampDb = preampDb
        self.fallbackDb = fallbackDb
    }

    /// The gain a track with `tags` gets; `shuffled` says whether the queue plays shuffled (for `auto`).
    public func gain(for tags: ReplayGainTags, shuffled: Bool) -> AppliedGain {
        let preferAlbum: Bool
        switch mode {
        case .off: return AppliedGain(decibels: 0, linear: 1, source: .off, limitedByPeak: false)
        case .track: preferAlbum = false
        case .album: preferAlbum = true
        case .auto: preferAlbum = !shuffled
        }
        // A file with only the other kind of gain uses it rather than the fallback: an album gain is the better guess
        // for a track, and a lone track's gain for its album.
        let album = tags.albumGain.map { ($0, tags.albumPeak ?? tags.trackPeak, ReplayGainSource.albumTag) }
        let track = tags.trackGain.map { ($0, tags.trackPeak ?? tags.albumPeak, ReplayGainSource.trackTag) }
        guard let (gain, peak, source) = preferAlbum ? album ?? track : track ?? album else {
            return AppliedGain.limited(decibels: fallbackDb, peak: nil, source: .fallback)
        }
        return AppliedGain.limited(decibels: gain + preampDb, peak: peak, source: source)
    }
}

/// A gain as applied to samples: its dB, its linear factor after the peak's limit, and its source.
public struct AppliedGain: Equatable, Sendable {
    /// The gain asked for, in dB (before any limit).
    public var decibels: Double
    /// The factor the samples are multiplied by.
    public var linear: Double
    /// Where the gain came from.
    public var source: ReplayGainSource
    /// Whether the peak lowered the factor so that no sample exceeds full scale.
    public var limitedByPeak: Bool

    /// Creates an applied gain.
    public init(decibels: Double, linear: Double, source: ReplayGainSource, limitedByPeak: Bool) {
        self.decibels = decibels
        self.linear = linear
        self.source = source
        self.limitedByPeak = limitedByPeak
    }

    /// `decibels` as a factor, lowered where the track's `peak` times it would pass full scale (1.0).
    static func limited(decibels: Double, peak: Double?, source: ReplayGainSource) -> AppliedGain {
        let factor = linearFactor(decibels)
        if let peak, peak * factor > 1 {
            return AppliedGain(decibels: decibels, linear: 1 / peak, source: source, limitedByPeak: true)
        }
        return AppliedGain(decibels: decibels, linear: factor, source: source, limitedByPeak: false)
    }

    /// 10^(dB/20).
    public static func linearFactor(_ decibels: Double) -> Double {
        pow(10, decibels / 20)
    }

    /// Scales `samples` in place by `linear`, rounding to the nearest and saturating at the 16-bit range (which a
    /// peak-limited gain never reaches, and an untagged file's positive fallback may). A factor of 1 leaves them.
    func apply(to samples: UnsafeMutableBufferPointer<Int16>) {
        guard linear != 1 else { return }
        let factor = Float(linear)
        for index in samples.indices {
            let scaled = (Float(samples[index]) * factor).rounded()
            samples[index] = Int16(max(-32768, min(32767, scaled)))
        }
    }
}

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

    /// `decoder` with the gain its tags call for applied to every frame it decodes (itself when the gain is 1).
    func applied(to decoder: any AudioDecoder) -> any AudioDecoder {
        let (settings, shuffled) = current
        let gain = settings.gain(for: decoder.metadata.replayGain, shuffled: shuffled)
        return gain.linear == 1 ? decoder : GainedDecoder(decoder, gain: gain)
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
    var metadata: TrackMetadata { inner.metadata }
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
