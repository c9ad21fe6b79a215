// How long the player's serial owner takes to handle one input (issue 12), end to end: `slowestHandlingMicros` in
// `earshot status --json` is present, a non-negative integer, and never goes down, while `earshot serve` plays,
// after a pause and after an unplug. The values seen are reported, so a regression in the owner's waiting is visible.

import Foundation
import Testing
import EarshotTestSupport

@Suite("earshot serve: the slowest handling of one input", .serialized)
struct HandlingTimeTests {
    @Test("slowestHandlingMicros is reported while playing, after a pause and after an unplug, and never goes down")
    func slowestHandlingIsReported() async throws {
        try await ServiceHarness.run { harness in
            defer { try? ServerControl.restoreStandardLayout() }
            let track = try harness.privatePositionTrack()
            let service = try await harness.startService()
            let started = try harness.status()
            try harness.earshotChecked(["play", track.path])
            let playing = try await harness.waitForStatus(of: service, "1 s of the track was heard") {
                $0.playback == "playing" && $0.positionMs >= 1000
            }
            try harness.earshotChecked(["pause"])
            let paused = try await harness.waitForStatus(of: service, "paused by the user") {
                $0.playback == "paused" && $0.pauseReason == "user"
            }
            try harness.earshotChecked(["resume"])
            try await harness.waitForStatus(of: service, "playing again") {
                $0.playback == "playing" && $0.positionMs >= paused.positionMs + 300
            }
            try ServerControl.unplug(sink: TestEnvironment.headphones)
            let unplugged = try await harness.waitForStatus(of: service, "paused for the unplug") {
                $0.playback == "paused" && $0.pauseReason == "outputLost"
            }
            let seen = [started, playing, paused, unplugged].map(\.slowestHandlingMicros)
            #expect(seen.allSatisfy { $0 >= 0 }, "slowestHandlingMicros: \(seen)")
            #expect(seen == seen.sorted(), "slowestHandlingMicros went down: \(seen)")
            report("slowest handling of one input, while playing", Double(playing.slowestHandlingMicros) / 1000)
            report("slowest handling of one input, after a pause", Double(paused.slowestHandlingMicros) / 1000)
            report("slowest handling of one input, after an unplug", Double(unplugged.slowestHandlingMicros) / 1000)
            let status = await harness.stopService(service)
            #expect(status == 0, "earshot serve exited with \(status)")
        }
    }
}
