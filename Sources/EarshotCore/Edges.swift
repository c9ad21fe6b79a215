// The gentle edges: which pauses fade, and ducking (rule 20).
//
// Fades. A hard cut or a hard start cracks in the speakers, so a pause the listener asked for or expects (the user's
// pause, toggle or stop, a call's pause, a phone bridge's pause for a ringing phone) fades out before the cork, and
// every resume fades in (`Command.uncork`). A pause that must be quiet at once does not fade: an output loss (rule 10:
// the fade would play on the speakers the headphones left), a Bluetooth profile switch (our sink is already gone, the
// stream plays wherever the server moved it), a server's cork request (PulseAudio mutes the stream as it asks; a
// fade-out for the call's stream under way then gives way to the cork at once), and the session manager's pause (it
// pauses before it relinks our audio from a device that is going away). How long a fade lasts is configuration, and
// the executor's: the rules say which.
//
// Ducking (rule 20). While a stream with a duck role plays anywhere in the session (a screen reader speaking, a
// notification sound), the volume is lowered to the duck level under the user's own volume, and restored when the
// last such stream ends. Ducking never pauses, never starts, and never changes the volume the user set (status and
// MPRIS keep showing it). The commands follow the set of ducking streams, whatever the playback, so that a play
// during a duck starts ducked and a duck that ends during a pause leaves the volume whole for the next play.

extension PlayerState {
    /// Whether a pause for `source` fades out (a call seen by its stream or its microphone capture), or corks at once:
    /// a profile switch (our sink is gone) and a server's cork request (PulseAudio's module-role-cork has already muted
    /// our stream: a fade there would only play the track on, unheard, for its length).
    public static func pauseFades(for source: InterruptionSource) -> Bool {
        switch source {
        case .triggerStream, .microphoneCapture: return true
        case .serverCorkRequest, .profileSwitch: return false
        }
    }

    /// Whether a fade-out for an interruption is still under way: paused for it, the stream not yet corked.
    public var isFadingOutForInterruption: Bool {
        playback == .paused(.interruption) && stream.isOpen && !stream.isCorked
    }

    /// Whether an outside sender's pause fades out: a phone bridge's (the phone rings: a call's pause) does; the
    /// session manager's does not, since it pauses before it relinks our audio away from a device that is going.
    public static func pauseFades(for sender: ExternalSender) -> Bool {
        switch sender {
        case .phoneBridge: return true
        case .sessionManager: return false
        }
    }

    /// The command that quiets a playing stream: `fadeOutAndCork` when the pause fades, `cork` when it is at once.
    static func pauseCommand(fading: Bool) -> Command {
        fading ? .fadeOutAndCork : .cork
    }

    // MARK: Rule 20

    /// A duck-role stream started: the first one lowers the volume; another while one plays, or a duplicate, changes
    /// nothing (rule 15).
    mutating func duckBegan(_ stream: UInt32) -> [Command] {
        let wasDucked = isDucked
        guard duckingStreams.insert(stream).inserted, !wasDucked else { return [] }
        return [.duck]
    }

    /// A duck-role stream ended: the last one restores the volume; an end with no begin changes nothing (rule 15).
    mutating func duckEnded(_ stream: UInt32) -> [Command] {
        guard duckingStreams.remove(stream) != nil, !isDucked else { return [] }
        return [.unduck]
    }
}
