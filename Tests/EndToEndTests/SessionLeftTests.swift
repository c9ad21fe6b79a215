// RULES.md rule 19 end to end: logind (python3-dbusmock's logind on a private bus standing in for the system bus,
// `FakeLogind`) announces a sleep, the wake, our session losing the seat, a lock; `earshot serve` plays the position
// track on the headphones, recorded off their monitor. A sleep pauses and corks at once and lets logind go (the
// delay lock released) only after the cork; nothing starts again on the wake or the return; a lock pauses only with
// `pauseOnLock`. About 1.5 s of audio per test. The times are printed as `[measure]` lines.
import EarshotTestSupport
import Foundation
import Testing

@Suite("The session left (rule 19), end to end", .serialized)
struct SessionLeftTests {
    /// The most audio the headphones may play after logind's signal: the cork follows the signal within a few
    /// milliseconds; the rest is the recorder's placement of the signal in the recording (+/-20 ms) and this machine's
    /// load.
    static let heardAfterSignalBound = 60.0

    @Test("PrepareForSleep(true) while playing: paused, corked, the delay released after the cork; wake: still paused")
    func sleepPausesCorksThenLetsGo() async throws {
        try await ServiceHarness.run { harness in
            let logind = try FakeLogind()
            defer { logind.stop() }
            let (service, recorder) = try await startPlaying(harness, logind)
            let signalled = ContinuousClock.now
            try logind.prepareForSleep(true)
            let untilRelease = try await waitUntil("Earshot releases its delay lock", timeout: .seconds(10),
                                                   interval: .milliseconds(2)) { try logind.inhibitorHolders().isEmpty }
            let paused = try await harness.waitForStatus(of: service, "paused for the sleep, corked") {
                $0.playback == "paused" && $0.pauseReason == "sessionLeft" && $0.corked
            }
            #expect(paused.activeInterruptions.isEmpty, "\(paused)")
            let woke = ContinuousClock.now
            try logind.prepareForSleep(false)
            try await waitUntil("Earshot takes its delay lock again after the wake", timeout: .seconds(10)) {
                try logind.inhibitorHolders() == ["Earshot"]
            }
            // A laptop opened in a meeting room stays quiet.
            try await Task.sleep(for: .milliseconds(500))
            let afterWake = try harness.status()
            #expect(afterWake.playback == "paused" && afterWake.pauseReason == "sessionLeft", "\(afterWake)")
            let recording = try await recorder.stop()
            let log = service.standardError()

            // The order in the log: the sleep's event corks, the cork's acknowledgement releases, the adapter closes.
            let left = try Self.logTime(of: "event kind=sessionLeft(sleep) playback=paused(sessionLeft) commands=cork",
                                        in: log)
            let corked = try Self.logTime(
                of: "event kind=streamCorked playback=paused(sessionLeft) commands=releaseSleepDelay", in: log)
            let released = try Self.logTime(of: "logind sleepDelay=released", in: log)
            #expect(left <= corked && corked <= released, "log:\n\(log)")
            #expect(log.contains("event kind=sessionReturned(sleep) playback=paused(sessionLeft) commands=none"),
                    "\(log)")
            report("sleep: logind's signal to the cork acknowledged (Earshot's log)", Double(corked - left))
            report("sleep: logind's signal to the delay lock released (Earshot's log)", Double(released - left))
            report("sleep: signal emitted to the lock gone from logind's list (polled)",
                   untilRelease.seconds * 1000)

            let sent = recording.time(of: signalled)
            let before = recording.audibleMilliseconds(within: max(0, sent - 0.5)..<sent)
            #expect(before >= 400, "the track was not playing before the signal: \(before) ms in the 500 ms before")
            let after = recording.audibleMilliseconds(within: try span(sent, recording.duration, "after the signal"))
            report("sleep: heard after logind's signal", after)
            #expect(after <= Self.heardAfterSignalBound, "\(recording.audibleRanges()); log:\n\(log)")
            let window = try span(recording.time(of: woke), recording.duration, "after waking")
            #expect(recording.audibleMilliseconds(within: window) == 0)
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("Our session loses the seat (Active false) while playing: paused and corked; its return plays nothing")
    func sessionInactivePauses() async throws {
        try await ServiceHarness.run { harness in
            let logind = try FakeLogind()
            defer { logind.stop() }
            let (service, recorder) = try await startPlaying(harness, logind)
            let signalled = ContinuousClock.now
            try logind.setActive(false)
            try await harness.waitForStatus(of: service, "paused, the session inactive, corked") {
                $0.playback == "paused" && $0.pauseReason == "sessionLeft" && $0.corked
            }
            try logind.setActive(true)
            try await Task.sleep(for: .milliseconds(500))
            let returned = try harness.status()
            #expect(returned.playback == "paused" && returned.pauseReason == "sessionLeft", "\(returned)")
            let recording = try await recorder.stop()
            let log = service.standardError()
            #expect(log.contains("event kind=sessionLeft(inactive) playback=paused(sessionLeft) commands=cork"),
                    "\(log)")
            #expect(log.contains("event kind=sessionReturned(inactive) playback=paused(sessionLeft) commands=none"),
                    "\(log)")
            let window = try span(recording.time(of: signalled), recording.duration, "after the signal")
            let after = recording.audibleMilliseconds(within: window)
            report("session inactive: heard after logind's notice", after)
            #expect(after <= Self.heardAfterSignalBound, "\(recording.audibleRanges()); log:\n\(log)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("A lock pauses only with pauseOnLock")
    func lockPausesOnlyWhenAsked() async throws {
        try await ServiceHarness.run { harness in
            let logind = try FakeLogind()
            defer { logind.stop() }
            // Default: the lock is logged and the music plays on.
            let (playingOn, firstRecorder) = try await startPlaying(harness, logind)
            try logind.lock()
            try await waitUntil("the lock reaches the rules", timeout: .seconds(10)) {
                playingOn.standardError().contains("event kind=sessionLeft(locked) playback=playing commands=none")
            }
            let unlocked = try harness.status()
            #expect(unlocked.playback == "playing" && !unlocked.corked, "\(unlocked)")
            _ = try await firstRecorder.stop()
            #expect(await harness.stopService(playingOn) == 0)

            // With pauseOnLock: paused and corked.
            try FileManager.default.createDirectory(
                at: harness.configFile.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(#"{"pauseOnLock": true}"#.utf8).write(to: harness.configFile)
            let relocking = try FakeLogind()
            defer { relocking.stop() }
            let (service, recorder) = try await startPlaying(harness, relocking)
            let signalled = ContinuousClock.now
            try relocking.lock()
            try await harness.waitForStatus(of: service, "paused for the lock, corked") {
                $0.playback == "paused" && $0.pauseReason == "sessionLeft" && $0.corked
            }
            let recording = try await recorder.stop()
            let log = service.standardError()
            #expect(log.contains("event kind=sessionLeft(locked) playback=paused(sessionLeft) commands=cork"), "\(log)")
            let window = try span(recording.time(of: signalled), recording.duration, "after the signal")
            let after = recording.audibleMilliseconds(within: window)
            report("lock with pauseOnLock: heard after the Lock signal", after)
            #expect(after <= Self.heardAfterSignalBound, "\(recording.audibleRanges()); log:\n\(log)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("Signals out of order (a wake with no sleep, two sleeps, two wakes, a malformed one): paused, one lock")
    func signalsOutOfOrder() async throws {
        try await ServiceHarness.run { harness in
            let logind = try FakeLogind()
            defer { logind.stop() }
            let (service, recorder) = try await startPlaying(harness, logind)
            _ = try await recorder.stop()
            try logind.emitManagerSignal("PrepareForSleep", signature: "s", value: "yes")
            try logind.prepareForSleep(false)
            try await waitUntil("the lone wake reaches the rules", timeout: .seconds(10)) {
                service.standardError().contains("event kind=sessionReturned(sleep) playback=playing commands=none")
            }
            #expect(try harness.status().playback == "playing")
            try logind.prepareForSleep(true)
            try logind.prepareForSleep(true)
            try await harness.waitForStatus(of: service, "paused for the sleep") { $0.pauseReason == "sessionLeft" }
            try await waitUntil("the delay lock released", timeout: .seconds(10)) {
                try logind.inhibitorHolders().isEmpty
            }
            try logind.prepareForSleep(false)
            try logind.prepareForSleep(false)
            try await waitUntil("the lock taken again", timeout: .seconds(10)) {
                try logind.inhibitorHolders() == ["Earshot"]
            }
            try await Task.sleep(for: .milliseconds(300))
            // One lock, not one per wake; still paused.
            #expect(try logind.inhibitorHolders() == ["Earshot"])
            let status = try harness.status()
            #expect(status.playback == "paused" && status.pauseReason == "sessionLeft", "\(status)")
            let log = service.standardError()
            #expect(log.components(separatedBy: "event kind=sessionLeft(sleep)").count == 3, "\(log)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("No system bus: said once in the log, and the service plays on")
    func noSystemBus() async throws {
        try await ServiceHarness.run { harness in
            let nowhere = harness.root.appendingPathComponent("no-system-bus").path
            let service = try await harness.startService(
                extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(nowhere)"])
            try await waitUntil("the log says logind is unavailable", timeout: .seconds(10)) {
                service.standardError().contains("logind state=unavailable")
            }
            try harness.earshotChecked(["play", try harness.privatePositionTrack().path])
            try await harness.waitForStatus(of: service, "playing") { $0.playback == "playing" && !$0.corked }
            let log = service.standardError()
            #expect(log.components(separatedBy: "logind ").count == 2, "logind said more than once:\n\(log)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    /// Starts recording the headphones, then `earshot serve` following `logind`, and plays the position track until
    /// half a second of it was heard with the stream uncorked. Earshot holds its delay lock by then.
    private func startPlaying(
        _ harness: ServiceHarness, _ logind: FakeLogind
    ) async throws -> (ChildProcess, MonitorRecorder) {
        let track = try harness.privatePositionTrack()
        let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones, promptly: true)
        do {
            let service = try await harness.startService(
                extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.bus.address])
            try await waitUntil("Earshot holds a delay lock", timeout: .seconds(10)) {
                try logind.inhibitorHolders() == ["Earshot"]
            }
            try harness.earshotChecked(["play", track.path])
            try await harness.waitForStatus(of: service, "playing, uncorked, 0.5 s heard") {
                $0.playback == "playing" && !$0.corked && $0.positionMs >= 500
            }
            return (service, recorder)
        } catch {
            _ = try? await recorder.stop()
            throw error
        }
    }

    /// The time of day, in milliseconds, of the first log line containing `text` (`2026-12-03T13:54:49.935Z ...`).
    private static func logTime(of text: String, in log: String) throws -> Int {
        guard let line = log.split(separator: "\n").first(where: { $0.contains(text) }),
              let clock = line.split(separator: "T").dropFirst().first?.prefix(12) else {
            throw ToolkitError("no log line with `\(text)`:\n\(log)")
        }
        let parts = clock.split(whereSeparator: { $0 == ":" || $0 == "." }).compactMap { Int($0) }
        guard parts.count == 4 else { throw ToolkitError("cannot read the time of `\(line)`") }
        return ((parts[0] * 60 + parts[1]) * 60 + parts[2]) * 1000 + parts[3]
    }
}
