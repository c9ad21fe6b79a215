// The stall watchdog end to end (issue 6, item 3): when the server stops asking for audio without telling us
// anything (PipeWire can drop a device that way), a playing Earshot pauses with its output lost and does not
// start again by itself when the server wakes up.
import EarshotTestSupport
import Foundation
import Testing

@Suite("Stall watchdog", .serialized)
struct WatchdogTests {
    @Test("a server that stops asking for audio pauses the player; it stays paused when the server wakes up")
    func frozenServer() async throws {
        try await EarshotPlayer.whilePlaying(seconds: 20, heard: 1500) { player, scratch in
            // SIGSTOP the process that runs the audio graph: no callback, no error, just no more requests.
            try SoundServerControl.run("freeze")
            defer { try? SoundServerControl.run("thaw") }
            try await Task.sleep(for: .milliseconds(2500))
            try SoundServerControl.run("thaw")
            let paused = try await player.waitForStatus("paused by the watchdog") {
                $0.playback == "paused" && $0.pauseReason == "outputLost"
            }
            #expect(player.standardError.contains("output watchdog=stalled"), "\(player.standardError)")
            #expect(paused.outputLostReason == "stalled", "\(paused)")
            // Awake again, the server must not bring the music back by itself.
            try await Task.sleep(for: .milliseconds(1500))
            let later = try player.status()
            #expect(later.playback == "paused" && later.positionMs == paused.positionMs, "\(later)")
            player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
        }
    }
}
