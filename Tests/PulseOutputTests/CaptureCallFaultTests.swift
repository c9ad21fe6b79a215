// Bad input and floods for calls inferred from captures (issue 20): a capture with missing or odd properties is judged
// by what is known and never makes the music start; a source removed while its capture runs ends the call; 200
// captures opened and closed in a burst leave the right final state. The translator's events go through the reducer,
// so what is checked is what the listener would hear.
import EarshotCore
import PulseOutput
import Testing

/// A translator and a player state, joined as the owner joins them.
private struct Pipeline {
    var translator: JudgedTranslator
    var state: PlayerState
    var commands: [Command] = []

    init(_ state: PlayerState) {
        translator = Desk.translator()
        self.state = state
    }

    mutating func feed(_ events: [Event]) {
        for event in events { commands += state.apply(event) }
    }

    static var playing: PlayerState {
        PlayerState(playback: .playing, queue: QueueCursor(trackCount: 3, index: 0),
                    stream: StreamCondition(isOpen: true, isCorked: false))
    }
}

@Suite("Calls inferred from captures: bad input and floods")
struct CaptureCallFaultTests {
    @Test("Captures with missing properties: judged by what is known; none makes a paused player sound")
    func missingProperties() {
        let odd: [SourceOutputSnapshot] = [
            // No client: a module's stream as far as anyone can tell (PulseAudio's own policy says the same).
            SourceOutputSnapshot(index: 50, sourceIndex: 1, mediaRole: nil),
            // No application name or binary, but a client on the microphone: a call by what is known.
            SourceOutputSnapshot(index: 51, sourceIndex: 1, mediaRole: nil, clientIndex: 30),
            // A source never described, and PA_INVALID_INDEX (pipewire-pulse before linking): not known to be a
            // microphone.
            SourceOutputSnapshot(index: 52, sourceIndex: 99, mediaRole: nil, clientIndex: 31),
            SourceOutputSnapshot(index: 53, sourceIndex: UInt32.max, mediaRole: nil, clientIndex: 32),
        ]
        var paused = Pipeline(PlayerState(playback: .paused(.user), queue: QueueCursor(trackCount: 3, index: 0)))
        var time: Int64 = 0
        for capture in odd {
            time += 100
            paused.feed(paused.translator.sourceOutputChanged(capture, at: Desk.at(time)))
        }
        #expect(paused.translator.callExclusion(of: odd[0]) == .noClient)
        #expect(paused.translator.callExclusion(of: odd[1]) == nil)
        #expect(paused.translator.callExclusion(of: odd[2]) == .unknownSource)
        #expect(paused.translator.callExclusion(of: odd[3]) == .unknownSource)
        paused.feed(paused.translator.timerExpired(at: Desk.at(10_000)))
        #expect(paused.translator.activeCalls == [30])
        // The unnamed capture loses its client, then goes; the others go: nothing starts.
        var changed = odd[1]
        changed.clientIndex = nil
        paused.feed(paused.translator.sourceOutputChanged(changed, at: Desk.at(11_000)))
        for capture in odd { paused.feed(paused.translator.sourceOutputRemoved(capture.index, at: Desk.at(12_000))) }
        #expect(paused.commands.isEmpty)
        #expect(paused.state.playback == .paused(.user))
        #expect(paused.state.interruptions.isEmpty)

        // While a call holds a playing player: a call that loses its client ends without a resume.
        var held = Pipeline(Pipeline.playing)
        held.feed(held.translator.sourceOutputChanged(odd[1], at: Desk.at(0)))
        held.feed(held.translator.timerExpired(at: Desk.at(Desk.delay)))
        held.feed(held.translator.sourceOutputChanged(changed, at: Desk.at(5_000)))
        #expect(held.commands == [.fadeOutAndCork])
        #expect(held.state.playback == .paused(.resumeDeclined))
    }

    @Test("A source removed while its capture runs ends the call, without a resume; the capture moved is a new call")
    func sourceRemovedDuringCall() {
        var pipeline = Pipeline(Pipeline.playing)
        pipeline.feed(pipeline.translator.sourceOutputChanged(Desk.chromium(), at: Desk.at(0)))
        pipeline.feed(pipeline.translator.timerExpired(at: Desk.at(Desk.delay)))
        #expect(pipeline.state.interruptions == [.microphoneCapture(client: 7)])
        let ended = pipeline.translator.sourceRemoved(1, at: Desk.at(5_000))
        #expect(ended == [.interruptionEnded(.microphoneCapture(client: 7), resumeAllowed: false, at: Desk.at(5_000))])
        pipeline.feed(ended)
        #expect(pipeline.translator.activeCalls.isEmpty)
        #expect(pipeline.translator.deadline == nil)
        // PulseAudio moves the capture to another microphone (its change comes after the removal): a call again,
        // which finds the player already quiet.
        pipeline.feed(pipeline.translator.sourceOutputChanged(Desk.chromium(source: 3), at: Desk.at(5_010)))
        pipeline.feed(pipeline.translator.timerExpired(at: Desk.at(5_010 + Desk.delay)))
        pipeline.feed(pipeline.translator.sourceOutputRemoved(20, at: Desk.at(9_000)))
        #expect(pipeline.commands == [.fadeOutAndCork])
        #expect(pipeline.state.playback == .paused(.resumeDeclined))
    }

    @Test("200 captures opened and closed in a burst shorter than the delay: no call, no timer")
    func burstWithinDelay() {
        var pipeline = Pipeline(Pipeline.playing)
        for index in UInt32(0)..<200 {
            let capture = Desk.chromium(1_000 + index, client: 500 + index)
            pipeline.feed(pipeline.translator.sourceOutputChanged(capture, at: Desk.at(Int64(index / 2))))
        }
        #expect(pipeline.translator.deadline == Desk.at(Desk.delay))
        for index in UInt32(0)..<200 {
            pipeline.feed(pipeline.translator.sourceOutputRemoved(1_000 + index, at: Desk.at(100 + Int64(index / 2))))
        }
        pipeline.feed(pipeline.translator.timerExpired(at: Desk.at(Desk.delay)))
        #expect(pipeline.commands.isEmpty)
        #expect(pipeline.state.playback == .playing)
        #expect(pipeline.translator.deadline == nil)
        #expect(pipeline.translator.activeCalls.isEmpty)
    }

    @Test("200 captures of 200 applications counted, then closed but one: still paused; the last one's end resumes")
    func floodThatCounts() {
        var pipeline = Pipeline(Pipeline.playing)
        for index in UInt32(0)..<200 {
            let capture = Desk.chromium(1_000 + index, client: 500 + index)
            pipeline.feed(pipeline.translator.sourceOutputChanged(capture, at: Desk.at(Int64(index))))
        }
        // The timer goes off at each deadline in turn, as the owner re-arms it; all 200 count by the last one.
        while let deadline = pipeline.translator.deadline {
            pipeline.feed(pipeline.translator.timerExpired(at: deadline))
        }
        #expect(pipeline.translator.activeCalls.count == 200)
        #expect(pipeline.state.interruptions.count == 200)
        for index in UInt32(0)..<199 {
            pipeline.feed(pipeline.translator.sourceOutputRemoved(1_000 + index, at: Desk.at(5_000)))
        }
        #expect(pipeline.state.interruptions == [.microphoneCapture(client: 699)])
        #expect(pipeline.state.playback == .paused(.interruption))
        pipeline.feed(pipeline.translator.sourceOutputRemoved(1_199, at: Desk.at(6_000)))
        #expect(pipeline.commands == [.fadeOutAndCork, .uncork, .clearServerMute])
        #expect(pipeline.state.playback == .playing)
        #expect(pipeline.translator.activeCalls.isEmpty)
    }

    @Test("A recorder of a monitor moved to the microphone by the server (its sink unplugged) is still no call")
    func monitorRecorderMovedToMicrophone() {
        var pipeline = Pipeline(Pipeline.playing)
        let recorder = SourceOutputSnapshot(index: 60, sourceIndex: 2, mediaRole: nil, clientIndex: 40,
                                            applicationName: "parec")
        pipeline.feed(pipeline.translator.sourceOutputChanged(recorder, at: Desk.at(0)))
        // PulseAudio 16: SOURCE REMOVE of the monitor, then the recorder described on the default source.
        pipeline.feed(pipeline.translator.sourceRemoved(2, at: Desk.at(1_000)))
        var moved = recorder
        moved.sourceIndex = 1
        pipeline.feed(pipeline.translator.sourceOutputChanged(moved, at: Desk.at(1_001)))
        #expect(pipeline.translator.callExclusion(of: moved) == .recordsOutput)
        #expect(pipeline.translator.deadline == nil)
        pipeline.feed(pipeline.translator.timerExpired(at: Desk.at(5_000)))
        #expect(pipeline.commands.isEmpty)
        // A new capture with that index later (the server reuses none while it lives, but a new server may) is
        // judged afresh once the old one was removed.
        pipeline.feed(pipeline.translator.sourceOutputRemoved(60, at: Desk.at(6_000)))
        pipeline.feed(pipeline.translator.sourceOutputChanged(moved, at: Desk.at(7_000)))
        #expect(pipeline.translator.callExclusion(of: moved) == nil)
    }
}
