// Earshot's own detection of phone calls (issue 6, item 2): on PipeWire nothing else tells it about a call, so
// it watches for `media.role=phone` streams. With `"interruptionScope": "sameSink"` (the same-sink policy of
// PulseAudio's module-role-cork) a call on the other sink is none of its business; a call that moves onto our sink
// interrupts; a muted call no longer does; when it ends, the music comes back. Runs on every server. The default
// scope, the whole session, is SessionCallTests'.
import EarshotTestSupport
import Foundation
import Testing

@Suite("Phone streams seen by Earshot itself", .serialized)
struct TriggerStreamTests {
    @Test("scope sameSink: a call on the other sink is ignored; moved onto ours it interrupts; muted or ended, no more")
    func callsOnEitherSink() async throws {
        try await EarshotPlayer.whilePlaying(
            seconds: 30, heard: 1000, configuration: #"{"interruptionScope": "sameSink"}"#
        ) { player, scratch in

            let seconds = 12.0
            let call = try ServerControl.startPhoneCall(
                wav: try Fixtures.phoneCall(seconds: seconds), sink: TestEnvironment.speakers,
                bufferSeconds: seconds + 1)
            defer { call.kill() }
            let phone = try await phoneStream(of: call)
            // A call on the speakers while we play on the headphones: keep playing.
            try await Task.sleep(for: .milliseconds(1500))
            let ignored = try player.status()
            #expect(ignored.playback == "playing" && ignored.activeInterruptions.isEmpty, "\(ignored)")

            // The call comes to our sink: that is an interruption of our own detection ("stream#N").
            try await ServerControl.move(sinkInput: phone, to: TestEnvironment.headphones)
            let paused = try await player.waitForStatus("paused for the call moved onto our sink") {
                $0.pauseReason == "interruption" && $0.activeInterruptions.contains("stream#\(phone)")
            }
            // The position kept is read once the server has acknowledged the cork. Before that, status gives the
            // stream's clock run on to the cork asked for, which a graph starved on a loaded machine may not have
            // reached: 8503 ms read before the acknowledgement, 8114 ms after the resume, once at a load of 20. That
            // step back is the product's, reported here and listed in docs/testing.md, not hidden.
            let held = try await player.waitForStatus("paused and corked for the call") { $0.corked }
            report("call moved onto our sink: paused position minus the one kept once corked",
                   Double(paused.positionMs - held.positionMs))
            #expect(held.playback == "paused")

            // Muted, the call no longer counts as a source of ours. PulseAudio's module-role-cork keeps its own
            // cork request until the call stream goes away, so only PipeWire must resume at this point.
            _ = try ServerControl.pactl(["set-sink-input-mute", "\(phone)", "1"])
            let afterMute = try await player.waitForStatus("the muted call is no longer our source") {
                !$0.activeInterruptions.contains("stream#\(phone)")
            }
            if try TestEnvironment.soundServerKind() == .pipeWire {
                #expect(afterMute.playback == "playing", "\(afterMute)")
            }

            // The call ends: on both servers the music comes back by itself (it was playing when it began).
            call.kill()
            let resumed = try await player.waitForStatus("playing again after the call") {
                $0.playback == "playing" && $0.activeInterruptions.isEmpty
            }
            #expect(resumed.positionMs >= held.positionMs)
            player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
        }
    }

    /// The sink-input index of the paplay process `call`, once it exists.
    private func phoneStream(of call: ChildProcess) async throws -> Int {
        var index: Int?
        try await waitUntil("the phone stream exists", timeout: .seconds(10)) {
            index = (try? ServerControl.sinkInputs(ofProcess: call.processIdentifier))?.first?.index
            return index != nil
        }
        return try #require(index)
    }
}
