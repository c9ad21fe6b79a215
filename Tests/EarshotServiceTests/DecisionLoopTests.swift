// The executor's decision loop with a stand-in output: the order in which decisions are made and their commands
// performed when performing a command reports an outcome.
import EarshotCore
import Testing

@testable import EarshotService

struct DecisionLoopTests {
    /// A stopped player with two tracks and no stream: a play must open one.
    private static var stoppedWithoutStream: PlayerState {
        PlayerState(playback: .stopped, queue: QueueCursor(trackCount: 2, index: 0),
                    stream: StreamCondition(isOpen: false, isCorked: true))
    }

    @Test("an outcome reported while a decision's commands run is decided after them")
    func outcomeWaitsForTheCurrentDecision() {
        let loop = DecisionLoop(rules: Self.stoppedWithoutStream)
        var performed: [Command] = []
        var decisions: [Event] = []
        loop.decided = { decision, _ in decisions.append(decision.event) }
        loop.perform = { [unowned loop] command in
            performed.append(command)
            // No server: the stream cannot be opened, and the output is lost for that reason.
            if command == .openStream { loop.dispatch(.outputLost(.serverLost)) }
        }
        loop.dispatch(.userPlay)
        #expect(decisions == [.userPlay, .outputLost(.serverLost)])
        // The play's own commands first, then the loss's: nothing of the play (here its playTrack, which moves the
        // decoder) is performed after the loss corked and flushed, so the last commands performed match the state.
        #expect(performed == [.openStream, .playTrack(index: 0), .cork, .flush])
        #expect(loop.rules.playback == .paused(.outputLost(.serverLost)))
    }

    @Test("outcomes are decided in the order they were reported")
    func outcomesInOrder() {
        var start = Self.stoppedWithoutStream
        start.stream = .openCorked
        let loop = DecisionLoop(rules: start)
        var decisions: [Event] = []
        loop.decided = { decision, _ in decisions.append(decision.event) }
        loop.perform = { [unowned loop] command in
            switch command {
            case .playTrack: loop.dispatch(.streamCorked)
            case .uncork: loop.dispatch(.streamUncorked)
            default: break
            }
        }
        loop.dispatch(.userPlay)
        #expect(decisions == [.userPlay, .streamCorked, .streamUncorked])
        #expect(loop.rules.stream == StreamCondition(isOpen: true, isCorked: false))
    }
}
