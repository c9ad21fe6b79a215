// The facts Earshot reacts to. Each event names something that happened; the adapter, the user's
// controls and the decoder produce them, and `PlayerState.apply` decides what they mean.

/// A point on a monotonic clock, in milliseconds. The core never reads a clock: whoever creates an
/// event stamps it, so the reducer stays a pure function of its input.
public struct Moment: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Milliseconds since an arbitrary, fixed origin (the service uses CLOCK_BOOTTIME: monotonic, sleep counted).
    public var milliseconds: Int64

    /// A moment `milliseconds` after the clock's origin.
    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    /// Orders moments by time.
    public static func < (lhs: Moment, rhs: Moment) -> Bool {
        lhs.milliseconds < rhs.milliseconds
    }

    /// The time from `earlier` to `self`, in milliseconds.
    public func milliseconds(since earlier: Moment) -> Int64 {
        milliseconds - earlier.milliseconds
    }

    /// The moment `milliseconds` after this one.
    public func advanced(by milliseconds: Int64) -> Moment {
        Moment(milliseconds: self.milliseconds + milliseconds)
    }

    /// The moment as milliseconds, e.g. `1500ms`.
    public var description: String { "\(milliseconds)ms" }
}

/// Who asked Earshot to be quiet. Sources are kept apart so that two signals for one call (PulseAudio
/// sends a cork request *and* the phone stream is seen on our sink) or two calls nest correctly.
public enum InterruptionSource: Hashable, Sendable, CustomStringConvertible {
    /// The server's `request-cork` / `request-uncork` stream events (PulseAudio's module-role-cork).
    case serverCorkRequest
    /// A stream with a trigger role (e.g. `media.role=phone`) playing on our sink, by its server index.
    /// Needed on PipeWire, which never sends cork requests.
    case triggerStream(index: UInt32)
    /// A Bluetooth headset, by its card's server index, left its A2DP profile for a call (HFP/HSP opens the
    /// microphone): our sink went away but the card stayed. Ends when our stream is back on an A2DP sink of it.
    case profileSwitch(card: UInt32)
    /// A call inferred, not announced: another application's running capture from a microphone (a browser meeting,
    /// Discord, Zoom), one source per capturing application, keyed by the server's index of its client. The user can
    /// overrule it (rule 18).
    case microphoneCapture(client: UInt32)

    /// A short, content-free label for logs: `server`, `stream#12`, `profile#3` or `microphone#5`.
    public var description: String {
        switch self {
        case .serverCorkRequest: return "server"
        case .triggerStream(let index): return "stream#\(index)"
        case .profileSwitch(let card): return "profile#\(card)"
        case .microphoneCapture(let client): return "microphone#\(client)"
        }
    }

    /// Whether the source is a call Earshot inferred (a microphone capture) rather than one announced by a role, a
    /// cork request or a profile switch: only inferred ones can be overruled by the user (rule 18).
    public var isInferred: Bool {
        if case .microphoneCapture = self { return true }
        return false
    }

    /// The source's kind for status: `server`, `stream`, `profile` or `microphone`.
    public var kind: String {
        switch self {
        case .serverCorkRequest: return "server"
        case .triggerStream: return "stream"
        case .profileSwitch: return "profile"
        case .microphoneCapture: return "microphone"
        }
    }
}

/// Where a trigger-role stream must play to interrupt us (configuration: the adapter applies it when it decides
/// which streams are interruptions).
public enum InterruptionScope: String, Sendable, CaseIterable {
    /// On any sink of the session (the default): a call on a headset pauses the music on the speakers, as on a
    /// phone. PulseAudio's module-role-cork works per sink, so on PulseAudio only our own detection sees such a call.
    case session
    /// Only on the sink our stream plays on (module-role-cork's own default, `global=0`).
    case sameSink
}

/// A program that pauses the player for an event of its own, not at the user's request (rule 21), told apart by
/// the MPRIS adapter from the sending process. A kind only: never a process name or id.
public enum ExternalSender: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The session's sound policy manager (WirePlumber): it pauses a player whose device goes away, and (0.5.14 and
    /// later) whose Bluetooth headset leaves A2DP for a call. It never sends `Play`.
    case sessionManager
    /// A phone bridge (KDE Connect, GSConnect, Valent): it pauses players that play when the phone rings, and sends
    /// `Play` (or, in older KDE Connect, `PlayPause`) to those it paused when the call is over.
    case phoneBridge

    /// The sender's kind as logs show it: `sessionManager` or `phoneBridge`.
    public var description: String {
        switch self {
        case .sessionManager: return "sessionManager"
        case .phoneBridge: return "phoneBridge"
        }
    }
}

/// Why the output went away.
public enum OutputLossReason: Hashable, Sendable, CustomStringConvertible {
    /// Our sink was removed (USB or Bluetooth device unplugged); the server moved us elsewhere.
    case deviceRemoved
    /// The sink stayed but its active port was unplugged or switched away from headphones (wired jack).
    case portUnplugged
    /// The connection to the sound server was lost (the server died or restarted).
    case serverLost
    /// The server killed our stream, or an output command on it failed.
    case streamFailed
    /// The server stopped asking for our audio while we played (a stall): nothing is heard any more.
    case stalled

    /// The reason's name as it appears in status and logs.
    public var description: String {
        switch self {
        case .deviceRemoved: return "deviceRemoved"
        case .portUnplugged: return "portUnplugged"
        case .serverLost: return "serverLost"
        case .streamFailed: return "streamFailed"
        case .stalled: return "stalled"
        }
    }
}

/// How the user's login session was left (rule 19), as logind tells it. A kind only.
public enum SessionDeparture: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The machine is about to sleep (logind's `PrepareForSleep(true)`); its return is the wake.
    case sleep
    /// Our session stopped being the active one of its seat (another user's session took it: fast user switching).
    case inactive
    /// The session's screen was locked (logind's `Lock` signal or `LockedHint`); it pauses only with `pauseOnLock`.
    case locked

    /// The departure's name as logs and status show it: `sleep`, `inactive` or `locked`.
    public var description: String {
        switch self {
        case .sleep: return "sleep"
        case .inactive: return "inactive"
        case .locked: return "locked"
        }
    }
}

/// A setting of the stream the executor could not apply: refused by the server, or not sent at all.
public enum OutputSetting: Hashable, Sendable, CustomStringConvertible {
    /// Clearing a mute the server put on our stream (`clearServerMute`).
    case unmute
    /// The stream's volume (`setVolume`).
    case volume

    /// The setting's name as logs show it: `unmute` or `volume`.
    public var description: String {
        switch self {
        case .unmute: return "unmute"
        case .volume: return "volume"
        }
    }
}

/// A point the output must play out to before the player can go on: everything before it has been handed to the
/// server, and the stream has to drain it (below its prebuffer a stream would otherwise wait for more).
public enum OutputBoundary: Hashable, Sendable, CustomStringConvertible {
    /// A change of sample rate or channel count, which a stream cannot follow.
    case formatChange
    /// The end of the queue.
    case queueEnd

    /// The boundary's name as logs show it: `formatChange` or `queueEnd`.
    public var description: String {
        switch self {
        case .formatChange: return "formatChange"
        case .queueEnd: return "queueEnd"
        }
    }
}

/// Why a track could not be played. A kind only: never the file's name or content.
public enum TrackFailure: Hashable, Sendable, CustomStringConvertible {
    /// The file could not be opened or read (missing, a directory, no permission, deleted).
    case unreadable
    /// The file holds no audio Earshot plays at all (empty, random bytes, a format other than MP3, FLAC, Ogg Vorbis
    /// and Opus, a tag only).
    case notMPEGAudio
    /// The file announces FLAC or Ogg, but the headers that must follow are missing or damaged (an Opus file with no
    /// OpusHead), or the Ogg stream is neither Vorbis nor Opus.
    case badHeaders
    /// Audio in a sample format Earshot cannot play.
    case unsupportedFormat
    /// Decoding failed part-way (corrupt data).
    case decodeFailed

    /// The failure's name as it appears in status and logs.
    public var description: String {
        switch self {
        case .unreadable: return "unreadable"
        case .notMPEGAudio: return "notMPEGAudio"
        case .badHeaders: return "badHeaders"
        case .unsupportedFormat: return "unsupportedFormat"
        case .decodeFailed: return "decodeFailed"
        }
    }
}

/// Something that happened, from the sound server, the user, the decoder or the output executor.
public enum Event: Hashable, Sendable {
    // From the sound server, through the adapter.

    /// A source asked us to be quiet (phone call starting).
    case interruptionBegan(InterruptionSource, at: Moment)
    /// A source no longer asks us to be quiet. `resumeAllowed` is the source's own permission to resume
    /// (a server uncork request grants it); configuration can still forbid resuming.
    case interruptionEnded(InterruptionSource, resumeAllowed: Bool, at: Moment)
    /// The device we played on went away, for `reason`.
    case outputLost(OutputLossReason)
    /// Our stream was deliberately moved to another sink that exists (a user or policy choice).
    case routeChanged
    /// A sink or port became available (a replug), or the server came back.
    case outputAppeared
    /// Our sink's ports changed, from one description of the server's to the next (PortChanges.swift): the rules judge
    /// whether it is an output loss, a route change or an appearance (`PortJudge`).
    case sinkPortsChanged(from: SinkPorts, to: SinkPorts)
    /// Something changed behind our virtual sink (VirtualSinkSignals.swift): the rules judge whether it is an output
    /// loss or a route change (`OutputFactJudge`).
    case virtualSinkSignal(VirtualSinkSignal)
    /// A stream with a duck role (a screen reader speaking, a notification sound) started playing somewhere in the
    /// session, by its server index (rule 20).
    case duckBegan(stream: UInt32)
    /// That stream ended, corked or muted, or the server it played on went away (rule 20).
    case duckEnded(stream: UInt32)

    // From the login session (logind, through its adapter).

    /// The session was left (rule 19): the machine is about to sleep, another session took the seat, or the screen
    /// was locked.
    case sessionLeft(SessionDeparture)
    /// The session is back: the machine woke, our session is the active one again, or the screen was unlocked.
    /// Never starts anything (rule 19).
    case sessionReturned(SessionDeparture)
    /// What the server said about a call's signals at `at` (CallSignals.swift): the rules judge whether it is a
    /// call, an unplug or a probe, and when it ends whether the music may resume.
    case callSignal(CallSignal, at: Moment)
    /// The player started at `at`, with no connection to the sound server yet: the rules ask for the first (row 42).
    case playerStarted(at: Moment)
    /// The connection to the sound server was lost at `at` (the server died or restarted): rule 10 for the server,
    /// and the rules' reconnection (row 42).
    case serverDisconnected(at: Moment)
    /// The connection attempt the rules asked for (`connectServer`) connected.
    case serverConnected
    /// The connection attempt the rules asked for found no server, at `at`. The executor tries again only when the
    /// rules say so.
    case serverConnectFailed(at: Moment)
    /// The rules' timer, armed by `armTimer`, went off at `at` (the executor's clock, read when it fired).
    case timerFired(at: Moment)

    // From the user (CLI, control socket, MPRIS).

    /// Play (or resume).
    case userPlay
    /// Pause.
    case userPause
    /// Play if not playing, pause if playing.
    case userToggle
    /// Stop: quiet, and the next play starts the current track from its beginning.
    case userStop
    /// The service is stopping (SIGINT, SIGTERM, the session ending it): nothing of it may sound from here on.
    case serviceStopping
    /// Go to the next track.
    case userNext
    /// Go to the previous track (or the start of the first one).
    case userPrevious
    /// Move to a position in the current track.
    case userSeek(milliseconds: Int)
    /// Move by `offsetMilliseconds` from `fromMilliseconds` in the current track, whose length is
    /// `trackLengthMilliseconds` when known (MPRIS `Seek`).
    case userSeekBy(offsetMilliseconds: Int, fromMilliseconds: Int, trackLengthMilliseconds: Int?)
    /// Set the stream volume, in percent (0...150).
    case userVolume(percent: Int)
    /// Choose what follows a track's end and the queue's end.
    case userRepeat(RepeatMode)
    /// Turn shuffle on (a new order drawn from `seed`, which the service supplies) or off (`seed` unused).
    case userShuffle(on: Bool, seed: UInt64)
    /// `single off|on|oneshot` (rules 35 and 36, SingleConsume.swift): whether the player stops after a track.
    case userSingle(SingleMode)
    /// `consume on|off` (rule 37): whether a track leaves the queue once it was played or skipped.
    case userConsume(Bool)
    /// MPRIS `Pause` from a program that acts for an event of its own (rule 21): WirePlumber before it relinks
    /// our audio from a removed device or a headset leaving A2DP for a call, a phone bridge when the phone rings.
    /// Idempotent: never a toggle.
    case externalPause(ExternalSender)
    /// MPRIS `Play` from such a program: after its own `Pause`, it asks to undo that pause (rule 21).
    case externalPlay(ExternalSender)
    /// MPRIS `PlayPause` from such a program: after its own `Pause`, it asks to undo that pause (rule 21); never
    /// a toggle that pauses what the user restarted.
    case externalPlayPause(ExternalSender)
    /// The queue was replaced by `trackCount` tracks, positioned at `startIndex`.
    case queueReplaced(trackCount: Int, startIndex: Int)
    /// Tracks were added to the end of the queue, which now holds `trackCount`.
    case queueExtended(trackCount: Int)
    /// The queue was edited in place (QueueEdits.swift): tracks deleted, moved, swapped, inserted or shuffled.
    case queueEdited(QueueEdit)
    /// The user chose track `index` to play (MPD's `play POSITION`, `playid`).
    case userPlayTrack(index: Int)
    /// Go back to a live stream's live edge (`earshot live`, row 33).
    case userJumpToLive
    /// A saved queue of `trackCount` tracks was restored at track `index`, `positionMilliseconds` into it.
    /// Starting the service is like a replug: it never makes a sound by itself.
    case queueRestored(trackCount: Int, index: Int, positionMilliseconds: Int)
    /// The saved repeat mode, shuffled order, single and consume modes were restored, after the saved queue.
    case playModesRestored(repeat: RepeatMode, shuffle: ShuffleOrder?, single: SingleMode = .off, consume: Bool = false)

    // From the decoder.

    /// Track `index` could not be opened or stopped decoding. The decoder waits for the rules to name the track it
    /// tries next (`skipFailedTrack`). `failuresInARow` counts the tracks that failed one after another, this one
    /// included, with no track opened fine between them: a fact of the decoder's, of which the rules make the verdict
    /// "nothing in this queue plays".
    case trackFailed(index: Int, failure: TrackFailure, failuresInARow: Int)

    /// The decoder opened track `index`, and it is a live stream (internet radio): no end, no seek (row 30).
    case liveStreamStarted(index: Int)
    /// The buffer that receives live stream `index` while the player does not read it dropped bytes the listener had
    /// not heard: it held `liveBufferMinutes` (row 32).
    case liveBufferOverflowed(index: Int)
    /// The fetch of live stream `index` lost its connection at `at`, or an attempt to reconnect it failed, for `loss`
    /// (row 38). The fetch never tries again by itself.
    case liveStreamLost(index: Int, LiveStreamLoss, at: Moment)
    /// Live stream `index` is connected: an attempt to reconnect it was answered with the stream, or the decoder
    /// opened it afresh; bytes flow into its buffer again.
    case liveStreamReconnected(index: Int, at: Moment)
    /// The decoder of live stream `index` found nothing left to decode while its connection is lost (row 40).
    case liveStreamRanDry(index: Int)
    /// An attempt to reconnect live stream `index` found no open stream of that index to fetch into (its decoder was
    /// let go): there is nothing to reconnect (row 38). Not a failure of the network.
    case liveStreamNotOpen(index: Int)

    // From the output, in the order the listener hears them.

    /// The listener now hears track `index` (read from the output's position, not the decoder's), which the
    /// decoder had joined to the one before without a gap.
    case heardTrack(index: Int)
    /// Everything before `boundary` has been handed to the server: what is left of it plays out only if the stream
    /// drains it. Reported whenever that holds and no drain runs: once the last frame before the boundary is handed
    /// over, and again after something cancelled the drain without taking the audio back (a queue addition withdraws
    /// the end of the data, which cancels the drain of a format change's tail too).
    case tailHandedOver(OutputBoundary)
    /// The queue's last audio was played out: the stream drained after the decoder finished the queue.
    case queuePlayedOut
    /// The last audio before a change of sample rate or channel count was played out (or there was no stream to
    /// play it): the output has reached the new format, which a stream cannot change to.
    case formatChangeReached

    // From the executor: what really happened to the stream.

    /// The server acknowledged a cork: the stream is really quiet.
    case streamCorked
    /// The server acknowledged an uncork: the stream is really running.
    case streamUncorked
    /// A new stream was created (always corked at first).
    case streamOpened
    /// An output command could not be carried out (no server, stream gone), or the server refused a cork or an
    /// uncork.
    case outputCommandFailed
    /// The sink named in configuration is missing or refused our stream (`openStream`); no stream is open.
    case configuredSinkRefused
    /// A setting of the stream (`clearServerMute`, `setVolume`) could not be applied.
    case outputSettingFailed(OutputSetting)
    /// The executor closed the stream (to open another at a new sample rate).
    case streamClosed
    /// The server has asked for none of our audio for `milliseconds` (its requests come every
    /// `requestPeriodMilliseconds`): what the executor's watchdog measured when its timer, armed while playing for
    /// `StallRule`'s threshold, went off. `heardSinceStart` says whether the listener has heard any audio since the
    /// stream last started (its uncork, a new stream, a flush of a running stream, a move to another sink): a sink
    /// that is still waking (an idle null sink, a Bluetooth link) takes the first request's audio and then asks for
    /// nothing for a while. Reported once per silence and per value of `heardSinceStart`. Whether that is a stall is
    /// the rules' call (`StallRule`, `outputSilent` in OutputOutcomes.swift).
    case outputSilent(milliseconds: Int, requestPeriodMilliseconds: Int, heardSinceStart: Bool)
}

extension Event: CustomStringConvertible {
    /// The event's kind with its content-free details, e.g. `interruptionBegan(server)`.
    public var description: String {
        switch self {
        case .interruptionBegan(let source, _): return "interruptionBegan(\(source))"
        case .interruptionEnded(let source, let allowed, _):
            return "interruptionEnded(\(source), resumeAllowed: \(allowed))"
        case .outputLost(let reason): return "outputLost(\(reason))"
        case .routeChanged: return "routeChanged"
        case .outputAppeared: return "outputAppeared"
        case .sinkPortsChanged(let previous, let current): return "sinkPortsChanged(\(previous) -> \(current))"
        case .virtualSinkSignal(let signal): return "virtualSinkSignal(\(signal))"
        case .sessionLeft(let departure): return "sessionLeft(\(departure))"
        case .sessionReturned(let departure): return "sessionReturned(\(departure))"
        case .callSignal(let signal, _): return "callSignal(\(signal))"
        case .timerFired: return "timerFired"
        case .playerStarted: return "playerStarted"
        case .serverDisconnected: return "serverDisconnected"
        case .serverConnected: return "serverConnected"
        case .serverConnectFailed: return "serverConnectFailed"
        case .duckBegan(let stream): return "duckBegan(stream#\(stream))"
        case .duckEnded(let stream): return "duckEnded(stream#\(stream))"
        case .userPlay: return "userPlay"
        case .userPause: return "userPause"
        case .userToggle: return "userToggle"
        case .userStop: return "userStop"
        case .serviceStopping: return "serviceStopping"
        case .userNext: return "userNext"
        case .userPrevious: return "userPrevious"
        case .userSeek(let milliseconds): return "userSeek(\(milliseconds)ms)"
        case .userSeekBy(let offset, _, _): return "userSeekBy(\(offset)ms)"
        case .userVolume(let percent): return "userVolume(\(percent)%)"
        case .userRepeat(let mode): return "userRepeat(\(mode))"
        case .userShuffle(let on, _): return on ? "userShuffle(on)" : "userShuffle(off)"
        case .userSingle(let mode): return "userSingle(\(mode))"
        case .userConsume(let on): return on ? "userConsume(on)" : "userConsume(off)"
        case .externalPause(let sender): return "externalPause(\(sender))"
        case .externalPlay(let sender): return "externalPlay(\(sender))"
        case .externalPlayPause(let sender): return "externalPlayPause(\(sender))"
        case .queueReplaced(let count, let start): return "queueReplaced(\(count) tracks, at \(start))"
        case .queueExtended(let count): return "queueExtended(\(count) tracks)"
        case .queueEdited(let edit): return "queueEdited(\(edit))"
        case .userPlayTrack(let index): return "userPlayTrack(\(index))"
        case .userJumpToLive: return "userJumpToLive"
        case .liveStreamStarted(let index): return "liveStreamStarted(\(index))"
        case .liveBufferOverflowed(let index): return "liveBufferOverflowed(\(index))"
        case .liveStreamLost(let index, let loss, _): return "liveStreamLost(\(index), \(loss))"
        case .liveStreamReconnected(let index, _): return "liveStreamReconnected(\(index))"
        case .liveStreamRanDry(let index): return "liveStreamRanDry(\(index))"
        case .liveStreamNotOpen(let index): return "liveStreamNotOpen(\(index))"
        case .queueRestored(let count, let index, let milliseconds):
            return "queueRestored(\(count) tracks, at \(index), \(milliseconds)ms)"
        case .playModesRestored(let mode, let shuffle, let single, let consume):
            return "playModesRestored(repeat \(mode), shuffle \(shuffle == nil ? "off" : "on"), single \(single), "
                + "consume \(consume ? "on" : "off"))"
        case .trackFailed(let index, let failure, let inARow):
            return "trackFailed(\(index), \(failure), \(inARow) in a row)"
        case .streamCorked: return "streamCorked"
        case .streamUncorked: return "streamUncorked"
        case .streamOpened: return "streamOpened"
        case .outputCommandFailed: return "outputCommandFailed"
        case .heardTrack(let index): return "heardTrack(\(index))"
        case .queuePlayedOut: return "queuePlayedOut"
        case .formatChangeReached: return "formatChangeReached"
        case .streamClosed: return "streamClosed"
        case .outputSilent(let milliseconds, _, let heard):
            return heard ? "outputSilent(\(milliseconds)ms)" : "outputSilent(\(milliseconds)ms, unheard)"
        case .tailHandedOver(let boundary): return "tailHandedOver(\(boundary))"
        case .configuredSinkRefused: return "configuredSinkRefused"
        case .outputSettingFailed(let setting): return "outputSettingFailed(\(setting))"
        }
    }
}
