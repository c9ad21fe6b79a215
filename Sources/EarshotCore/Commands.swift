// What the reducer asks the executor to do. Plain data, so a test can compare them.

/// An instruction to the output executor. The executor performs commands in order and reports the
/// real outcome back as events (`streamCorked`, `streamUncorked`, `streamOpened`, `outputCommandFailed`).
public enum Command: Hashable, Sendable, CustomStringConvertible {
    /// Quiet the stream at once, keeping what is queued (pa_stream_cork(1)).
    case cork
    /// Quiet the stream gently: lower its volume to silence over the configured fade, then cork it, keeping what is
    /// queued (a user's pause, a call's pause; see `PlayerState.pauseFades`). With no fade configured it is `cork`.
    /// The cork after the ramp is reported by `streamCorked`, as any cork; where it stopped is the last frame heard.
    case fadeOutAndCork
    /// Let the stream run (pa_stream_cork(0)), its volume rising from silence over the configured fade: every resume
    /// fades in.
    case uncork
    /// Throw away audio that was queued but not heard (in the server and the ring buffer) and
    /// continue decoding from the last frame the listener actually heard, so nothing is lost.
    case flush
    /// Clear a mute the server put on our stream (module-role-cork mutes while it corks).
    case clearServerMute
    /// Create a stream (corked) when there is none: at the first play, or after the old one was lost or closed.
    /// The executor reports it with `streamOpened`, and a playing player's uncork follows then.
    case openStream
    /// Create a stream (corked) on the server's default sink: the configured sink refused the last one
    /// (`configuredSinkRefused`). Reported like `openStream`.
    case openStreamOnDefaultSink
    /// Close the stream: it refused a command and cannot be trusted to be quiet or to play (`outputCommandFailed`),
    /// or the service is stopping. Nothing is reported back; the rules already count it as closed.
    case closeStream
    /// Flush and start decoding track `index` from its beginning.
    case playTrack(index: Int)
    /// The decoder, waiting after failed track `failed`, goes on with track `next` from its beginning, after what the
    /// ring already holds (nothing is flushed); nil: the queue has nothing more to play, and the decoder finishes it
    /// (rules 14 and 22: the track after a failure is the rules' play order's, never the executor's own guess).
    case skipFailedTrack(failed: Int, next: Int?)
    /// Flush and continue from `milliseconds` into the current track.
    case seek(milliseconds: Int)
    /// Flush and have the decoder take the current queue from `milliseconds` into track `index`, without uncorking: a
    /// new queue's first track, or the restored position, made ready for the user's play. The decoder never moves
    /// without a command; an empty queue leaves it nothing to decode.
    case cue(index: Int, milliseconds: Int)
    /// The queue was edited around the current track, which is now at `index`: drop what was decoded ahead and take
    /// the edited queue from the last frame the listener heard, without uncorking.
    case requeue(index: Int)
    /// Consume mode (rule 37): remove the track at `index` from the queue the executor holds (its path, facts and id),
    /// as `queueEdited(.delete)` would; the rules have already taken the deletion into their cursor, and the commands
    /// after this one name positions of the queue without it.
    case removeTrack(index: Int)
    /// Play out what the stream holds up to `boundary`, with no silence after it; the executor reports it played with
    /// `formatChangeReached` or `queuePlayedOut`.
    case drain(OutputBoundary)
    /// Drop what a live stream's buffer and the ring hold and go on from the stream's live edge, without uncorking
    /// (rows 32 and 33); the executor tells the user why (a status field and a log line with the reason's kind).
    case rejoinLive(LiveRejoin)
    /// Try to connect live stream `index` again (row 38): a new fetch of its address into the same buffer, which the
    /// decoder goes on reading. Reported by `liveStreamReconnected` or `liveStreamLost`.
    case reconnectLiveStream(index: Int)
    /// Live stream `index` has ended (row 39): the decoder plays out what its buffer holds, then the track ends as any
    /// track does (rule 13).
    case endLiveStream(index: Int)
    /// Turn the user's request down for `reason` (rows 31 and 33): the front-end that asked answers with it, and
    /// nothing else changes.
    case refuse(Refusal)
    /// Set the stream's volume to `percent` (100 is unity).
    case setVolume(percent: Int)
    /// Lower the stream's volume to the duck level with a short ramp, under the user's volume (rule 20): a stream with
    /// a duck role (a screen reader, a notification) is playing. Never a pause: playback is not touched.
    case duck
    /// Ramp the stream's volume back to the user's volume (rule 20): the last duck-role stream ended.
    case unduck
    /// Move the output to the decoder's new format: close the stream (reported by `streamClosed`), let the decoder
    /// go on in the new format, and, when `reopen`, open a stream in it (reported by `streamOpened`).
    case switchFormat(reopen: Bool)
    /// Let an announced sleep go ahead: release the delay lock logind waits for, now that the stream is quiet
    /// (rule 19). The logind adapter performs it.
    case releaseSleepDelay
    /// Ask the desktop not to suspend for idleness (rule 23): the player started playing. The idle-inhibitor adapter
    /// performs it; only the suspend is held off, never the screen saver.
    case holdIdleInhibitor
    /// Give the desktop's idle suspend back (rule 23): the player left playing.
    case releaseIdleInhibitor
    /// The foreground player's work is over, for `reason` (rules 13, 14, 22 and row 29): it exits, with failure unless
    /// its queue was played. A service never gets this: it waits for the user, or for a server.
    case exitForeground(ForegroundExit)
    /// Arm the rules' one-shot timer for `at` (replacing any armed before), or disarm it when nil; the executor
    /// reports it with `timerFired`. The rules ask for it while something waits out a bound (a microphone probe, a
    /// Bluetooth profile switch settling, CallSignals.swift; a station's next reconnection, LiveNetwork.swift).
    case armTimer(at: Moment?)
    /// Make one attempt to connect to the sound server, off the owner (row 42): reported by `serverConnected` or
    /// `serverConnectFailed`. The rules ask for one at a time, and for the next only after that one's answer.
    case connectServer

    /// The command's name, e.g. `cork` or `playTrack(2)`.
    public var description: String {
        switch self {
        case .cork: return "cork"
        case .fadeOutAndCork: return "fadeOutAndCork"
        case .duck: return "duck"
        case .unduck: return "unduck"
        case .uncork: return "uncork"
        case .flush: return "flush"
        case .clearServerMute: return "clearServerMute"
        case .openStream: return "openStream"
        case .openStreamOnDefaultSink: return "openStreamOnDefaultSink"
        case .closeStream: return "closeStream"
        case .playTrack(let index): return "playTrack(\(index))"
        case .skipFailedTrack(let failed, let next):
            return "skipFailedTrack(\(failed), next: \(next.map(String.init) ?? "none"))"
        case .seek(let milliseconds): return "seek(\(milliseconds)ms)"
        case .cue(let index, let milliseconds): return "cue(\(index), \(milliseconds)ms)"
        case .requeue(let index): return "requeue(\(index))"
        case .removeTrack(let index): return "removeTrack(\(index))"
        case .setVolume(let percent): return "setVolume(\(percent)%)"
        case .rejoinLive(let reason): return "rejoinLive(\(reason))"
        case .refuse(let reason): return "refuse(\(reason))"
        case .reconnectLiveStream(let index): return "reconnectLiveStream(\(index))"
        case .endLiveStream(let index): return "endLiveStream(\(index))"
        case .drain(let boundary): return "drain(\(boundary))"
        case .switchFormat(let reopen): return reopen ? "switchFormat(reopen)" : "switchFormat"
        case .releaseSleepDelay: return "releaseSleepDelay"
        case .holdIdleInhibitor: return "holdIdleInhibitor"
        case .releaseIdleInhibitor: return "releaseIdleInhibitor"
        case .exitForeground(let reason): return "exitForeground(\(reason))"
        case .armTimer(let moment): return moment.map { "armTimer(\($0))" } ?? "armTimer(off)"
        case .connectServer: return "connectServer"
        }
    }
}

/// Why a foreground `earshot play` ends.
public enum ForegroundExit: Hashable, Sendable, CustomStringConvertible {
    /// The queue was played to its end (some tracks may have failed).
    case queuePlayed
    /// Every track of the queue failed, one after another: nothing could be played.
    case nothingPlayable
    /// There was no sound server at the first connection (row 29).
    case noServer

    /// `queuePlayed`, `nothingPlayable` or `noServer`.
    public var description: String {
        switch self {
        case .queuePlayed: return "queuePlayed"
        case .nothingPlayable: return "nothingPlayable"
        case .noServer: return "noServer"
        }
    }
}

extension Command {
    /// Whether the command quiets the stream, at once or after a fade (`cork`, `fadeOutAndCork`).
    public var corks: Bool {
        self == .cork || self == .fadeOutAndCork
    }
}
