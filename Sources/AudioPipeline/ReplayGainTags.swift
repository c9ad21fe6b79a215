// ReplayGainTags: the loudness values a file's tags carry (ReplayGain 2's REPLAYGAIN_* in ID3v2 TXXX frames and
// Vorbis comments, Opus's R128_* comments), read strictly: a value that is not plainly a number in range is dropped
// and its reason counted, so a damaged tag plays at the gain a file with no value gets, never at +80 dB.

/// The ReplayGain values of one track, as dB relative to ReplayGain 2's reference (-18 LUFS), and peaks as linear
/// amplitude (1.0 is full scale).
public struct ReplayGainTags: Equatable, Sendable {
    /// The track's own gain in dB, if tagged and sane.
    public var trackGain: Double?
    /// The track's highest sample, if tagged and sane.
    public var trackPeak: Double?
    /// The album's gain in dB, if tagged and sane.
    public var albumGain: Double?
    /// The album's highest sample, if tagged and sane.
    public var albumPeak: Double?
    /// Values found but dropped, and why: kinds only, never the text.
    public var problems: [ReplayGainProblem] = []
    /// The gain the decode thread applies to the track, set when it opened it (nil: none, the mode was off).
    public var applied: AppliedGain?
    /// Whether the values were measured by the library (EBU R128) rather than read from the file's tags.
    public var measured = false

    /// Creates a set of values; every one defaults to absent.
    public init(trackGain: Double? = nil, trackPeak: Double? = nil, albumGain: Double? = nil,
                albumPeak: Double? = nil) {
        self.trackGain = trackGain
        self.trackPeak = trackPeak
        self.albumGain = albumGain
        self.albumPeak = albumPeak
    }

    /// Whether any value was taken.
    public var isEmpty: Bool { trackGain == nil && trackPeak == nil && albumGain == nil && albumPeak == nil }

    /// The largest gain magnitude taken, in dB. A real measurement stays far inside it (a track 40 dB off the
    /// reference would be a hundred times too loud or quiet); +80 dB is damage, not music.
    public static let gainLimitDb = 40.0

    /// The largest peak taken: ReplayGain peaks can exceed 1 (lossy decoding overshoots), but not by a factor of 10.
    public static let peakLimit = 10.0

    /// The difference between ReplayGain 2's reference (-18 LUFS) and EBU R128's (-23 LUFS) that Opus's R128_* gains
    /// are relative to: an R128 gain plus 5 dB is a ReplayGain gain.
    public static let r128ToReplayGainDb = 5.0

    /// The kind of value a tag name carries.
    enum Field {
        case trackGain, trackPeak, albumGain, albumPeak, r128TrackGain, r128AlbumGain
    }

    /// The field a Vorbis comment or TXXX description names. Names are compared in upper case: Vorbis comment names
    /// are case-insensitive by their specification, and foobar2000 writes the TXXX descriptions in lower case.
    static func field(named name: String) -> Field? {
        switch name.uppercased() {
        case "REPLAYGAIN_TRACK_GAIN": return .trackGain
        case "REPLAYGAIN_TRACK_PEAK": return .trackPeak
        case "REPLAYGAIN_ALBUM_GAIN": return .albumGain
        case "REPLAYGAIN_ALBUM_PEAK": return .albumPeak
        case "R128_TRACK_GAIN": return .r128TrackGain
        case "R128_ALBUM_GAIN": return .r128AlbumGain
        default: return nil
        }
    }

    /// Takes `text` as the value of `field`; the first sane value of each field wins, a bad one is counted.
    mutating func take(_ field: Field, _ text: String) {
        let parsed: Result<Double, ReplayGainProblem>
        switch field {
        case .trackGain, .albumGain: parsed = Self.gain(text)
        case .trackPeak, .albumPeak: parsed = Self.peak(text)
        // An R128 gain is meant to replace a ReplayGain one in an Opus file; a REPLAYGAIN_* value, where both are
        // written and come first, is kept.
        case .r128TrackGain, .r128AlbumGain: parsed = Self.r128Gain(text)
        }
        let value: Double
        switch parsed {
        case .success(let good): value = good
        case .failure(let problem):
            problems.append(problem)
            return
        }
        switch field {
        case .trackGain, .r128TrackGain: trackGain = trackGain ?? value
        case .albumGain, .r128AlbumGain: albumGain = albumGain ?? value
        case .trackPeak: trackPeak = trackPeak ?? value
        case .albumPeak: albumPeak = albumPeak ?? value
        }
    }

    /// A ReplayGain gain: an optional sign, digits, an optional fraction, then optionally " dB" exactly as the
    /// specification writes it ("-6.54 dB"). Anything else (other spacing, "DB", text, NaN) is malformed.
    static func gain(_ text: String) -> Result<Double, ReplayGainProblem> {
        var number = Substring(text)
        if number.hasSuffix(" dB") { number = number.dropLast(3) } else if number.hasSuffix("dB") {
            number = number.dropLast(2)
        }
        guard let value = plainNumber(number, signed: true) else { return .failure(.malformedGain) }
        guard abs(value) <= gainLimitDb else { return .failure(.gainOutOfRange) }
        return .success(value)
    }

    /// A ReplayGain peak: unsigned digits with an optional fraction, above 0 and at most `peakLimit`.
    static func peak(_ text: String) -> Result<Double, ReplayGainProblem> {
        guard let value = plainNumber(Substring(text), signed: false) else { return .failure(.malformedPeak) }
        guard value > 0, value <= peakLimit else { return .failure(.peakOutOfRange) }
        return .success(value)
    }

    /// An Opus R128 gain: a signed integer in Q7.8 (1/256 dB) relative to -23 LUFS, as RFC 7845 writes it; returned
    /// relative to ReplayGain's -18 LUFS.
    static func r128Gain(_ text: String) -> Result<Double, ReplayGainProblem> {
        let digits = text.first == "-" || text.first == "+" ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.count <= 6, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let q78 = Int(text) else { return .failure(.malformedGain) }
        guard (-32768...32767).contains(q78) else { return .failure(.gainOutOfRange) }
        let value = Double(q78) / 256 + r128ToReplayGainDb
        guard abs(value) <= gainLimitDb else { return .failure(.gainOutOfRange) }
        return .success(value)
    }

    /// A decimal number with nothing around it: [sign] digits [. digits], at most 12 characters.
    private static func plainNumber(_ text: Substring, signed: Bool) -> Double? {
        var rest = text
        if signed, let first = rest.first, first == "-" || first == "+" { rest = rest.dropFirst() }
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard text.count <= 12, (1...2).contains(parts.count),
              parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }) else { return nil }
        return Double(text)
    }
}

/// Why a ReplayGain value in a tag was dropped.
public enum ReplayGainProblem: String, Error, Equatable, Sendable, CaseIterable {
    /// The gain is not a plain number of dB (text, NaN, stray spaces, "DB").
    case malformedGain
    /// The gain is beyond ±`ReplayGainTags.gainLimitDb`.
    case gainOutOfRange
    /// The peak is not a plain unsigned number.
    case malformedPeak
    /// The peak is 0 or below, or above `ReplayGainTags.peakLimit`.
    case peakOutOfRange
}
