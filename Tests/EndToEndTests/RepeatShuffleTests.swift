// Repeat and shuffle end to end (issue 24): `earshot serve` driven by the real playerctl (`loop`, `shuffle`) on the
// private session bus, and what the headphones' monitor really played. A track repeated under `loop Track` joins
// itself with no gap (measured as the gapless seam test measures: the longest silence around each seam, 10 ms
// windows), `loop None` lets the queue move on and end; the choices read back through MPRIS and `status`, and survive
// a restart. About 4 s of audio.
#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("Repeat and shuffle through playerctl", .serialized)
struct RepeatShuffleTests {
    /// Each track's length: a LAME-tagged MP3 of exactly this many seconds (a whole number of 440 Hz cycles).
    static let trackSeconds = 1.0

    @Test("playerctl loop Track repeats a track with no gap; loop None moves on; loop and shuffle read back and persist")
    func loopAndShuffleThroughPlayerctl() async throws {
        try await ServiceHarness.run { harness in
            let music = harness.root.appendingPathComponent("music", isDirectory: true)
            let first = try Fixtures.copy(
                try Fixtures.tone(frequency: 440, seconds: Self.trackSeconds), to: music, named: "1 first.mp3")
            let second = try Fixtures.copy(
                try Fixtures.tone(frequency: 660, seconds: Self.trackSeconds), to: music, named: "2 second.mp3")
            // The rounds are measured to 30 ms: fades off, or the first play's fade-in (`fadeMs`) takes that much off
            // the start (EdgesTests measure the fades themselves).
            try harness.writeConfiguration(#"{"fadeMs": 0}"#)
            var service = try await harness.startService(waitForMPRIS: true)
            #expect(try harness.playerctlEarshot(["loop"]) == "None")
            #expect(try harness.playerctlEarshot(["shuffle"]) == "Off")

            try harness.playerctlEarshot(["loop", "Track"])
            #expect(try harness.playerctlEarshot(["loop"]) == "Track")
            #expect(try Self.modes(harness) == ("track", false))

            let recording = try await withMonitorRecorders([TestEnvironment.headphones]) { recorders in
                try harness.earshotChecked(["play", first.path, second.path])
                try await harness.waitForStatus(of: service, "playing the queue") { $0.playback == "playing" }
                // Long enough for the first track to be heard twice and begin a third time.
                try await Task.sleep(for: .milliseconds(2_300))
                try harness.playerctlEarshot(["loop", "None"])
                let end = try await harness.waitForStatus(
                    of: service, "the queue played to its end", timeout: .seconds(30)) { $0.playback == "stopped" }
                #expect(end.lastError == nil, "a track failed: \(end)")
                try await Task.sleep(for: .milliseconds(300))
                return try await stopRecorders(recorders)[0]
            }

            let ranges = recording.audibleRanges()
            #expect(ranges.count == 1, "audible ranges: \(ranges); log:\n\(service.standardError())")
            let heard = try #require(ranges.first)
            let repeated = recording.toneRanges(atFrequency: 440, amplitude: 0.2, within: heard)
            let start = try #require(repeated.first?.lowerBound)
            let seamToSecond = try #require(repeated.last?.upperBound)
            // The decoder may have joined one more round before `loop None` reached it: a whole number of rounds.
            let rounds = ((seamToSecond - start) / Self.trackSeconds).rounded()
            report("rounds of the repeated track heard", rounds, unit: "")
            #expect(rounds >= 2, "the first track played \(seamToSecond - start) s")
            #expect(abs(seamToSecond - start - rounds * Self.trackSeconds) <= 0.03,
                    "the first track played \(seamToSecond - start) s, not \(rounds) rounds")
            var worst = 0.0
            for round in 1..<Int(rounds) {
                let seam = start + Double(round) * Self.trackSeconds
                worst = max(worst, recording.longestSilence(within: (seam - 0.1)..<(seam + 0.1)))
            }
            report("longest silence at the seams of a repeated track", worst * 1000)
            #expect(worst <= 0.005, "\(worst * 1000) ms of silence at a seam of the repeated track")
            let anySilence = recording.longestSilence(within: heard)
            #expect(anySilence <= 0.005, "\(anySilence * 1000) ms of silence inside the music")
            // After `loop None`, the second track followed once, for its length, and the queue ended.
            let next = recording.toneRanges(atFrequency: 660, amplitude: 0.2, within: heard)
            let nextStart = try #require(next.first?.lowerBound)
            let nextEnd = try #require(next.last?.upperBound)
            #expect(abs(nextStart - seamToSecond) <= 0.03, "the second track began \(nextStart - seamToSecond) s late")
            #expect(abs(nextEnd - nextStart - Self.trackSeconds) <= 0.03,
                    "the second track played \(nextEnd - nextStart) s")

            try harness.playerctlEarshot(["loop", "Playlist"])
            try harness.playerctlEarshot(["shuffle", "On"])
            #expect(try harness.playerctlEarshot(["loop"]) == "Playlist")
            #expect(try harness.playerctlEarshot(["shuffle"]) == "On")
            #expect(try Self.modes(harness) == ("queue", true))
            #expect(try harness.earshotChecked(["status"]).standardOutput.contains("repeat queue, shuffle on"))

            // Kept in the saved state: a restart shows both, through MPRIS too.
            #expect(await harness.stopService(service) == 0)
            service = try await harness.startService(waitForMPRIS: true)
            #expect(try Self.modes(harness) == ("queue", true))
            #expect(try harness.playerctlEarshot(["loop"]) == "Playlist")
            #expect(try harness.playerctlEarshot(["shuffle"]) == "On")

            // The CLI's verbs, read back through MPRIS.
            try harness.earshotChecked(["repeat", "off"])
            try harness.earshotChecked(["shuffle", "off"])
            #expect(try harness.playerctlEarshot(["loop"]) == "None")
            #expect(try harness.playerctlEarshot(["shuffle"]) == "Off")
            #expect(try Self.modes(harness) == ("off", false))
            #expect(await harness.stopService(service) == 0)
        }
    }

    /// `repeat` and `shuffle` of the service's status, as the control socket reports them.
    private static func modes(_ harness: ServiceHarness) throws -> (String, Bool) {
        let status = try harness.requestChecked(["command": "status"])["status"] as? [String: Any] ?? [:]
        return (status["repeat"] as? String ?? "missing", status["shuffle"] as? Bool ?? false)
    }
}
