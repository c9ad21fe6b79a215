// Rule 19 of shared/RULES.md, the session left (issue 22): sleep, another user's session, and a screen lock with
// `pauseOnLock`; and the sleep's delay lock, released once the player is quiet. Each test states the whole resulting
// state and the exact commands.
import EarshotCore
import Testing

@Suite("RULES.md, rule 19: the session left")
struct SessionLeftRulesTests {
    @Test("Rule 19: sleep announced while playing -> paused (sessionLeft), cork at once; the delay goes once corked")
    func rule19SleepWhilePlaying() {
        var store = RuleStore(Given.playing)
        store.send(.sessionLeft(.sleep), commands: [.cork]) {
            $0.playback = .paused(.sessionLeft(.sleep))
            $0.sleepAwaitsQuiet = true
        }
        store.send(.streamCorked, commands: [.releaseSleepDelay]) {
            $0.stream.isCorked = true
            $0.sleepAwaitsQuiet = false
        }
        // Rule 19: the wake leaves it paused.
        store.send(.sessionReturned(.sleep), commands: [])
    }

    @Test("Rule 19: sleep announced while quiet -> the delay goes at once; nothing else changes")
    func rule19SleepWhileQuiet() {
        for start in [Given.pausedByUser, Given.stopped, Given.idle] {
            var store = RuleStore(start)
            store.send(.sessionLeft(.sleep), commands: [.releaseSleepDelay])
        }
        // A playing player whose stream is not open yet has nothing to be heard: corked in order, released at once.
        var opening = Given.playing
        opening.stream = StreamCondition(isOpen: false, isCorked: true)
        var store = RuleStore(opening)
        store.send(.sessionLeft(.sleep), commands: [.cork, .releaseSleepDelay]) {
            $0.playback = .paused(.sessionLeft(.sleep))
        }
    }

    @Test("Rule 19: a user pause still fading out: the sleep waits for its cork to be acknowledged (a fade at most)")
    func rule19SleepWaitsForThePausesCork() {
        var store = RuleStore(Given.playing)
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.sessionLeft(.sleep), commands: []) { $0.sleepAwaitsQuiet = true }
        store.send(.streamCorked, commands: [.releaseSleepDelay]) {
            $0.stream.isCorked = true
            $0.sleepAwaitsQuiet = false
        }
    }

    @Test("Rule 19: the stream lost before the cork was acknowledged -> quiet all the same, the delay goes")
    func rule19StreamLostBeforeTheCork() {
        var store = RuleStore(Given.playing)
        store.send(.sessionLeft(.sleep), commands: [.cork]) {
            $0.playback = .paused(.sessionLeft(.sleep))
            $0.sleepAwaitsQuiet = true
        }
        // Rule 10: the failed command is an output loss, which names the reason now; the rules close the stream that
        // refused (a paused player's is flushed too), and a stream gone is quiet.
        store.send(.outputCommandFailed, commands: [.closeStream, .flush, .releaseSleepDelay]) {
            $0.playback = .paused(.outputLost(.streamFailed))
            $0.stream.isOpen = false
            $0.sleepAwaitsQuiet = false
        }
    }

    @Test("Rule 19: our session becomes inactive while playing -> paused (sessionLeft), cork; its return plays nothing")
    func rule19SessionInactive() {
        var store = RuleStore(Given.playing)
        store.send(.sessionLeft(.inactive), commands: [.cork]) { $0.playback = .paused(.sessionLeft(.inactive)) }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        store.send(.sessionReturned(.inactive), commands: [])
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
    }

    @Test("Rule 19: a lock pauses only with pauseOnLock; an unlock never plays")
    func rule19Lock() {
        var ignoring = RuleStore(Given.playing)
        ignoring.send(.sessionLeft(.locked), commands: [])
        ignoring.send(.sessionReturned(.locked), commands: [])

        var pausing = Given.playing
        pausing.policy.pauseOnLock = true
        var store = RuleStore(pausing)
        store.send(.sessionLeft(.locked), commands: [.cork]) { $0.playback = .paused(.sessionLeft(.locked)) }
        store.send(.sessionReturned(.locked), commands: [])
    }

    @Test("Rule 19: the session left during a call -> the resume is cleared; the call's end after the wake is silent")
    func rule19DuringACall() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        store.send(.sessionLeft(.sleep), commands: [.releaseSleepDelay]) {
            $0.playback = .paused(.sessionLeft(.sleep))
            $0.resumeIntent = .none
        }
        store.send(.sessionReturned(.sleep), commands: [])
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(2_000)), commands: []) {
            $0.interruptions = []
        }
    }

    @Test("Rule 19: an outside sender's Pause then the session left -> that sender's Play no longer resumes")
    func rule19AfterAnExternalPause() {
        var store = RuleStore(Given.playing)
        store.send(.externalPause(.phoneBridge), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.external(.phoneBridge))
            $0.unansweredExternalPauses = [.phoneBridge]
        }
        // Its fade-out still under way: it ends with its cork, a fade's length at most.
        store.send(.sessionLeft(.inactive), commands: []) { $0.playback = .paused(.sessionLeft(.inactive)) }
        store.send(.externalPlay(.phoneBridge), commands: []) { $0.unansweredExternalPauses = [] }
    }

    @Test("Rule 19 during an overruled capture (rule 18): paused, and the capture's end brings nothing back")
    func rule19DuringAnOverruledCapture() {
        let dictation = InterruptionSource.microphoneCapture(client: 9)
        var start = Given.playing
        start.overruledInterruptions = [dictation]
        var store = RuleStore(start)
        store.send(.sessionLeft(.sleep), commands: [.cork]) {
            $0.playback = .paused(.sessionLeft(.sleep))
            $0.sleepAwaitsQuiet = true
        }
        store.send(.streamCorked, commands: [.releaseSleepDelay]) {
            $0.stream.isCorked = true
            $0.sleepAwaitsQuiet = false
        }
        store.send(.sessionReturned(.sleep), commands: [])
        store.send(.interruptionEnded(dictation, resumeAllowed: true, at: Given.at(9_000)), commands: []) {
            $0.overruledInterruptions = []
        }
    }

    @Test("Rule 19: the reason of a user pause or an output loss stays")
    func rule19KeepsEarlierReasons() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.sessionLeft(.inactive), commands: [])
        var lost = Given.playing
        lost.playback = .paused(.outputLost(.deviceRemoved))
        lost.stream = .openCorked
        var lostStore = RuleStore(lost)
        lostStore.send(.sessionLeft(.sleep), commands: [.releaseSleepDelay])
    }

    @Test("Rule 15 for logind: a wake with no sleep, two sleeps in a row, out of order: paused, never playing")
    func rule19OutOfOrder() {
        var store = RuleStore(Given.playing)
        // A wake with no sleep: nothing.
        store.send(.sessionReturned(.sleep), commands: [])
        store.send(.sessionLeft(.sleep), commands: [.cork]) {
            $0.playback = .paused(.sessionLeft(.sleep))
            $0.sleepAwaitsQuiet = true
        }
        // The same sleep announced again before the cork's acknowledgement: still waiting, nothing more.
        store.send(.sessionLeft(.sleep), commands: [])
        store.send(.streamCorked, commands: [.releaseSleepDelay]) {
            $0.stream.isCorked = true
            $0.sleepAwaitsQuiet = false
        }
        // Announced once more after the release (logind's own retry): released at once.
        store.send(.sessionLeft(.sleep), commands: [.releaseSleepDelay])
        // Two wakes, an activation that never left, an unlock with no lock: paused.
        store.send(.sessionReturned(.sleep), commands: [])
        store.send(.sessionReturned(.sleep), commands: [])
        store.send(.sessionReturned(.inactive), commands: [])
        store.send(.sessionReturned(.locked), commands: [])
        #expect(store.state.playback == .paused(.sessionLeft(.sleep)))
    }

    @Test("Rule 19: a wake before the cork's acknowledgement ends the wait; the late acknowledgement releases nothing")
    func rule19WakeBeforeTheCork() {
        var store = RuleStore(Given.playing)
        store.send(.sessionLeft(.sleep), commands: [.cork]) {
            $0.playback = .paused(.sessionLeft(.sleep))
            $0.sleepAwaitsQuiet = true
        }
        store.send(.sessionReturned(.sleep), commands: []) { $0.sleepAwaitsQuiet = false }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
    }

    @Test("Rule 19: events and status name the departure's kind")
    func rule19Names() {
        #expect(Event.sessionLeft(.sleep).description == "sessionLeft(sleep)")
        #expect(Event.sessionReturned(.inactive).description == "sessionReturned(inactive)")
        #expect(Playback.paused(.sessionLeft(.locked)).description == "paused(sessionLeft)")
        #expect(Command.releaseSleepDelay.description == "releaseSleepDelay")
    }
}
