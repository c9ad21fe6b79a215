// Calls inferred from a microphone capture (issue 20) under rules 1-6, and rule 18, the user's overrule of them. Named
// after the rows of shared/RULES.md; each states the whole resulting state and the exact commands.
import EarshotCore
import Testing

@Suite("RULES.md, inferred calls and rule 18")
struct InferredCallRulesTests {
    static let browser = InterruptionSource.microphoneCapture(client: 7)
    static let dictation = InterruptionSource.microphoneCapture(client: 9)

    /// A player paused by the browser's call, which began while it played.
    static var pausedByBrowserCall: PlayerState {
        var state = Given.playing
        state.playback = .paused(.interruption)
        state.interruptions = [browser]
        state.resumeIntent = .afterInterruption(since: Given.at(0))
        state.stream = .openCorked
        return state
    }

    @Test("Rules 1 and 5: a microphone capture pauses a playing player and its end resumes it, like any source")
    func rules01And05InferredCall() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Self.browser, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Self.browser]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        store.send(.interruptionEnded(Self.browser, resumeAllowed: true, at: Given.at(60_000)),
                   commands: [.uncork, .clearServerMute]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 2: a microphone capture while paused changes nothing and is not remembered")
    func rule02InferredWhilePaused() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.interruptionBegan(Self.browser, at: Given.at(0)), commands: []) {
            $0.interruptions = [Self.browser]
        }
        store.send(.interruptionEnded(Self.browser, resumeAllowed: true, at: Given.at(5_000)), commands: []) {
            $0.interruptions = []
        }
    }

    @Test("Rule 18: user plays while every active source is a microphone capture -> playing, uncork, overruled")
    func rule18UserPlayOverrules() {
        var store = RuleStore(Self.pausedByBrowserCall)
        store.send(.userPlay, commands: [.uncork]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.overruledInterruptions = [Self.browser]
            $0.resumeIntent = .none
        }
        // The overruled capture announcing itself again, and its end, change nothing but the record.
        store.send(.interruptionBegan(Self.browser, at: Given.at(2_000)), commands: [])
        store.send(.interruptionEnded(Self.browser, resumeAllowed: true, at: Given.at(9_000)), commands: []) {
            $0.overruledInterruptions = []
        }
        // Once it has ended, the same application's next call interrupts again (rule 1).
        store.send(.interruptionBegan(Self.browser, at: Given.at(10_000)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Self.browser]
            $0.resumeIntent = .afterInterruption(since: Given.at(10_000))
        }
    }

    @Test("Rule 18: a toggle is a play there too; two captures are overruled together")
    func rule18ToggleAndTwoCaptures() {
        var start = Self.pausedByBrowserCall
        start.interruptions.insert(Self.dictation)
        var store = RuleStore(start)
        store.send(.userToggle, commands: [.uncork]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.overruledInterruptions = [Self.browser, Self.dictation]
            $0.resumeIntent = .none
        }
        store.send(.userToggle, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        // Still overruled while paused by the user: a play plays (rule 8), with no active source.
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
    }

    @Test("Rule 18: an announced source beginning after the overrule pauses as rule 1; its end resumes (rule 5)")
    func rule18AnnouncedAfterOverrule() {
        var store = RuleStore(Self.pausedByBrowserCall)
        store.send(.userPlay, commands: [.uncork]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.overruledInterruptions = [Self.browser]
            $0.resumeIntent = .none
        }
        store.send(.interruptionBegan(Given.call, at: Given.at(3_000)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(3_000))
        }
        // The overruled capture ending meanwhile does not resume: the phone call still holds the player.
        store.send(.interruptionEnded(Self.browser, resumeAllowed: true, at: Given.at(4_000)), commands: []) {
            $0.overruledInterruptions = []
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(5_000)),
                   commands: [.uncork, .clearServerMute]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 18: another application's capture beginning after the overrule pauses as rule 1")
    func rule18OtherCaptureAfterOverrule() {
        var store = RuleStore(Self.pausedByBrowserCall)
        store.send(.userPlay, commands: [.uncork]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.overruledInterruptions = [Self.browser]
            $0.resumeIntent = .none
        }
        store.send(.interruptionBegan(Self.dictation, at: Given.at(3_000)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Self.dictation]
            $0.resumeIntent = .afterInterruption(since: Given.at(3_000))
        }
    }

    @Test("Rule 9 stays for announced sources: a play with an announced source among the captures waits")
    func rule09WithAnnouncedAmongCaptures() {
        var start = Self.pausedByBrowserCall
        start.interruptions.insert(Given.corkRequest)
        var store = RuleStore(start)
        store.send(.userPlay, commands: []) { $0.resumeIntent = .userAskedToPlay }
        #expect(store.state.waitingForInterruptionEnd)
        store.send(.interruptionEnded(Given.corkRequest, resumeAllowed: true, at: Given.at(4_000)), commands: []) {
            $0.interruptions = [Self.browser]
        }
        // The wish stands: the capture's end plays, whatever the window.
        store.send(.interruptionEnded(Self.browser, resumeAllowed: false, at: Given.at(Given.thirtyMinutes * 2)),
                   commands: [.uncork, .clearServerMute]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 18: a capture that began while the user had paused is overruled by the play; without a stream, opened")
    func rule18FromUserPauseWithoutStream() {
        var start = Given.pausedByUser
        start.interruptions = [Self.browser]
        start.stream = StreamCondition(isOpen: false, isCorked: true)
        var store = RuleStore(start)
        store.send(.userPlay, commands: [.openStream]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.overruledInterruptions = [Self.browser]
        }
        store.send(.streamOpened, commands: [.uncork]) { $0.stream = .openCorked }
    }

    @Test("Rule 10 during an overrule: an output loss pauses; the overruled capture's end brings nothing back")
    func rule10DuringOverrule() {
        var start = Given.playing
        start.overruledInterruptions = [Self.browser]
        var store = RuleStore(start)
        store.send(.outputLost(.deviceRemoved), commands: [.cork, .flush]) {
            $0.playback = .paused(.outputLost(.deviceRemoved))
        }
        store.send(.interruptionEnded(Self.browser, resumeAllowed: true, at: Given.at(1_000)), commands: []) {
            $0.overruledInterruptions = []
        }
    }
}
