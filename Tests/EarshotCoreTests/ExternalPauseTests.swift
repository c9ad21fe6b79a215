// RULES.md rule 21, row by row: pauses from the session manager (WirePlumber) and the phone bridges (KDE Connect,
// GSConnect), which pause for events of their own. Each test states the whole resulting state and the exact commands.
import EarshotCore
import Testing

@Suite("RULES.md rule 21: external pauses")
struct ExternalPauseTests {
    static let wirePlumber = ExternalSender.sessionManager
    static let phone = ExternalSender.phoneBridge
    static let profileSwitch = InterruptionSource.profileSwitch(card: 3)

    @Test("Rule 21: Pause from the session manager while playing -> paused (external), cork; never a toggle")
    func pauseWhilePlaying() {
        var store = RuleStore(Given.playing)
        store.send(.externalPause(Self.wirePlumber), commands: [.cork]) {
            $0.playback = .paused(.external(Self.wirePlumber))
            $0.unansweredExternalPauses = [Self.wirePlumber]
        }
        // Idempotent: a second Pause changes nothing.
        store.send(.externalPause(Self.wirePlumber), commands: [])
    }

    @Test("Rule 21: the session manager's Pause after an unplug leaves the reason outputLost")
    func pauseAfterOutputLoss() {
        var store = RuleStore(Given.playing)
        store.send(.outputLost(.deviceRemoved), commands: [.cork, .flush]) {
            $0.playback = .paused(.outputLost(.deviceRemoved))
        }
        store.send(.externalPause(Self.wirePlumber), commands: []) {
            $0.unansweredExternalPauses = [Self.wirePlumber]
        }
        #expect(store.state.playback.description == "paused(outputLost)")
    }

    @Test("Rule 21: the session manager's Pause before the unplug's notice: the output loss takes the reason over")
    func pauseBeforeOutputLoss() {
        var store = RuleStore(Given.playing)
        store.send(.externalPause(Self.wirePlumber), commands: [.cork]) {
            $0.playback = .paused(.external(Self.wirePlumber))
            $0.unansweredExternalPauses = [Self.wirePlumber]
        }
        store.send(.outputLost(.deviceRemoved), commands: []) { $0.playback = .paused(.outputLost(.deviceRemoved)) }
        // Nothing but the user brings the music back after an unplug: the sender's own Play does nothing.
        store.send(.externalPlay(Self.wirePlumber), commands: []) { $0.unansweredExternalPauses = [] }
    }

    @Test("Rule 21: Pause during a call -> unchanged; the call's end still resumes")
    func pauseDuringCall() {
        for source in [Given.call, Self.profileSwitch] {
            var store = RuleStore(Given.playing)
            // A call fades out; a profile switch corks at once (our sink is gone).
            let pause: Command = source == Self.profileSwitch ? .cork : .fadeOutAndCork
            store.send(.interruptionBegan(source, at: Given.at(1_000)), commands: [pause]) {
                $0.playback = .paused(.interruption)
                $0.interruptions = [source]
                $0.resumeIntent = .afterInterruption(since: Given.at(1_000))
            }
            store.send(.externalPause(Self.wirePlumber), commands: []) {
                $0.unansweredExternalPauses = [Self.wirePlumber]
            }
            store.send(.interruptionEnded(source, resumeAllowed: true, at: Given.at(9_000)),
                       commands: [.uncork, .clearServerMute]) {
                $0.playback = .playing
                $0.interruptions = []
                $0.resumeIntent = .none
            }
        }
    }

    @Test("Rule 21: the session manager's Pause before the call's notices: the call takes it over and resumes")
    func pauseBeforeCall() {
        var store = RuleStore(Given.playing)
        store.send(.externalPause(Self.wirePlumber), commands: [.cork]) {
            $0.playback = .paused(.external(Self.wirePlumber))
            $0.unansweredExternalPauses = [Self.wirePlumber]
        }
        // Already quiet: no second cork.
        store.send(.interruptionBegan(Self.profileSwitch, at: Given.at(500)), commands: []) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Self.profileSwitch]
            $0.resumeIntent = .afterInterruption(since: Given.at(500))
        }
        store.send(.interruptionEnded(Self.profileSwitch, resumeAllowed: true, at: Given.at(60_000)),
                   commands: [.uncork, .clearServerMute]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Rule 21: the user's wish to play during a call survives the session manager's Pause")
    func pauseKeepsTheUsersWish() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: []) { $0.interruptions = [Given.call] }
        store.send(.userPlay, commands: []) {
            $0.playback = .paused(.interruption)
            $0.resumeIntent = .userAskedToPlay
        }
        store.send(.externalPause(Self.wirePlumber), commands: []) {
            $0.unansweredExternalPauses = [Self.wirePlumber]
        }
        #expect(store.state.waitingForInterruptionEnd)
    }

    @Test("Rule 21: a phone bridge's Pause, then its Play (or older KDE Connect's PlayPause) resumes")
    func bridgePauseThenResume() {
        for answer in [Event.externalPlay(Self.phone), .externalPlayPause(Self.phone)] {
            var store = RuleStore(Given.playing)
            store.send(.externalPause(Self.phone), commands: [.fadeOutAndCork]) {
                $0.playback = .paused(.external(Self.phone))
                $0.unansweredExternalPauses = [Self.phone]
            }
            store.send(answer, commands: [.uncork]) {
                $0.playback = .playing
                $0.unansweredExternalPauses = []
            }
        }
    }

    @Test("Rule 21: a phone bridge's PlayPause after the user restarted the music does nothing: never a toggle")
    func bridgeToggleAfterUserPlayed() {
        var store = RuleStore(Given.playing)
        store.send(.externalPause(Self.phone), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.external(Self.phone))
            $0.unansweredExternalPauses = [Self.phone]
        }
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
        store.send(.externalPlayPause(Self.phone), commands: []) { $0.unansweredExternalPauses = [] }
    }

    @Test("Rule 21: a phone bridge's Play after the user paused since does nothing")
    func bridgePlayAfterUserPaused() {
        var store = RuleStore(Given.playing)
        store.send(.externalPause(Self.phone), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.external(Self.phone))
            $0.unansweredExternalPauses = [Self.phone]
        }
        store.send(.userToggle, commands: [.uncork]) { $0.playback = .playing }
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.externalPlay(Self.phone), commands: []) { $0.unansweredExternalPauses = [] }
    }

    @Test("Rule 21: a bridge's Pause during a call, the call's resume, then its PlayPause leaves the music playing")
    func bridgeToggleAfterCallResumed() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.externalPause(Self.phone), commands: []) { $0.unansweredExternalPauses = [Self.phone] }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(5_000)),
                   commands: [.uncork, .clearServerMute]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
        store.send(.externalPlayPause(Self.phone), commands: []) { $0.unansweredExternalPauses = [] }
    }

    @Test("Rule 21: one sender's Play does not resume what another paused")
    func otherSendersPlayDoesNotResume() {
        var store = RuleStore(Given.playing)
        store.send(.externalPause(Self.wirePlumber), commands: [.cork]) {
            $0.playback = .paused(.external(Self.wirePlumber))
            $0.unansweredExternalPauses = [Self.wirePlumber]
        }
        store.send(.externalPause(Self.phone), commands: []) {
            $0.unansweredExternalPauses = [Self.wirePlumber, Self.phone]
        }
        store.send(.externalPlay(Self.phone), commands: []) { $0.unansweredExternalPauses = [Self.wirePlumber] }
    }

    @Test("Rule 21: Pause while paused, stopped or idle -> unchanged; the sender's later Play does nothing")
    func pauseWhileQuiet() {
        for start in [Given.pausedByUser, Given.stopped, Given.idle] {
            var store = RuleStore(start)
            store.send(.externalPause(Self.phone), commands: []) { $0.unansweredExternalPauses = [Self.phone] }
            store.send(.externalPlay(Self.phone), commands: []) { $0.unansweredExternalPauses = [] }
        }
    }

    @Test("Rule 21: a bridge's Play or PlayPause with no Pause of its own is the user's, relayed (a phone's remote)")
    func bridgeRequestWithoutPauseIsTheUsers() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.externalPlayPause(Self.phone), commands: [.uncork]) { $0.playback = .playing }
        store.send(.externalPlayPause(Self.phone), commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.externalPlay(Self.phone), commands: [.uncork]) { $0.playback = .playing }
    }

    @Test("Rule 21: the user pauses or stops a player an outside sender paused: the user's pause")
    func userPausesAnExternallyPausedPlayer() {
        var store = RuleStore(Given.playing)
        store.send(.externalPause(Self.phone), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.external(Self.phone))
            $0.unansweredExternalPauses = [Self.phone]
        }
        store.send(.userPause, commands: []) { $0.playback = .paused(.user) }
        store.send(.externalPlayPause(Self.phone), commands: []) { $0.unansweredExternalPauses = [] }
    }

    @Test("Rule 21: events name the sender's kind, and status the reason `external`")
    func descriptions() {
        #expect(Event.externalPause(.sessionManager).description == "externalPause(sessionManager)")
        #expect(Event.externalPlay(.phoneBridge).description == "externalPlay(phoneBridge)")
        #expect(Event.externalPlayPause(.phoneBridge).description == "externalPlayPause(phoneBridge)")
        #expect(Playback.paused(.external(.sessionManager)).description == "paused(external)")
    }
}
