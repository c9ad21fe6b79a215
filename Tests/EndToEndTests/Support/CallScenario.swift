// What the call tests (CallTests, NotCallTests) share: the server to themselves, a capture watch started before
// anything, the headphones recorded from before the player, `earshot play` on the position sweep, and the ways a
// test opens a microphone: headless Chromium (BrowserCall), a native recorder (pw-record on PipeWire, parecord on
// PulseAudio), a recorder under another application's name.

import EarshotTestSupport
import Foundation
import Testing

/// One call test's setting, handed to its body by `CallScenario.run`.
struct CallStage: Sendable {
    /// The test's scratch folder (the player's config, state and socket, recorders' files, Chromium's profile).
    let scratch: URL
    /// `earshot play` on the position track, heard for `CallScenario.heardBeforeCall` ms.
    let player: EarshotPlayer
    /// Every capture stream's reports since before the player started.
    let watch: CaptureWatch
    /// The recorder on the headphones' monitor, started before the player; nil if the test records nothing.
    let recorder: MonitorRecorder?

    /// The Chromium profile folder of this test: every browser it starts uses it, one after another.
    var browserProfile: URL { scratch.appendingPathComponent("chromium", isDirectory: true) }

    /// Runs `body` with Chromium on `page` (this test's profile), and stops Chromium after it, also when it throws.
    func withBrowser(_ page: BrowserPage, _ body: (BrowserCall) async throws -> Void) async throws {
        try await BrowserCall.with(page, profile: browserProfile, body)
    }

    /// Stops the recorder and returns its recording of the headphones.
    func stopRecording() async throws -> Recording {
        guard let recorder else { throw ToolkitError("this test records nothing") }
        return try await recorder.stop()
    }
}

/// Sets the stage for a call test and holds the ways it opens a microphone.
enum CallScenario {
    /// The position track's length: room for a call or two and the music around them.
    static let trackSeconds = 24.0
    /// The track positions the analysis reads: from 0.8 s, clear of the call's tones (PolitenessTests).
    static let positions = 0.8...trackSeconds
    /// How much of the track is heard before a test opens its microphone, in milliseconds.
    static let heardBeforeCall = 1500
    /// The interruption sources that stand for an inferred call in the status (`microphone#N`).
    static let microphonePrefix = "microphone#"

    /// Runs `body` with the server to itself and a capture watch, the headphones recorded (when `recording`), and
    /// `earshot play` with `configuration` (if any) playing the track for `heardBeforeCall` ms; stops everything after.
    static func run(
        configuration: String? = nil, recording: Bool = true, _ body: (CallStage) async throws -> Void
    ) async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                // What a call loses is measured to the millisecond, so fades are off (`fadeMs` 0), as in the other
                // suites that measure edges; EdgesTests measure the fades themselves.
                let fadesOff = configuration.map { "{\"fadeMs\": 0, " + $0.drop { $0 != "{" }.dropFirst() }
                try writeConfiguration(fadesOff ?? #"{"fadeMs": 0}"#, in: scratch)
                let track = try Fixtures.copy(
                    try Fixtures.positionTrack(seconds: trackSeconds), to: scratch, named: PrivateNames.fileName)
                let watch = try CaptureWatch()
                defer { watch.close() }
                let recorder = recording ? try await MonitorRecorder.start(sink: TestEnvironment.headphones) : nil
                do {
                    let player = try EarshotPlayer(playing: [track], in: scratch)
                    defer { player.kill() }
                    let status = try await player.waitUntilHeard(milliseconds: heardBeforeCall)
                    #expect(status.sink == TestEnvironment.headphones, "\(status)")
                    try await body(CallStage(scratch: scratch, player: player, watch: watch, recorder: recorder))
                    player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
                } catch {
                    if let recorder, recorder.isRecording { _ = try? await recorder.stop() }
                    throw error
                }
                if let recorder, recorder.isRecording { _ = try await recorder.stop() }
            }
        }
    }

    /// The microphone of the private server: PulseAudio's null source `silence`, PipeWire's virtual source `mic`
    /// (Config/pulse-test.pa, scripts/lib/soundserver.sh); the default source on both.
    static func microphone() throws -> String {
        try TestEnvironment.soundServerKind() == .pulseAudio ? "silence" : "mic"
    }

    /// Starts a native capture from the microphone, as a recorder or a native calling application makes one:
    /// pw-record on PipeWire (a PipeWire client, listed to pulse clients as a source output like any other), parecord
    /// on PulseAudio. With `application`, parecord under that application name on either server.
    static func startNativeCapture(in scratch: URL, application: String? = nil) throws -> ChildProcess {
        let file = scratch.appendingPathComponent("capture-\(UUID().uuidString.prefix(8)).wav").path
        let microphone = try microphone()
        if application == nil, try TestEnvironment.soundServerKind() == .pipeWire {
            return try ChildProcess("pw-record", ["--target", microphone, file])
        }
        var arguments = ["--device=\(microphone)", "--file-format=wav"]
        if let application { arguments.append("--client-name=\(application)") }
        return try ChildProcess("parecord", arguments + [file])
    }

    /// The source outputs of `process` now.
    static func captures(ofProcess process: ChildProcess) throws -> [String] {
        let listing = try ServerControl.pactl(["list", "source-outputs"])
        return listing.components(separatedBy: "Source Output #").dropFirst().filter {
            $0.contains("application.process.id = \"\(process.processIdentifier)\"")
        }
    }

    /// The interruption sources the player's status lists as overruled by the user (rule 18), read from
    /// `status --json`'s `overruledInterruptions` (empty when the field is absent).
    static func overruledInterruptions(of player: EarshotPlayer) throws -> [String] {
        let output = try player.control(["status", "--json"]).standardOutput
        let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        return object?["overruledInterruptions"] as? [String] ?? []
    }

    /// Reads the status every 250 ms for `duration` and returns every status read.
    static func statuses(of player: EarshotPlayer, for duration: Duration) async throws -> [EarshotStatus] {
        var seen: [EarshotStatus] = []
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline {
            seen.append(try player.status())
            try await Task.sleep(for: .milliseconds(250))
        }
        return seen
    }
}

extension BrowserCall {
    /// Runs `body` with Chromium on `page` using `profile`, and stops Chromium after it, also when it throws.
    static func with<Result>(
        _ page: BrowserPage, profile: URL, _ body: (BrowserCall) async throws -> Result
    ) async throws -> Result {
        let call = try BrowserCall(page, profile: profile)
        do {
            let result = try await body(call)
            await call.stop()
            return result
        } catch {
            await call.stop()
            throw error
        }
    }
}

extension EarshotStatus {
    /// Whether an inferred call (a microphone capture) is among the active interruptions.
    var hasMicrophoneInterruption: Bool {
        activeInterruptions.contains { $0.hasPrefix(CallScenario.microphonePrefix) }
    }
}
