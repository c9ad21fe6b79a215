// What is not a call (issue 20): captures that a desktop makes all day without anyone on the phone. Each is opened
// end to end while `earshot play` plays, held longer than Earshot waits before it counts a capture as a call, and
// closed; the music must play on through all of them, unbroken on the headphones' monitor, with no interruption in
// the status. Runs on every server.
//
// - a level meter: the peak-detect recording a sound-settings panel opens on the microphone (no command-line client
//   makes one, so the test process opens it through libpulse: LevelMeter);
// - a recording of `headphones.monitor` (what a screen recorder or a visualiser records);
// - a `module-loopback` from the microphone (the server's own stream, no client);
// - an application the user named in `callIgnoreApplications` (parecord under that name: a dictation tool);
// - a meeting's lobby in Chromium: the device list and the permission state, no getUserMedia. Whether Chromium
//   opens a capture for it at all is measured and printed;
// - a permission probe in Chromium: getUserMedia and the tracks stopped at once (CallTests.whatChromiumDoes measures
//   how long its capture lasts).

import EarshotTestSupport
import Foundation
import Testing

@Suite("Captures that are not calls", .serialized)
struct NotCallTests {
    /// How long each capture is held: longer than any sensible wait before a capture counts as a call.
    static let holdSeconds = 2.5
    /// The application the configuration tells Earshot to ignore.
    static let ignoredApplication = "Dictation Pad"

    @Test("a level meter, a monitor recording, a loopback, an ignored application, a lobby and a probe do not pause")
    func capturesThatAreNotCalls() async throws {
        let configuration = #"{"callIgnoreApplications": ["\#(Self.ignoredApplication)"]}"#
        try await CallScenario.run(configuration: configuration) { stage in
            let microphone = try CallScenario.microphone()
            var seen: [(String, [EarshotStatus])] = []

            let meter = try LevelMeter(source: microphone)
            seen.append(("a level meter",
                         try await CallScenario.statuses(of: stage.player, for: .seconds(Self.holdSeconds))))
            let values = meter.values.withLock { $0 }
            meter.close()
            #expect(values > 0, "the level meter received no values")

            let monitorRecording = try ChildProcess(
                "parec", ["--device=\(TestEnvironment.headphones).monitor", "--client-name=Screen Recorder", "--raw"],
                standardOutput: URL(fileURLWithPath: "/dev/null"))
            seen.append(("a recording of headphones.monitor", try await heldWhile(monitorRecording, stage)))

            let loopback = try ServerControl.pactl([
                "load-module", "module-loopback", "source=\(microphone)", "sink=\(TestEnvironment.speakers)",
            ]).trimmed
            seen.append(("a loopback from the microphone",
                         try await CallScenario.statuses(of: stage.player, for: .seconds(Self.holdSeconds))))
            try ServerControl.pactl(["unload-module", loopback])

            let ignored = try CallScenario.startNativeCapture(in: stage.scratch, application: Self.ignoredApplication)
            seen.append(("an application in callIgnoreApplications", try await heldWhile(ignored, stage)))

            try await stage.withBrowser(.enumerateDevices) { lobby in
                let answered = try await lobby.waitFor("enumerated")
                seen.append(("a browser lobby listing devices",
                             try await CallScenario.statuses(of: stage.player, for: .seconds(Self.holdSeconds))))
                let captures = stage.watch.runs(of: BrowserCall.captureApplicationName)
                report("browser lobby: captures Chromium opened", Double(captures.count), unit: "")
                #expect(captures.isEmpty, "the lobby opened captures: \(captures); page: \(answered)")
            }
            // A permission probe: getUserMedia and the tracks stopped at once (a site checking that the microphone
            // works). Its capture runs uncorked for tens of milliseconds, far less than Earshot waits.
            try await stage.withBrowser(.call(seconds: 0)) { probe in
                try await probe.waitFor("ended")
                seen.append(("a permission probe (getUserMedia, stopped at once)",
                             try await CallScenario.statuses(of: stage.player, for: .seconds(1.5))))
                let probes = stage.watch.runs(of: BrowserCall.captureApplicationName)
                #expect(probes.count == 1, "the probe's captures: \(probes)")
            }
            try await Task.sleep(for: .milliseconds(500))
            let final = try stage.player.status()
            let headphones = try await stage.stopRecording()

            for (what, statuses) in seen {
                #expect(statuses.count >= 4, "\(what): too few statuses read")
                #expect(statuses.allSatisfy { $0.playback == "playing" && $0.activeInterruptions.isEmpty },
                        "\(what) interrupted: \(statuses.map(\.description))")
            }
            #expect(final.playback == "playing" && final.activeInterruptions.isEmpty, "at the end: \(final)")
            // Every capture above really ran: the server reported each of them running.
            let ran = stage.watch.runs().filter { $0.running != nil }
            #expect(ran.count >= 4, "captures seen running: \(ran)")
            // The music went on through all of it: from its first sound to the recording's end no silence longer than
            // a null sink's hiccup (nothing else plays on the headphones here, so sound is the music; the sweep's own
            // analysis would cost more than the rest of the test in a debug build).
            let musicStart = try #require(headphones.firstAudibleTime(), "no music on the headphones")
            let gap = headphones.longestSilence(within: try span(musicStart + 0.1, headphones.duration - 0.05, "music"))
            report("not calls: longest silence in the music", gap * 1000)
            #expect(gap <= 0.030, "the music stopped for \(gap * 1000) ms")
        }
    }

    /// Reads the status for `holdSeconds` while `capture` runs, then stops it (SIGINT) and waits for it to end.
    private func heldWhile(_ capture: ChildProcess, _ stage: CallStage) async throws -> [EarshotStatus] {
        defer { capture.kill() }
        try await waitUntil("\(capture.commandLine) captures", timeout: .seconds(10)) {
            guard capture.isRunning else {
                throw ToolkitError("\(capture.commandLine) ended: \(capture.standardError())")
            }
            return try !CallScenario.captures(ofProcess: capture).isEmpty
        }
        let statuses = try await CallScenario.statuses(of: stage.player, for: .seconds(Self.holdSeconds))
        capture.signal(SIGINT)
        _ = await capture.exit(within: .seconds(5))
        return statuses
    }
}
