// Fades and ducking end to end (issue 22): recorded off the headphones' monitor while `earshot play` plays the
// position sweep. A fade shows as the music's level falling (or rising) over about `fadeMs` instead of within one
// window; ducking as the level dropping by the duck level while a screen reader's speech plays, and coming back.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

extension PolitenessTests {
    /// The fade length the tests configure (the default).
    static let fadeSeconds = 0.050

    /// A pause's and a resume's edges, read in 2.5 ms windows after `from`: where the level, falling, was last at 90 %
    /// of the music's (`steady`, an RMS), where it first was under 5 % (`quiet`), where it first was over 5 % again
    /// (`back`) and where it first reached 90 % again (`full`).
    struct LevelEdges: CustomStringConvertible {
        var falling: Double
        var quiet: Double
        var back: Double
        var full: Double

        var description: String {
            String(format: "fall %.4f-%.4f s, rise %.4f-%.4f s", falling, quiet, back, full)
        }
    }

    /// The edges of the first pause after `from` (see `LevelEdges`); nil when the recording ends first.
    func levelEdges(in recording: Recording, from: Double, steady: Double) -> LevelEdges? {
        let window = 0.0025
        let end = recording.duration - window
        func level(_ time: Double) -> Double { recording.rms(in: time..<(time + window)) }
        var time = from
        while time < end, level(time) > steady * 0.05 { time += window }
        let quiet = time
        var falling = quiet
        while falling > from, level(falling - window) < steady * 0.9 { falling -= window }
        while time < end, level(time) <= steady * 0.05 { time += window }
        let back = time
        while time < end, level(time) < steady * 0.9 { time += window }
        guard time < end else { return nil }
        return LevelEdges(falling: falling - window, quiet: quiet, back: back, full: time)
    }

    /// What of the track was lost (positive) or heard twice (negative) across a faded pause, in seconds: the track
    /// time between a moment at full level before the fall and one after the rise, against the time the music was
    /// heard in between (up to the quiet, and from its end).
    func fadeContinuity(in recording: Recording, _ edges: LevelEdges) throws -> Double {
        let before = edges.falling - 0.015
        let after = edges.full + 0.015
        let first = try #require(recording.trackPosition(atTime: before, positions: Self.positions))
        let last = try #require(recording.trackPosition(atTime: after, positions: Self.positions))
        let heard = (edges.quiet - before) + (after - edges.back)
        return (last - first) - heard
    }

    @Test("11. a user pause fades out over fadeMs, the resume fades in; the track continues where it stopped")
    func pauseAndResumeFade() async throws {
        try await scenario(recording: [TestEnvironment.headphones], fades: true) { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let paused = ContinuousClock.now
            try player.control(["pause"])
            let corked = try await player.waitForStatus("corked after the fade") { $0.corked }
            try await Task.sleep(for: .milliseconds(400))
            try player.control(["resume"])
            _ = try await player.waitForStatus("playing again") { $0.playback == "playing" && !$0.corked }
            try await Task.sleep(for: .milliseconds(600))
            let headphones = try await stop(recorders)[0]

            #expect(corked.playback == "paused" && corked.pauseReason == "user", "\(corked)")
            let pauseTime = headphones.time(of: paused)
            let steady = headphones.rms(in: (pauseTime - 0.300)..<(pauseTime - 0.050))
            let edges = try #require(levelEdges(in: headphones, from: pauseTime - 0.040, steady: steady),
                                     "no pause and resume found")
            let fall = edges.quiet - edges.falling
            let rise = edges.full - edges.back
            report("fade: level fall 90% -> 5%", fall * 1000)
            report("fade: level rise 5% -> 90%", rise * 1000)
            // A hard cut falls within one 2.5 ms window; the fade takes most of fadeMs (from 90 % to 5 % of the
            // amplitude is 85 % of the ramp). The steps are the owner's timer and PipeWire takes a volume once per
            // cycle (21 ms), so a loaded machine stretches the ramp: up to twice fadeMs is still a fade.
            let period = try TestEnvironment.serverPeriodSeconds()
            let longest = 2 * Self.fadeSeconds + period
            #expect(fall >= Self.fadeSeconds * 0.5 && fall <= longest, "the level fell in \(fall * 1000) ms; \(edges)")
            #expect(rise >= Self.fadeSeconds * 0.5 && rise <= longest, "the level rose in \(rise * 1000) ms; \(edges)")
            // Nothing of the track lost or heard twice beyond the ramp: RULES.md's 20 ms, plus PipeWire's period.
            let error = try fadeContinuity(in: headphones, edges)
            report("fade: track lost (+) or repeated (-) across the pause", error * 1000)
            #expect(abs(error) <= 0.020 + period, "\(error * 1000) ms of the track lost; \(edges)")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }
}
