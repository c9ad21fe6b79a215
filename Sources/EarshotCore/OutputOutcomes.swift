// What the executor reports about carrying out the output's commands, and what the rules make of it. The executor only
// performs: it never closes a stream, picks another sink or drops an outcome on its own initiative (docs/design.md,
// "Outcomes the rules decide").

extension PlayerState {
    /// An output command could not be carried out, or the server refused a cork or an uncork: a stream that refuses
    /// them cannot be trusted to be quiet or to play, so it is closed (rule 10: the output is lost, for the reason
    /// `streamFailed`), and a later play opens a new one (rule 8). A paused player's closed stream had taken audio from
    /// the ring that nobody heard: the flush has decoding continue from the last frame heard, so that a later resume
    /// skips nothing (a playing player gets rule 10's own flush).
    mutating func outputCommandFailed() -> [Command] {
        let hadStream = stream.isOpen
        stream.isOpen = false
        let wasPaused: Bool
        if case .paused = playback { wasPaused = true } else { wasPaused = false }
        let lost = pauseForLostOutput(.streamFailed)
        return [.closeStream] + lost + (hadStream && wasPaused && !isOnLiveStream ? [.flush] : [])
    }

    /// The configured sink is missing or refused our stream: while a stream is wanted (playing, or a play waiting for
    /// an interruption to end) it is opened on the server's default sink (rule 8: output present, the user's play is
    /// heard where the server plays by default). Otherwise nothing: the next play asks for the configured sink again.
    /// With a stream open already, the report is stale (rule 15).
    mutating func configuredSinkRefused() -> [Command] {
        guard !stream.isOpen, isPlaying || waitingForInterruptionEnd else { return [] }
        return [.openStreamOnDefaultSink]
    }

    /// A setting of the stream could not be applied. Neither is evidence that the output is lost (a refused unmute
    /// does not mean the stream is muted: nobody may have muted it, as on PipeWire), so the player carries on as it
    /// is (rule 15: logged by kind); the volume the user chose stays in the state and is applied to the next stream
    /// when it opens (`streamOpened`).
    mutating func outputSettingFailed(_ setting: OutputSetting) -> [Command] {
        []
    }

    /// A new stream is open (corked): it gets the user's volume, and a playing player's uncork (rule 8).
    mutating func streamOpened() -> [Command] {
        stream = .openCorked
        let volume: [Command] = volumePercent == 100 ? [] : [.setVolume(percent: volumePercent)]
        // Rule 8's uncork, for a play that had to wait for its stream to be opened.
        return isPlaying ? volume + [.uncork] : volume
    }
}

/// When the server's silence is a stall (rule 10: "the server stops asking for audio for a second while we play").
public enum StallRule {
    /// The shortest silence that counts: a whole second, since on a machine loaded twenty deep the server was seen to
    /// go quiet for over half a second and then carry on, and a player that calls that "output lost" stops the music
    /// for nothing.
    public static let minimumMilliseconds = 1_000
    /// The silence must also last this many request periods, so that a long target latency (PulseAudio asks every
    /// 333 ms at 1000 ms: a second is three periods, two requests missed) is not a stall between two requests.
    public static let periods = 3

    /// How long the server may ask for nothing, with requests every `requestPeriodMilliseconds`, before it counts as
    /// a stall. The executor arms its watchdog's timer for it.
    public static func thresholdMilliseconds(requestPeriodMilliseconds: Int) -> Int {
        max(requestPeriodMilliseconds * periods, minimumMilliseconds)
    }
}

extension PlayerState {
    /// Rule 10: a silence past `StallRule`'s threshold while playing is a lost output (a stall: PipeWire can drop a
    /// device with no callback at all), once the listener has heard audio since the stream last started. Before that
    /// the sink is still starting: a suspended device, an idle null sink or a waking Bluetooth link takes the first
    /// request's audio and asks for nothing more for a second or longer, and calling that "output lost" would stop a
    /// play before it is heard. Shorter, before the sink has played, or reported while not playing, it is nothing
    /// (rule 15).
    ///
    /// Whether the sink has played since the start comes with the measurement, not from a flag kept here: the moments
    /// the stream starts again are the stream's (an uncork acknowledged, a new stream, a flush of a running stream, a
    /// move to another sink), some with no event of their own (a flush the executor makes when the queue is replaced),
    /// so a flag in the state would have the rules mirror each of them, and would double the playing states of the
    /// exhaustive check for a decision that needs only the fact at the moment of the report.
    mutating func outputSilent(milliseconds: Int, requestPeriodMilliseconds: Int, heardSinceStart: Bool) -> [Command] {
        guard isPlaying, heardSinceStart,
              milliseconds > StallRule.thresholdMilliseconds(requestPeriodMilliseconds: requestPeriodMilliseconds)
        else { return [] }
        return outputLost(.stalled)
    }

    /// Rule 13: the last audio before a change of format or the queue's end was handed over; a playing player plays
    /// it out (then `formatChangeReached` or `queuePlayedOut`). A player that is not playing keeps it: the executor
    /// reports again once it plays. The same when a drain was cancelled with its audio still handed over (a queue
    /// addition cancels a format change's drain): the executor reports the fact again, and this answers it.
    mutating func tailHandedOver(_ boundary: OutputBoundary) -> [Command] {
        isPlaying ? [.drain(boundary)] : []
    }

    /// MPRIS `Seek`: past the track's end it goes to the next track (as MPRIS says), otherwise to the position, never
    /// before the start.
    mutating func seek(by offset: Int, from position: Int, trackLength: Int?) -> [Command] {
        let target = position + offset
        if let trackLength, target >= trackLength { return apply(.userNext) }
        return apply(.userSeek(milliseconds: max(target, 0)))
    }
}
