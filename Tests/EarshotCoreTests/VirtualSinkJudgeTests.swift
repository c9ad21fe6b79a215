// The rules' judgement of what happens behind a virtual sink (VirtualSinkSignals.swift; RULES.md rules 10 and 11): the
// translator reports a sink behind ours removed, or a carrier of our audio moved with what is known of the sink it
// left, and the rules decide whether that is an output loss, the server's move after one, or the user's route change.
import EarshotCore
import Testing

@Suite("Rules 10 and 11: the rules judge what happens behind a virtual sink")
struct VirtualSinkJudgeTests {
    @Test("A sink behind ours removed is a device removal; a carrier moved off it afterwards is the server's move")
    func removalThenServerMove() {
        #expect(OutputFactJudge.judge(.virtualSinkSignal(.sinkBehindRemoved)) == [.outputLost(.deviceRemoved)])
        #expect(OutputFactJudge.judge(.virtualSinkSignal(.carrierMoved(left: .removalReported))) == [])
    }

    @Test("A carrier moved off a sink that still exists is the user's route change; off an unknown one, a loss")
    func moves() {
        #expect(OutputFactJudge.judge(.virtualSinkSignal(.carrierMoved(left: .exists))) == [.routeChanged])
        #expect(OutputFactJudge.judge(.virtualSinkSignal(.carrierMoved(left: .unknown)))
            == [.outputLost(.deviceRemoved)])
    }

    @Test("The rules react: the device behind ours gone while playing corks; the server's move after it is nothing")
    func rulesReact() {
        var store = RuleStore(Given.playing)
        store.send(.virtualSinkSignal(.sinkBehindRemoved), commands: [.cork, .flush]) {
            $0.playback = .paused(.outputLost(.deviceRemoved))
        }
        store.send(.virtualSinkSignal(.carrierMoved(left: .removalReported)), commands: [])
        // The user's move of the loopback keeps playing (rule 11), and is logged as the route change it is.
        var state = Given.playing
        #expect(state.applyJudged(.virtualSinkSignal(.carrierMoved(left: .exists))).map(\.event) == [.routeChanged])
        #expect(state.isPlaying)
    }
}
