// What the executor holds back until the server or the decoder has answered, as one value with no I/O. The rules
// issue commands in order (Commands.swift); a few of them cannot be carried out the moment they are issued without
// being wrong, and wait here for an acknowledgement that comes back in the inbox:
//   - a flush waits for the acknowledgement of the cork sent just before it (the position it continues from must be
//     the server's, not libpulse's interpolation of a stream that may already be stopped);
//   - an uncork, and the refill of a flushed running stream, wait for the decoder to have buffered enough audio;
//   - a fade-out's cork waits for the last step of the ramp and the server's answer to every volume sent;
//   - a resume's fade-in waits for the uncork's acknowledgement.
// Run on the owner's thread only (Player's actor), like the rest of the executor: each method says what to do now,
// and the actor does it with its ports (the stream, the decoder, the timers).

/// The executor's pending flush, uncork, refill and fades.
struct OutputSequence: Equatable, Sendable {
    /// Where the last cork is.
    enum CorkProgress: Equatable, Sendable {
        /// None sent, or acknowledged.
        case settled
        /// Sent, its acknowledgement not arrived.
        case inFlight
        /// Sent, and a flush waits for its acknowledgement.
        case inFlightWithFlush
    }

    /// The fade in progress that another step waits on.
    enum FadeProgress: Equatable, Sendable {
        case none
        /// A fade-out ramps down, and the cork follows it.
        case outThenCork
        /// The stream was silenced for a resume, whose fade-in starts with the uncork's acknowledgement.
        case inAfterUncork
    }

    private(set) var cork = CorkProgress.settled
    private(set) var fade = FadeProgress.none
    /// An uncork the rules asked for waits for decoded audio.
    private(set) var uncorkAwaitsAudio = false
    /// A flushed running stream waits for decoded audio to be refilled.
    private(set) var refillAwaitsAudio = false
    /// Volume settings sent and not yet answered.
    private(set) var volumeSetsInFlight = 0

    /// Whether anything waits for the decoder's `.buffered`.
    var awaitsAudio: Bool { uncorkAwaitsAudio || refillAwaitsAudio }

    // MARK: Cork and flush

    /// A cork was sent to the server.
    mutating func corkSent() {
        if cork == .settled { cork = .inFlight }
    }

    /// The rules' flush: true when it is carried out now; false when it waits for the cork's acknowledgement
    /// (`corkAcknowledged`, `beforeCommand`, `streamClosed` carry it out then).
    mutating func flushRequested(streamOpen: Bool) -> Bool {
        guard cork != .settled && streamOpen else {
            cork = .settled
            return true
        }
        cork = .inFlightWithFlush
        return false
    }

    /// The server acknowledged a cork: true when a waiting flush is carried out now.
    mutating func corkAcknowledged() -> Bool {
        defer { cork = .settled }
        return cork == .inFlightWithFlush
    }

    /// Before any command but a flush: the output carries commands out in order, so a waiting flush goes first.
    /// True when it is carried out now (the cork's acknowledgement is no longer awaited for it).
    mutating func beforeCommand() -> Bool {
        guard cork == .inFlightWithFlush else { return false }
        cork = .settled
        return true
    }

    /// The stream closed: no acknowledgement comes from it. `flush`: a waiting flush is carried out now, without the
    /// stream; `withdrawAudioWait`: the decoder's `.buffered` is no longer wanted.
    mutating func streamClosed() -> (flush: Bool, withdrawAudioWait: Bool) {
        let flush = cork == .inFlightWithFlush
        cork = .settled
        return (flush, withdrawAudioWaits())
    }

    // MARK: Waiting for decoded audio

    /// The uncork waits for the decoder's audio.
    mutating func uncorkWaitsForAudio() { uncorkAwaitsAudio = true }

    /// The flushed running stream's refill waits for the decoder's audio.
    mutating func refillWaitsForAudio() { refillAwaitsAudio = true }

    /// The decoder buffered what was awaited: what to carry out now.
    mutating func audioArrived() -> (refill: Bool, uncork: Bool) {
        defer { uncorkAwaitsAudio = false; refillAwaitsAudio = false }
        return (refillAwaitsAudio, uncorkAwaitsAudio)
    }

    /// A cork or a closed stream withdraws a waiting uncork and refill: true when one was waiting (the decoder's
    /// `.buffered` request is withdrawn then).
    mutating func withdrawAudioWaits() -> Bool {
        defer { uncorkAwaitsAudio = false; refillAwaitsAudio = false }
        return awaitsAudio
    }

    // MARK: Fades

    /// The rules' `fadeOutAndCork`: true when the fade-out starts (the cork follows it); false when the cork is sent
    /// at once: fades off, or a stream that does not play yet (still opening, waiting for audio, corked).
    mutating func fadeOutRequested(fades: Bool, streamPlays: Bool) -> Bool {
        guard fades && streamPlays && !uncorkAwaitsAudio else { return false }
        fade = .outThenCork
        return true
    }

    /// A cork at once: a fade under way gives way to it.
    mutating func corkOverridesFade() {
        fade = .none
    }

    /// How a resume fades in.
    enum FadeIn: Equatable, Sendable {
        /// No fade configured.
        case none
        /// A fade-out under way turns round from where it is (the stream still plays).
        case turnRound
        /// The stream is silenced before its uncork, and ramps up once the uncork is acknowledged.
        case silenceUntilUncorked
    }

    /// Before the rules' uncork: how it fades in.
    mutating func fadeInRequested(fades: Bool) -> FadeIn {
        guard fades else { return .none }
        if fade == .outThenCork {
            fade = .none
            return .turnRound
        }
        fade = .inAfterUncork
        return .silenceUntilUncorked
    }

    /// The server acknowledged an uncork: true when a fade-in waiting for it starts now.
    mutating func uncorkAcknowledged() -> Bool {
        guard fade == .inAfterUncork else { return false }
        fade = .none
        return true
    }

    /// The server acknowledged a cork: true when a faded-out stream shows the user's volume again while it is quiet
    /// (nothing else waits on its volume).
    func restoresVolumeAfterCork(fadedOut: Bool) -> Bool {
        fadedOut && fade == .none
    }

    /// A volume setting was sent.
    mutating func volumeSent() { volumeSetsInFlight += 1 }

    /// The server answered a volume setting.
    mutating func volumeAnswered() { volumeSetsInFlight = max(volumeSetsInFlight - 1, 0) }

    /// True when a fade-out's cork is due now: the ramp is over, at silence, and the server has every step.
    mutating func fadeOutCorkDue(fadedOut: Bool, ramping: Bool) -> Bool {
        guard fade == .outThenCork && fadedOut && !ramping && volumeSetsInFlight == 0 else { return false }
        fade = .none
        return true
    }

    /// A stream (re)opened: nothing of the old one's volume settings or fade is pending.
    mutating func streamOpened() {
        volumeSetsInFlight = 0
        if fade == .outThenCork { fade = .none }
    }
}
