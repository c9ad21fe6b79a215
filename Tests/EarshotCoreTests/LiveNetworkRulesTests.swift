// Rows 38-41 (docs/design.md, "live source"): the network under a live stream. The fetch reports; the rules decide
// whether to reconnect, when, when to go quiet, whether to resume, and when to give up. Each test states the whole
// resulting state and the exact commands.
import EarshotCore
import Testing

@Suite("Rows 38-41: a live stream's network lost, reconnected, ended or given up")
struct LiveNetworkRulesTests {
    static let refused = LiveStreamLoss.networkFailed(.connectionRefused)

    /// Reconnecting after a loss at `since`, waiting until `until`, the attempt after that waiting `next`.
    static func waiting(since: Int64, until: Int64, next: Int64, cause: LiveReconnection.Cause = .networkFailed,
                        ranDry: Bool = false) -> LiveReconnection {
        LiveReconnection(since: Given.at(since), cause: cause, nextDelayMilliseconds: next,
                         phase: .waiting(until: Given.at(until)), ranDry: ranDry)
    }

    /// The expected change of a reconnection answered at `moment`: kept aside until the connection settles.
    static func answered(_ state: inout PlayerState, at moment: Int64) {
        let episode = state.live?.reconnection
        state.live?.settling = episode.map { SettlingReconnection(episode: $0, connectedAt: Given.at(moment)) }
        state.live?.reconnection = nil
    }

    /// Row 39's first step: live stream `index` closed cleanly at `moment`, and asked again at once.
    static func closeCleanly(_ store: inout RuleStore, index: Int, at moment: Int64 = 0,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        store.send(.liveStreamLost(index: index, .closedByServer, at: Given.at(moment)),
                   commands: [.reconnectLiveStream(index: index)], sourceLocation: sourceLocation) {
            $0.live?.settling = nil
            $0.live?.reconnection = LiveReconnection(since: Given.at(moment), cause: .closedCleanly,
                                                     nextDelayMilliseconds: 1_000, phase: .connecting)
        }
    }

    @Test("Row 38: a network failure waits 1 s, then 2, 4, ... up to 30 s between attempts, on the rules' timer")
    func row38Backoff() {
        var store = RuleStore(LiveStreamRulesTests.playingLive)
        store.send(.liveStreamLost(index: 0, .networkFailed(.connectionLost), at: Given.at(0)),
                   commands: [.armTimer(at: Given.at(1_000))]) {
            $0.live?.reconnection = Self.waiting(since: 0, until: 1_000, next: 2_000)
        }
        // Early, the timer changes nothing but is asked for again.
        store.send(.timerFired(at: Given.at(900)), commands: [.armTimer(at: Given.at(1_000))])
        var now: Int64 = 1_000
        var delay: Int64 = 2_000
        for next in [Int64(4_000), 8_000, 16_000, 30_000, 30_000, 30_000] {
            store.send(.timerFired(at: Given.at(now)), commands: [.reconnectLiveStream(index: 0), .armTimer(at: nil)]) {
                $0.live?.reconnection?.phase = .connecting
            }
            store.send(.liveStreamLost(index: 0, Self.refused, at: Given.at(now)),
                       commands: [.armTimer(at: Given.at(now + delay))]) {
                $0.live?.reconnection = Self.waiting(since: 0, until: now + delay, next: next)
            }
            now += delay
            delay = next
        }
        // The server answers again: the stream is connected, and the player, still playing its buffer, plays on.
        store.send(.timerFired(at: Given.at(now)), commands: [.reconnectLiveStream(index: 0), .armTimer(at: nil)]) {
            $0.live?.reconnection?.phase = .connecting
        }
        store.send(.liveStreamReconnected(index: 0, at: Given.at(now)), commands: []) { Self.answered(&$0, at: now) }
        // Reports of another track, or of no attempt under way, are stale (rule 15).
        store.send(.liveStreamReconnected(index: 0, at: Given.at(now)), commands: [])
        store.send(.liveStreamLost(index: 5, Self.refused, at: Given.at(now)), commands: [])
    }

    @Test("Row 39: a station the decoder opened ahead of the listener ends as well, and its reconnection goes with it")
    func row39StreamAheadEnds() {
        var state = LiveStreamRulesTests.playingLive
        state.live = LiveStream(index: 1)
        var store = RuleStore(state)
        Self.closeCleanly(&store, index: 1)
        store.send(.liveStreamLost(index: 1, .mountGone, at: Given.at(40)), commands: [.endLiveStream(index: 1)]) {
            $0.live?.reconnection?.phase = .ended
        }
        // One still being opened (libsndfile reads before its start is reported) is known from its loss.
        var opening = RuleStore(LiveStreamRulesTests.playingLive)
        opening.send(.liveStreamLost(index: 2, .closedByServer, at: Given.at(0)),
                     commands: [.reconnectLiveStream(index: 2)]) {
            $0.live = LiveStream(index: 2, reconnection: LiveReconnection(
                since: Given.at(0), cause: .closedCleanly, nextDelayMilliseconds: 1_000, phase: .connecting))
        }
        // The listener reaches it: it plays out what it received, and the queue goes on.
        store.send(.heardTrack(index: 1), commands: []) { $0.queue.index = 1 }
        store.send(.heardTrack(index: 2), commands: []) {
            $0.queue.index = 2
            $0.live?.reconnection = nil
        }
    }

    @Test("Row 39: a clean close is asked again at once; the mount gone then is the end, and the queue goes on")
    func row39CleanCloseThenGoneIsTheEnd() {
        var store = RuleStore(LiveStreamRulesTests.playingLive)
        Self.closeCleanly(&store, index: 0)
        store.send(.liveStreamLost(index: 0, .mountGone, at: Given.at(50)), commands: [.endLiveStream(index: 0)]) {
            $0.live?.reconnection?.phase = .ended
        }
        // The decoder plays out the rest, and the next track is heard: the cursor moves, the stream is forgotten.
        store.send(.heardTrack(index: 1), commands: []) {
            $0.queue.index = 1
            $0.live?.reconnection = nil
        }
    }

    @Test("Row 39: a clean close whose reconnection the network refuses is a network failure: a 404 then is no end")
    func row39KilledServerIsNoEnd() {
        var store = RuleStore(LiveStreamRulesTests.playingLive)
        Self.closeCleanly(&store, index: 0)
        store.send(.liveStreamLost(index: 0, Self.refused, at: Given.at(10)),
                   commands: [.armTimer(at: Given.at(1_010))]) {
            $0.live?.reconnection = Self.waiting(since: 0, until: 1_010, next: 2_000)
        }
        store.send(.timerFired(at: Given.at(1_010)), commands: [.reconnectLiveStream(index: 0), .armTimer(at: nil)]) {
            $0.live?.reconnection?.phase = .connecting
        }
        // A restarted Icecast answers 404 until its source is back.
        store.send(.liveStreamLost(index: 0, .mountGone, at: Given.at(1_020)),
                   commands: [.armTimer(at: Given.at(3_020))]) {
            $0.live?.reconnection = Self.waiting(since: 0, until: 3_020, next: 4_000)
        }
    }

    @Test("Row 40: the buffer runs dry -> quiet as paused(networkLost), corked; the connection back resumes it")
    func row40QuietThenResumed() {
        var store = RuleStore(LiveStreamRulesTests.playingLive)
        store.send(.liveStreamLost(index: 0, Self.refused, at: Given.at(0)), commands: [.armTimer(at: Given.at(1_000))]) {
            $0.live?.reconnection = Self.waiting(since: 0, until: 1_000, next: 2_000)
        }
        store.send(.liveStreamRanDry(index: 0), commands: [.cork]) {
            $0.playback = .paused(.networkLost)
            $0.live?.reconnection?.ranDry = true
        }
        // A play while quiet waits for the network, and sounds nothing.
        store.send(.userPlay, commands: [])
        store.send(.timerFired(at: Given.at(1_000)), commands: [.reconnectLiveStream(index: 0), .armTimer(at: nil)]) {
            $0.live?.reconnection?.phase = .connecting
        }
        store.send(.liveStreamReconnected(index: 0, at: Given.at(1_100)), commands: [.uncork]) {
            $0.playback = .playing
            Self.answered(&$0, at: 1_100)
        }
        // Connected, a decoder waiting for a slow station is no network loss.
        store.send(.liveStreamRanDry(index: 0), commands: [])
    }

    @Test("Row 40: a user's pause or a toggle while quiet wins: the connection back does not resume")
    func row40UserPauseWins() {
        var state = LiveStreamRulesTests.playingLive
        state.playback = .paused(.networkLost)
        state.live?.reconnection = LiveReconnection(since: Given.at(0), cause: .networkFailed,
                                                    nextDelayMilliseconds: 2_000, phase: .connecting, ranDry: true)
        var store = RuleStore(state)
        store.send(.userToggle, commands: []) { $0.playback = .paused(.user) }
        store.send(.liveStreamReconnected(index: 0, at: Given.at(500)), commands: []) { Self.answered(&$0, at: 500) }
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
        // Stopped while reconnecting: stopped it stays.
        var stop = RuleStore(state)
        stop.send(.userStop, commands: []) {
            $0.playback = .stopped
            $0.live?.reconnection?.phase = .gaveUp
        }
        stop.send(.liveStreamReconnected(index: 0, at: Given.at(500)), commands: []) { Self.answered(&$0, at: 500) }
    }

    @Test("Row 40: a call while quiet holds it as any call; its end waits for the network; a next plays on")
    func row40CallAndNext() {
        var state = LiveStreamRulesTests.playingLive
        state.playback = .paused(.networkLost)
        state.live?.reconnection = Self.waiting(since: 0, until: 1_000, next: 2_000, ranDry: true)
        var store = RuleStore(state)
        store.send(.interruptionBegan(Given.call, at: Given.at(100)), commands: []) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(100))
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(500)),
                   commands: [.clearServerMute]) {
            $0.playback = .paused(.networkLost)
            $0.interruptions = []
            $0.resumeIntent = .none
        }
        // The next track is a file: it plays, and the station's reconnection and its timer are let go.
        store.send(.userNext, commands: [.playTrack(index: 1), .uncork, .armTimer(at: nil)]) {
            $0.queue.index = 1
            $0.playback = .playing
            $0.live?.reconnection = nil
        }
    }

    @Test("Row 41: lost past the configured time, the rules give up; a play tries again, its window starting anew")
    func row41GiveUpAndTryAgain() {
        var state = LiveStreamRulesTests.playingLive
        state.policy.liveReconnect.giveUpMilliseconds = 60_000
        state.playback = .paused(.networkLost)
        state.live?.reconnection = LiveReconnection(since: Given.at(0), cause: .networkFailed,
                                                    nextDelayMilliseconds: 30_000, phase: .connecting, ranDry: true)
        var store = RuleStore(state)
        store.send(.liveStreamLost(index: 0, Self.refused, at: Given.at(60_000)), commands: []) {
            $0.live?.reconnection?.phase = .gaveUp
        }
        store.send(.timerFired(at: Given.at(90_000)), commands: [])
        // The user's play: one attempt now, quiet until it answers.
        store.send(.userPlay, commands: [.reconnectLiveStream(index: 0)]) {
            $0.live?.reconnection = LiveReconnection(since: nil, cause: .networkFailed, nextDelayMilliseconds: 1_000,
                                                     phase: .connecting, ranDry: true)
        }
        store.send(.liveStreamLost(index: 0, Self.refused, at: Given.at(200_000)),
                   commands: [.armTimer(at: Given.at(201_000))]) {
            $0.live?.reconnection = Self.waiting(since: 200_000, until: 201_000, next: 2_000, ranDry: true)
        }
        // The station opened afresh meanwhile (its fetch connected): the wait is over, and the show plays on.
        store.send(.liveStreamReconnected(index: 0, at: Given.at(201_500)),
                   commands: [.uncork, .armTimer(at: nil)]) {
            Self.answered(&$0, at: 201_500)
            $0.playback = .playing
        }
        // Given up while the buffer still plays: playing on, and a resume after a pause tries again too.
        var playing = LiveStreamRulesTests.playingLive
        playing.playback = .paused(.user)
        playing.live?.reconnection = LiveReconnection(since: Given.at(0), cause: .networkFailed,
                                                      nextDelayMilliseconds: 30_000, phase: .gaveUp)
        var resume = RuleStore(playing)
        resume.send(.userPlay, commands: [.reconnectLiveStream(index: 0), .uncork]) {
            $0.playback = .playing
            $0.live?.reconnection = LiveReconnection(since: nil, cause: .networkFailed, nextDelayMilliseconds: 1_000,
                                                     phase: .connecting)
        }
    }
}

extension LiveNetworkRulesTests {
    /// Quiet on a dry station, an attempt under way.
    static var quietForTheNetwork: PlayerState {
        var state = LiveStreamRulesTests.playingLive
        state.playback = .paused(.networkLost)
        state.live?.reconnection = LiveReconnection(since: Given.at(0), cause: .networkFailed,
                                                    nextDelayMilliseconds: 2_000, phase: .connecting, ranDry: true)
        return state
    }

    @Test("Rule 19 over row 40: the session left while quiet for the network; the network back starts nothing")
    func row40SessionLeftTakesOver() {
        var state = Self.quietForTheNetwork
        state.policy.pauseOnLock = true
        var store = RuleStore(state)
        store.send(.sessionLeft(.locked), commands: []) { $0.playback = .paused(.sessionLeft(.locked)) }
        store.send(.liveStreamReconnected(index: 0, at: Given.at(500)), commands: []) { Self.answered(&$0, at: 500) }
        // Only the user plays again.
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
    }

    @Test("Rule 21 over row 40: an outside sender's Pause while quiet for the network holds; its Play undoes it")
    func row40ExternalPauseHolds() {
        var store = RuleStore(Self.quietForTheNetwork)
        store.send(.externalPause(.phoneBridge), commands: []) {
            $0.playback = .paused(.external(.phoneBridge))
            $0.unansweredExternalPauses = [.phoneBridge]
        }
        store.send(.liveStreamReconnected(index: 0, at: Given.at(500)), commands: []) { Self.answered(&$0, at: 500) }
        store.send(.externalPlay(.phoneBridge), commands: [.uncork]) {
            $0.playback = .playing
            $0.unansweredExternalPauses = []
        }
        // The call ends before the network is back: the player waits for it again, quiet.
        var early = RuleStore(Self.quietForTheNetwork)
        early.send(.externalPause(.phoneBridge), commands: []) {
            $0.playback = .paused(.external(.phoneBridge))
            $0.unansweredExternalPauses = [.phoneBridge]
        }
        early.send(.externalPlay(.phoneBridge), commands: []) {
            $0.playback = .paused(.networkLost)
            $0.unansweredExternalPauses = []
        }
    }
}

extension LiveNetworkRulesTests {
    @Test("Row 38: an attempt finding nothing open ends the reconnection; quiet on the station, it gives up")
    func row38NothingOpenToReconnect() {
        // The cursor moved to a file: the station's decoder was let go, and its attempt finds nothing to fetch into.
        var state = LiveStreamRulesTests.playingLive
        state.queue.index = 1
        state.live?.reconnection = LiveReconnection(since: Given.at(0), cause: .networkFailed,
                                                    nextDelayMilliseconds: 2_000, phase: .connecting)
        var store = RuleStore(state)
        store.send(.liveStreamNotOpen(index: 0), commands: []) { $0.live?.reconnection = nil }
        // No wait, no further attempt: the timer finds nothing to do.
        store.send(.timerFired(at: Given.at(5_000)), commands: [])
        // Quiet for the network on the station itself: given up, and the user's play asks again.
        var quiet = RuleStore(Self.quietForTheNetwork)
        quiet.send(.liveStreamNotOpen(index: 0), commands: []) { $0.live?.reconnection?.phase = .gaveUp }
        quiet.send(.liveStreamNotOpen(index: 0), commands: [])
    }
}

extension LiveNetworkRulesTests {
    @Test("Row 41 after a stop: no more attempts; a play tries again, waits for the network, and starts at live")
    func row41StopEndsTheAttempts() {
        var state = LiveStreamRulesTests.playingLive
        state.live?.reconnection = Self.waiting(since: 0, until: 1_000, next: 2_000, ranDry: true)
        state.playback = .paused(.networkLost)
        var store = RuleStore(state)
        store.send(.userStop, commands: [.armTimer(at: nil)]) {
            $0.playback = .stopped
            $0.live?.reconnection?.phase = .gaveUp
        }
        store.send(.timerFired(at: Given.at(60_000)), commands: [])
        // Row 34: the stopped station starts again at live, and row 41's play asks the network again.
        store.send(.userPlay, commands: [.reconnectLiveStream(index: 0), .rejoinLive(.restarted)]) {
            $0.playback = .paused(.networkLost)
            $0.live?.reconnection = LiveReconnection(since: nil, cause: .networkFailed, nextDelayMilliseconds: 1_000,
                                                     phase: .connecting, ranDry: true)
        }
    }
}

extension LiveNetworkRulesTests {
    @Test("Row 38: a connection answered and lost again before it settled keeps its backoff and its give-up window")
    func row38UnsettledKeepsBackoff() {
        var state = LiveStreamRulesTests.playingLive
        state.live?.reconnection = LiveReconnection(since: Given.at(0), cause: .networkFailed,
                                                    nextDelayMilliseconds: 8_000, phase: .connecting)
        var store = RuleStore(state)
        store.send(.liveStreamReconnected(index: 0, at: Given.at(10_000)), commands: []) {
            Self.answered(&$0, at: 10_000)
        }
        // The server accepts and closes at once: no attempt at once, the wait goes on from 8 s, counted from 0.
        store.send(.liveStreamLost(index: 0, .closedByServer, at: Given.at(10_100)),
                   commands: [.armTimer(at: Given.at(18_100))]) {
            $0.live?.settling = nil
            $0.live?.reconnection = Self.waiting(since: 0, until: 18_100, next: 16_000)
        }
        // Connected for the settle time (30 s), a loss is a new one: asked again at once.
        store.send(.timerFired(at: Given.at(18_100)), commands: [.reconnectLiveStream(index: 0), .armTimer(at: nil)]) {
            $0.live?.reconnection?.phase = .connecting
        }
        store.send(.liveStreamReconnected(index: 0, at: Given.at(18_200)), commands: []) {
            Self.answered(&$0, at: 18_200)
        }
        Self.closeCleanly(&store, index: 0, at: 48_200)
    }

    @Test("Row 39: a clean close again soon after a clean close's reconnection was answered is the end")
    func row39FileWithoutLengthEnds() {
        var store = RuleStore(LiveStreamRulesTests.playingLive)
        Self.closeCleanly(&store, index: 0)
        // A file served without a length: the server sends it again, and closes again at its end.
        store.send(.liveStreamReconnected(index: 0, at: Given.at(20)), commands: []) { Self.answered(&$0, at: 20) }
        store.send(.liveStreamLost(index: 0, .closedByServer, at: Given.at(5_000)),
                   commands: [.endLiveStream(index: 0)]) {
            $0.live?.settling = nil
            $0.live?.reconnection = LiveReconnection(since: Given.at(0), cause: .closedCleanly,
                                                     nextDelayMilliseconds: 1_000, phase: .ended)
        }
    }
}

extension LiveNetworkRulesTests {
    @Test("Row 41 while stopped: a failed attempt or a loss gives up at once instead of waiting for another")
    func row41StoppedGivesUp() {
        var state = LiveStreamRulesTests.playingLive
        state.playback = .stopped
        var store = RuleStore(state)
        store.send(.liveStreamLost(index: 0, Self.refused, at: Given.at(0)), commands: []) {
            $0.live?.reconnection = LiveReconnection(since: Given.at(0), cause: .networkFailed,
                                                     nextDelayMilliseconds: 1_000, phase: .gaveUp)
        }
        store.send(.timerFired(at: Given.at(5_000)), commands: [])
    }

    @Test("Row 39: a plain web server closing a response of no length sent a whole file: the end, not asked again")
    func row39PlainResponseEnds() {
        // Long after the start (past the settle time): a file longer than 30 s ends at its close too.
        var store = RuleStore(LiveStreamRulesTests.playingLive)
        store.send(.liveStreamLost(index: 0, .plainResponseClosed, at: Given.at(40_000)),
                   commands: [.endLiveStream(index: 0)]) {
            $0.live?.reconnection = LiveReconnection(since: Given.at(40_000), cause: .closedCleanly,
                                                     nextDelayMilliseconds: 1_000, phase: .ended)
        }
        // After a network failure, an attempt answered by such a server ends the same way, with the loss's moment.
        var reconnected = RuleStore(LiveStreamRulesTests.playingLive)
        reconnected.send(.liveStreamLost(index: 0, Self.refused, at: Given.at(0)),
                         commands: [.armTimer(at: Given.at(1_000))]) {
            $0.live?.reconnection = Self.waiting(since: 0, until: 1_000, next: 2_000)
        }
        // Rule 15 while waiting: no fetch is under way to have closed.
        reconnected.send(.liveStreamLost(index: 0, .plainResponseClosed, at: Given.at(500)), commands: [])
        reconnected.send(.timerFired(at: Given.at(1_000)),
                         commands: [.reconnectLiveStream(index: 0), .armTimer(at: nil)]) {
            $0.live?.reconnection?.phase = .connecting
        }
        reconnected.send(.liveStreamReconnected(index: 0, at: Given.at(1_100)), commands: []) {
            Self.answered(&$0, at: 1_100)
        }
        reconnected.send(.liveStreamLost(index: 0, .plainResponseClosed, at: Given.at(9_000)),
                         commands: [.endLiveStream(index: 0)]) {
            $0.live?.settling = nil
            $0.live?.reconnection = LiveReconnection(since: Given.at(9_000), cause: .closedCleanly,
                                                     nextDelayMilliseconds: 1_000, phase: .ended)
        }
    }
}
