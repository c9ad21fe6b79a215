// Calls anywhere in the session (RULES.md, interruption began: a trigger-role stream on any sink). The usual
// desktop has a headset for calls and speakers for music; PulseAudio's module-role-cork corks only streams on the
// call's own sink, and PipeWire corks nothing, so on every server it is Earshot's own detection that must see a call
// on another device. With `"interruptionScope": "sameSink"` in the configuration, such a call is left alone.
// Both sinks are recorded: the call is heard on the speakers, the music on the headphones.
import EarshotTestSupport
import Foundation
import Testing

@Suite("Calls on another device of the session", .serialized)
struct SessionCallTests {
    /// The length of the position track played.
    static let trackSeconds = 20.0
    /// The track positions the analysis reads (from 0.8 s on, clear of the dial tone; see PolitenessTests).
    static let positions = 0.8...trackSeconds
    /// The length of the call, in seconds.
    static let callSeconds = 4.0

    /// Runs `body` with the server to itself, a scratch folder holding `configuration` as the player's config.json
    /// (when given), the position track, and recorders on headphones and speakers started before the player.
    private func scenario(
        configuration: String? = nil, _ body: (URL, URL, [MonitorRecorder]) async throws -> Void
    ) async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                // Fades off: these scenarios measure the music's edges to a millisecond (EdgesTests measures fades).
                let fadesOff = configuration.map { "{\"fadeMs\": 0, " + $0.drop { $0 != "{" }.dropFirst() }
                try writeConfiguration(fadesOff ?? #"{"fadeMs": 0}"#, in: scratch)
                let track = try Fixtures.copy(
                    try Fixtures.positionTrack(seconds: Self.trackSeconds), to: scratch, named: PrivateNames.fileName)
                try await withMonitorRecorders([TestEnvironment.headphones, TestEnvironment.speakers]) { recorders in
                    try await body(scratch, track, recorders)
                }
            }
        }
    }

    /// Starts earshot on `track` (on the headphones, the default sink) and waits until 1.5 s of it were heard.
    private func startPlaying(_ track: URL, in scratch: URL) async throws -> EarshotPlayer {
        let player = try EarshotPlayer(playing: [track], in: scratch)
        do {
            let status = try await player.waitUntilHeard(milliseconds: 1500)
            #expect(status.sink == TestEnvironment.headphones, "\(status)")
        } catch {
            player.kill()
            throw error
        }
        return player
    }

    @Test("a call on the speakers while the music plays on the headphones pauses it and resumes it; nothing is lost")
    func callOnAnotherSinkInterrupts() async throws {
        try await scenario { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let callPlaced = ContinuousClock.now
            let call = try ServerControl.startPhoneCall(
                wav: try Fixtures.phoneCall(seconds: Self.callSeconds), sink: TestEnvironment.speakers,
                bufferSeconds: Self.callSeconds + 1)
            defer { call.kill() }
            // Corked is the server's acknowledgement of the cork, which arrives a moment after the rules paused
            // (commands do not wait), so the status is awaited with both.
            let held = try await player.waitForStatus("paused for the call on the speakers, and corked") {
                $0.playback == "paused" && $0.pauseReason == "interruption" && $0.corked
            }
            // Earshot's own detection, whatever the server: a call on another sink gets no cork request.
            #expect(held.activeInterruptions.count == 1
                        && held.activeInterruptions.allSatisfy { $0.hasPrefix("stream#") }, "\(held)")
            let resumed = try await player.waitForStatus("playing again after the call") {
                $0.playback == "playing" && $0.activeInterruptions.isEmpty
            }
            #expect(!resumed.waitingForInterruptionEnd)
            try await Task.sleep(for: .seconds(1))
            call.kill()
            let recordings = try await stopRecorders(recorders)
            let (headphones, speakers) = (recordings[0], recordings[1])

            // The call was heard on the speakers, and only there.
            let callOnSpeakers = speakers.dialToneRanges(
                within: try span(max(0, speakers.time(of: callPlaced) - 0.05), speakers.duration, "the call"))
            let firstTone = try #require(callOnSpeakers.first, "the call was not heard on the speakers")
            let callHeard = firstTone.lowerBound..<(callOnSpeakers.last?.upperBound ?? firstTone.upperBound)
            // Looked for from the call on: the headphones' recording starts before the player, and the sweep's first
            // few hundred milliseconds lie near the dial tone's frequencies. (A single 10 ms window at the music's edges
            // can read as the tone; the call lasts seconds.)
            let toneOnHeadphones = headphones.dialToneRanges(
                within: try span(max(0, headphones.time(of: callPlaced) - 0.05), headphones.duration, "the call"))
            #expect(toneOnHeadphones.allSatisfy { $0.upperBound - $0.lowerBound < 0.050 },
                    "the call reached the headphones: \(toneOnHeadphones)")
            // The music stopped on the headphones, and came back: two stretches of the sweep around the call.
            let stretches = headphones.sweepStretches(positions: Self.positions)
            #expect(stretches.count == 2, "headphones: \(stretches)")
            let (before, after) = (try #require(stretches.first), try #require(stretches.last))
            // The two recordings share one clock only through their start instants (good to a few ms): the music's
            // end, as a moment, against the call's first sound on the other sink.
            let callStart = speakers.startInstant + .seconds(callHeard.lowerBound)
            let stopLatency = before.end - headphones.time(of: callStart)
            report("call on the other sink: music end after the call's first sound", stopLatency * 1000)
            #expect(stopLatency <= 0.100, "music went on \(stopLatency * 1000) ms into the call; \(stretches)")
            let callEnd = speakers.startInstant + .seconds(callHeard.upperBound)
            report("call on the other sink: music back after the call's last sound",
                   (after.start - headphones.time(of: callEnd)) * 1000)
            #expect(after.start >= headphones.time(of: callEnd) - 0.050, "music \(after) during the call \(callHeard)")
            // Nothing of the track lost or repeated: it goes on from where it was heard to stop.
            let error = after.positionAtStart - before.positionAtEnd
            report("call on the other sink: position error at resume", error * 1000)
            #expect(abs(error) <= 0.020, "the track went on \(error * 1000) ms from where it stopped: \(before) -> \(after)")
            player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
        }
    }

    @Test("with interruptionScope sameSink a call on the speakers leaves the music on the headphones playing")
    func sameSinkScopeIgnoresOtherSinks() async throws {
        try await scenario(configuration: #"{"interruptionScope": "sameSink"}"#) { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let call = try ServerControl.startPhoneCall(
                wav: try Fixtures.phoneCall(seconds: Self.callSeconds), sink: TestEnvironment.speakers,
                bufferSeconds: Self.callSeconds + 1)
            defer { call.kill() }
            var seen: [EarshotStatus] = []
            let deadline = ContinuousClock.now + .seconds(Self.callSeconds)
            while ContinuousClock.now < deadline {
                seen.append(try player.status())
                try await Task.sleep(for: .milliseconds(250))
            }
            let recordings = try await stopRecorders(recorders)
            #expect(seen.count >= 8 && seen.allSatisfy { $0.playback == "playing" && $0.activeInterruptions.isEmpty },
                    "status during the call: \(seen.map(\.description))")
            // The music went on through the call: one unbroken stretch of the sweep on the headphones.
            let stretches = recordings[0].sweepStretches(positions: Self.positions)
            #expect(stretches.count == 1, "headphones: \(stretches)")
            #expect(!recordings[1].dialToneRanges(within: 0.8..<recordings[1].duration).isEmpty,
                    "the call was not heard on the speakers")
        }
    }
}
