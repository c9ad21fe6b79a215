// Which pauses fade, and rule 20 (ducking), row by row (see EarshotCore/Edges.swift). Each states the whole resulting
// state and the exact commands.
import EarshotCore
import Testing

@Suite("RULES.md: fades and rule 20, row by row")
struct EdgesRulesTests {
    /// A screen reader's stream (media.role a11y), by its server index.
    static let screenReader: UInt32 = 21
    /// A notification sound's stream (media.role event).
    static let notification: UInt32 = 22

    @Test("Fades: a user's pause, toggle and stop fade out before the cork")
    func userPausesFade() {
        for event in [Event.userPause, .userToggle] {
            var store = RuleStore(Given.playing)
            store.send(event, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        }
        var store = RuleStore(Given.playing)
        store.send(.userStop, commands: [.fadeOutAndCork]) { $0.playback = .stopped }
    }

    @Test("Fades: a call's pause fades out (a trigger stream, a microphone capture)")
    func callPausesFade() {
        for source in [Given.call, .microphoneCapture(client: 3)] {
            var store = RuleStore(Given.playing)
            store.send(.interruptionBegan(source, at: Given.at(10)), commands: [.fadeOutAndCork]) {
                $0.playback = .paused(.interruption)
                $0.interruptions = [source]
                $0.resumeIntent = .afterInterruption(since: Given.at(10))
            }
        }
    }

    @Test("Fades: an output loss, a profile switch and a server's cork request (it muted us) cork at once")
    func lossesCorkAtOnce() {
        for reason in [OutputLossReason.deviceRemoved, .portUnplugged, .serverLost, .streamFailed] {
            var store = RuleStore(Given.playing)
            store.send(.outputLost(reason), commands: [.cork, .flush]) {
                $0.playback = .paused(.outputLost(reason))
                if reason == .serverLost || reason == .streamFailed { $0.stream.isOpen = false }
            }
        }
        for source in [InterruptionSource.profileSwitch(card: 4), Given.corkRequest] {
            var store = RuleStore(Given.playing)
            store.send(.interruptionBegan(source, at: Given.at(10)), commands: [.cork]) {
                $0.playback = .paused(.interruption)
                $0.interruptions = [source]
                $0.resumeIntent = .afterInterruption(since: Given.at(10))
            }
        }
    }

    @Test("Fades: a cork request or a profile switch during a call's fade-out cuts it short; after the cork, nothing")
    func fadeCutShort() {
        for second in [Given.corkRequest, .profileSwitch(card: 4)] {
            var store = RuleStore(Given.playing)
            store.send(.interruptionBegan(Given.call, at: Given.at(10)), commands: [.fadeOutAndCork]) {
                $0.playback = .paused(.interruption)
                $0.interruptions = [Given.call]
                $0.resumeIntent = .afterInterruption(since: Given.at(10))
            }
            store.send(.interruptionBegan(second, at: Given.at(12)), commands: [.cork]) {
                $0.interruptions.insert(second)
            }
            var corked = RuleStore(Given.playing)
            corked.send(.interruptionBegan(Given.call, at: Given.at(10)), commands: [.fadeOutAndCork]) {
                $0.playback = .paused(.interruption)
                $0.interruptions = [Given.call]
                $0.resumeIntent = .afterInterruption(since: Given.at(10))
            }
            corked.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
            corked.send(.interruptionBegan(second, at: Given.at(900)), commands: []) { $0.interruptions.insert(second) }
        }
    }

    @Test("Fades: the session manager's pause corks at once; a phone bridge's fades")
    func outsidePauses() {
        var store = RuleStore(Given.playing)
        store.send(.externalPause(.sessionManager), commands: [.cork]) {
            $0.playback = .paused(.external(.sessionManager))
            $0.unansweredExternalPauses = [.sessionManager]
        }
        store = RuleStore(Given.playing)
        store.send(.externalPause(.phoneBridge), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.external(.phoneBridge))
            $0.unansweredExternalPauses = [.phoneBridge]
        }
    }

    @Test("Rule 20: duck begins while playing -> unchanged, duck; the last one ends -> unchanged, unduck")
    func rule20DuckWhilePlaying() {
        var store = RuleStore(Given.playing)
        store.send(.duckBegan(stream: Self.screenReader), commands: [.duck]) {
            $0.duckingStreams = [Self.screenReader]
        }
        store.send(.duckEnded(stream: Self.screenReader), commands: [.unduck]) { $0.duckingStreams = [] }
    }

    @Test("Rule 20: overlapping ducks lower once and restore when the last ends")
    func rule20Overlapping() {
        var store = RuleStore(Given.playing)
        store.send(.duckBegan(stream: Self.screenReader), commands: [.duck]) {
            $0.duckingStreams = [Self.screenReader]
        }
        store.send(.duckBegan(stream: Self.notification), commands: []) {
            $0.duckingStreams.insert(Self.notification)
        }
        store.send(.duckEnded(stream: Self.screenReader), commands: []) {
            $0.duckingStreams = [Self.notification]
        }
        store.send(.duckEnded(stream: Self.notification), commands: [.unduck]) { $0.duckingStreams = [] }
    }

    @Test("Rule 20: a duck never pauses nor starts: paused, stopped and idle players stay so")
    func rule20NeverStartsOrPauses() {
        for start in [Given.pausedByUser, Given.stopped, Given.idle] {
            var store = RuleStore(start)
            store.send(.duckBegan(stream: Self.screenReader), commands: [.duck]) {
                $0.duckingStreams = [Self.screenReader]
            }
            store.send(.duckEnded(stream: Self.screenReader), commands: [.unduck]) { $0.duckingStreams = [] }
        }
    }

    @Test("Rule 20: an interruption during a duck pauses as usual; its end resumes, still ducked")
    func rule20CallDuringDuck() {
        var store = RuleStore(Given.playing)
        store.send(.duckBegan(stream: Self.screenReader), commands: [.duck]) {
            $0.duckingStreams = [Self.screenReader]
        }
        store.send(.interruptionBegan(Given.call, at: Given.at(100)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(100))
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(900)),
                   commands: [.uncork, .clearServerMute]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
        store.send(.duckEnded(stream: Self.screenReader), commands: [.unduck]) { $0.duckingStreams = [] }
    }

    @Test("Rule 20: the user's volume during a duck is kept as the user's: the duck lowers under it")
    func rule20VolumeDuringDuck() {
        var store = RuleStore(Given.playing)
        store.send(.duckBegan(stream: Self.screenReader), commands: [.duck]) {
            $0.duckingStreams = [Self.screenReader]
        }
        store.send(.userVolume(percent: 60), commands: [.setVolume(percent: 60)]) { $0.volumePercent = 60 }
        store.send(.duckEnded(stream: Self.screenReader), commands: [.unduck]) { $0.duckingStreams = [] }
    }

    @Test("Rule 15 for ducks: a duplicate begin and an end with no begin change nothing")
    func rule20Duplicates() {
        var store = RuleStore(Given.playing)
        store.send(.duckEnded(stream: Self.screenReader), commands: []) { _ in }
        store.send(.duckBegan(stream: Self.screenReader), commands: [.duck]) {
            $0.duckingStreams = [Self.screenReader]
        }
        store.send(.duckBegan(stream: Self.screenReader), commands: []) { _ in }
    }
}
