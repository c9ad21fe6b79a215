// Rule 20's evidence in the translator: which streams duck Earshot, and that every duck ends with the server.
import EarshotCore
import PulseOutput
import Testing

@Suite("Duck-role streams become duckBegan/duckEnded")
struct DuckStreamsTests {
    private func input(_ index: UInt32, role: String?, sink: UInt32 = 2, corked: Bool = false, muted: Bool = false)
        -> SinkInputSnapshot {
        SinkInputSnapshot(index: index, sinkIndex: sink, mediaRole: role, corked: corked, muted: muted,
                          clientIndex: 5, applicationName: "reader")
    }

    private let now = Moment(milliseconds: 0)

    @Test("a11y and event streams on any sink duck while they play; corked, muted or gone, they end")
    func ducksFollowTheStreams() {
        var translator = JudgedTranslator()
        #expect(translator.sinkInputChanged(input(30, role: "a11y", sink: 9), at: now) == [.duckBegan(stream: 30)])
        #expect(translator.sinkInputChanged(input(30, role: "a11y", sink: 9), at: now) == [])
        #expect(translator.sinkInputChanged(input(31, role: "event"), at: now) == [.duckBegan(stream: 31)])
        #expect(translator.sinkInputChanged(input(30, role: "a11y", corked: true), at: now) == [.duckEnded(stream: 30)])
        #expect(translator.sinkInputChanged(input(31, role: "event", muted: true), at: now) == [.duckEnded(stream: 31)])
        #expect(translator.sinkInputChanged(input(31, role: "event"), at: now) == [.duckBegan(stream: 31)])
        #expect(translator.sinkInputRemoved(31, at: now) == [.duckEnded(stream: 31)])
        #expect(translator.sinkInputRemoved(31, at: now) == [])
        // Other roles, and none, never duck.
        #expect(translator.sinkInputChanged(input(32, role: "music"), at: now) == [])
        #expect(translator.sinkInputChanged(input(33, role: nil), at: now) == [])
    }

    @Test("duckRoles is the configuration's; a server that goes away ends every duck")
    func rolesAndServerLoss() {
        var translator = JudgedTranslator(duckRoles: ["a11y"])
        #expect(translator.sinkInputChanged(input(40, role: "event"), at: now) == [])
        #expect(translator.sinkInputChanged(input(41, role: "a11y"), at: now) == [.duckBegan(stream: 41)])
        #expect(translator.sinkInputChanged(input(42, role: "a11y"), at: now) == [.duckBegan(stream: 42)])
        let gone = translator.ourStreamIsGone(at: now)
        #expect(gone.filter { if case .duckEnded = $0 { return true } else { return false } }
                    == [.duckEnded(stream: 41), .duckEnded(stream: 42)])
        #expect(translator.ducks.active.isEmpty)
    }
}
