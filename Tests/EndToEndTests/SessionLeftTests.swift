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
    /// The most audio the headphones may play after Earshot decided to leave, in milliseconds: RULES.md's cork at
    /// once (10 ms), the recorder's placement of a moment in the recording (+/-20 ms), and on PipeWire one graph
    /// period, since it stops a corked stream at a period's edge. Counted from Earshot's decision (its log), not from
    /// the signal: the signal's way over D-Bus to Earshot is the bus's and the scheduler's, and under load it took
    /// the audio after the signal to 63.5 ms against the 60 allowed before (PipeWire 0.3.65, scripts/ci-repeat).
    static func heardAfterDecisionBound() throws -> Double {
        10 + 20 + (try TestEnvironment.serverPeriodSeconds()) * 1000
    }
    /// How much recording past a confirmed cork shows that nothing followed it: more than the bound above.
    static let quietAfterCork = Duration.milliseconds(200)

    @Test("PrepareForSleep(true) while playing: paused, corked, the delay released after the cork; wake: still paused")
    func sleepPausesCorksThenLetsGo() async throws {
        try await ServiceHarness.run { harness in
            let logind = try FakeLogind()
            defer { logind.stop() }
            let (service, recorder) = try await startPlaying(harness, logind)
            let (signalled, signalledDate) = (ContinuousClock.now, Date())
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
            // A laptop opened in a meeting room stays quiet: half a second after the wake, and the recording reaches
            // that far before it is stopped.
            try await Task.sleep(for: .milliseconds(500))
            let afterWake = try harness.status()
            #expect(afterWake.playback == "paused" && afterWake.pauseReason == "sessionLeft", "\(afterWake)")
            try await recorder.waitUntilRecorded(past: ContinuousClock.now)
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
            report("sleep: heard after logind's signal",
                   recording.audibleMilliseconds(within: try span(sent, recording.duration, "after the signal")))
            let decided = try Self.instant(
                ofLogLine: "event kind=sessionLeft(sleep)", in: log, signalled, signalledDate)
            let after = recording.audibleMilliseconds(
                within: try span(recording.time(of: decided), recording.duration, "after the decision"))
            report("sleep: heard after Earshot's decision", after)
            #expect(after <= (try Self.heardAfterDecisionBound()), "\(recording.audibleRanges()); log:\n\(log)")
            // Nothing starts after the signal, the wake included. (Not "nothing heard after the wake": the wake can
            // come before the last of the audio the server rendered ahead of the cork reaches the monitor, within
            // the bound above; on PipeWire 1.6.9 under load 2.7 ms of it fell after the wake.)
            let startedAfter = recording.audibleRanges().filter { $0.lowerBound > sent }
            let wokeAt = recording.time(of: woke)
            #expect(startedAfter.isEmpty,
                    "sound started after the signal (the wake at \(wokeAt) s): \(recording.audibleRanges())\n\(log)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("Our session loses the seat (Active false) while playing: paused and corked; its return plays nothing")
    func sessionInactivePauses() async throws {
        try await ServiceHarness.run { harness in
            let logind = try FakeLogind()
            defer { logind.stop() }
            let (service, recorder) = try await startPlaying(harness, logind)
            let (signalled, signalledDate) = (ContinuousClock.now, Date())
            try logind.setActive(false)
            try await harness.waitForStatus(of: service, "paused, the session inactive, corked") {
                $0.playback == "paused" && $0.pauseReason == "sessionLeft" && $0.corked
            }
            try logind.setActive(true)
            try await Task.sleep(for: .milliseconds(500))
            let returned = try harness.status()
            #expect(returned.playback == "paused" && returned.pauseReason == "sessionLeft", "\(returned)")
            try await recorder.waitUntilRecorded(past: ContinuousClock.now)
            let recording = try await recorder.stop()
            let log = service.standardError()
            #expect(log.contains("event kind=sessionLeft(inactive) playback=paused(sessionLeft) commands=cork"),
                    "\(log)")
            #expect(log.contains("event kind=sessionReturned(inactive) playback=paused(sessionLeft) commands=none"),
                    "\(log)")
            let window = try span(recording.time(of: signalled), recording.duration, "after the signal")
            report("session inactive: heard after logind's notice", recording.audibleMilliseconds(within: window))
            let decided = try Self.instant(
                ofLogLine: "event kind=sessionLeft(inactive)", in: log, signalled, signalledDate)
            let after = recording.audibleMilliseconds(
                within: try span(recording.time(of: decided), recording.duration, "after the decision"))
            report("session inactive: heard after Earshot's decision", after)
            #expect(after <= (try Self.heardAfterDecisionBound()), "\(recording.audibleRanges()); log:\n\(log)")
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
            let (signalled, signalledDate) = (ContinuousClock.now, Date())
            try relocking.lock()
            try await harness.waitForStatus(of: service, "paused for the lock, corked") {
                $0.playback == "paused" && $0.pauseReason == "sessionLeft" && $0.corked
            }
            // The recording must reach past the cork before it stops, with room to show that nothing followed it:
            // stopped at once, the monitor's last block had not arrived yet, and on PipeWire 1.6.9 it ended 0.3 ms
            // before the signal ("no room for after the signal: 0.630296889 s is after 0.63 s").
            try await recorder.waitUntilRecorded(past: ContinuousClock.now + Self.quietAfterCork)
            let recording = try await recorder.stop()
            let log = service.standardError()
            #expect(log.contains("event kind=sessionLeft(locked) playback=paused(sessionLeft) commands=cork"), "\(log)")
            let window = try span(recording.time(of: signalled), recording.duration, "after the signal")
            report("lock with pauseOnLock: heard after the Lock signal", recording.audibleMilliseconds(within: window))
            let decided = try Self.instant(
                ofLogLine: "event kind=sessionLeft(locked) playback=paused", in: log, signalled, signalledDate)
            let after = recording.audibleMilliseconds(
                within: try span(recording.time(of: decided), recording.duration, "after the decision"))
            report("lock with pauseOnLock: heard after Earshot's decision", after)
            #expect(after <= (try Self.heardAfterDecisionBound()), "\(recording.audibleRanges()); log:\n\(log)")
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
            // A second heard, so that the half second before the signal that the tests look at lies inside the music
            // on the monitor's timeline too, which can lag the stream's clock under load (at 0.5 s heard, 365 ms of
            // that half second was audible once on PipeWire 1.6.9 under stress-ng).
            try await harness.waitForStatus(of: service, "playing, uncorked, 1 s heard") {
                $0.playback == "playing" && !$0.corked && $0.positionMs >= 1000
            }
            return (service, recorder)
        } catch {
            _ = try? await recorder.stop()
            throw error
        }
    }

    /// The instant of the first log line containing `text` on the monotonic clock, through the two clocks read
    /// together (`clock`, `date`) before the signal that caused it.
    private static func instant(
        ofLogLine text: String, in log: String, _ clock: ContinuousClock.Instant, _ date: Date
    ) throws -> ContinuousClock.Instant {
        let dayMilliseconds = 86_400_000
        let dateOfDay = Int((date.timeIntervalSince1970 * 1000).rounded()) % dayMilliseconds
        // Within a day either way: a test across midnight wraps.
        var offset = try logTime(of: text, in: log) - dateOfDay
        if offset < -dayMilliseconds / 2 { offset += dayMilliseconds }
        return clock + .milliseconds(offset)
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
