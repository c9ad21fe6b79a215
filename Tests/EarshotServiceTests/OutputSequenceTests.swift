// The executor's sequencing (OutputSequence): what waits for which answer, step by step, with no server.
@testable import EarshotService
import Testing

@Suite("The executor's sequencing: flush after the cork's answer, uncork after the audio, cork after the fade")
struct OutputSequenceTests {
    @Test("a flush right after a cork waits for its acknowledgement, and is carried out once, then")
    func flushWaitsForCork() {
        var sequence = OutputSequence()
        sequence.corkSent()
        let step1 = sequence.flushRequested(streamOpen: true)
        #expect(!step1)
        #expect(sequence.cork == .inFlightWithFlush)
        let step2 = sequence.corkAcknowledged()
        #expect(step2)
        #expect(sequence.cork == .settled)
        // Acknowledged: a later cork's answer carries out nothing more.
        sequence.corkSent()
        let step3 = sequence.corkAcknowledged()
        #expect(!step3)
    }

    @Test("with no cork on its way, or no stream to answer it, a flush is carried out at once")
    func flushAtOnce() {
        var settled = OutputSequence()
        let step4 = settled.flushRequested(streamOpen: true)
        #expect(step4)
        var noStream = OutputSequence()
        noStream.corkSent()
        let step5 = noStream.flushRequested(streamOpen: false)
        #expect(step5)
        #expect(noStream.cork == .settled)
    }

    @Test("the next command, or the stream's close, carries out a waiting flush first: commands keep their order")
    func flushBeforeTheNextCommand() {
        var sequence = OutputSequence()
        let step6 = sequence.beforeCommand()
        #expect(!step6)
        sequence.corkSent()
        let step7 = sequence.beforeCommand()
        #expect(!step7, "a cork in flight alone holds nothing back")
        _ = sequence.flushRequested(streamOpen: true)
        let step8 = sequence.beforeCommand()
        #expect(step8)
        let step9 = sequence.corkAcknowledged()
        #expect(!step9, "carried out already")

        var closing = OutputSequence()
        closing.corkSent()
        _ = closing.flushRequested(streamOpen: true)
        closing.uncorkWaitsForAudio()
        let closed = closing.streamClosed()
        #expect(closed.flush && closed.withdrawAudioWait)
        #expect(closing == OutputSequence())
    }

    @Test("an uncork and a refill wait for the decoder's audio; both go together when it comes, or a cork withdraws them")
    func audioWaits() {
        var sequence = OutputSequence()
        #expect(!sequence.awaitsAudio)
        sequence.refillWaitsForAudio()
        sequence.uncorkWaitsForAudio()
        #expect(sequence.awaitsAudio)
        let due = sequence.audioArrived()
        #expect(due.refill && due.uncork)
        #expect(!sequence.awaitsAudio)
        let step10 = sequence.audioArrived()
        #expect(step10 == (refill: false, uncork: false))

        sequence.uncorkWaitsForAudio()
        let step11 = sequence.withdrawAudioWaits()
        #expect(step11)
        let step12 = sequence.withdrawAudioWaits()
        #expect(!step12, "withdrawn once")
        let step13 = sequence.audioArrived()
        #expect(step13 == (refill: false, uncork: false))
    }

    @Test("a fade-out's cork is due once the ramp is at silence and every volume step is answered")
    func fadeOutThenCork() {
        var sequence = OutputSequence()
        let step14 = sequence.fadeOutRequested(fades: true, streamPlays: true)
        #expect(step14)
        sequence.volumeSent()
        sequence.volumeSent()
        let step15 = sequence.fadeOutCorkDue(fadedOut: false, ramping: true)
        #expect(!step15)
        let step16 = sequence.fadeOutCorkDue(fadedOut: true, ramping: false)
        #expect(!step16, "two steps unanswered")
        sequence.volumeAnswered()
        let step17 = sequence.fadeOutCorkDue(fadedOut: true, ramping: false)
        #expect(!step17, "one step unanswered")
        sequence.volumeAnswered()
        let step18 = sequence.fadeOutCorkDue(fadedOut: true, ramping: false)
        #expect(step18)
        let step19 = sequence.fadeOutCorkDue(fadedOut: true, ramping: false)
        #expect(!step19, "the cork is sent once")
        // Quiet and corked: the stream shows the user's volume again.
        #expect(sequence.restoresVolumeAfterCork(fadedOut: true))
    }

    @Test("no fade-out where nothing plays: fades off, a stream not playing yet, an uncork still waiting for audio")
    func corkAtOnce() {
        var off = OutputSequence()
        let step20 = off.fadeOutRequested(fades: false, streamPlays: true)
        #expect(!step20)
        var quiet = OutputSequence()
        let step21 = quiet.fadeOutRequested(fades: true, streamPlays: false)
        #expect(!step21)
        var waiting = OutputSequence()
        waiting.uncorkWaitsForAudio()
        let step22 = waiting.fadeOutRequested(fades: true, streamPlays: true)
        #expect(!step22)
        #expect(off == OutputSequence() && quiet == OutputSequence())
    }

    @Test("a resume during a fade-out turns it round; otherwise it fades in once the uncork is acknowledged")
    func fadeIn() {
        var turning = OutputSequence()
        _ = turning.fadeOutRequested(fades: true, streamPlays: true)
        let step23 = turning.fadeInRequested(fades: true)
        #expect(step23 == .turnRound)
        let step24 = turning.fadeOutCorkDue(fadedOut: true, ramping: false)
        #expect(!step24, "the turned-round fade-out corks nothing")

        var resuming = OutputSequence()
        let step25 = resuming.fadeInRequested(fades: true)
        #expect(step25 == .silenceUntilUncorked)
        #expect(!resuming.restoresVolumeAfterCork(fadedOut: true), "the silence is the fade-in's, not to be undone")
        let step26 = resuming.uncorkAcknowledged()
        #expect(step26)
        let step27 = resuming.uncorkAcknowledged()
        #expect(!step27, "the fade-in starts once")

        var off = OutputSequence()
        let step28 = off.fadeInRequested(fades: false)
        #expect(step28 == .none)
        let step29 = off.uncorkAcknowledged()
        #expect(!step29)
    }

    @Test("a cork at once overrides a fade under way, and a new stream forgets the old one's volume answers")
    func corkAndNewStream() {
        var sequence = OutputSequence()
        _ = sequence.fadeOutRequested(fades: true, streamPlays: true)
        sequence.corkOverridesFade()
        #expect(sequence.fade == .none)
        _ = sequence.fadeOutRequested(fades: true, streamPlays: true)
        sequence.volumeSent()
        sequence.streamOpened()
        #expect(sequence.fade == .none && sequence.volumeSetsInFlight == 0)
        // A fade-in waiting for the uncork survives the open: the new stream's uncork starts it.
        _ = sequence.fadeInRequested(fades: true)
        sequence.streamOpened()
        #expect(sequence.fade == .inAfterUncork)
    }
}
