// Faults around a playing `earshot serve` (issue 7): a flood of a thousand phone calls, and the session bus
// killed and started again. The player must come through each with no deadlock, the state the rules give, no
// leaked server objects, MPRIS back on the new bus, and a log that still names no title and no file.
//
// Each test has its own service, session bus, socket and state folder (ServiceHarness) and the private sound
// server to itself. They run on both servers: on PulseAudio module-role-cork also sends cork requests for the
// calls; on PipeWire only Earshot's own watch of phone streams sees them. Waits are generous (a shared two-core
// machine); durations are measured and printed, not asserted beyond what a deadlock would break.

import EarshotTestSupport
import Foundation
import Testing

@Suite("Faults around earshot serve", .serialized)
struct FaultTests {
    @Test("1000 overlapping phone calls while playing: status answers throughout, then playing again, nothing leaked")
    func phoneCallFlood() async throws {
        try await ServiceHarness.run { harness in
            let track = try harness.privatePositionTrack()
            let service = try await harness.startService()
            try harness.earshotChecked(["play", track.path])
            try await harness.waitForStatus("earshot has played 300 ms") {
                $0.playback == "playing" && $0.positionMs >= 300
            }
            let clientsBefore = try ServerControl.pactl(["list", "short", "clients"]).trimmed
                .components(separatedBy: "\n").count
            try #require(try ServerControl.sinkInputs().count == 1, "only Earshot plays before the flood")

            // The status is sampled on the control socket every 100 ms while the calls come and go.
            let sampling = StopFlag()
            let sampler = Task { try await Self.sampleStatus(socket: harness.socketPath, until: sampling) }
            let flood = await PhoneFlood.run(calls: 1000, lanes: 4, sink: TestEnvironment.headphones)
            sampling.raise()
            let samples = try await sampler.value

            #expect(flood.completed == 1000, "calls that failed: \(flood.failureCount), e.g. \(flood.failures)")
            #expect(flood.mostAtOnce >= 2, "the calls never overlapped")
            let slowest = samples.map(\.latency).max() ?? .zero
            #expect(samples.count >= 10, "only \(samples.count) status samples during the flood")
            #expect(slowest < .seconds(1), "the slowest status answer during the flood took \(slowest)")
            let unexpected = samples.filter {
                !($0.status.playback == "playing"
                    || ($0.status.playback == "paused" && $0.status.pauseReason == "interruption"))
            }
            #expect(unexpected.count == 0, Comment(rawValue: "\(unexpected.count) statuses other than playing or "
                + "paused for a call, the first: \(unexpected.prefix(3)); the log:\n\(Self.logExcerpt(service))"))
            let heldSamples = samples.filter { $0.status.playback == "paused" }.count

            // The calls are over: the rules resume (resume allowed, remembered, well within the resume window).
            let settled = ContinuousClock.now
            let after = try await harness.waitForStatus("playing again with no call active") {
                $0.playback == "playing" && $0.activeInterruptions.isEmpty && !$0.corked
            }
            let resumedAfter = ContinuousClock.now - settled
            try await waitUntil("only Earshot's stream is left on the server", timeout: .seconds(15)) {
                try ServerControl.sinkInputs().count == 1
            }
            let left = try ServerControl.sinkInputs()
            #expect(left.map(\.processID) == [service.processIdentifier], "sink inputs left: \(left)")
            try await waitUntil("the callers' clients are gone", timeout: .seconds(15)) {
                try ServerControl.pactl(["list", "short", "clients"]).trimmed.components(separatedBy: "\n").count
                    <= clientsBefore
            }
            // Still playing, and the music moves on.
            let later = try await harness.waitForStatus("the position moves on after the flood") {
                $0.positionMs >= after.positionMs + 300
            }
            #expect(later.playback == "playing", "\(later)")
            #expect(service.isRunning)

            let log = service.standardError() + service.standardOutput()
            #expect(log.contains("interruptionBegan"), "the service never saw a call: \(log.suffix(2000))")
            for secret in PrivateNames.secrets + [harness.root.path] {
                #expect(!log.contains(secret), "the service's output contains \"\(secret)\"")
            }
            let kind = try TestEnvironment.soundServerKind()
            let interruptions = log.components(separatedBy: "kind=interruptionBegan").count - 1
            let resumes = log.components(separatedBy: "kind=streamUncorked").count - 1
            let seconds = String(format: "%.1f", flood.duration.seconds)
            print("phone flood on \(kind): \(flood.completed) calls in \(seconds) s, "
                + "at most \(flood.mostAtOnce) at once; the service logged \(interruptions) interruptions begun "
                + "and \(resumes) uncorks; \(samples.count) status samples, \(heldSamples) paused, "
                + "slowest \(String(format: "%.0f", slowest.seconds * 1000)) ms; playing again "
                + "\(String(format: "%.0f", resumedAfter.seconds * 1000)) ms after the last call")
            report("phone flood duration (\(kind))", flood.duration.seconds * 1000)
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("the session bus killed and started again while playing: MPRIS returns on it, the music never stops")
    func sessionBusRestart() async throws {
        try await ServiceHarness.run { harness in
            let track = try harness.privatePositionTrack()
            let service = try await harness.startService(waitForMPRIS: true)
            try harness.earshotChecked(["play", track.path])
            let before = try await harness.waitForStatus("earshot has played 1 s") {
                $0.playback == "playing" && $0.positionMs >= 1000
            }
            #expect(try harness.playerctlEarshot(["status"]) == "Playing")

            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            let recording: Recording
            let killed: ContinuousClock.Instant
            let back: Duration
            do {
                try await Task.sleep(for: .milliseconds(500))
                killed = ContinuousClock.now
                try harness.bus.restart()
                // The same address: clients that kept it (playerctl here) find Earshot there again.
                try await waitUntil("`playerctl -p earshot status` answers again", timeout: .seconds(20),
                                    interval: .milliseconds(50)) {
                    let result = try harness.playerctl(["-p", "earshot", "status"])
                    return result.succeeded && result.standardOutput.trimmed == "Playing"
                }
                back = ContinuousClock.now - killed
                try await Task.sleep(for: .milliseconds(500))
                recording = try await recorder.stop()
            } catch {
                _ = try? await recorder.stop()
                throw ToolkitError("\(error); service log:\n\(service.standardError())")
            }
            #expect(try harness.playerctl(["-l"]).standardOutput.components(separatedBy: "\n").contains("earshot"))
            let status = try harness.status()
            #expect(status.playback == "playing" && status.underruns == 0, "\(status)")
            // The positions the recording can hold (a narrow band keeps the analysis quick).
            let positions = (Double(before.positionMs) / 1000 - 0.5)...(Double(status.positionMs) / 1000 + 0.5)

            // The headphones heard the sweep the whole time, the track moving on with the clock. A loaded two-core
            // machine may starve the null sink for a few milliseconds (that is no pause: status counts no underrun,
            // and the track does not jump), so gaps up to 60 ms are allowed, and measured.
            let from = recording.time(of: killed) - 0.3
            let range = try span(max(from, 0.1), recording.duration - 0.1, "the recording")
            let stretches = recording.sweepStretches(within: range, positions: positions)
            let gaps = zip(stretches, stretches.dropFirst()).map { $1.start - $0.end }
            let first = try #require(stretches.first, "nothing heard around the restart")
            let last = try #require(stretches.last)
            #expect(first.start - range.lowerBound < 0.06 && range.upperBound - last.end < 0.06,
                    "heard \(stretches) of \(range)")
            #expect(gaps.allSatisfy { $0 < 0.06 }, "gaps in the music: \(stretches)")
            let advance = last.positionAtEnd - first.positionAtStart
            #expect(abs(advance - (last.end - first.start)) < 0.06,
                    "the track moved \(advance) s in \(last.end - first.start) s: \(stretches)")

            // And the new connection drives the player.
            try harness.playerctlEarshot(["pause"])
            #expect(try await harness.settle("paused") { try harness.status().playback } == "paused")

            let log = service.standardError()
            #expect(log.contains("mpris state=reconnected"), "\(log.suffix(2000))")
            for secret in PrivateNames.secrets + [harness.root.path] {
                #expect(!log.contains(secret), "the service's output contains \"\(secret)\"")
            }
            print("session bus restart: MPRIS answered again \(String(format: "%.0f", back.seconds * 1000)) ms after "
                + "the kill; gaps heard (ms): \(gaps.map { Int(($0 * 1000).rounded()) })")
            #expect(await harness.stopService(service) == 0)
        }
    }

    // MARK: Helpers

    /// The service's log from a few lines before its first line that is not about a call coming or going (or
    /// the last 40 lines if there is none), for failure messages.
    private static func logExcerpt(_ service: ChildProcess) -> String {
        let lines = service.standardError().components(separatedBy: "\n")
        let routine = ["interruptionBegan", "interruptionEnded", "streamCorked", "streamUncorked", "event kind=tick",
                       "service state=started", "server state=connected", "mpris state", "state restored",
                       "queueReplaced", "userPlay", "streamOpened"]
        guard let first = lines.firstIndex(where: { line in !line.isEmpty && !routine.contains { line.contains($0) } })
        else { return lines.suffix(40).joined(separator: "\n") }
        return lines[max(0, first - 15)..<min(lines.count, first + 15)].joined(separator: "\n")
    }

    /// One status answer during the flood, and how long it took.
    struct StatusSample: Sendable, CustomStringConvertible {
        /// How long the answer took.
        let latency: Duration
        /// What it said.
        let status: EarshotStatus

        /// For failure messages.
        var description: String { "\(status) after \(latency)" }
    }

    /// Asks for the status on the control socket every 100 ms until `stop` is raised; throws when an answer does
    /// not come within 10 s (a deadlock) or is not a status.
    private static func sampleStatus(socket: String, until stop: StopFlag) async throws -> [StatusSample] {
        let request = Array(#"{"command":"status"}"#.utf8) + [UInt8(ascii: "\n")]
        var samples: [StatusSample] = []
        while !stop.isRaised {
            let asked = ContinuousClock.now
            let replies = try ControlSocketProbe.exchange(path: socket, payload: request, replies: 1,
                                                          timeout: .seconds(10))
            let latency = ContinuousClock.now - asked
            let status = try JSONDecoder().decode(StatusReply<EarshotStatus>.self, from: Data(replies[0].utf8)).status
            samples.append(StatusSample(latency: latency, status: status))
            try await Task.sleep(for: .milliseconds(100))
        }
        return samples
    }
}
