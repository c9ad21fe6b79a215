// What the player is told at start: where to play, how, and the user's resume policy.
import AudioPipeline
import EarshotCore
import Glibc

/// Settings for one player.
public struct PlayerConfiguration: Sendable {
    /// The sink to play on; nil for the server's default.
    public var sinkName: String?
    /// How much audio the server may queue ahead, in milliseconds. Chosen by `scripts/bench --buffer-sweep`
    /// (2026-12-01): the server rewinds or drops what it had queued for a stream corked on an unplug, so the leak
    /// depends on how fast the cork comes, not on the buffer (no leak up to 1000 ms on PulseAudio 16.1 and PipeWire
    /// 1.4.2; 9.6 ms once in 10 at 2000 ms on PulseAudio), while a small buffer makes the server ask ten times as
    /// often: 1000 ms costs 0.8x mpg123's CPU and 14 wake-ups a second, where 50 ms cost 2.4x and 125.
    public var targetLatencyMilliseconds: Int = 1000
    /// Our stream's `media.role`. module-role-cork only corks `music` and `video` streams.
    public var mediaRole: String = "music"
    /// Stream roles that interrupt Earshot.
    public var triggerRoles: Set<String> = ["phone"]
    /// Where such a stream must play to interrupt Earshot: anywhere in the session (the default), or on its sink.
    public var interruptionScope: InterruptionScope = .session
    /// Which captures from a microphone are calls: any (the default), known calling applications only, or none.
    public var callDetection: CallDetection = .microphone
    /// Application names (`application.name` or `application.process.binary`) whose captures never count as calls.
    public var callIgnoreApplications: Set<String> = []
    /// How long a fade lasts, in milliseconds (0: none): a user's or a call's pause fades out before the cork, and
    /// every resume fades in. 50 ms: a ramp under about 10 ms is heard as a click, one over 100 ms as a pause that
    /// lags the key; 50 ms is a soft edge that still feels immediate, and spans two or three cycles of PipeWire
    /// (21 ms), which applies a volume change once per cycle.
    public var fadeMilliseconds = 50
    /// How long a paused live stream (internet radio) is kept, in seconds (`liveBufferMinutes`; RULES.md rows 24 and
    /// 32): a resume within it continues where it paused, a later one rejoins live. 30 minutes, the resume window.
    public var liveBufferSeconds: Double = 30 * 60
    /// Stream roles that duck Earshot while they play (rule 20): a screen reader (`a11y`), a notification (`event`).
    public var duckRoles: Set<String> = ["a11y", "event"]
    /// The duck level, in decibels under the user's volume. -12 dB: a quarter of the amplitude, which speech at a
    /// normal level is clearly understood over (broadcast voice-over ducks music by 10-15 dB) while the music stays
    /// there; -6 dB leaves a screen reader fighting loud music, -20 dB all but stops it.
    public var duckLevelDecibels = -12.0
    /// How long the duck's ramp lasts, each way, in milliseconds: short enough that a screen reader's first word is
    /// heard over lowered music, long enough not to click.
    public var duckRampMilliseconds = 80
    /// Whether and when to resume after an interruption; whether a lock pauses; and the idle suspend held off while
    /// playing (rule 23), which the product does by default (configuration `inhibitIdleSuspend`).
    public var policy = ResumePolicy(inhibitIdleSuspend: true)
    /// The ReplayGain mode, preamp and gain for untagged files (configuration `replayGain`, `replayGainPreampDb`,
    /// `replayGainFallbackDb`). `auto` by default: a background player should spare its user the reach for the volume
    /// between an old rip and a new master, and `auto` keeps an album's own dynamics when it plays in order. A file
    /// with no values plays as it is (fallback 0 dB), as it did before.
    public var replayGain = ReplayGainSettings(mode: .auto)
    /// Show a progress line on standard output (only when it is a terminal).
    public var showsProgress = false
    /// Log at debug level (still never user content).
    public var debugLogging = false
    /// The music library's folders as configured (absolute, or `~/...`); nil for the default, the XDG music folder.
    /// Only the library reads it; the owner never does.
    public var musicDirectories: [String]?
    /// The control socket path.
    public var socketPath: String = controlSocketPath()
    /// Where MPD's protocol is served (configuration `mpdListen`): "HOST:PORT" strings and absolute socket paths;
    /// empty: not at all. Only the executable's wiring reads it; the owner never does.
    public var mpdListen: [String] = defaultMPDListen()
    /// The folder of MPD's stored playlists (configuration `playlistDirectory`; absolute, or `~/...`); nil for
    /// `$XDG_DATA_HOME/earshot/playlists`. Only the MPD front-end reads it.
    public var playlistDirectory: String?
    /// The password MPD's clients send before any other command (configuration `mpdPassword`); nil: none.
    public var mpdPassword: String?
    /// How long an MPD client may send nothing, outside `idle`, before its connection is closed (configuration
    /// `mpdConnectionTimeoutSeconds`; MPD's `connection_timeout`, whose default this is).
    public var mpdConnectionTimeoutSeconds = 60

    /// The defaults.
    public init() {}

    /// The duck level as an amplitude factor (-12 dB: about 0.25).
    public var duckGain: Double { Self.amplitude(decibels: duckLevelDecibels) }

    /// 10^(dB/20): the amplitude factor of a level in decibels.
    static func amplitude(decibels: Double) -> Double {
        pow(10, decibels / 20)
    }
}
