// Stopping `earshot serve` (issue 21): SIGTERM, as systemd sends it, silences the music before the service does
// anything that may wait. Stopping MPRIS waits for its bus thread, and that thread may itself be waiting for the player
// (a D-Bus call in flight, which the player cannot answer while it is stopping): up to the call's 10 s timeout, during
// which a service that corked last kept playing. Here D-Bus calls keep coming while the service is stopped, and the
// headphones' monitor says how long the music went on. The old order waited only when a call slipped in between the
// signal and MPRIS's stop; with the save no longer flushing on the owner that window is narrow, so this bounds the
// silence under calls rather than catching the old order every time.
import EarshotTestSupport
import Foundation
import Testing

@Suite("earshot serve stopping", .serialized)
struct ShutdownTests {
    /// How long after SIGTERM the music may still be heard, in milliseconds: the signal's way to the player (a
    /// dispatch source, the inbox), the cork's to the server, and the monitor's timing (about 20 ms) on a loaded
    /// machine. A service that waits for MPRIS first plays on for up to 10 s.
    private static let heardAfterSignalBound = 150.0

    @Test("SIGTERM while playing, with D-Bus calls waiting for the player: silent at once, then a clean exit")
    func stopSilencesFirst() async throws {
        try await ServiceHarness.run { harness in
            let track = try harness.privatePositionTrack()
            let service = try await harness.startService(waitForMPRIS: true)
            try harness.earshotChecked(["play", track.path])
            try await harness.waitForStatus(of: service, "1 s heard") {
                $0.playback == "playing" && $0.positionMs >= 1_000
            }
            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            // Calls that go through the player and change nothing: SetPosition for a track id that is not current.
            // dbus-send without --print-reply does not wait for the answer, so each lane keeps calls coming.
            let call = "dbus-send --session --type=method_call --dest=org.mpris.MediaPlayer2.earshot "
                + "/org/mpris/MediaPlayer2 org.mpris.MediaPlayer2.Player.SetPosition "
                + "objpath:/org/earshot/none int64:0"
            let lanes = try (0..<3).map { _ in
                try ChildProcess("bash", ["-c", "while :; do \(call) || sleep 0.01; done"],
                                 environment: harness.environment)
            }
            defer { lanes.forEach { $0.kill() } }
            try await Task.sleep(for: .milliseconds(700))
            #expect(try harness.status().playback == "playing", "the calls disturbed the playback")
            let signalled = ContinuousClock.now
            service.signal(SIGTERM)
            try await Task.sleep(for: .milliseconds(1_500))
            lanes.forEach { $0.kill() }
            let recording = try await recorder.stop()
            let sent = recording.time(of: signalled)
            let before = recording.audibleMilliseconds(within: max(0, sent - 0.5)..<sent)
            #expect(before >= 400, "the track was not playing before SIGTERM: \(before) ms heard in the 500 ms before")
            let after = recording.audibleMilliseconds(within: try span(sent, recording.duration, "after the signal"))
            report("SIGTERM: heard after the signal", after)
            #expect(after <= Self.heardAfterSignalBound,
                    "\(after) ms heard after SIGTERM: \(recording.audibleRanges()); log:\n\(service.standardError())")
            // The call in flight may hold the exit for its timeout, never the sound.
            #expect(await service.exit(within: .seconds(20)), "earshot serve did not exit after SIGTERM")
            #expect(service.exitStatus == 0, "exit \(service.exitStatus ?? -1): \(service.standardError())")
        }
    }
}
