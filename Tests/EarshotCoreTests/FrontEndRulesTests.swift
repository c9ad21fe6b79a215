// RULES.md row 29: a foreground `earshot play` with no sound server at its first connection gives up; a service
// waits (row 42's reconnection, ServerLinkRulesTests). The front-end is part of the rules' configuration
// (`ResumePolicy.frontEnd`), so the executor never asks itself which one it is.
import EarshotCore
import Testing

@Suite("RULES.md row 29: the first failed connection ends a foreground player, never a service")
struct FrontEndRulesTests {
    static var foreground: PlayerState {
        var state = Given.stopped
        state.policy.frontEnd = .foreground
        state.stream = StreamCondition(isOpen: false, isCorked: true)
        return state
    }

    @Test("Row 29: a foreground player's first connection fails -> it exits without a server; later ones do not")
    func row29ForegroundGivesUp() {
        var store = RuleStore(Self.foreground)
        store.send(.playerStarted(at: Given.at(0)), commands: [.connectServer]) {
            $0.server.phase = .connecting
            $0.server.awaySince = Given.at(0)
            $0.server.nextDelayMilliseconds = 400
        }
        store.send(.serverConnectFailed(at: Given.at(10)),
                   commands: [.exitForeground(.noServer), .armTimer(at: Given.at(410))]) {
            $0.server.phase = .waiting(until: Given.at(410))
            $0.server.attemptFailed = true
            $0.server.nextDelayMilliseconds = 800
        }
        // A failure after the server was there once (it went away) is an output loss the player waits out.
        var lost = Self.foreground
        lost.server.phase = .connecting
        lost.server.afterLoss = true
        var afterLoss = RuleStore(lost)
        afterLoss.send(.serverConnectFailed(at: Given.at(10)), commands: [.armTimer(at: Given.at(210))]) {
            $0.server.phase = .waiting(until: Given.at(210))
            $0.server.attemptFailed = true
            $0.server.nextDelayMilliseconds = 400
        }
    }

    @Test("Row 29: a service waits for a server, whatever attempt failed, and plays nothing when one comes")
    func row29ServiceWaits() {
        var state = Self.foreground
        state.policy.frontEnd = .service
        var store = RuleStore(state)
        store.send(.playerStarted(at: Given.at(0)), commands: [.connectServer]) {
            $0.server.phase = .connecting
            $0.server.awaySince = Given.at(0)
            $0.server.nextDelayMilliseconds = 400
        }
        store.send(.serverConnectFailed(at: Given.at(10)), commands: [.armTimer(at: Given.at(410))]) {
            $0.server.phase = .waiting(until: Given.at(410))
            $0.server.attemptFailed = true
            $0.server.nextDelayMilliseconds = 800
        }
        store.send(.timerFired(at: Given.at(410)), commands: [.connectServer, .armTimer(at: nil)]) {
            $0.server.phase = .connecting
        }
        store.send(.serverConnected, commands: []) { $0.server = ServerLink() }
    }

    @Test("Rules 13 and 14: a foreground player exits at its queue's end, with failure when every track failed")
    func foregroundExitsAtTheQueueEnd() {
        var playing = Given.playing
        playing.policy.frontEnd = .foreground
        playing.queue = QueueCursor(trackCount: 2, index: 1)
        var played = RuleStore(playing)
        played.send(.queuePlayedOut, commands: [.cork, .exitForeground(.queuePlayed)]) {
            $0.playback = .stopped
            $0.queue.index = 0
        }
        // The second of two failed after the first played: the queue was played.
        var oneFailed = RuleStore(playing)
        oneFailed.send(.trackFailed(index: 1, failure: .notMPEGAudio, failuresInARow: 1),
                       commands: [.skipFailedTrack(failed: 1, next: nil), .cork, .exitForeground(.queuePlayed)]) {
            $0.playback = .stopped
            $0.queue.index = 0
            $0.lastFailure = FailedTrack(index: 1, failure: .notMPEGAudio)
        }
        // Both failed, one after the other: nothing could be played.
        var bothFailed = RuleStore(playing)
        bothFailed.send(.trackFailed(index: 1, failure: .unreadable, failuresInARow: 2),
                        commands: [.skipFailedTrack(failed: 1, next: nil), .cork, .exitForeground(.nothingPlayable)]) {
            $0.playback = .stopped
            $0.queue.index = 0
            $0.lastFailure = FailedTrack(index: 1, failure: .unreadable)
        }
        // A service at the same end only stops, corked, and waits for the user.
        var service = playing
        service.policy.frontEnd = .service
        var store = RuleStore(service)
        store.send(.queuePlayedOut, commands: [.cork]) {
            $0.playback = .stopped
            $0.queue.index = 0
        }
    }
}
