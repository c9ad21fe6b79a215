// ReplayGainSettings: which gain a track gets (the mode, the preamp, the fallback for untagged files, the peak's
// limit) as a pure value, and the scaling of samples by it. Standard library and libm only: the configuration's fuzz
// target (scripts/fuzz) compiles it with ReplayGainTags.swift alone.
#if canImport(Glibc)
import Glibc
#endif

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
    /// The track gain the library measured (EBU R128) for a file whose tags carry none.
    case trackMeasured
    /// The album gain the library measured for a file whose tags carry none.
    case albumMeasured
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
        let album = tags.albumGain.map {
            ($0, tags.albumPeak ?? tags.trackPeak, tags.measured ? ReplayGainSource.albumMeasured : .albumTag)
        }
        let track = tags.trackGain.map {
            ($0, tags.trackPeak ?? tags.albumPeak, tags.measured ? ReplayGainSource.trackMeasured : .trackTag)
        }
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

    /// The gain as applied, in dB: `decibels`, or less where the peak limited it.
    public var effectiveDecibels: Double { linear > 0 ? 20 * log10(linear) : -.infinity }

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

    /// Scales `samples` in place by `linear`, rounding to the nearest (halves upward) and saturating at the 16-bit
    /// range (which a peak-limited gain never reaches, and an untagged file's positive fallback may). A factor of 1
    /// leaves them. In fixed point (the factor in Q24, within 6e-8 of it; a product of a sample and a factor up to
    /// +40 dB stays under 2^46) with wrapping operations only, which the compiler can vectorize: a float loop with
    /// `rounded()` and a checked conversion cost half as much again as decoding a FLAC.
    func apply(to samples: UnsafeMutableBufferPointer<Int16>) {
        guard linear != 1, let base = samples.baseAddress else { return }
        let factor = Int64((linear * 16_777_216).rounded())
        for index in 0..<samples.count {
            let scaled = (Int64(base[index]) &* factor &+ 8_388_608) &>> 24
            base[index] = Int16(truncatingIfNeeded: Swift.min(Swift.max(scaled, -32768), 32767))
        }
    }
}
