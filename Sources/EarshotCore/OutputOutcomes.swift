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
        let lost = outputLost(.streamFailed)
        return [.closeStream] + lost + (hadStream && wasPaused ? [.flush] : [])
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
