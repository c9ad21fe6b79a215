// The values a PlaybackStream takes and reports: its properties, its notices, the commands they name, the
// write-callback probe for tests, and the buffer sizes the server granted.

/// Properties of our stream that mixers (pavucontrol) show and the server's policy modules act on.
public struct StreamProperties: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// `media.role`: module-role-cork corks only `music` and `video` streams, and none without a role.
    public var mediaRole: String
    /// `application.name`.
    public var applicationName: String
    /// `application.icon_name`.
    public var iconName: String
    /// `media.name`: the track title, shown by mixers. User content: NEVER logged, and redacted from `description`.
    public var mediaName: String

    /// Creates stream properties; the defaults suit a music player.
    public init(
        mediaRole: String = "music",
        applicationName: String = "Earshot",
        iconName: String = "audio-x-generic",
        mediaName: String = "Earshot"
    ) {
        self.mediaRole = mediaRole
        self.applicationName = applicationName
        self.iconName = iconName
        self.mediaName = mediaName
    }

    /// A description safe to log: the media name is redacted.
    public var description: String {
        "StreamProperties(mediaRole: \(mediaRole), applicationName: \(applicationName), iconName: \(iconName), "
            + "mediaName: <redacted>)"
    }

    /// Same as `description`: the media name is redacted here too.
    public var debugDescription: String {
        description
    }
}

/// An output command of a playback stream, as named in its acknowledgement or failure notice.
public enum StreamCommand: String, Sendable, Equatable, CaseIterable {
    /// `cork()`.
    case cork
    /// `uncork()`.
    case uncork
    /// `flush()` (the server's part; the local part is done before it returns).
    case flush
    /// `setMuted(_:)`.
    case setMute
    /// `setVolume(percent:)`.
    case setVolume
    /// `updateMediaName(_:)`.
    case updateMediaName
}

/// Something that happened to a playback stream, as delivered to its notice handler (on the libpulse thread).
///
/// Commands never wait: each one is sent and returns, and the server's answer arrives here later, as `.ready` for
/// the open, `.corked`, `.uncorked` or `.flushed`, `.applied` for the settings, or `.commandFailed`.
public enum StreamNotice: Sendable, Equatable {
    /// The stream is connected (the open's acknowledgement): the sink it plays on and its sink input index.
    case ready(sinkName: String?, sinkInputIndex: UInt32?)
    /// The server confirmed a `cork()`: the stream is quiet, its queued audio kept.
    case corked
    /// The server confirmed an `uncork()`: the stream runs.
    case uncorked
    /// The server confirmed a `flush()`: its buffer of our audio is empty.
    case flushed
    /// The server confirmed a setting (`.setMute`, `.setVolume`, `.updateMediaName`).
    case applied(StreamCommand)
    /// The server refused a command it had been sent.
    case commandFailed(StreamCommand)
    /// Audio started reaching the sink (after an uncork, or after an underrun ended).
    case started
    /// The server ran out of our data.
    case underflow
    /// The server asks us to pause (`request-cork`, e.g. module-role-cork for a phone call). Advisory.
    case corkRequested
    /// The server allows us to resume (`request-uncork`). Advisory: only resume if we paused for the interruption.
    case uncorkRequested
    /// A stream event with a name we do not know; pulse/stream.h says the set can grow. Only the kind is kept.
    case unknownEvent
    /// The server moved the stream to another sink; it keeps playing there until the owner decides (an unplug is a
    /// lost output, to be corked; a deliberate move keeps playing). The stream never corks itself.
    /// `oldSinkStillExists` is false when the old sink is gone (an unplug) or could not be identified.
    case moved(toSinkName: String?, oldSinkStillExists: Bool)
    /// Just before `moved` with `oldSinkStillExists`: the sink the server moved the stream off, as it is now. Its
    /// ports tell a deliberate move from the server's own rescue off a port that went away: PulseAudio 16 moves the
    /// streams of a sink whose active port becomes unavailable (a jack unplugged) to the default sink, and that move
    /// reaches us before the sink's own change notice.
    case leftSink(SinkSnapshot)
    /// The stream failed (for example because the connection was lost, or because its open was refused).
    case failed(PulseError)
    /// The server killed the stream (`PA_ERR_KILLED`, e.g. its sink went away and it was not allowed to move).
    case killed
    /// All audio queued before `drain()` has played.
    case drained
    /// The server has asked for nothing for the silence alarm's length while a request was due
    /// (`setSilenceAlarm(after:)`); repeated every alarm's length while that lasts.
    case requestsStopped
}

/// Two C functions a test calls around the body of a stream's write callback, on libpulse's thread: the seam that
/// lets a test prove the real-time path allocates nothing and takes no locks, by counting on that thread only while
/// our code runs (libpulse's own work around the callback is not ours to count).
///
/// Plain C function pointers, so calling them costs no retain or release; a stream without a probe pays one
/// predictable branch per callback. Production code passes none.
public struct WriteCallbackProbe: Sendable {
    /// Called first thing in the write callback, before any of our work.
    public let entered: @convention(c) () -> Void
    /// Called last thing in the write callback, after all of our work.
    public let left: @convention(c) () -> Void

    /// A probe calling `entered` and `left` around every write callback.
    public init(entered: @escaping @convention(c) () -> Void, left: @escaping @convention(c) () -> Void) {
        self.entered = entered
        self.left = left
    }
}

/// Buffer sizes the server actually granted for a stream (it may adjust what was asked for).
public struct BufferMetrics: Sendable, Equatable {
    /// Target length of the server-side buffer (tlength), in bytes.
    public var targetLengthBytes: Int
    /// Bytes the server wants before it starts playing (prebuf).
    public var prebufferBytes: Int
    /// Smallest request the server makes (minreq), in bytes.
    public var minimumRequestBytes: Int
    /// Maximum buffer length (maxlength), in bytes.
    public var maximumLengthBytes: Int
}
