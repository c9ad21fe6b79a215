// Rule 22 end to end (issue 35): the track after a failed one is the rules' play order's, and whatever status says
// afterwards is what the sinks do. `earshot serve` is driven by the CLI as a user would (`repeat`, `shuffle`, `play`,
// `next`, `previous`), with a file of random bytes named .mp3 in the queue; after each step the truth is read from
// the server (our stream corked or not) and from both sinks' monitors, never from Earshot's word alone. Before the
// rules named the next track, `repeat queue` and `next` onto the broken file left status `stopped` while the first
// track played on, uncorked, and a `pause` found nothing to cork.
#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("Rule 22: the track after a failure, under every play order, and status tells the truth", .serialized)
struct FailedTrackOrderTests {
    /// One way to reach a broken file: the play order, the queue (`good` or `bad` each), the steps after `play`, and
    /// what the rules' order leads to.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let repeatMode: String
        let shuffle: Bool
        let queue: [Bool]
        let steps: [String]
        /// `playing` (and on which track) or `stopped`.
        let playback: String
        let trackIndex: Int?

        var testDescription: String { name }
    }

    static let cases = [
        Case(name: "repeat queue, next onto the broken last track: round to the first", repeatMode: "queue",
             shuffle: false, queue: [true, false], steps: ["next"], playback: "playing", trackIndex: 0),
        Case(name: "repeat track, next onto the broken last track: none follows, stopped", repeatMode: "track",
             shuffle: false, queue: [true, false], steps: ["next"], playback: "stopped", trackIndex: nil),
        Case(name: "repeat off, next onto the broken last track: stopped", repeatMode: "off",
             shuffle: false, queue: [true, false], steps: ["next"], playback: "stopped", trackIndex: nil),
        Case(name: "repeat queue, previous onto the broken first track: on to the second", repeatMode: "queue",
             shuffle: false, queue: [false, true], steps: ["previous"], playback: "playing", trackIndex: 1),
        Case(name: "shuffle and repeat queue, next twice past the broken track: still playing the good one",
             repeatMode: "queue", shuffle: true, queue: [true, false], steps: ["next", "next"], playback: "playing",
             trackIndex: 0),
        Case(name: "repeat queue, every track broken: stopped, with the reason", repeatMode: "queue",
             shuffle: false, queue: [false, false], steps: [], playback: "stopped", trackIndex: nil),
    ]

    @Test("After the step, status, the server's stream and the monitors agree; a pause then quiets it", arguments: cases)
    func failureFollowsTheRulesOrder(_ scenario: Case) async throws {
        try await ServiceHarness.run { harness in
            let music = harness.root.appendingPathComponent("music", isDirectory: true)
            let good = try Fixtures.tone(frequency: 440, seconds: 8)
            let queue = try scenario.queue.enumerated().map { index, isGood in
                try Fixtures.copy(isGood ? good : try Fixtures.undecodable(bytes: 20_000), to: music,
                                  named: "\(index + 1) \(isGood ? "good" : "notaudio").mp3").path
            }
            try harness.writeConfiguration(#"{"fadeMs": 0}"#)
            let service = try await harness.startService()
            try harness.earshotChecked(["repeat", scenario.repeatMode])
            try harness.earshotChecked(["shuffle", scenario.shuffle ? "on" : "off"])
            try harness.earshotChecked(["play"] + queue)
            if scenario.queue.contains(true) {
                // Heard for a moment first, as a user would hear it before pressing `next`.
                try await harness.waitForStatus(of: service, "playing the good track") {
                    $0.playback == "playing" && $0.positionMs >= 300
                }
            }
            for step in scenario.steps {
                try harness.earshotChecked([step])
            }
            let status = try await harness.waitForStatus(of: service, "\(scenario.playback) after the steps") {
                $0.playback == scenario.playback && $0.lastError != nil
                    && (scenario.trackIndex == nil || $0.trackIndex == scenario.trackIndex)
            }
            #expect(status.lastError?.kind == "notMPEGAudio", "\(status)")
            try await Self.expectTruth(of: service, playing: scenario.playback == "playing", harness, scenario.name)
            guard scenario.playback == "playing" else { return }
            // Never deaf to a pause: the stream the rules left playing is the one they cork.
            try harness.earshotChecked(["pause"])
            try await harness.waitForStatus(of: service, "paused") { $0.playback == "paused" }
            try await Self.expectTruth(of: service, playing: false, harness, scenario.name + ", then pause")
            #expect(await harness.stopService(service) == 0)
        }
    }

    /// Checks what the server and the sinks say against `playing`: our stream uncorked and sounding, or corked (or
    /// gone) and silent on every sink. The cork is sent, not waited for: the server's word is awaited for 5 s.
    static func expectTruth(
        of service: ChildProcess, playing: Bool, _ harness: ServiceHarness, _ what: String
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        var streams = try ServerControl.sinkInputs(ofProcess: service.processIdentifier)
        while streams.contains(where: { $0.corked == playing }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            streams = try ServerControl.sinkInputs(ofProcess: service.processIdentifier)
        }
        if playing {
            #expect(streams.count == 1 && streams.allSatisfy { !$0.corked }, "\(what): streams \(streams)")
        } else {
            #expect(streams.allSatisfy { $0.corked }, "\(what): streams \(streams)")
        }
        let recordings = try await withMonitorRecorders { recorders in
            try await Task.sleep(for: .milliseconds(1_000))
            return try await stopRecorders(recorders)
        }
        let heard = recordings.map { $0.audibleMilliseconds() }
        let status = try harness.status()
        #expect((status.playback == "playing") == playing, "\(what): \(status); log:\n\(service.standardError())")
        if playing {
            #expect(heard[0] >= 500, "\(what): \(heard[0]) ms heard on the headphones while playing")
            #expect(heard[1] == 0, "\(what): \(heard[1]) ms heard on the speakers")
        } else {
            #expect(heard.allSatisfy { $0 == 0 }, "\(what): \(heard) ms heard (headphones, speakers) while \(status)")
        }
    }
}
