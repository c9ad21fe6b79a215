// One test per row of shared/RULES.md, named after the row. Each states the whole resulting state and the
// exact commands.
import EarshotCore
import Testing

@Suite("RULES.md, row by row")
struct RulesTests {
    @Test("Rule 1: interruption begins while playing -> paused (interruption), remembered, cork")
    func rule01InterruptionWhilePlaying() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.corkRequest, at: Given.at(1_000)), commands: [.cork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.corkRequest]
            $0.resumeIntent = .afterInterruption(since: Given.at(1_000))
        }
    }

    @Test("Rule 2: interruption begins while paused, stopped or idle -> unchanged, not remembered")
    func rule02InterruptionWhileNotPlaying() {
        for start in [Given.pausedByUser, Given.stopped, Given.idle] {
            var store = RuleStore(start)
            store.send(.interruptionBegan(Given.call, at: Given.at(5)), commands: []) {
                $0.interruptions = [Given.call]
            }
        }
    }

    @Test("Rule 3: a second source begins while one is active -> unchanged")
    func rule03SecondSource() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.corkRequest, at: Given.at(0)), commands: [.cork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.corkRequest]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.interruptionBegan(Given.call, at: Given.at(2)), commands: []) {
            $0.interruptions.insert(Given.call)
        }
    }

    @Test("Rule 4: one source ends while another is active -> unchanged")
    func rule04OneOfTwoEnds() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.interruptionBegan(Given.secondCall, at: Given.at(100)), commands: []) {
            $0.interruptions.insert(Given.secondCall)
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(4_000)), commands: []) {
            $0.interruptions = [Given.secondCall]
        }
    }

    @Test("Rule 5: last source ends, allowed, remembered, in window -> playing, uncork, clear mute")
    func rule05Resume() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.corkRequest, at: Given.at(1_000)), commands: [.cork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.corkRequest]
            $0.resumeIntent = .afterInterruption(since: Given.at(1_000))
        }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        store.send(
            .interruptionEnded(Given.corkRequest, resumeAllowed: true, at: Given.at(5_000)),
            commands: [.uncork, .clearServerMute]
        ) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 5: the window's last millisecond still resumes")
    func rule05WindowEdge() {
        var state = Given.playing
        _ = state.apply(.interruptionBegan(Given.call, at: Given.at(0)))
        let commands = state.apply(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(Given.thirtyMinutes)))
        #expect(commands == [.uncork, .clearServerMute])
        #expect(state.playback == .playing)
    }

    @Test("Rule 6: last source ends past the window -> paused (resume declined), cleared, no commands")
    func rule06PastWindow() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(
            .interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(Given.thirtyMinutes + 1)), commands: []
        ) {
            $0.playback = .paused(.resumeDeclined)
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 6: last source ends but the source does not allow a resume -> paused, cleared")
    func rule06NotAllowedBySource() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: false, at: Given.at(10)), commands: []) {
            $0.playback = .paused(.resumeDeclined)
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 6: last source ends but configuration forbids resuming -> paused, cleared")
    func rule06NotAllowedByPolicy() {
        var start = Given.playing
        start.policy.resumeAfterInterruption = false
        var store = RuleStore(start)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(10)), commands: []) {
            $0.playback = .paused(.resumeDeclined)
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 6: last source ends, nothing remembered -> unchanged")
    func rule06NotRemembered() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.interruptionBegan(Given.corkRequest, at: Given.at(0)), commands: []) {
            $0.interruptions = [Given.corkRequest]
        }
        store.send(.interruptionEnded(Given.corkRequest, resumeAllowed: true, at: Given.at(10)), commands: []) {
            $0.interruptions = []
        }
    }

    @Test("Rule 7: user pauses at any time -> paused (user), cleared, cork only when it was playing")
    func rule07UserPause() {
        var store = RuleStore(Given.playing)
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.userPause, commands: [])

        var duringCall = RuleStore(Given.playing)
        duringCall.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        duringCall.send(.userPause, commands: []) {
            $0.playback = .paused(.user)
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 8: user plays, no interruption, output present -> playing, uncork")
    func rule08UserPlay() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
    }

    @Test("Rule 8: user plays after the stream was lost -> the stream is recreated, then uncorked")
    func rule08UserPlayRecreatesStream() {
        var store = RuleStore(Given.playing)
        store.send(.outputLost(.serverLost), commands: [.cork, .flush]) {
            $0.playback = .paused(.outputLost(.serverLost))
            $0.stream.isOpen = false
        }
        store.send(.userPlay, commands: [.openStream]) { $0.playback = .playing }
        store.send(.streamOpened, commands: [.uncork]) { $0.stream = .openCorked }
    }

    @Test("Rule 8: a stopped player played without a stream -> opened and started, uncorked once the stream is open")
    func rule08UserPlayWithoutStream() {
        var start = Given.stopped
        start.stream = StreamCondition(isOpen: false, isCorked: true)
        var store = RuleStore(start)
        store.send(.userPlay, commands: [.openStream, .playTrack(index: 0)]) { $0.playback = .playing }
        store.send(.streamOpened, commands: [.uncork]) { $0.stream = .openCorked }
        store.send(.streamUncorked, commands: []) { $0.stream.isCorked = false }
    }

    @Test("Rule 8: a stream opened while not playing stays corked")
    func rule08StreamOpenedWhilePaused() {
        var start = Given.pausedByUser
        start.stream = StreamCondition(isOpen: false, isCorked: true)
        var store = RuleStore(start)
        store.send(.streamOpened, commands: []) { $0.stream = .openCorked }
    }

    @Test("Rule 8: the executor closes the stream (a new sample rate) -> not open; reopened, a playing player uncorks")
    func rule08StreamReopened() {
        var store = RuleStore(Given.playing)
        store.send(.streamClosed, commands: []) { $0.stream = StreamCondition(isOpen: false, isCorked: true) }
        store.send(.streamOpened, commands: [.uncork]) { $0.stream = .openCorked }
    }

    @Test("Rule 10: the server stops asking for audio while playing (a stall) -> paused, output lost, cork, flush")
    func rule10Stall() {
        var store = RuleStore(Given.playing)
        let stall = Event.outputSilent(milliseconds: 1_010, requestPeriodMilliseconds: 50, heardSinceStart: true)
        store.send(stall, commands: [.cork, .flush]) { $0.playback = .paused(.outputLost(.stalled)) }
        // A stall reported once the player no longer plays is stale.
        store.send(stall, commands: [])
        for start in [Given.pausedByUser, Given.stopped, Given.idle] {
            var quiet = RuleStore(start)
            quiet.send(stall, commands: [])
        }
    }

    @Test("Rule 8: user plays a stopped player -> the current track starts from its beginning")
    func rule08UserPlayFromStopped() {
        var store = RuleStore(Given.stopped)
        store.send(.userPlay, commands: [.playTrack(index: 0), .uncork]) { $0.playback = .playing }
    }

    @Test("Rule 9: user plays during an interruption -> held, waiting, the user's wish remembered")
    func rule09UserPlayDuringInterruption() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: []) {
            $0.interruptions = [Given.call]
        }
        store.send(.userPlay, commands: []) {
            $0.playback = .paused(.interruption)
            $0.resumeIntent = .userAskedToPlay
        }
        #expect(store.state.waitingForInterruptionEnd)
        // No resume window for the user's own wish, and no permission needed.
        store.send(
            .interruptionEnded(Given.call, resumeAllowed: false, at: Given.at(Given.thirtyMinutes * 4)),
            commands: [.uncork, .clearServerMute]
        ) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 10: output lost while playing -> paused (outputLost), cleared, cork then flush")
    func rule10OutputLost() {
        for reason in [OutputLossReason.deviceRemoved, .portUnplugged, .serverLost, .streamFailed] {
            var store = RuleStore(Given.playing)
            store.send(.outputLost(reason), commands: [.cork, .flush]) {
                $0.playback = .paused(.outputLost(reason))
                if reason == .serverLost || reason == .streamFailed { $0.stream.isOpen = false }
            }
        }
    }

    @Test("Rule 10: output lost during an interruption -> the remembered resume is cleared")
    func rule10OutputLostDuringInterruption() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.outputLost(.deviceRemoved), commands: []) {
            $0.playback = .paused(.outputLost(.deviceRemoved))
            $0.resumeIntent = .none
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(100)), commands: []) {
            $0.interruptions = []
        }
    }

    @Test("Rule 11: route changed -> unchanged, keep playing on the new sink")
    func rule11RouteChanged() {
        var store = RuleStore(Given.playing)
        store.send(.routeChanged, commands: [])
    }

    @Test("Rule 12: output appeared -> unchanged, never starts by itself")
    func rule12OutputAppeared() {
        var store = RuleStore(Given.playing)
        store.send(.outputLost(.deviceRemoved), commands: [.cork, .flush]) {
            $0.playback = .paused(.outputLost(.deviceRemoved))
        }
        store.send(.outputAppeared, commands: [])
    }

    @Test("Rule 13: track ended -> the next track follows without a gap; stopped at the end of the queue")
    func rule13TrackEnded() {
        var store = RuleStore(Given.playing)
        store.send(.heardTrack(index: 1), commands: []) { $0.queue.index = 1 }
        store.send(.heardTrack(index: 2), commands: []) { $0.queue.index = 2 }
        // Rule 22: leaving playing corks, though the stream has played everything.
        store.send(.queuePlayedOut, commands: [.cork]) {
            $0.queue.index = 0
            $0.playback = .stopped
        }
    }

    @Test("Rule 13: a track heard again, an earlier one or one past the queue is a stale report")
    func rule13StaleTrackHeard() {
        var store = RuleStore(Given.playing)
        store.send(.heardTrack(index: 2), commands: []) { $0.queue.index = 2 }
        store.send(.heardTrack(index: 2), commands: [])
        store.send(.heardTrack(index: 1), commands: [])
        store.send(.heardTrack(index: 3), commands: [])
    }

    @Test("Rule 13: the queue played out while paused (the tail had played before the pause) -> stopped")
    func rule13QueuePlayedOutWhilePaused() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.queuePlayedOut, commands: []) {
            $0.queue.index = 0
            $0.playback = .stopped
        }
        var idle = RuleStore(Given.idle)
        idle.send(.queuePlayedOut, commands: [])
    }

    @Test("Rule 13: a change of format reached the output -> a new stream in the new format when one is open or wanted")
    func rule13FormatChangeReached() {
        // Playing: the new stream is opened at once (its uncork follows `streamOpened`), and the state waits for the
        // executor's outcomes rather than assuming them.
        var playing = RuleStore(Given.playing)
        playing.send(.formatChangeReached, commands: [.switchFormat(reopen: true)])
        playing.send(.streamClosed, commands: []) { $0.stream = StreamCondition(isOpen: false, isCorked: true) }
        playing.send(.streamOpened, commands: [.uncork]) { $0.stream = .openCorked }
        // Paused with a stream: reopened corked, so that a resume only has to uncork.
        var paused = RuleStore(Given.pausedByUser)
        paused.send(.formatChangeReached, commands: [.switchFormat(reopen: true)])
        // Paused without a stream: the decoder goes on; the next play opens the stream.
        var closed = Given.pausedByUser
        closed.stream = StreamCondition(isOpen: false, isCorked: true)
        var withoutStream = RuleStore(closed)
        withoutStream.send(.formatChangeReached, commands: [.switchFormat(reopen: false)])
        // Nothing queued: stale (rule 15).
        var idle = RuleStore(Given.idle)
        idle.send(.formatChangeReached, commands: [])
    }

    @Test("Rule 14: track failed -> skipped with its reason; stopped if none is left")
    func rule14TrackFailed() {
        var store = RuleStore(Given.playing)
        store.send(.trackFailed(index: 0, failure: .notMPEGAudio, failuresInARow: 1),
                   commands: [.skipFailedTrack(failed: 0, next: 1)]) {
            $0.queue.index = 1
            $0.lastFailure = FailedTrack(index: 0, failure: .notMPEGAudio)
        }
        store.send(.trackFailed(index: 1, failure: .unreadable, failuresInARow: 2),
                   commands: [.skipFailedTrack(failed: 1, next: 2)]) {
            $0.queue.index = 2
            $0.lastFailure = FailedTrack(index: 1, failure: .unreadable)
        }
        // Rule 22: none is left, and leaving playing corks whatever the stream still holds.
        store.send(.trackFailed(index: 2, failure: .decodeFailed, failuresInARow: 1),
                   commands: [.skipFailedTrack(failed: 2, next: nil), .cork]) {
            $0.queue.index = 0
            $0.playback = .stopped
            $0.lastFailure = FailedTrack(index: 2, failure: .decodeFailed)
        }
    }

    @Test("Rule 14: a FLAC or Ogg file with bad headers is skipped like any failure, its kind kept as badHeaders")
    func rule14BadHeaders() {
        var store = RuleStore(Given.playing)
        store.send(.trackFailed(index: 0, failure: .badHeaders, failuresInARow: 1),
                   commands: [.skipFailedTrack(failed: 0, next: 1)]) {
            $0.queue.index = 1
            $0.lastFailure = FailedTrack(index: 0, failure: .badHeaders)
        }
        #expect(TrackFailure.badHeaders.description == "badHeaders")
    }

    @Test("Rule 14: a later track failing while the current one plays only records the failure")
    func rule14LaterTrackFailed() {
        var store = RuleStore(Given.playing)
        store.send(.trackFailed(index: 1, failure: .unreadable, failuresInARow: 1),
                   commands: [.skipFailedTrack(failed: 1, next: 2)]) {
            $0.lastFailure = FailedTrack(index: 1, failure: .unreadable)
        }
        store.send(.heardTrack(index: 2), commands: []) { $0.queue.index = 2 }
    }

    @Test("Rule 15: unknown, duplicate or out-of-order notifications change nothing")
    func rule15Ignored() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionEnded(Given.corkRequest, resumeAllowed: true, at: Given.at(0)), commands: [])
        store.send(.heardTrack(index: 0), commands: [])
        store.send(.trackFailed(index: 9, failure: .unreadable, failuresInARow: 1), commands: [])
        store.send(.interruptionBegan(Given.call, at: Given.at(1)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(1))
        }
        store.send(.interruptionBegan(Given.call, at: Given.at(2)), commands: [])
        store.send(.interruptionEnded(Given.secondCall, resumeAllowed: true, at: Given.at(3)), commands: [])
    }

    @Test("Rule 16: the user's pause from outside the CLI (MPRIS Pause from playerctl, a shell) -> paused, idempotent")
    func rule16ExternalPause() {
        // The MPRIS adapter hands the user's Pause over as `userPause`; the session manager's and the phone
        // bridges' are rule 21 (ExternalPauseTests).
        var store = RuleStore(Given.playing)
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.userPause, commands: [])
        store.send(.userPause, commands: [])
        #expect(store.state.playback == .paused(.user))
    }

    @Test("Rule 17: a Bluetooth profile switch for a call is a source like any other; the stream follows corked")
    func rule17ProfileSwitch() {
        let profileSwitch = InterruptionSource.profileSwitch(card: 3)
        var store = RuleStore(Given.playing)
        // Rule 1: our A2DP sink went away with its card staying: quiet, position kept, resume remembered.
        store.send(.interruptionBegan(profileSwitch, at: Given.at(1_000)), commands: [.cork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [profileSwitch]
            $0.resumeIntent = .afterInterruption(since: Given.at(1_000))
        }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        // The headset's HFP sink appears and the server moves our corked stream (rules 11 and 12: nothing).
        store.send(.outputAppeared, commands: [])
        store.send(.routeChanged, commands: [])
        // Rule 5: our stream is back on the card's A2DP sink.
        store.send(
            .interruptionEnded(profileSwitch, resumeAllowed: true, at: Given.at(61_000)),
            commands: [.uncork, .clearServerMute]
        ) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 17: a profile switch while paused remembers nothing; nested with the call's own source")
    func rule17ProfileSwitchNested() {
        let profileSwitch = InterruptionSource.profileSwitch(card: 3)
        var paused = RuleStore(Given.pausedByUser)
        // Rule 2.
        paused.send(.interruptionBegan(profileSwitch, at: Given.at(0)), commands: []) {
            $0.interruptions = [profileSwitch]
        }
        // Rule 6: nothing was remembered.
        paused.send(.interruptionEnded(profileSwitch, resumeAllowed: true, at: Given.at(10)), commands: []) {
            $0.interruptions = []
        }

        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        // Rule 3: the call's microphone switches the headset.
        store.send(.interruptionBegan(profileSwitch, at: Given.at(500)), commands: []) {
            $0.interruptions.insert(profileSwitch)
        }
        // Rule 4: the call ends; the headset is still on HFP.
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(60_000)), commands: []) {
            $0.interruptions = [profileSwitch]
        }
        // Rule 5: back on A2DP.
        store.send(
            .interruptionEnded(profileSwitch, resumeAllowed: true, at: Given.at(62_000)),
            commands: [.uncork, .clearServerMute]
        ) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }
}

@Suite("The three classic cases")
struct ClassicCasesTests {
    @Test("An idle player is not started by an interruption ending")
    func idlePlayerStaysIdle() {
        for start in [Given.idle, Given.stopped, Given.pausedByUser] {
            var store = RuleStore(start)
            store.send(.interruptionBegan(Given.corkRequest, at: Given.at(0)), commands: []) {
                $0.interruptions = [Given.corkRequest]
            }
            store.send(.interruptionEnded(Given.corkRequest, resumeAllowed: true, at: Given.at(10)), commands: []) {
                $0.interruptions = []
            }
            #expect(store.state.playback == start.playback)
        }
    }

    @Test("A user pause during an interruption cancels the resume")
    func userPauseCancelsResume() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.corkRequest, at: Given.at(0)), commands: [.cork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.corkRequest]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.userPause, commands: []) {
            $0.playback = .paused(.user)
            $0.resumeIntent = .none
        }
        store.send(.interruptionEnded(Given.corkRequest, resumeAllowed: true, at: Given.at(10)), commands: []) {
            $0.interruptions = []
        }
    }

    @Test("Output loss stops playback and clears the resume intent")
    func outputLossClearsIntent() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.userPlay, commands: []) { $0.resumeIntent = .userAskedToPlay }
        store.send(.outputLost(.portUnplugged), commands: []) {
            $0.playback = .paused(.outputLost(.portUnplugged))
            $0.resumeIntent = .none
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(10)), commands: []) {
            $0.interruptions = []
        }
        #expect(store.state.playback == .paused(.outputLost(.portUnplugged)))
    }
}
