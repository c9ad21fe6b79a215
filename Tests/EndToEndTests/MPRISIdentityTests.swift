// WirePlumber 0.5.11 and later pause a player before relinking its audio away from a removed device: it calls
// MPRIS `Pause` on the player whose bus name is owned by the process (or a parent of the process) that owns the
// stream (`application.process.id`), and holds the relink until the reply plus a second. That only reaches Earshot
// if its MPRIS name and its sink input belong to one process, and only helps if the reply comes once the stream is
// really corked. Both are checked here on the real server and a private session bus.
import EarshotTestSupport
import Foundation
import Testing

@Suite("MPRIS and the audio stream belong to one process", .serialized)
struct MPRISIdentityTests {
    @Test("the MPRIS name's owner is the pid that owns our sink input; Pause replies once the stream is corked")
    func busNameOwnerOwnsTheStream() async throws {
        try await ServiceHarness.run { harness in
            let track = try harness.privatePositionTrack()
            // The reply's order against the cork is what is checked: fades off, or a user's Pause would still be
            // fading out (`fadeMs`) when playerctl returns (a session manager's Pause corks at once, faded or not).
            try harness.writeConfiguration(#"{"fadeMs": 0}"#)
            let service = try await harness.startService(waitForMPRIS: true)
            try harness.earshotChecked(["play", track.path])
            try await harness.waitForStatus(of: service, "playing with a stream") {
                $0.playback == "playing" && $0.streamOpen
            }
            let input = try #require(try ServerControl.sinkInputs(ofProcess: service.processIdentifier).first,
                                     "no sink input of earshot serve (pid \(service.processIdentifier))")

            let reply = try ProcessRunner.run("dbus-send", [
                "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus.GetConnectionUnixProcessID", "string:org.mpris.MediaPlayer2.earshot",
            ], environment: harness.environment, timeout: .seconds(10)).requireSuccess().standardOutput
            // The answer's last line is `   uint32 PID`.
            let owner = reply.split(whereSeparator: \.isWhitespace).last.flatMap { Int32($0) }
            #expect(owner == service.processIdentifier, "bus name owner: \(reply)")
            #expect(input.processID == owner, "sink input properties: \(input.properties)")

            // playerctl returns when Earshot has replied, and the reply waits for the server's cork
            // acknowledgement: PulseAudio lists the stream as corked at once; pipewire-pulse updates the list a
            // little later (PulseIntegrationTests), so it gets a second.
            try harness.playerctlEarshot(["pause"])
            let grace: Duration = try TestEnvironment.soundServerKind() == .pipeWire ? .seconds(1) : .zero
            let deadline = ContinuousClock.now + grace
            var paused = try ServerControl.sinkInputs(ofProcess: service.processIdentifier).first
            while paused?.corked != true, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                paused = try ServerControl.sinkInputs(ofProcess: service.processIdentifier).first
            }
            #expect(paused?.corked == true, "after MPRIS Pause returned: \(String(describing: paused))")
            #expect(await harness.stopService(service) == 0)
        }
    }
}
