// Rule 23 of shared/RULES.md: the desktop's idle suspend held off while playing, and only then (issue 39). The rules
// ask for the inhibitor on entering playing and give it back on leaving it, whatever moved the playback; with
// `inhibitIdleSuspend` off, never. Each test states the whole resulting state and the exact commands.
import EarshotCore
import Testing

@Suite("RULES.md, rule 23: the idle suspend held off while playing")
struct IdleInhibitorRulesTests {
    /// The product's policy: the idle suspend held off while playing.
    static let inhibiting = ResumePolicy(inhibitIdleSuspend: true)

    /// A paused player (the user's pause) of three tracks, with the product's policy.
    static var paused: PlayerState {
        var state = Given.pausedByUser
        state.policy = inhibiting
        return state
    }

    /// A playing player holding the inhibitor, with the product's policy.
    static var playing: PlayerState {
        var state = Given.playing
        state.policy = inhibiting
        state.idleInhibitorHeld = true
        return state
    }

    @Test("Rule 23: a user play holds the inhibitor after the uncork; the user's pause releases it")
    func rule23PlayHoldsPauseReleases() {
        var store = RuleStore(Self.paused)
        store.send(.userPlay, commands: [.uncork, .holdIdleInhibitor]) {
            $0.playback = .playing
            $0.idleInhibitorHeld = true
        }
        // Held while playing: the stream's own acknowledgement changes nothing.
        store.send(.streamUncorked, commands: []) { $0.stream.isCorked = false }
        store.send(.userPause, commands: [.fadeOutAndCork, .releaseIdleInhibitor]) {
            $0.playback = .paused(.user)
            $0.idleInhibitorHeld = false
        }
        // A second pause: nothing more to release.
        store.send(.userPause, commands: [])
    }

    @Test("Rule 23: a call releases it, and the call's resume holds it again")
    func rule23CallReleasesResumeHolds() {
        var store = RuleStore(Self.playing)
        let began = Moment(milliseconds: 1000)
        store.send(.interruptionBegan(Given.call, at: began), commands: [.fadeOutAndCork, .releaseIdleInhibitor]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: began)
            $0.idleInhibitorHeld = false
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Moment(milliseconds: 5000)),
                   commands: [.uncork, .clearServerMute, .holdIdleInhibitor]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
            $0.idleInhibitorHeld = true
        }
    }

    @Test("Rule 23: an unplug, a stop, the session left and the queue's end each release it")
    func rule23EveryWayOutReleases() {
        var unplugged = RuleStore(Self.playing)
        unplugged.send(.outputLost(.deviceRemoved), commands: [.cork, .flush, .releaseIdleInhibitor]) {
            $0.playback = .paused(.outputLost(.deviceRemoved))
            $0.idleInhibitorHeld = false
        }
        var stopped = RuleStore(Self.playing)
        stopped.send(.userStop, commands: [.fadeOutAndCork, .releaseIdleInhibitor]) {
            $0.playback = .stopped
            $0.idleInhibitorHeld = false
        }
        // Before sleep: the sleep's release stays the last command, once the cork is acknowledged.
        var slept = RuleStore(Self.playing)
        slept.send(.sessionLeft(.sleep), commands: [.cork, .releaseIdleInhibitor]) {
            $0.playback = .paused(.sessionLeft(.sleep))
            $0.sleepAwaitsQuiet = true
            $0.idleInhibitorHeld = false
        }
        var ended = Self.playing
        ended.queue = QueueCursor(trackCount: 3, index: 2)
        var atTheEnd = RuleStore(ended)
        atTheEnd.send(.queuePlayedOut, commands: [.cork, .releaseIdleInhibitor]) {
            $0.playback = .stopped
            $0.queue.index = 0
            $0.idleInhibitorHeld = false
        }
    }

    @Test("Rule 23: a play during a call holds nothing until the call ends; a refused resume holds nothing")
    func rule23WaitingHoldsNothing() {
        var state = Self.paused
        state.interruptions = [Given.call]
        var store = RuleStore(state)
        store.send(.userPlay, commands: []) {
            $0.playback = .paused(.interruption)
            $0.resumeIntent = .userAskedToPlay
        }
        var declined = Self.playing
        declined.policy.resumeAfterInterruption = false
        var refusing = RuleStore(declined)
        refusing.send(.interruptionBegan(Given.corkRequest, at: Moment(milliseconds: 0)),
                      commands: [.cork, .releaseIdleInhibitor]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.corkRequest]
            $0.resumeIntent = .afterInterruption(since: Moment(milliseconds: 0))
            $0.idleInhibitorHeld = false
        }
        refusing.send(.interruptionEnded(Given.corkRequest, resumeAllowed: true, at: Moment(milliseconds: 10)),
                      commands: []) {
            $0.playback = .paused(.resumeDeclined)
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 23: with inhibitIdleSuspend off, playing and pausing never ask for it")
    func rule23OffNeverAsks() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        #expect(!store.state.idleInhibitorHeld)
    }
}
