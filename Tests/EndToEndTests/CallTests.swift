// Calls as people make them (issue 20): a browser meeting in headless Chromium (getUserMedia, the far end's voice
// through WebAudio, the tracks stopped after a few seconds) and a native recorder pause the music while they capture
// from the microphone and bring it back after, with nothing of the track lost; the user can overrule such an
// inferred call (rule 18); a call while the user had paused leaves the music paused (rule 2); a browser call and a
// `media.role=phone` stream overlapping hold the music until both are over (rules 3-4). Runs on every server.
//
// The capture's start and end are the moments the server announced them to the test's own libpulse client
// (CaptureWatch: a capture counts as started when it is first seen uncorked), and the music's edges are read off the
// headphones' monitor (PolitenessSupport), so the delays measured are Earshot's whole path, including how long it
// waits before it counts a capture as a call. Measurements are printed as `[measure]` lines.

import EarshotTestSupport
import Foundation
import Testing

@Suite("Calls as browsers and recorders make them", .serialized)
struct CallTests {
    /// How long a test's browser call keeps its microphone, in seconds.
    static let callSeconds = 4.0

    @Test("Chromium: a capture appears after getUserMedia; a permission probe's capture lasts this long")
    func whatChromiumDoes() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let watch = try CaptureWatch()
                defer { watch.close() }
                let profile = scratch.appendingPathComponent("chromium", isDirectory: true)
                // A permission probe as sites make one: getUserMedia, then the tracks stopped at once.
                let probed = try await BrowserCall.with(.call(seconds: 0), profile: profile) {
                    try await $0.waitFor("ended")
                }
                let run = try await watch.waitForEndedRun(of: BrowserCall.captureApplicationName, removed: true)
                let requested = try #require(probed.moments["requested"], "\(probed)")
                let lifetime = try #require(run.lifetime, "\(run)")
                report("chromium probe: capture announced after getUserMedia",
                       run.appeared.date.timeIntervalSince(requested) * 1000)
                report("chromium probe: capture running after getUserMedia",
                       (run.running?.date.timeIntervalSince(requested) ?? .nan) * 1000)
                report("chromium probe: capture started corked (1 = yes)", run.startedCorked == true ? 1 : 0,
                       unit: "")
                report("chromium probe: capture announced to removed", lifetime * 1000)
                if let running = run.running, let ended = run.ended {
                    report("chromium probe: capture uncorked for", (ended.instant - running.instant).seconds * 1000)
                }
                print("[measure] chromium probe: reports \(watch.moments.withLock { $0 }.map(\.description))")
                #expect(watch.runs(of: BrowserCall.captureApplicationName).count == 1, "\(watch.runs())")
            }
        }
    }

    @Test("a browser call pauses the music while it captures and resumes it after; nothing is lost")
    func browserCallWhilePlaying() async throws {
        try await CallScenario.run { stage in
            try await stage.withBrowser(.call(seconds: Self.callSeconds)) { call in
                let capturing = try await call.waitFor("capturing")
                let held = try await stage.player.waitForStatus("paused for the browser call, and corked") {
                    $0.playback == "paused" && $0.pauseReason == "interruption" && $0.corked
                }
                #expect(held.hasMicrophoneInterruption && held.activeInterruptions.count == 1, "\(held)")
                try await call.waitFor("ended")
                let resumed = try await stage.player.waitForStatus("playing again after the call") {
                    $0.playback == "playing" && $0.activeInterruptions.isEmpty
                }
                #expect(!resumed.waitingForInterruptionEnd, "\(resumed)")
                try await Task.sleep(for: .seconds(1))
                let headphones = try await stage.stopRecording()

                let run = try await stage.watch.waitForEndedRun(of: BrowserCall.captureApplicationName)
                let (started, ended) = (try #require(run.running), try #require(run.ended))
                let requested = try #require(capturing.moments["requested"])
                report("browser call: capture announced after getUserMedia",
                       run.appeared.date.timeIntervalSince(requested) * 1000)
                report("browser call: capture running after getUserMedia",
                       started.date.timeIntervalSince(requested) * 1000)
                report("browser call: capture started corked (1 = yes)", run.startedCorked == true ? 1 : 0, unit: "")

                // Only around the call, and only the positions near where it paused: the sweep's analysis is slow.
                let around = max(0, headphones.time(of: started.instant) - 1)..<min(
                    headphones.duration, headphones.time(of: ended.instant) + 2)
                let paused = Double(held.positionMs) / 1000
                let stretches = headphones.sweepStretches(
                    within: around, positions: max(0.8, paused - 2.5)...(paused + 2.5))
                #expect(stretches.count == 2, "headphones: \(stretches)")
                let (before, after) = (try #require(stretches.first), try #require(stretches.last))
                let corkDelay = headphones.instant(atTime: before.end) - started.instant
                report("browser call: music end after the capture started", corkDelay.seconds * 1000)
                #expect(corkDelay > .zero && corkDelay <= .seconds(1.5),
                        "the music stopped \(corkDelay) after the capture started; \(stretches)")
                let resumeDelay = headphones.instant(atTime: after.start) - ended.instant
                report("browser call: music back after the capture ended", resumeDelay.seconds * 1000)
                #expect(resumeDelay > .milliseconds(-20) && resumeDelay <= .seconds(1.5),
                        "the music came back \(resumeDelay) after the capture ended; \(stretches)")
                let lost = after.positionAtStart - before.positionAtEnd
                report("browser call: track lost (position error at resume)", lost * 1000)
                #expect(abs(lost) <= 0.020 + (try TestEnvironment.serverPeriodSeconds()),
                        "the track went on \(lost * 1000) ms from where it stopped: \(before) -> \(after)")
            }
        }
    }

    @Test("a native recorder's capture from the microphone (pw-record on PipeWire, parecord on PulseAudio) is a call")
    func nativeCaptureWhilePlaying() async throws {
        try await CallScenario.run(recording: false) { stage in
            let capture = try CallScenario.startNativeCapture(in: stage.scratch)
            defer { capture.kill() }
            let held = try await stage.player.waitForStatus("paused for the native capture") {
                $0.playback == "paused" && $0.pauseReason == "interruption" && $0.hasMicrophoneInterruption
            }
            try await Task.sleep(for: .seconds(2))
            #expect(try stage.player.status().playback == "paused")
            capture.signal(SIGINT)
            #expect(await capture.exit(within: .seconds(5)), "the recorder did not stop: \(capture.standardError())")
            let resumed = try await stage.player.waitForStatus("playing again after the capture") {
                $0.playback == "playing" && $0.activeInterruptions.isEmpty
            }
            #expect(resumed.positionMs >= held.positionMs, "\(held) -> \(resumed)")
            let runs = stage.watch.runs().filter { $0.running != nil }
            #expect(runs.count == 1, "captures: \(runs)")
        }
    }

    @Test("rule 18: `earshot play` during a browser call plays at once; status lists the call as overruled")
    func userOverrulesBrowserCall() async throws {
        try await CallScenario.run(recording: false) { stage in
            try await stage.withBrowser(.call(seconds: 6)) { call in
                try await call.waitFor("capturing")
                let held = try await stage.player.waitForStatus("paused for the browser call") {
                    $0.playback == "paused" && $0.pauseReason == "interruption" && $0.hasMicrophoneInterruption
                }
                let inferred = held.activeInterruptions.filter { $0.hasPrefix(CallScenario.microphonePrefix) }
                let source = inferred.first ?? "none"
                let pressed = ContinuousClock.now
                try stage.player.control(["play"])
                let playing = try await stage.player.waitForStatus("playing during the call", timeout: .seconds(5)) {
                    $0.playback == "playing" && !$0.corked
                }
                report("browser call overruled: playing after `earshot play`",
                       (ContinuousClock.now - pressed).seconds * 1000)
                #expect(!playing.waitingForInterruptionEnd, "\(playing)")
                let overruled = try CallScenario.overruledInterruptions(of: stage.player)
                #expect(overruled.contains(source), "the status lists \(overruled) as overruled, not \(source)")
                // The music plays on through the rest of the call, and the call's end changes nothing.
                let during = try await CallScenario.statuses(of: stage.player, for: .seconds(1.5))
                #expect(during.allSatisfy { $0.playback == "playing" }, "\(during.map(\.description))")
                #expect((during.last?.positionMs ?? 0) > (during.first?.positionMs ?? 0) + 1000, "\(during)")
                try await call.waitFor("ended")
                try await stage.player.waitForStatus("the call's capture is gone from the status") {
                    !$0.hasMicrophoneInterruption
                }
                let after = try await CallScenario.statuses(of: stage.player, for: .seconds(1))
                #expect(after.allSatisfy { $0.playback == "playing" && $0.activeInterruptions.isEmpty },
                        "\(after.map(\.description))")
                let overruledAfter = try CallScenario.overruledInterruptions(of: stage.player)
                #expect(overruledAfter.isEmpty, "still overruled after the call: \(overruledAfter)")
            }
        }
    }

    @Test("rule 2: a browser call while the user had paused leaves the music paused and silent")
    func browserCallWhilePaused() async throws {
        try await CallScenario.run { stage in
            try stage.player.control(["pause"])
            let pausedAt = ContinuousClock.now
            try await stage.player.waitForStatus("paused by the user, and corked") {
                $0.playback == "paused" && $0.pauseReason == "user" && $0.corked
            }
            try await stage.withBrowser(.call(seconds: 3)) { call in
                try await call.waitFor("capturing")
                let during = try await CallScenario.statuses(of: stage.player, for: .seconds(2))
                try await call.waitFor("ended")
                try await Task.sleep(for: .seconds(1.5))
                let after = try stage.player.status()
                let headphones = try await stage.stopRecording()

                #expect(during.allSatisfy { $0.playback == "paused" && $0.pauseReason == "user" && $0.corked },
                        "during the call: \(during.map(\.description))")
                #expect(after.playback == "paused" && after.pauseReason == "user" && after.activeInterruptions.isEmpty
                            && !after.waitingForInterruptionEnd, "after the call: \(after)")
                let music = headphones.sweepMilliseconds(
                    within: try span(headphones.time(of: pausedAt) + 0.100, headphones.duration, "after the pause"),
                    positions: CallScenario.positions)
                #expect(music == 0, "\(music) ms of music after the user's pause")
            }
        }
    }

    @Test("rules 3-4: a browser call overlapping a phone-role stream holds the music until both have ended")
    func browserCallOverlappingPhoneStream() async throws {
        try await CallScenario.run(recording: false) { stage in
            try await stage.withBrowser(.call(seconds: Self.callSeconds)) { call in
                try await call.waitFor("capturing")
                try await stage.player.waitForStatus("paused for the browser call") {
                    $0.pauseReason == "interruption" && $0.hasMicrophoneInterruption
                }
                // A phone stream that outlasts the browser's capture by about three seconds.
                let phoneSeconds = Self.callSeconds + 2
                let phone = try ServerControl.startPhoneCall(
                    wav: try Fixtures.phoneCall(seconds: phoneSeconds), bufferSeconds: phoneSeconds + 1)
                defer { phone.kill() }
                try await stage.player.waitForStatus("both calls are active") { $0.activeInterruptions.count >= 2 }
                try await call.waitFor("ended")
                let phoneOnly = try await stage.player.waitForStatus("the browser's capture has ended") {
                    !$0.hasMicrophoneInterruption
                }
                #expect(phone.isRunning, "the phone stream ended too early for the check")
                #expect(phoneOnly.playback == "paused" && phoneOnly.pauseReason == "interruption"
                            && !phoneOnly.activeInterruptions.isEmpty, "with the phone stream still on: \(phoneOnly)")
                #expect(await phone.exit(within: .seconds(15)), "the phone call did not end")
                let resumed = try await stage.player.waitForStatus("playing after both calls") {
                    $0.playback == "playing" && $0.activeInterruptions.isEmpty
                }
                #expect(resumed.positionMs >= phoneOnly.positionMs, "\(phoneOnly) -> \(resumed)")
            }
        }
    }
}
