// Single and consume end to end (rules 35-37, issue 37): mpc sets them on a playing `earshot serve`, a real track's end
// stops the player where single says (our stream corked on the server), consume takes the tracks left out of the queue,
// an idle client hears `options`, and a restart keeps both.
import EarshotTestSupport
import Foundation
import Testing

@Suite("MPD single and consume", .serialized)
struct MPDPlayModesTests {
    @Test("mpc single once/on and consume on: the player stops after the track, consumed tracks leave the queue")
    func singleAndConsumeThroughMPC() async throws {
        try await MPDClientTests.withPlayingService { harness, service, port, socket in
            try await LibraryTests.waitForTracks(2, harness)
            // A third entry: a.mp3, b.mp3, b.mp3.
            try MPDClientTests.mpc(socket, port, ["add", "b.mp3"])
            try await harness.waitForStatus(of: service, "three tracks queued") { $0.trackCount == 3 }

            // Consume: next takes the first track out, and the next plays at its place.
            try MPDClientTests.mpc(socket, port, ["consume", "on"])
            #expect(try MPDClientTests.status(harness)["consume"] as? Bool == true)
            #expect(try MPDClientTests.mpc(socket, port, ["status"]).contains("consume: on"))
            try MPDClientTests.mpc(socket, port, ["next"])
            let consumed = try await harness.waitForStatus(of: service, "the first track consumed") {
                $0.trackCount == 2 && $0.playback == "playing"
            }
            #expect(consumed.trackIndex == 0, "\(consumed)")
            let left = try MPDClientTests.mpc(socket, port, ["playlist"]).split(separator: "\n")
            #expect(left.count == 2 && left.allSatisfy { $0.hasSuffix("b.mp3") }, "\(left)")
            try MPDClientTests.mpc(socket, port, ["consume", "off"])

            // Oneshot (mpc's `once`): the track plays to its end, the player stops at the next, single is off again.
            try MPDClientTests.mpc(socket, port, ["single", "once"])
            #expect(try MPDClientTests.status(harness)["single"] as? String == "oneshot")
            #expect(try MPDClientTests.mpc(socket, port, ["status"]).contains("single: once"))
            try MPDClientTests.mpc(socket, port, ["seek", "28"])
            // Stopped, and corked once the server acknowledges it (the status says stopped a moment before).
            let stopped = try await harness.waitForStatus(of: service, "stopped and corked after the oneshot track") {
                $0.playback == "stopped" && $0.corked
            }
            #expect(stopped.trackIndex == 1 && stopped.corked, "\(stopped)")
            #expect(try ServerControl.sinkInputs().allSatisfy(\.corked), "a stream still runs after single stopped")
            #expect(try MPDClientTests.status(harness)["single"] as? String == "off")

            // Single on: the last track's end is the queue's end, and single stays on.
            try MPDClientTests.mpc(socket, port, ["single", "on"])
            try MPDClientTests.mpc(socket, port, ["play"])
            let replayed = try await harness.waitForStatus(of: service, "playing the second track") {
                $0.playback == "playing"
            }
            #expect(replayed.trackIndex == 1, "\(replayed)")
            try MPDClientTests.mpc(socket, port, ["seek", "28"])
            let ended = try await harness.waitForStatus(of: service, "stopped and corked at the queue's end") {
                $0.playback == "stopped" && $0.corked
            }
            #expect(ended.trackIndex == 0 && ended.corked, "\(ended)")
            #expect(try MPDClientTests.status(harness)["single"] as? String == "on")

            // An idle client hears `options` when another client changes a mode.
            let script = """
                import socket, subprocess, sys
                client = socket.socket(socket.AF_UNIX)
                client.settimeout(30)
                client.connect(sys.argv[1])
                replies = client.makefile("rb")
                assert replies.readline().startswith(b"OK MPD ")
                client.sendall(b"idle options\\n")
                subprocess.run(["mpc", "-h", sys.argv[1], "consume", "on"], check=True, capture_output=True)
                print(replies.readline().decode(), replies.readline().decode())
                """
            let idle = try ProcessRunner.run("/usr/bin/python3", ["-c", script, socket], timeout: .seconds(30))
                .requireSuccess().standardOutput
            #expect(idle.contains("options"), "\(idle)")

            // Kept across a restart, as repeat and shuffle are.
            #expect(await harness.stopService(service) == 0)
            let restarted = try await harness.startService()
            let modes = try MPDClientTests.status(harness)
            #expect(modes["single"] as? String == "on" && modes["consume"] as? Bool == true, "\(modes)")
            #expect(try harness.earshotChecked(["status"]).standardOutput.contains("single on, consume on"))
            try harness.earshotChecked(["single", "off"])
            try harness.earshotChecked(["consume", "off"])
            let off = try MPDClientTests.mpc(socket, port, ["status"])
            #expect(off.contains("single: off") && off.contains("consume: off"), "\(off)")
            #expect(await harness.stopService(restarted) == 0)
        }
    }
}
