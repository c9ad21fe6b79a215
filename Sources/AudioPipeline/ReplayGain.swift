// ReplayGain: the decoder wrapper that applies a track's gain (ReplayGainSettings.swift) on the decode thread, to the
// samples before they enter the ring, from each track's first sample: a gapless seam between two gains is
// sample-exact, with no ramp. The user's volume and a duck stay on the server's stream and never meet this gain.
// The same wrapper gives a track in the music library the library's tags and, when its own tags carry no gain, the
// gains the library measured (LibraryTrackInfo, asked on the decode thread at the track's start).
import SystemSupport
import TrackPaths

/// The settings the decode thread reads at each track's start, set from any thread (the owner's). Lock-guarded: it
/// is read once per opened track, never on the real-time path.
public final class ReplayGainControl: @unchecked Sendable {
    private let lock = Lock()
    // Guarded by `lock`.
    private var settings = ReplayGainSettings()
    private var shuffled = false
    private var library: (@Sendable (TrackPath) -> LibraryTrackInfo?)?

    /// Creates a control with the default settings (off).
    public init() {}

    /// Sets the settings and whether the queue plays shuffled, for tracks opened from now on.
    public func set(_ settings: ReplayGainSettings, shuffled: Bool) {
        lock.withLock {
            self.settings = settings
            self.shuffled = shuffled
        }
    }

    /// Sets where what the music library knows of a file is found (its database), or nothing. It is asked on the
    /// decode thread at each track's start, never on the owner's.
    public func setLibrary(_ lookup: (@Sendable (TrackPath) -> LibraryTrackInfo?)?) {
        lock.withLock { library = lookup }
    }

    /// The current settings and shuffle.
    public var current: (settings: ReplayGainSettings, shuffled: Bool) {
        lock.withLock { (settings, shuffled) }
    }

    /// `decoder` with the gain its tags call for applied to every frame it decodes, and named in its metadata
    /// (`ReplayGainTags.applied`). A file at `path` that is in the library shows the library's tags, and takes the
    /// gains it measured when its own tags carry none. Itself when the mode is off and the library has no tags for it.
    public func applied(to decoder: any AudioDecoder, path: TrackPath? = nil) -> any AudioDecoder {
        let (settings, shuffled) = current
        let lookup = lock.withLock { library }
        let known = path.flatMap { path in lookup?(path) }
        guard settings.mode != .off || known?.tags != nil else { return decoder }
        var tags = decoder.metadata.replayGain
        if tags.trackGain == nil && tags.albumGain == nil, var measured = known?.measuredGains {
            measured.measured = true
            measured.problems = tags.problems
            tags = measured
        }
        return GainedDecoder(decoder, gain: settings.gain(for: tags, shuffled: shuffled), gains: tags,
                             libraryTags: known?.tags)
    }
}

/// What the music library knows of one file.
public struct LibraryTrackInfo: Sendable {
    /// The text tags as the library holds them (nil: the file is not in it); the picture stays the file's own.
    public var tags: TrackMetadata?
    /// The gains the library measured for it, when its tags carry none.
    public var measuredGains: ReplayGainTags?

    /// Creates what the library knows.
    public init(tags: TrackMetadata?, measuredGains: ReplayGainTags?) {
        self.tags = tags
        self.measuredGains = measuredGains
    }
}

/// A decoder whose frames are scaled by a fixed gain: the gain starts on the track's first sample and ends on its
/// last, whatever the chunks.
final class GainedDecoder: AudioDecoder {
    private let inner: any AudioDecoder
    /// The gain applied.
    let gain: AppliedGain
    /// The values it was chosen from (the file's, or those measured for it).
    let gains: ReplayGainTags

    /// The library's tags for the file, shown instead of the file's own text tags.
    let libraryTags: TrackMetadata?

    /// Whether the inner decoder scales its own output (libmpg123 does it in its synthesis, at no cost), so that the
    /// loop here is not needed.
    private let scaledInside: Bool

    init(_ inner: any AudioDecoder, gain: AppliedGain, gains: ReplayGainTags, libraryTags: TrackMetadata? = nil) {
        self.inner = inner
        self.gain = gain
        self.gains = gains
        self.libraryTags = libraryTags
        // Asked before the first frame is decoded, so the scaling still starts on the track's first sample.
        scaledInside = gain.linear != 1 && (inner as? ScalingDecoder)?.scaleOutput(by: gain.linear) == true
    }

    var format: AudioFormat { inner.format }
    var lengthFrames: Int? { inner.lengthFrames }
    var metadata: TrackMetadata {
        var metadata = inner.metadata
        if let library = libraryTags {
            (metadata.title, metadata.artist, metadata.album) = (library.title, library.artist, library.album)
            (metadata.albumArtist, metadata.trackNumber, metadata.discNumber) =
                (library.albumArtist, library.trackNumber, library.discNumber)
            (metadata.genre, metadata.date, metadata.composer) = (library.genre, library.date, library.composer)
            metadata.musicBrainz = library.musicBrainz
        }
        metadata.replayGain = gains
        metadata.replayGain.applied = gain
        return metadata
    }
    var positionFrame: Int { inner.positionFrame }
    var isMono: Bool { inner.isMono }

    func decode(into buffer: UnsafeMutableBufferPointer<Int16>) throws(DecodeError) -> DecodeStep {
        let step = try inner.decode(into: buffer)
        if case .frames(let frames) = step, !scaledInside {
            gain.apply(to: UnsafeMutableBufferPointer(rebasing: buffer.prefix(frames * format.channels)))
        }
        return step
    }

    func seek(toFrame frame: Int) throws(DecodeError) {
        try inner.seek(toFrame: frame)
    }
}
