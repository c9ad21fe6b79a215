// The player's fades and ducking (see VolumeEdges for the arithmetic and why it is the server's volume, and
// EarshotCore/Edges.swift for the rules). The rules decide which pause fades and when to duck; here they are carried
// out: a fade-out is a ramp of the stream's volume to silence, then the cork, sent once the server has acknowledged
// the silence; the cork's own acknowledgement (`streamCorked`) is the outcome the rules hear. A resume silences the
// stream before its uncork and ramps up once the server has acknowledged the uncork. The steps are timer events
// (`.edgeDue`), armed only while a ramp is under way.
import EarshotCore
import PulseOutput

extension Player {
    /// The rules' `fadeOutAndCork`: a stream that plays fades out, then corks (`volumeAcknowledged`); one that does
    /// not play yet (still opening, waiting for audio, its uncork not acknowledged), or with fades off, corks now.
    func fadeOutAndCork() {
        let plays = stream.map { streamOpening == nil && !$0.isCorked } ?? false
        guard sequence.fadeOutRequested(fades: edges.fades, streamPlays: plays) else { return perform(.cork) }
        edges.fadeOut()
        stepEdges()
    }

    /// Before a cork at once: a fade-out under way gives way to it (the cork is sent now, not after the ramp).
    func fadeGivesWayToCork() {
        sequence.corkOverridesFade()
        edges.holdFade()
        edgeTimer.disarm()
    }

    /// Before the rules' uncork: every resume fades in. A fade-out under way turns round from where it is (the stream
    /// still plays); otherwise the stream is silenced before its uncork is sent, and ramps up once acknowledged.
    func prepareFadeIn() {
        switch sequence.fadeInRequested(fades: edges.fades) {
        case .none:
            break
        case .turnRound:
            edges.fadeIn()
            stepEdges()
        case .silenceUntilUncorked:
            edges.silenceForFadeIn()
            sendVolume()
        }
    }

    /// The server acknowledged an uncork: a fade-in waiting for it starts.
    func uncorkAcknowledgedForFade() {
        guard sequence.uncorkAcknowledged() else { return }
        edges.fadeIn()
        stepEdges()
    }

    /// The server acknowledged a cork: a stream that faded out shows the user's volume again while it is quiet (a
    /// mixer, a test, reads it), and the next resume silences it before its uncork (`prepareFadeIn`).
    func corkAcknowledgedForFade() {
        guard sequence.restoresVolumeAfterCork(fadedOut: edges.isFadedOut) else { return }
        edges.restoreAfterCork()
        sendVolume()
    }

    /// The rules' `duck` and `unduck` (rule 20): the duck's ramp starts from where it is.
    func setDucked(_ ducked: Bool) {
        edges.setDucked(ducked)
        log.record("output", ["duck": ducked ? "lowering" : "restoring"])
        stepEdges()
    }

    /// One step of the ramps under way, sent to the server, and the next step armed while one is due.
    func stepEdges() {
        if edges.step() { sendVolume() }
        if edges.isRamping {
            edgeTimer.arm(after: .milliseconds(VolumeEdges.stepMilliseconds))
        } else {
            edgeTimer.disarm()
            corkWhenFadedOut()
        }
    }

    /// Sends the user's volume under the current gains (a stream not ready yet gets it when it is).
    func sendVolume() {
        guard let stream, streamOpening?.isReady ?? true else { return }
        do {
            try stream.setVolume(percent: rules.volumePercent, gain: edges.gain)
            sequence.volumeSent()
        } catch {
            // Rule 15: a refused setting changes nothing, but is reported (OutputOutcomes).
            log.record("output", ["command": "setVolume", "error": "\(error.code.rawValue)"])
            dispatch(.outputSettingFailed(.volume))
        }
    }

    /// The server answered a volume setting (applied or refused): once the silence of a fade-out is in place, the cork.
    func volumeAcknowledged() {
        sequence.volumeAnswered()
        corkWhenFadedOut()
    }

    /// Sends the cork a fade-out waits for, once the ramp is over and the server has every step.
    func corkWhenFadedOut() {
        guard sequence.fadeOutCorkDue(fadedOut: edges.isFadedOut, ramping: edges.isRamping) else { return }
        log.record("output", ["fade": "out", "action": "cork"])
        perform(.cork)
    }

    /// The stream (re)opened: its volume is the user's under the current gains, sent with its settings.
    func streamVolumeOnOpen() {
        sequence.streamOpened()
        if rules.volumePercent != 100 || edges.gain != 1 { sendVolume() }
    }
}
