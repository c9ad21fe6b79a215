// Rule 21: pauses from programs that act for an event of their own, not at the user's request. The session's sound
// policy manager (WirePlumber) sends MPRIS `Pause` when a device goes away or a headset leaves A2DP for a call; a
// phone bridge (KDE Connect, GSConnect) sends `Pause` when the phone rings and `Play` (older KDE Connect:
// `PlayPause`) when the call is over. Such a pause must not overwrite the real reason the player is quiet, nor cancel
// the resume after a call, and the sender's later request must undo only what it did itself.

extension PlayerState {
    /// True while an outside sender's pause holds the player (rule 21).
    public var isHeldByExternalPause: Bool {
        if case .paused(.external) = playback { return true }
        return false
    }

    /// An outside sender's `Pause`: remembered until the sender answers it, and acted on only while playing.
    mutating func externalPause(from sender: ExternalSender) -> [Command] {
        unansweredExternalPauses.insert(sender)
        // Row 40: quiet for want of audio, the player is corked already; the sender's pause takes it over, so the
        // network coming back during the call starts nothing, and the sender's Play waits for the network again.
        if playback == .paused(.networkLost) {
            playback = .paused(.external(sender))
            return []
        }
        // Rule 21: a player held by an interruption, a profile switch or an output loss is already quiet for that
        // reason, which stays (with the resume after a call); one paused, stopped or idle stays so. Idempotent.
        guard isPlaying else { return [] }
        // A playing player has no interruption, so there is no wish to resume to forget.
        playback = .paused(.external(sender))
        return [Self.pauseCommand(fading: Self.pauseFades(for: sender))]
    }

    /// An outside sender's `Play` or `PlayPause`. After its own unanswered `Pause` it resumes only what that pause
    /// paused, if nothing has happened to the player since; otherwise it changes nothing (never a toggle). Without
    /// one, it is the user's request relayed (a phone's media remote), handled as `relayedUserEvent`.
    mutating func externalResume(from sender: ExternalSender, relayedUserEvent: Event) -> [Command] {
        guard unansweredExternalPauses.remove(sender) != nil else { return apply(relayedUserEvent) }
        // Rule 21: the user played or paused since, an interruption or an output loss took over, or the pause found
        // the player quiet already: nothing of this sender's to undo.
        guard playback == .paused(.external(sender)) else { return [] }
        return apply(.userPlay)
    }
}
