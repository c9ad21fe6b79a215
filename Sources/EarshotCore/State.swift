// The player's state. Playback, the active interruption sources, the remembered wish to resume and the
// stream's real condition are separate parts: no single Boolean could carry "paused for a call, was
// playing, and the user has since asked to play".

/// Why a player that has a track is not playing.
public enum PauseReason: Hashable, Sendable, CustomStringConvertible {
    /// The user paused.
    case user
    /// A program paused for an event of its own (rule 21): the music was playing, and only that sender's own
    /// `Play` or `PlayPause`, the user, or the end of a call that took the pause over starts it again.
    case external(ExternalSender)
    /// An interruption holds the player quiet.
    case interruption
    /// The interruption ended but the player did not resume (not allowed, or past the resume window).
    case resumeDeclined
    /// The output went away.
    case outputLost(OutputLossReason)
    /// The service started with a saved queue and position, and waits for a play.
    case restored
    /// The session was left (rule 19): sleep, another user's session, or a lock with `pauseOnLock`. Only the user
    /// plays again.
    case sessionLeft(SessionDeparture)
    /// A live stream's connection is lost and the decoder has nothing left to decode (row 40): quiet until the
    /// connection is back, which resumes it by itself.
    case networkLost

    /// The reason's name as it appears in status: `user`, `external`, `interruption`, `resumeDeclined`, `outputLost`,
    /// `restored`, `sessionLeft`, `networkLost`.
    public var description: String {
        switch self {
        case .user: return "user"
        case .external: return "external"
        case .interruption: return "interruption"
        case .resumeDeclined: return "resumeDeclined"
        case .outputLost: return "outputLost"
        case .restored: return "restored"
        case .sessionLeft: return "sessionLeft"
        case .networkLost: return "networkLost"
        }
    }
}

/// Whether, and how, the player is making sound.
public enum Playback: Hashable, Sendable, CustomStringConvertible {
    /// Nothing is queued.
    case idle
    /// A queue exists; the next play starts the current track from its beginning.
    case stopped
    /// Audio is playing.
    case playing
    /// Held at the current position, for a reason.
    case paused(PauseReason)

    /// `idle`, `stopped`, `playing` or `paused`.
    public var name: String {
        switch self {
        case .idle: return "idle"
        case .stopped: return "stopped"
        case .playing: return "playing"
        case .paused: return "paused"
        }
    }

    /// The name, with the pause reason where there is one: `paused(interruption)`.
    public var description: String {
        if case .paused(let reason) = self { return "paused(\(reason))" }
        return name
    }
}

/// What should happen when the last interruption source ends.
public enum ResumeIntent: Hashable, Sendable, CustomStringConvertible {
    /// Nothing: the player stays as it is.
    case none
    /// The player was playing when the interruption began at `since`, and paused itself for it:
    /// resume if allowed and within the resume window.
    case afterInterruption(since: Moment)
    /// The user asked to play during the interruption: play when it ends, whatever the window.
    case userAskedToPlay

    /// `none`, `afterInterruption` or `userAskedToPlay`.
    public var description: String {
        switch self {
        case .none: return "none"
        case .afterInterruption: return "afterInterruption"
        case .userAskedToPlay: return "userAskedToPlay"
        }
    }
}

/// Where the player is in its queue.
public struct QueueCursor: Hashable, Sendable {
    /// How many tracks are queued.
    public var trackCount: Int
    /// The current track, `0..<trackCount` (0 when the queue is empty).
    public var index: Int

    /// A cursor at `index` of `trackCount` tracks.
    public init(trackCount: Int, index: Int) {
        self.trackCount = trackCount
        self.index = index
    }

    /// An empty queue.
    public static let empty = QueueCursor(trackCount: 0, index: 0)
}

/// What the executor last reported about the stream: a fact, not a wish.
public struct StreamCondition: Hashable, Sendable {
    /// A stream exists on the server.
    public var isOpen: Bool
    /// The server confirmed the stream is corked.
    public var isCorked: Bool

    /// A stream condition.
    public init(isOpen: Bool, isCorked: Bool) {
        self.isOpen = isOpen
        self.isCorked = isCorked
    }

    /// A fresh stream: open and corked (streams start corked).
    public static let openCorked = StreamCondition(isOpen: true, isCorked: true)
}

/// The user's choices the rules consult: resuming after interruptions, and pausing when the screen is locked.
public struct ResumePolicy: Hashable, Sendable {
    /// Whether to resume at all after an interruption that paused the player.
    public var resumeAfterInterruption: Bool
    /// How long an interruption may last and still be followed by a resume, in milliseconds.
    public var resumeWindowMilliseconds: Int64
    /// Whether a screen lock leaves the session as sleep does (rule 19; configuration `pauseOnLock`).
    public var pauseOnLock: Bool
    /// Whether the desktop's idle suspend is held off while playing (rule 23; configuration `inhibitIdleSuspend`).
    /// Off in a bare policy, so that the rules' tests of other rows see only their own commands; the configuration's
    /// default turns it on.
    public var inhibitIdleSuspend: Bool
    /// How long the rules wait on a call's signals: the microphone probe and the Bluetooth profile switch's settle
    /// (CallSignals.swift gives the reasons for each).
    public var callTiming: CallTiming = .standard
    /// How the player was started: a service waits for a sound server, a foreground `earshot play` gives up when its
    /// first connection fails (RULES.md row 29).
    public var frontEnd: FrontEnd = .service
    /// The live stream's reconnection: its backoff and when it gives up (`radioReconnectMinutes`, LiveNetwork.swift).
    public var liveReconnect: LiveReconnectTiming = .standard
    /// The sound server's reconnection: its backoff (ServerLink.swift).
    public var serverReconnect: ServerReconnectTiming = .standard

    /// A policy; the defaults are to resume, within 30 minutes, to play on through a screen lock, and to leave the
    /// idle suspend alone.
    public init(
        resumeAfterInterruption: Bool = true, resumeWindowMilliseconds: Int64 = 30 * 60 * 1000,
        pauseOnLock: Bool = false, inhibitIdleSuspend: Bool = false
    ) {
        self.resumeAfterInterruption = resumeAfterInterruption
        self.resumeWindowMilliseconds = resumeWindowMilliseconds
        self.pauseOnLock = pauseOnLock
        self.inhibitIdleSuspend = inhibitIdleSuspend
    }
}

/// How the player was started, for the rules that differ between a service and a foreground player.
public enum FrontEnd: Hashable, Sendable {
    /// `earshot serve`: it outlives any sound server, waiting and retrying while there is none.
    case service
    /// `earshot play FILE...`: the user waits at a terminal for those files to play, so no server at its first
    /// connection means there is nothing to wait for.
    case foreground
}

/// The record of the most recent track that could not be played.
public struct FailedTrack: Hashable, Sendable {
    /// The track's queue index.
    public var index: Int
    /// Why it failed.
    public var failure: TrackFailure

    /// A failure record.
    public init(index: Int, failure: TrackFailure) {
        self.index = index
        self.failure = failure
    }
}

/// Everything the rules need to decide, as one value.
public struct PlayerState: Hashable, Sendable {
    /// Configuration the rules consult.
    public var policy: ResumePolicy
    /// Whether the player is playing, and why not.
    public var playback: Playback
    /// The interruption sources active now.
    public var interruptions: Set<InterruptionSource>
    /// Inferred calls (microphone captures) the user overruled by playing (rule 18): they no longer interrupt, and
    /// are forgotten when they end. Never overlaps `interruptions`.
    public var overruledInterruptions: Set<InterruptionSource>
    /// What to do when the last interruption source ends.
    public var resumeIntent: ResumeIntent
    /// The position in the queue.
    public var queue: QueueCursor
    /// The stream as the executor last reported it.
    public var stream: StreamCondition
    /// Stream volume in percent.
    public var volumePercent: Int
    /// The most recent track that failed, for status.
    public var lastFailure: FailedTrack?
    /// The outside senders whose `Pause` has not been answered by their own `Play` or `PlayPause` yet (rule 21).
    /// Kept whatever the user does meanwhile, so that a sender's late `PlayPause` never toggles music the user
    /// restarted; the answer itself removes it.
    public var unansweredExternalPauses: Set<ExternalSender>
    /// An announced sleep waits for Earshot's stream to be quiet (rule 19): logind holds the sleep until the delay
    /// lock is released (`releaseSleepDelay`), which the rules ask for once the cork is acknowledged.
    public var sleepAwaitsQuiet: Bool
    /// What follows a track's end and the queue's end (PlayOrder.swift).
    public var repeatMode: RepeatMode
    /// The shuffled order of the queue, or nil when shuffle is off.
    public var shuffle: ShuffleOrder?
    /// Whether the player stops after a track (rules 35 and 36, SingleConsume.swift).
    public var single: SingleMode = .off
    /// Whether a track leaves the queue once played or skipped (rule 37).
    public var consume = false
    /// Repeat or shuffle changed while the decoder may have joined tracks in the order before (it works seconds
    /// ahead): the next track heard is taken whatever it is, until one the new order expects is heard or the decoder
    /// starts afresh (PlayOrder.swift).
    public var orderChangedAhead: Bool
    /// The duck-role streams playing now, by server index (rule 20): while there is one, the volume is ducked.
    public var duckingStreams: Set<UInt32> = []
    /// The rules asked for the desktop's idle-suspend inhibitor and have not released it (rule 23): after every
    /// event, playing with `inhibitIdleSuspend` on.
    public var idleInhibitorHeld = false
    /// What the rules know of calls before they interrupt: probing captures, calls counted, profile switches.
    public var calls = CallJudge()
    /// The live stream (internet radio) the decoder opened last, and what the rules know of its buffer (rows 30-33).
    public var live: LiveStream?
    /// The connection to the sound server, and the attempts while it is away (row 42, ServerLink.swift).
    public var server = ServerLink()

    /// A state; by default an idle player with no queue and a fresh, corked stream.
    public init(
        policy: ResumePolicy = ResumePolicy(),
        playback: Playback = .idle,
        interruptions: Set<InterruptionSource> = [],
        resumeIntent: ResumeIntent = .none,
        queue: QueueCursor = .empty,
        stream: StreamCondition = .openCorked,
        volumePercent: Int = 100,
        lastFailure: FailedTrack? = nil,
        unansweredExternalPauses: Set<ExternalSender> = [],
        overruledInterruptions: Set<InterruptionSource> = [],
        sleepAwaitsQuiet: Bool = false,
        repeatMode: RepeatMode = .off,
        shuffle: ShuffleOrder? = nil,
        orderChangedAhead: Bool = false
    ) {
        self.policy = policy
        self.playback = playback
        self.interruptions = interruptions
        self.resumeIntent = resumeIntent
        self.queue = queue
        self.stream = stream
        self.volumePercent = volumePercent
        self.lastFailure = lastFailure
        self.unansweredExternalPauses = unansweredExternalPauses
        self.overruledInterruptions = overruledInterruptions
        self.sleepAwaitsQuiet = sleepAwaitsQuiet
        self.repeatMode = repeatMode
        self.shuffle = shuffle
        self.orderChangedAhead = orderChangedAhead
    }

    /// True when the user asked to play during an interruption and the player waits for it to end.
    public var waitingForInterruptionEnd: Bool {
        resumeIntent == .userAskedToPlay && !interruptions.isEmpty
    }

    /// True while a duck-role stream plays: the volume is lowered to the duck level (rule 20).
    public var isDucked: Bool { !duckingStreams.isEmpty }

    /// True when playback is `playing`.
    public var isPlaying: Bool { playback == .playing }
}
