// Status of inferred calls (issue 20): `earshot status --json` lists active sources as `microphone#N` beside the others
// and the ones the user overruled (rule 18); the human status groups sources by kind.
@testable import EarshotService
import EarshotCore
import Testing

@Suite("Status of inferred calls")
struct CallStatusTests {
    static func report(_ rules: PlayerState) -> PlayerReport {
        PlayerReport(
            rules: rules, paths: ["/music/a.mp3"], queueGeneration: 1, metadata: nil, positionMilliseconds: 1_000,
            durationMilliseconds: 60_000,
            output: PlayerReport.Output(sinkName: "headphones", streamOpen: true, underruns: 0, serverUnderflows: 0,
                                        serverName: "PulseAudio 16.1", realtime: nil, realtimeThread: nil),
            handling: HandlingRecord())
    }

    @Test("A call from a microphone capture and a phone stream: both active, listed by kind")
    func activeByKind() throws {
        let rules = PlayerState(
            playback: .paused(.interruption),
            interruptions: [.microphoneCapture(client: 5), .triggerStream(index: 12), .microphoneCapture(client: 8)],
            resumeIntent: .afterInterruption(since: Moment(milliseconds: 0)),
            queue: QueueCursor(trackCount: 1, index: 0))
        let status = Self.report(rules).status
        #expect(status["activeInterruptions"] as? [String] == ["microphone#5", "microphone#8", "stream#12"])
        #expect(status["overruledInterruptions"] as? [String] == [])
        let text = StatusText.render(status)
        #expect(text.contains("interruptions: call from a microphone capture (microphone#5, microphone#8), "
            + "phone-role stream (stream#12)"), "\(text)")
        #expect(!text.contains("overruled"))
    }

    @Test("Rule 18 overruled a capture: playing, nothing active, the capture shown as overruled")
    func overruled() throws {
        var rules = PlayerState(
            playback: .playing, queue: QueueCursor(trackCount: 1, index: 0),
            stream: StreamCondition(isOpen: true, isCorked: false))
        _ = rules.apply(.interruptionBegan(.microphoneCapture(client: 5), at: Moment(milliseconds: 0)))
        _ = rules.apply(.userPlay)
        let status = Self.report(rules).status
        #expect(status["playback"] as? String == "playing")
        #expect(status["activeInterruptions"] as? [String] == [])
        #expect(status["overruledInterruptions"] as? [String] == ["microphone#5"])
        #expect(StatusText.render(status).contains("overruled by play: call from a microphone capture (microphone#5)"))
    }
}
