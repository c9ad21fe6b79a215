// What the player is told at start: where to play, how, and the user's resume policy.
import EarshotCore

/// Settings for one player.
public struct PlayerConfiguration: Sendable {
    /// The sink to play on; nil for the server's default.
    public var sinkName: String?
    /// How much audio the server may queue ahead, in milliseconds (small, so little leaks on unplug).
    public var targetLatencyMilliseconds: Int = 50
    /// Our stream's `media.role`. module-role-cork only corks `music` and `video` streams.
    public var mediaRole: String = "music"
    /// Stream roles that interrupt Earshot.
    public var triggerRoles: Set<String> = ["phone"]
    /// Where such a stream must play to interrupt Earshot: anywhere in the session (the default), or on its sink.
    public var interruptionScope: InterruptionScope = .session
    /// Whether and when to resume after an interruption.
    public var policy = ResumePolicy()
    /// Show a progress line on standard output (only when it is a terminal).
    public var showsProgress = false
    /// Log at debug level (still never user content).
    public var debugLogging = false
    /// The control socket path.
    public var socketPath: String = controlSocketPath()

    /// The defaults.
    public init() {}
}
