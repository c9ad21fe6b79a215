// The data the MPRIS adapter exchanges with its owner: commands in, replies back, snapshots to publish, and the one
// protocol the owner calls (`MPRISPublishing`). Plain Swift values: the adapter knows MPRIS and sd-bus, the owner
// knows the player, and these types are all they share.
import Glibc
import TrackPaths

/// A request a desktop client (playerctl, media keys, WirePlumber, a shell applet) made over MPRIS.
public enum MPRISCommand: Hashable, Sendable {
    /// `Play`: start or resume. Never toggles. `sender` is who asked (see `MPRISSender`).
    case play(MPRISSender)
    /// `Pause`: pause. Never toggles; pausing a paused player changes nothing. Also a write of `Rate` 0.0.
    case pause(MPRISSender)
    /// `PlayPause`: a toggle when the user asks; from WirePlumber or a phone bridge, the answer to its own `Pause`.
    case playPause(MPRISSender)
    /// `Stop`.
    case stop
    /// `Next`.
    case next
    /// `Previous`.
    case previous
    /// `Seek`: move by `offsetMicroseconds` (negative is backwards) within the current track.
    case seek(offsetMicroseconds: Int64)
    /// `SetPosition`: move to `positionMicroseconds` in the track `trackId`. The adapter has already checked
    /// that `trackId` is the current track's and the position is not negative (the MPRIS rules); the
    /// position may still be past the end if the length is unknown.
    case setPosition(trackId: String, positionMicroseconds: Int64)
    /// `OpenUri`: play these files in place of the queue. The adapter has already checked that the URI is a `file://`
    /// URI naming a readable regular file, and hands its decoded absolute path (any bytes, as percent-escapes allow)
    /// as the only one, or an `http://` or `https://` URI with a host, as it is (a stream); a playlist's tracks
    /// take its place before the player sees it (the `earshot` executable's wiring reads it, off the owner, as
    /// `earshot add` does).
    case openUri(paths: [TrackPath])
    /// A write of the `Volume` property (1.0 is 100%; never negative, never NaN).
    case setVolume(Double)
    /// `LoopStatus` written: repeat nothing, the track, or the whole queue.
    case setLoopStatus(MPRISSnapshot.LoopStatus)
    /// `Shuffle` written.
    case setShuffle(Bool)
    /// `Quit`: the service should shut down. Reply first, then shut down from elsewhere.
    case quit
}

/// The owner's answer to an `MPRISCommand`.
public enum MPRISReply: Equatable, Sendable {
    /// Done: the method returns normally.
    case done
    /// Refused: the caller gets a D-Bus error (`org.freedesktop.DBus.Error.Failed`) with this message.
    case refused(String)
}

/// What the MPRIS object shows: the player's state as clients see it.
public struct MPRISSnapshot: Equatable, Sendable {
    /// `PlaybackStatus`.
    public enum PlaybackStatus: String, Equatable, Sendable {
        /// Playing.
        case playing = "Playing"
        /// Paused, including paused by an interruption or a lost output.
        case paused = "Paused"
        /// Stopped, or nothing queued.
        case stopped = "Stopped"
    }

    /// `PlaybackStatus`.
    public var playbackStatus: PlaybackStatus

    /// `LoopStatus` values, as MPRIS spells them.
    public enum LoopStatus: String, Equatable, Sendable {
        /// Each track once, stop at the end (`repeat off`).
        case none = "None"
        /// The current track again (`repeat track`).
        case track = "Track"
        /// The queue again (`repeat queue`).
        case playlist = "Playlist"
    }

    /// `LoopStatus`.
    public var loopStatus: LoopStatus
    /// `Shuffle`.
    public var shuffle: Bool
    /// `mpris:trackid`: a D-Bus object path naming the current track (see `trackId(_:)`), nil for none.
    /// A change of this value is a track change: PlaybackStatus and Metadata are announced together.
    public var trackId: String?
    /// `xesam:title`.
    public var title: String?
    /// `xesam:artist` (omitted when empty).
    public var artists: [String]
    /// `xesam:album`.
    public var album: String?
    /// `xesam:albumArtist` (published as a one-element list).
    public var albumArtist: String?
    /// `xesam:trackNumber`.
    public var trackNumber: Int?
    /// The cover picture's file, published as `mpris:artUrl` (a `file://` URI, percent-escaped).
    public var artPath: TrackPath?
    /// The current file's absolute path, published as `xesam:url` (a `file://` URI, percent-escaped, so valid
    /// UTF-8 whatever the name's bytes).
    public var filePath: TrackPath?
    /// `mpris:length` in microseconds, nil when unknown.
    public var lengthMicroseconds: Int64?
    /// Where the current track's ReplayGain comes from (`trackTag`, `albumTag`, `trackMeasured`, `albumMeasured`,
    /// `fallback`, `off`), published as `earshot:replayGainSource`; nil without a track.
    public var replayGainSource: String?
    /// The gain it plays at in dB, published as `earshot:replayGainDb`; nil without a track.
    public var replayGainDb: Double?
    /// `Volume`: 1.0 is 100%.
    public var volume: Double
    /// `CanGoNext`.
    public var canGoNext: Bool
    /// `CanGoPrevious`.
    public var canGoPrevious: Bool
    /// `CanPlay`.
    public var canPlay: Bool
    /// `CanPause`.
    public var canPause: Bool
    /// `CanSeek`.
    public var canSeek: Bool

    /// A snapshot; the defaults describe a stopped player with nothing queued.
    public init(
        playbackStatus: PlaybackStatus = .stopped, trackId: String? = nil, title: String? = nil,
        artists: [String] = [], album: String? = nil, albumArtist: String? = nil, trackNumber: Int? = nil,
        artPath: TrackPath? = nil, filePath: TrackPath? = nil, lengthMicroseconds: Int64? = nil,
        volume: Double = 1.0, canGoNext: Bool = false, canGoPrevious: Bool = false, canPlay: Bool = false,
        canPause: Bool = false, canSeek: Bool = false, loopStatus: LoopStatus = .none, shuffle: Bool = false
    ) {
        self.playbackStatus = playbackStatus
        self.loopStatus = loopStatus
        self.shuffle = shuffle
        self.trackId = trackId
        self.title = title
        self.artists = artists
        self.album = album
        self.albumArtist = albumArtist
        self.trackNumber = trackNumber
        self.artPath = artPath
        self.filePath = filePath
        self.lengthMicroseconds = lengthMicroseconds
        self.volume = volume
        self.canGoNext = canGoNext
        self.canGoPrevious = canGoPrevious
        self.canPlay = canPlay
        self.canPause = canPause
        self.canSeek = canSeek
    }

    /// A track id for `number`, e.g. `/org/earshot/track/3`. Clients treat a new id as a new track, so the
    /// owner should make `number` unique per queued item (for example a counter bumped whenever the queue is
    /// replaced, combined with the index), not just the queue index.
    public static func trackId(_ number: Int) -> String {
        "/org/earshot/track/\(number)"
    }

    /// Whether the metadata differs from `other`'s (track id included).
    func metadataDiffers(from other: MPRISSnapshot) -> Bool {
        trackId != other.trackId || title != other.title || artists != other.artists || album != other.album
            || filePath != other.filePath || lengthMicroseconds != other.lengthMicroseconds
            || albumArtist != other.albumArtist || trackNumber != other.trackNumber || artPath != other.artPath
    }

    /// The `org.mpris.MediaPlayer2.Player` properties whose values differ from `old`, in a fixed order.
    /// A track change always names PlaybackStatus with Metadata, so clients see the two in one signal.
    func changedProperties(since old: MPRISSnapshot) -> [String] {
        var names: [String] = []
        if playbackStatus != old.playbackStatus || trackId != old.trackId { names.append("PlaybackStatus") }
        if metadataDiffers(from: old) { names.append("Metadata") }
        if volume != old.volume { names.append("Volume") }
        if loopStatus != old.loopStatus { names.append("LoopStatus") }
        if shuffle != old.shuffle { names.append("Shuffle") }
        if canGoNext != old.canGoNext { names.append("CanGoNext") }
        if canGoPrevious != old.canGoPrevious { names.append("CanGoPrevious") }
        if canPlay != old.canPlay { names.append("CanPlay") }
        if canPause != old.canPause { names.append("CanPause") }
        if canSeek != old.canSeek { names.append("CanSeek") }
        return names
    }
}

/// What the player needs of its MPRIS presence, and all it sees of it: show a new snapshot, announce a jump in the
/// position, and leave the bus. Requests come the other way, as `MPRISCommand`s to the handler `MPRISServer` was
/// made with. Each call returns at once (the bus thread does the work), so the player's owner never waits on D-Bus.
public protocol MPRISPublishing: AnyObject, Sendable {
    /// Shows `snapshot`; clients are told the properties that changed.
    func update(_ snapshot: MPRISSnapshot)
    /// Emits `Seeked(positionMicroseconds)`.
    func emitSeeked(positionMicroseconds: Int64)
    /// Releases the bus name and stops serving.
    func stop()
}

/// A change of the MPRIS server's connection to the session bus, for the owner's event log (kinds only).
public enum MPRISConnectionChange: Equatable, Sendable {
    /// The first connection was made and the name taken.
    case connected
    /// The connection was lost (the session bus went away); `error` is sd-bus's error number, or "closed".
    case lost(error: String)
    /// Connected again after a loss, name and object registered anew.
    case reconnected
}

/// Why the MPRIS server could not start.
public struct MPRISError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The step that failed, e.g. "connect to the session bus", "request the name".
    public var operation: String
    /// The system's error number (positive).
    public var code: Int32

    /// An error for `operation` with errno value `code`.
    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    /// One line, e.g. `MPRIS: cannot request the name org.mpris.MediaPlayer2.earshot: File exists`.
    public var description: String {
        "MPRIS: cannot \(operation): \(String(cString: strerror(code)))"
    }
}

/// Turning an `OpenUri` argument into a queue entry, by the schemes Earshot announces: a local file (`file`), or an
/// internet stream (`http`, `https`), queued as its URL for the decoder to fetch.
enum MPRISURI {
    /// What an `OpenUri` argument turned out to be.
    enum Outcome: Equatable {
        /// A readable regular file at this absolute path.
        case file(TrackPath)
        /// Not acceptable; the message says why, for the caller.
        case refused(String)
    }

    /// The absolute path a `file://` URI names, if it is a readable regular file; otherwise a message for the
    /// caller saying what is wrong.
    static func localFile(_ uri: String) -> Outcome {
        guard let components = URIParts(uri), let scheme = components.scheme else {
            return .refused("OpenUri: not a valid URI")
        }
        if scheme.lowercased() == "http" || scheme.lowercased() == "https" {
            // What the server answers is the decoder's to find out and report, off the bus thread.
            guard components.host.map({ !$0.isEmpty }) == true else {
                return .refused("OpenUri: the URI names no host")
            }
            return .file(TrackPath(uri))
        }
        guard scheme.lowercased() == "file" else {
            return .refused("OpenUri: only file://, http:// and https:// URIs are supported, not \(scheme):")
        }
        if let host = components.host, !host.isEmpty, host != "localhost" {
            return .refused("OpenUri: only local files can be opened (the URI names host \(host))")
        }
        // Percent-escapes stand for bytes, which need not spell UTF-8 (`%FF` in a file name is a byte 0xFF).
        guard let bytes = TrackPath.percentDecodedBytes(components.percentEncodedPath),
              let path = TrackPath(bytes: bytes) else {
            return .refused("OpenUri: the URI's path is not valid")
        }
        guard path.bytes.first == UInt8(ascii: "/") else { return .refused("OpenUri: the URI has no absolute path") }
        var status = stat()
        guard path.withCString({ stat($0, &status) }) == 0 else {
            return .refused("OpenUri: cannot open the file: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else { return .refused("OpenUri: not a regular file") }
        guard path.withCString({ access($0, R_OK) }) == 0 else {
            return .refused("OpenUri: the file is not readable: \(String(cString: strerror(errno)))")
        }
        return .file(path)
    }
}
