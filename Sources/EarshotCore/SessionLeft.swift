// Rule 19 of shared/RULES.md: the session left. Before the machine sleeps, when another user's session takes the
// seat, or (with `pauseOnLock`) when the screen is locked, the player pauses and corks at once, with no fade, and
// forgets any wish to resume: a laptop opened in a meeting room never starts the music, and neither does a call that
// ends while the machine slept. The session's return changes nothing.
//
// logind waits for the sleep until Earshot releases its delay lock. The rules ask for that release
// (`releaseSleepDelay`) as soon as the stream is quiet: at once when it already is, else when the cork is
// acknowledged (or the stream is gone), so the sleep waits for the cork and no longer.

extension PlayerState {
    /// True when nothing can be heard from the player: it is not playing, and its stream is corked (acknowledged) or
    /// not open.
    public var isQuiet: Bool {
        !isPlaying && (!stream.isOpen || stream.isCorked)
    }

    /// The session was left for `departure` (rule 19).
    mutating func sessionLeft(_ departure: SessionDeparture) -> [Command] {
        // A second announcement of the same sleep (or one after a wake that never came) waits for quiet all the same.
        if departure == .sleep { sleepAwaitsQuiet = true }
        // A lock leaves the session only when the user asked for it.
        if departure == .locked && !policy.pauseOnLock { return [] }
        // Nothing starts by itself afterwards: not the end of a call, not an outside sender's Play.
        resumeIntent = .none
        switch playback {
        case .playing:
            playback = .paused(.sessionLeft(departure))
            return [.cork]
        case .paused(.interruption), .paused(.external), .paused(.networkLost):
            // Already quiet, but for a reason that could end by itself (a call's end, a sender's Play, the network
            // back): the session's departure takes it over.
            playback = .paused(.sessionLeft(departure))
            return []
        case .idle, .stopped, .paused:
            // Paused by the user, for an output loss, a declined resume, a restored queue or an earlier departure:
            // that reason stays.
            return []
        }
    }

    /// The session is back after `departure`: never a reason to play (rule 19). A wake ends the sleep's wait.
    mutating func sessionReturned(_ departure: SessionDeparture) -> [Command] {
        if departure == .sleep { sleepAwaitsQuiet = false }
        return []
    }

    /// `releaseSleepDelay` once an announced sleep waits and the player is quiet; nil otherwise.
    mutating func releaseSleepDelayWhenQuiet() -> Command? {
        guard sleepAwaitsQuiet, isQuiet else { return nil }
        sleepAwaitsQuiet = false
        return .releaseSleepDelay
    }
}
