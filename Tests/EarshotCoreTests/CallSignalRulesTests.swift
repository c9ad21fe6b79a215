// The rules' judgement of a call's signals (CallSignals.swift; RULES.md rows 26-28 and rules 1-6, 17): what the
// translator reports is a fact with its moment, and the rules decide whether it is a call, a probe or an unplug, how
// long to wait (the microphone probe and the profile switch's settle, both rule parameters) and whether its end may
// resume. Each test states the whole resulting state and the exact commands, timers included.
import EarshotCore
import Testing

@Suite("RULES.md rows 26-28: the rules judge a call's signals, with their own timer")
struct CallSignalRulesTests {
    static func signal(_ signal: CallSignal, at milliseconds: Int64) -> Event {
        .callSignal(signal, at: Given.at(milliseconds))
    }

    static let browser = InterruptionSource.microphoneCapture(client: 7)
    static let headset = BluetoothCard(index: 3, profile: .a2dp)
    static let switchSource = InterruptionSource.profileSwitch(card: 3)

    @Test("Row 26: a capture counts as a call once it has recorded for the probe, on the rules' own timer")
    func row26ProbeThenCall() {
        var store = RuleStore(Given.playing)
        store.send(Self.signal(.microphoneCaptureRunning(client: 7, since: Given.at(100), listedAtStart: false),
                               at: 100), commands: [.armTimer(at: Given.at(500))]) {
            $0.calls.probing = [7: Given.at(500)]
        }
        // Another notice before the probe is over changes nothing.
        store.send(Self.signal(.microphoneCaptureRunning(client: 7, since: Given.at(100), listedAtStart: false),
                               at: 300), commands: [])
        store.send(.timerFired(at: Given.at(500)), commands: [.fadeOutAndCork, .armTimer(at: nil)]) {
            $0.calls.probing = [:]
            $0.calls.microphoneCalls = [7]
            $0.playback = .paused(.interruption)
            $0.interruptions = [Self.browser]
            $0.resumeIntent = .afterInterruption(since: Given.at(500))
        }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        store.send(Self.signal(.microphoneCaptureStopped(client: 7, sourceLost: false), at: 60_000),
                   commands: [.uncork, .clearServerMute]) {
            $0.calls.microphoneCalls = []
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Row 26: a capture that stops within the probe (a microphone check, a permission prompt) never pauses")
    func row26ShortProbeNeverPauses() {
        var store = RuleStore(Given.playing)
        store.send(Self.signal(.microphoneCaptureRunning(client: 7, since: Given.at(0), listedAtStart: false),
                               at: 0), commands: [.armTimer(at: Given.at(400))]) {
            $0.calls.probing = [7: Given.at(400)]
        }
        store.send(Self.signal(.microphoneCaptureStopped(client: 7, sourceLost: false), at: 399),
                   commands: [.armTimer(at: nil)]) { $0.calls.probing = [:] }
        // A timer that went off as it was disarmed finds nothing to do.
        store.send(.timerFired(at: Given.at(400)), commands: [])
    }

    @Test("Row 26: a timer that went off for a deadline since gone is asked for again for the one that remains")
    func row26TimerAskedAgainAfterAnEarlierDeadline() {
        var store = RuleStore(Given.playing)
        store.send(Self.signal(.microphoneCaptureRunning(client: 7, since: Given.at(0), listedAtStart: false),
                               at: 0), commands: [.armTimer(at: Given.at(400))]) {
            $0.calls.probing = [7: Given.at(400)]
        }
        store.send(Self.signal(.microphoneCaptureRunning(client: 8, since: Given.at(100), listedAtStart: false),
                               at: 100), commands: []) {
            $0.calls.probing = [7: Given.at(400), 8: Given.at(500)]
        }
        store.send(Self.signal(.microphoneCaptureStopped(client: 7, sourceLost: false), at: 200),
                   commands: [.armTimer(at: Given.at(500))]) { $0.calls.probing = [8: Given.at(500)] }
        // The executor's timer may still go off for 400 (armed before the deadline moved): the second probe is then
        // not over, and the timer, spent, is asked for again.
        store.send(.timerFired(at: Given.at(400)), commands: [.armTimer(at: Given.at(500))])
        store.send(.timerFired(at: Given.at(500)), commands: [.fadeOutAndCork, .armTimer(at: nil)]) {
            $0.calls.probing = [:]
            $0.calls.microphoneCalls = [8]
            $0.playback = .paused(.interruption)
            $0.interruptions = [.microphoneCapture(client: 8)]
            $0.resumeIntent = .afterInterruption(since: Given.at(500))
        }
    }

    @Test("Row 26: the probe is a rule parameter; a capture listed when our stream opened counts at once")
    func row26ProbeIsAParameter() {
        var slow = Given.playing
        slow.policy.callTiming.microphoneProbeMilliseconds = 2_000
        var store = RuleStore(slow)
        store.send(Self.signal(.microphoneCaptureRunning(client: 7, since: Given.at(0), listedAtStart: false),
                               at: 0), commands: [.armTimer(at: Given.at(2_000))]) {
            $0.calls.probing = [7: Given.at(2_000)]
        }
        // A timer going off at the default's 400 ms finds the probe still running, and asks for itself again.
        store.send(.timerFired(at: Given.at(400)), commands: [.armTimer(at: Given.at(2_000))])

        var listed = RuleStore(Given.playing)
        listed.send(Self.signal(.microphoneCaptureRunning(client: 7, since: Given.at(900), listedAtStart: true),
                                at: 900), commands: [.fadeOutAndCork]) {
            $0.calls.microphoneCalls = [7]
            $0.playback = .paused(.interruption)
            $0.interruptions = [Self.browser]
            $0.resumeIntent = .afterInterruption(since: Given.at(900))
        }
    }

    @Test("Row 27: a call whose microphone goes away mid-call ends without a resume")
    func row27SourceLostEndsWithoutResume() {
        var state = Given.playing
        state.playback = .paused(.interruption)
        state.interruptions = [Self.browser]
        state.resumeIntent = .afterInterruption(since: Given.at(0))
        state.stream = .openCorked
        state.calls.microphoneCalls = [7]
        var store = RuleStore(state)
        store.send(Self.signal(.microphoneCaptureStopped(client: 7, sourceLost: true), at: 5_000), commands: []) {
            $0.calls.microphoneCalls = []
            $0.playback = .paused(.resumeDeclined)
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Row 28: a headset's sink gone while its card stays in A2DP pauses; not back within the settle, an unplug")
    func row28SwitchNeverSettlesIsAnUnplug() {
        var store = RuleStore(Given.playing)
        store.send(Self.signal(.ourSinkRemoved(bluetooth: Self.headset), at: 1_000),
                   commands: [.cork, .armTimer(at: Given.at(4_000))]) {
            $0.calls.profileSwitches = [3: .pending(until: Given.at(4_000))]
            $0.playback = .paused(.interruption)
            $0.interruptions = [Self.switchSource]
            $0.resumeIntent = .afterInterruption(since: Given.at(1_000))
        }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        store.send(.timerFired(at: Given.at(4_000)), commands: [.armTimer(at: nil)]) {
            $0.calls.profileSwitches = [:]
            $0.playback = .paused(.outputLost(.deviceRemoved))
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Row 28: a call profile, the card back in A2DP and our stream on its A2DP sink within the settle: resumed")
    func row28CallThenBackResumes() {
        var store = RuleStore(Given.playing)
        // A profile switch corks at once: the sink it played on is gone.
        store.send(Self.signal(.ourSinkRemoved(bluetooth: BluetoothCard(index: 3, profile: .call)), at: 0),
                   commands: [.cork]) {
            $0.calls.profileSwitches = [3: .call]
            $0.playback = .paused(.interruption)
            $0.interruptions = [Self.switchSource]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        store.send(Self.signal(.cardChanged(Self.headset), at: 60_000), commands: [.armTimer(at: Given.at(63_000))]) {
            $0.calls.profileSwitches = [3: .returning(until: Given.at(63_000))]
        }
        store.send(Self.signal(.ourStreamReached(card: 3, a2dp: true, deliberately: false), at: 60_050),
                   commands: [.uncork, .clearServerMute, .armTimer(at: nil)]) {
            $0.calls.profileSwitches = [:]
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Row 28: the settle is a rule parameter; a sink of no Bluetooth card is an unplug at once")
    func row28SettleIsAParameter() {
        var quick = Given.playing
        quick.policy.callTiming.profileSwitchSettleMilliseconds = 500
        var store = RuleStore(quick)
        store.send(Self.signal(.ourSinkRemoved(bluetooth: Self.headset), at: 0),
                   commands: [.cork, .armTimer(at: Given.at(500))]) {
            $0.calls.profileSwitches = [3: .pending(until: Given.at(500))]
            $0.playback = .paused(.interruption)
            $0.interruptions = [Self.switchSource]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }

        var usb = RuleStore(Given.playing)
        usb.send(Self.signal(.ourSinkRemoved(bluetooth: nil), at: 0), commands: [.cork, .flush]) {
            $0.playback = .paused(.outputLost(.deviceRemoved))
        }
    }

    @Test("Our stream gone: every source that interrupted it ends without a resume, and the rules' timer is disarmed")
    func streamGoneEndsEverySourceWithoutResume() {
        var state = Given.playing
        state.playback = .paused(.interruption)
        state.interruptions = [Given.call, Self.switchSource, Self.browser]
        state.resumeIntent = .afterInterruption(since: Given.at(0))
        state.stream = .openCorked
        state.calls.profileSwitches = [3: .pending(until: Given.at(3_000))]
        state.calls.microphoneCalls = [7]
        state.calls.probing = [9: Given.at(2_000)]
        var store = RuleStore(state)
        store.send(Self.signal(.ourStreamGone, at: 1_000), commands: [.armTimer(at: nil)]) {
            $0.calls = CallJudge()
            $0.playback = .paused(.resumeDeclined)
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }
}
