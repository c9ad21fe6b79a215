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
    /// The level's measuring window for a fade's edges, in seconds (`levelEdges`).
    static let levelWindow = 0.0025

    /// A pause's and a resume's edges, read in 2.5 ms windows after `from`: where the level, falling, was last at 90 %
    /// of the music's (`steady`, an RMS), where it first was under 5 % (`quiet`), where it first was over 5 % again
    /// (`back`) and where it first reached 90 % again (`full`).
    struct LevelEdges: CustomStringConvertible {
        /// The last moment at 90 % before the fall, in recording seconds.
        var falling: Double
        /// The first moment under 5 %.
        var quiet: Double
        /// The first moment over 5 % again.
        var back: Double
        /// The first moment at 90 % again.
        var full: Double

        /// The four moments, for failure messages.
        var description: String {
            String(format: "fall %.4f-%.4f s, rise %.4f-%.4f s", falling, quiet, back, full)
        }
    }

    /// The edges of the first pause after `from` (see `LevelEdges`); nil when the recording ends first.
    func levelEdges(in recording: Recording, from: Double, steady: Double) -> LevelEdges? {
        let window = Self.levelWindow
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
            // cycle (21 ms), so a loaded machine stretches the ramp: up to twice fadeMs is still a fade. The rise
            // can also lose up to a cycle at its start: the ramp starts when the server acknowledges the uncork, and
            // PipeWire may mix the stream's first audio a cycle after that, part-way up the ramp (in one CI run,
            // lanes side by side: 22.5 ms on 1.6.9, 27.5 ms on 0.3.65, 45 ms on PulseAudio and PipeWire 1.4.2;
            // 42.5-45 ms on each alone). So on PipeWire the rise is at least the ramp's 85 % less a period and two
            // measuring windows (16.2 ms), which a ramp under about 19 ms fails; a cut fails everywhere.
            let period = try TestEnvironment.serverPeriodSeconds()
            let longest = 2 * Self.fadeSeconds + period
            let window = Self.levelWindow
            let shortestRise = max(3 * window,
                                   min(Self.fadeSeconds * 0.5, Self.fadeSeconds * 0.85 - period - 2 * window))
            #expect(fall >= Self.fadeSeconds * 0.5 && fall <= longest, "the level fell in \(fall * 1000) ms; \(edges)")
            #expect(rise >= shortestRise && rise <= longest, "the level rose in \(rise * 1000) ms; \(edges)")
            // Nothing of the track lost or heard twice beyond the ramp: RULES.md's 20 ms, plus PipeWire's period.
            let error = try fadeContinuity(in: headphones, edges)
            report("fade: track lost (+) or repeated (-) across the pause", error * 1000)
            #expect(abs(error) <= 0.020 + period, "\(error * 1000) ms of the track lost; \(edges)")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }
}

extension PolitenessTests {
    /// The duck level the tests expect (the default), in decibels.
    static let duckDecibels = -12.0
    /// The duck's ramp the tests expect (the default `duckRampMilliseconds`), in seconds.
    static let duckRampSeconds = 0.080

    /// Speech by espeak-ng, as a WAV in `scratch` (a screen reader's voice, a few words).
    func speech(_ words: String, in scratch: URL) throws -> URL {
        let file = scratch.appendingPathComponent("speech-\(words.count).wav")
        let made = try ChildProcess("espeak-ng", ["-w", file.path, words])
        #expect(made.waitForExit(timeout: .seconds(20)) && made.exitStatus == 0,
                "espeak-ng failed: \(made.standardError())")
        return file
    }

    /// The music's level (dB, RMS of the sweep on the headphones' monitor) in `range` of `recording`.
    func musicLevel(_ recording: Recording, _ range: Range<Double>) -> Double {
        Recording.dBFS(magnitude: recording.rms(in: range))
    }

    /// Where on `recording` (the speakers, which only the duck streams play on) the first and last sound after
    /// `after` are.
    func heardSpan(on recording: Recording, after: Double) throws -> Range<Double> {
        let start = try #require(recording.firstAudibleTime(after: after), "the duck stream was not heard")
        let end = try #require(recording.lastAudibleTime(), "the duck stream was not heard")
        return start..<end
    }

    @Test("12. a screen reader's speech (a11y) on another sink ducks the music by duckLevel; it comes back after")
    func screenReaderDucks() async throws {
        try await scenario { scratch, track, recorders in
            let words = try speech("Earshot lowers the music while I speak", in: scratch)
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let (spoken, spokenDate) = (ContinuousClock.now, Date())
            let reader = try ServerControl.play(words, sink: TestEnvironment.speakers, role: "a11y")
            defer { reader.kill() }
            let decided = try await player.duckDecided(sent: spoken, sentDate: spokenDate)
            try await Task.sleep(for: .milliseconds(700))
            let during = try player.status()
            let serverVolume = try player.stream()?.volumePercent
            #expect(await reader.exit(within: .seconds(10)), "the speech did not end")
            try await Task.sleep(for: .milliseconds(1500))
            let after = try player.status()
            let (headphones, speakers) = try await { let all = try await stop(recorders); return (all[0], all[1]) }()

            // Status and MPRIS show the user's volume, the server the ducked one (-12 dB is 63 % on its cubic scale).
            #expect(during.playback == "playing" && during.volume == 100, "\(during)")
            #expect(after.playback == "playing" && after.volume == 100, "\(after)")
            #expect((55...70).contains(serverVolume ?? 0), "the server's volume while ducked: \(serverVolume ?? -1) %")
            // The speech's span on the speakers' recording, moved onto the headphones' (the two recorders start at
            // different moments: under load, tenths of a second apart), through the moment paplay was started.
            let heardVoice = try heardSpan(on: speakers, after: speakers.time(of: spoken) - 0.05)
            let shift = headphones.time(of: spoken) - speakers.time(of: spoken)
            let voice = (heardVoice.lowerBound + shift)..<(heardVoice.upperBound + shift)
            // Well before paplay was started: its stream ducks from its creation, which can come before the speech's
            // first audible sound (a soft consonant), and a monitor's clock can be some tens of ms off the wall's.
            let launched = headphones.time(of: spoken)
            let full = musicLevel(headphones, (launched - 0.700)..<(launched - 0.200))
            // The ramp starts at Earshot's decision. What comes before it (the speech's stream reaching the server,
            // the notice reaching Earshot) is the server's and the scheduler's, stretched by a loaded machine
            // (reported below, not bounded). The level is judged once the ramp and a server period are over.
            let period = try TestEnvironment.serverPeriodSeconds()
            let rampEnd = headphones.time(of: decided) + Self.duckRampSeconds + period
            let decidedAfterVoice = headphones.time(of: decided) - voice.lowerBound
            report("duck (a11y): Earshot's decision after the speech's first sound", decidedAfterVoice * 1000)
            // A generous bound on the way there, which is the server's and the scheduler's (490 ms at a load of 20):
            // a translator or a rule that noticed the stream a second late still fails.
            #expect(decidedAfterVoice <= 1.0, "decided \(decidedAfterVoice * 1000) ms after the speech's first sound")
            let ducked = musicLevel(headphones, try span(max(voice.lowerBound, rampEnd) + 0.050,
                                                         voice.upperBound - 0.050, "speech after the ramp"))
            let restoredEnd = min(voice.upperBound + 0.700, headphones.duration - 0.020)
            let restoredSpan = try span(voice.upperBound + 0.300, restoredEnd, "a recording after the speech")
            #expect(restoredSpan.upperBound - restoredSpan.lowerBound >= 0.200, "recorded too little after the speech")
            let restored = musicLevel(headphones, restoredSpan)
            report("duck (a11y): level drop", full - ducked, unit: "dB")
            report("duck (a11y): level after it, against before", restored - full, unit: "dB")
            #expect(abs((ducked - full) - Self.duckDecibels) <= 1.5, "ducked by \(ducked - full) dB")
            #expect(abs(restored - full) <= 1.5, "restored to \(restored - full) dB of the level before")
            // The ramp: the music is within 1.5 dB of the ducked level by the ramp's end, counted from Earshot's
            // decision (the 20 ms window read, and the monitor's mapping onto the wall clock, about 20 ms, allowed).
            var time = min(voice.lowerBound, headphones.time(of: decided))
            while time < voice.upperBound, musicLevel(headphones, time..<(time + 0.010)) > ducked + 1.5 {
                time += 0.005
            }
            report("duck (a11y): ducked after the speech's first sound", (time - voice.lowerBound) * 1000)
            report("duck (a11y): ducked after Earshot's decision", (time - headphones.time(of: decided)) * 1000)
            #expect(time <= rampEnd + 0.040,
                    "ducked \((time - headphones.time(of: decided)) * 1000) ms after the decision")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    @Test("13. a notification (event) ducks too; overlapping ducks restore after the last; a call during a duck pauses")
    func notificationsOverlapAndCalls() async throws {
        try await scenario { scratch, track, recorders in
            let words = try speech("Two things at once, and then a call", in: scratch)
            let chime = try Fixtures.toneWAV(frequency: 1500, seconds: 0.6)
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let reader = try ServerControl.play(words, sink: TestEnvironment.speakers, role: "a11y")
            defer { reader.kill() }
            try await Task.sleep(for: .milliseconds(300))
            let notification = try ServerControl.play(chime, sink: TestEnvironment.speakers, role: "event")
            defer { notification.kill() }
            #expect(await notification.exit(within: .seconds(10)), "the notification did not end")
            // The notification is over, the speech is not: still ducked. Then a call on the headphones.
            let stillDucked = try player.stream()?.volumePercent
            let call = try placeCall(seconds: 1)
            defer { call.kill() }
            let held = try await player.waitForStatus("paused for the call during the duck") {
                $0.pauseReason == "interruption"
            }
            #expect(await reader.exit(within: .seconds(10)), "the speech did not end")
            _ = try await statuses(of: player, during: call)
            let resumed = try await player.waitForStatus("playing after the call") { $0.playback == "playing" }
            try await Task.sleep(for: .milliseconds(500))
            let restored = try player.stream()?.volumePercent
            _ = try await stop(recorders)

            #expect((55...70).contains(stillDucked ?? 0),
                    "after the notification, during the speech: \(stillDucked ?? -1) %")
            #expect(held.volume == 100 && resumed.volume == 100, "\(held) / \(resumed)")
            #expect(restored == 100, "the server's volume after every duck ended: \(restored ?? -1) %")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }
}
