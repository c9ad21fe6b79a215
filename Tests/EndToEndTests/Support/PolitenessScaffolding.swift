// PolitenessTests' scaffolding: a scenario with the server to itself and both sinks recorded, starting the player,
// placing a call, reading statuses, and the analysis of what the monitors heard.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

extension PolitenessTests {
    /// Runs `body` with the server to itself, a scratch folder, and both sinks recorded from before the player
    /// starts, with fades off unless `fades`; `body` gets the scratch folder, the track (the position sweep as
    /// `format`, under its distinctive name) and the recorders (headphones, speakers).
    func scenario(
        recording sinks: [String] = [TestEnvironment.headphones, TestEnvironment.speakers],
        format: Fixtures.Format = .mp3, fades: Bool = false,
        _ body: (URL, URL, [MonitorRecorder]) async throws -> Void
    ) async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                // These scenarios measure where the music stops and starts to a millisecond, which a fade blurs by
                // design: fades are off unless asked for (EdgesTests measures them, and continuity across them).
                if !fades { try writeConfiguration(#"{"fadeMs": 0}"#, in: scratch) }
                let track = try Fixtures.copy(
                    try Fixtures.positionTrack(seconds: Self.trackSeconds, format: format), to: scratch,
                    named: PrivateNames.fileName(format))
                try await withMonitorRecorders(sinks) { recorders in
                    try await body(scratch, track, recorders)
                }
            }
        }
    }

    /// Starts earshot on `track` and waits until `heardBeforeEvent` ms of it were played on headphones.
    func startPlaying(_ track: URL, in scratch: URL) async throws -> EarshotPlayer {
        let player = try EarshotPlayer(playing: [track], in: scratch)
        do {
            let status = try await player.waitUntilHeard(milliseconds: Self.heardBeforeEvent)
            #expect(status.sink == TestEnvironment.headphones, "\(status)")
        } catch {
            player.kill()
            throw error
        }
        return player
    }

    /// Places a phone call of `seconds` on headphones (paplay, `media.role=phone`, the whole file buffered).
    func placeCall(seconds: Double = callSeconds) throws -> ChildProcess {
        try ServerControl.startPhoneCall(wav: try Fixtures.phoneCall(seconds: seconds), bufferSeconds: seconds + 1)
    }

    /// Polls the status every 200 ms while `call`'s stream exists, then waits for the call to end; returns what it
    /// saw. A status counts only if the call's stream still existed after it was read: paplay removes its stream
    /// a little before it exits, and Earshot may rightly resume in between.
    func statuses(
        of player: EarshotPlayer, during call: ChildProcess, timeout: Duration = .seconds(20)
    ) async throws -> [EarshotStatus] {
        var seen: [EarshotStatus] = []
        let deadline = ContinuousClock.now + timeout
        while call.isRunning && ContinuousClock.now < deadline {
            let status = try player.status()
            guard try !ServerControl.sinkInputs(ofProcess: call.processIdentifier).isEmpty else { break }
            seen.append(status)
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(await call.exit(within: .seconds(5)), "the phone call did not end: \(call.standardError())")
        return seen
    }

    /// Stops the recorders and returns their recordings in order.
    func stop(_ recorders: [MonitorRecorder]) async throws -> [Recording] {
        try await stopRecorders(recorders)
    }

    /// The dial tone heard on `recording` after the wall-clock `instant`: from its first sound to its last.
    func heardCall(in recording: Recording, after instant: ContinuousClock.Instant) throws -> Range<Double> {
        let window = try span(max(0, recording.time(of: instant) - 0.05), recording.duration, "the call")
        let tones = recording.dialToneRanges(within: window)
        let first = try #require(tones.first, "the call was not heard on \(recording.sink)")
        return first.lowerBound..<(tones.last?.upperBound ?? first.upperBound)
    }

    /// The sweep stretch that ends last before `time` and the first that starts after it.
    func stretches(
        around time: Double, in recording: Recording
    ) throws -> (before: HeardStretch, after: HeardStretch, all: [HeardStretch]) {
        let all = recording.sweepStretches(positions: Self.positions)
        let before = try #require(all.last { $0.start < time }, "no music before \(time) s: \(all)")
        let after = try #require(all.first { $0.start > before.end }, "no music after \(before): \(all)")
        return (before, after, all)
    }

    /// The first sample of the call, to the sample when the music had already stopped: the first sound after
    /// the music's end near the 10 ms-window estimate `coarse`.
    func callStart(in recording: Recording, coarse: Double, musicEnd: Double) -> Double {
        guard musicEnd < coarse - 0.002 else { return coarse }
        return recording.firstAudibleTime(after: max(musicEnd + 0.001, coarse - 0.012)) ?? coarse
    }

    /// Checks that the track continued where it stopped: the position heard first after the silence against the
    /// position heard last before it, within RULES.md's 20 ms either way. A resumed (uncorked or moved) stream's
    /// first ~10 ms do not reach a null sink's monitor: paplay, corked and uncorked by module-role-cork the same way,
    /// shows +0..8 ms here (Earshot: +0..11 ms, once 18 ms); that part is inside the contract's 20 ms.
    func expectContinues(
        _ before: HeardStretch, _ after: HeardStretch, _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let error = after.positionAtStart - before.positionAtEnd
        report("\(label): position error at resume", error * 1000)
        // RULES.md's 20 ms, plus the period to which PipeWire knows where a corked stream stopped.
        #expect(abs(error) <= 0.020 + (try TestEnvironment.serverPeriodSeconds()),
                "the track continued \(error * 1000) ms from where it stopped: \(before) -> \(after)",
                sourceLocation: sourceLocation)
    }

    /// The secrets the log must not show in a test whose scratch folder is `scratch`.
    func secrets(_ scratch: URL) -> [String] {
        PrivateNames.secrets + [scratch.path]
    }
}
