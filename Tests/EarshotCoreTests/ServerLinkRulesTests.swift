// Row 42 (docs/design.md): the sound server's connection is the rules'. When to connect, how long to wait after a
// failed attempt, what waits for the connection and what the player does while the server is away and when it comes
// back; the executor only connects when told (`connectServer`) and reports what came of it.
import EarshotCore
import Testing

@Suite("Row 42: the rules reconnect to the sound server")
struct ServerLinkRulesTests {
    /// A player playing when its server dies at 1 000 ms: paused as rule 10 says, the first attempt 200 ms later.
    static var lostWhilePlaying: RuleStore {
        var store = RuleStore(Given.playing)
        let firstAttempt = Given.at(1_200)
        store.send(.serverDisconnected(at: Given.at(1_000)), commands: [.cork, .flush, .armTimer(at: firstAttempt)]) {
            $0.playback = .paused(.outputLost(.serverLost))
            $0.stream.isOpen = false
            $0.server.phase = .waiting(until: Given.at(1_200))
            $0.server.awaySince = Given.at(1_000)
            $0.server.afterLoss = true
            $0.server.nextDelayMilliseconds = 400
        }
        return store
    }

    /// Then the user plays while the server is away: the attempt is made at once, and the stream waits for it.
    static var playedWhileAway: RuleStore {
        var store = lostWhilePlaying
        store.send(.userPlay, commands: [.connectServer, .armTimer(at: nil)]) {
            $0.playback = .playing
            $0.server.phase = .connecting
            $0.server.awaitedStream = .openStream
        }
        return store
    }

    @Test("Row 42: the server lost while playing -> paused, position kept (cork, flush), first attempt after 200 ms")
    func lossPausesAndWaits() {
        var store = Self.lostWhilePlaying
        // Too early: nothing.
        store.send(.timerFired(at: Given.at(1_100)), commands: [.armTimer(at: Given.at(1_200))])
        store.send(.timerFired(at: Given.at(1_200)), commands: [.connectServer, .armTimer(at: nil)]) {
            $0.server.phase = .connecting
        }
    }

    @Test("Row 42: each failed attempt waits twice as long as the one before, up to 1 s")
    func backoffDoublesUpToTheCap() {
        var store = Self.lostWhilePlaying
        var now: Int64 = 1_200
        var waits: [Int64] = []
        for _ in 1...5 {
            store.send(.timerFired(at: Given.at(now)), commands: [.connectServer, .armTimer(at: nil)]) {
                $0.server.phase = .connecting
            }
            var state = store.state
            _ = state.apply(.serverConnectFailed(at: Given.at(now)))
            guard case .waiting(let until) = state.server.phase else {
                Issue.record("no wait after a failed attempt: \(state.server.phase)")
                return
            }
            waits.append(until.milliseconds(since: Given.at(now)))
            store.send(.serverConnectFailed(at: Given.at(now)), commands: [.armTimer(at: until)]) {
                $0.server = state.server
            }
            now = until.milliseconds
        }
        #expect(waits == [400, 800, 1_000, 1_000, 1_000])
        #expect(store.state.server.attemptFailed && store.state.playback == .paused(.outputLost(.serverLost)))
    }

    @Test("Rules 10 and 12 with row 42: the server back resumes nothing; the user's play opens a stream on it")
    func backResumesNothing() {
        var store = Self.lostWhilePlaying
        store.send(.timerFired(at: Given.at(1_200)), commands: [.connectServer, .armTimer(at: nil)]) {
            $0.server.phase = .connecting
        }
        store.send(.serverConnected, commands: []) { $0.server = ServerLink() }
        store.send(.userPlay, commands: [.openStream]) { $0.playback = .playing }
    }

    @Test("Row 42: a play while the server is away waits for the connection, tried at once, then opens the stream")
    func playWhileAwayConnectsAtOnce() {
        var store = Self.playedWhileAway
        // A second play (or a toggle's) during the attempt asks for no second attempt.
        store.send(.userPlay, commands: [])
        store.send(.serverConnected, commands: [.openStream]) { $0.server = ServerLink() }
        store.send(.streamOpened, commands: [.uncork]) { $0.stream = .openCorked }
    }

    @Test("Row 42 and rule 10: a play while the server is away whose attempt fails is an output loss again")
    func playWhileAwayFailsIsALoss() {
        var store = Self.playedWhileAway
        let next = Given.at(1_450)
        store.send(.serverConnectFailed(at: Given.at(1_050)), commands: [.cork, .flush, .armTimer(at: next)]) {
            $0.playback = .paused(.outputLost(.serverLost))
            $0.server.phase = .waiting(until: Given.at(1_450))
            $0.server.attemptFailed = true
            $0.server.nextDelayMilliseconds = 800
            $0.server.awaitedStream = nil
        }
    }

    @Test("Rule 15 with row 42: an answer with no attempt under way, or a loss while away, changes the link nothing")
    func staleReportsChangeNothing() {
        var store = Self.lostWhilePlaying
        store.send(.serverConnected, commands: [])
        store.send(.serverConnectFailed(at: Given.at(1_100)), commands: [])
        // Connected, a second connection's report is nothing either.
        var connected = RuleStore(Given.pausedByUser)
        connected.send(.serverConnected, commands: [])
        connected.send(.serverConnectFailed(at: Given.at(5)), commands: [])
    }

    @Test("Row 42 and rule 7: the user's pause while the server is away wins; the server back starts nothing")
    func pauseWhileAwayStays() {
        var store = Self.playedWhileAway
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.serverConnected, commands: [.openStream]) { $0.server = ServerLink() }
        store.send(.streamOpened, commands: []) { $0.stream = .openCorked }
        #expect(store.state.playback == .paused(.user))
    }

    @Test("Row 42: a service that started without a server plays its queue once one comes, and only then opens")
    func startWithoutServer() {
        var state = Given.stopped
        state.stream = StreamCondition(isOpen: false, isCorked: true)
        var store = RuleStore(state)
        store.send(.playerStarted(at: Given.at(0)), commands: [.connectServer]) {
            $0.server.phase = .connecting
            $0.server.awaySince = Given.at(0)
            $0.server.nextDelayMilliseconds = 400
        }
        store.send(.userPlay, commands: [.playTrack(index: 0)]) {
            $0.playback = .playing
            $0.server.awaitedStream = .openStream
        }
        store.send(.serverConnected, commands: [.openStream]) { $0.server = ServerLink() }
    }
}
