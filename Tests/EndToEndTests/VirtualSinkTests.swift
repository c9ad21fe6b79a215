// The device behind a virtual sink (issue 13, RULES.md "output lost" and "route changed"): effect and routing tools
// make Earshot's sink a virtual one whose monitor a loopback carries to the real device. Here: a null sink `fx`,
// `module-loopback source=fx.monitor sink=headphones` (PulseAudio's own module, and pipewire-pulse's of the same
// name), the speakers the server's default sink, and `earshot play --sink fx`. Unplugging the headphones leaves fx
// alone; the server moves the loopback to the speakers.
//
// fx, headphones and speakers are all recorded. What reached fx is exactly what Earshot played, so fx shows when
// Earshot went quiet; what then reached the speakers is what the loopback itself had buffered (outside Earshot's
// reach) and is reported separately (RULES.md, "What correct means").
import EarshotTestSupport
import Foundation
import Testing

@Suite("The device behind a virtual sink", .serialized)
struct VirtualSinkTests {
    /// The length of the position track played.
    static let trackSeconds = 20.0
    /// The track positions the analysis reads (from 0.8 s on; see PolitenessTests).
    static let positions = 0.8...trackSeconds
    /// The virtual sink Earshot plays on.
    static let fx = "fx"
    /// The loopback's `latency_msec`: small, as effect tools keep it.
    static let loopbackLatencyMilliseconds = 20

    /// Runs `body` with the server to itself, fx and the loopback to the headphones loaded (the speakers the default
    /// sink), a scratch folder, the position track and recorders on headphones, speakers and fx started before the
    /// player; `body` also gets the loopback's module index. Both modules are unloaded afterwards, also on failure,
    /// and the standard layout is restored (withExclusiveSoundServer).
    private func scenario(_ body: (URL, URL, [MonitorRecorder], Int) async throws -> Void) async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            // Before the loopback exists: PulseAudio moves a loopback that has no preferred sink with the default.
            try ServerControl.setDefaultSink(TestEnvironment.speakers)
            let fxModule = try ServerControl.pactl([
                "load-module", "module-null-sink", "sink_name=\(Self.fx)", "sink_properties=device.description=FX",
            ]).trimmed
            defer { _ = try? ServerControl.pactl(["unload-module", fxModule]) }
            let loopbackOutput = try ServerControl.pactl([
                "load-module", "module-loopback", "source=\(Self.fx).monitor", "sink=\(TestEnvironment.headphones)",
                "latency_msec=\(Self.loopbackLatencyMilliseconds)",
            ]).trimmed
            defer { _ = try? ServerControl.pactl(["unload-module", loopbackOutput]) }
            let loopbackModule = try #require(Int(loopbackOutput), "load-module printed \(loopbackOutput)")
            report("virtual sink: loopback latency_msec", Double(Self.loopbackLatencyMilliseconds))
            try await waitUntil("the loopback plays on the headphones", timeout: .seconds(10)) {
                try loopbackSink(of: loopbackModule) == TestEnvironment.headphones
            }
            try await TestEnvironment.withScratchDirectory { scratch in
                // Fades off: the edges are measured to a millisecond (EdgesTests measures fades).
                try writeConfiguration(#"{"fadeMs": 0}"#, in: scratch)
                let track = try Fixtures.copy(
                    try Fixtures.positionTrack(seconds: Self.trackSeconds), to: scratch, named: PrivateNames.fileName)
                let sinks = [TestEnvironment.headphones, TestEnvironment.speakers, Self.fx]
                try await withMonitorRecorders(sinks) { recorders in
                    try await body(scratch, track, recorders, loopbackModule)
                }
            }
        }
    }

    /// The loopback's playback stream: `(index, sink name)`, from `pactl --format=json` (the owner module is what
    /// ties it to its module on both servers).
    private func loopbackStream(of module: Int) throws -> (index: Int, sink: String?)? {
        let sinkNames = Dictionary(try ServerControl.sinks().map { ($0.index, $0.name) }) { first, _ in first }
        let output = try ServerControl.pactl(["--format=json", "list", "sink-inputs"])
        let objects = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]] ?? []
        for object in objects {
            guard let index = object["index"] as? Int, Self.integer(object["owner_module"]) == module else { continue }
            return (index, Self.integer(object["sink"]).flatMap { sinkNames[$0] })
        }
        return nil
    }

    /// The name of the sink the loopback plays on, if it exists.
    private func loopbackSink(of module: Int) throws -> String? {
        try loopbackStream(of: module)?.sink
    }

    /// A JSON number or numeric string as an integer (pactl writes some indices as strings).
    private static func integer(_ value: Any?) -> Int? {
        switch value {
        case let number as Int: number
        case let text as String: Int(text)
        default: nil
        }
    }

    /// The first `event kind=outputLost(deviceRemoved)` line of earshot's log: its moment and its commands.
    private func lossDecision(in log: String) -> (date: Date, commands: String)? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for line in log.split(separator: "\n") where line.contains("event kind=outputLost(deviceRemoved)") {
            let fields = line.split(separator: " ")
            guard let first = fields.first, let date = formatter.date(from: String(first)) else { continue }
            let commands = fields.first { $0.hasPrefix("commands=") }.map { String($0.dropFirst(9)) } ?? ""
            return (date, commands)
        }
        return nil
    }

    /// Starts earshot on `track` on fx and waits until 1.5 s of it were heard.
    private func startPlaying(_ track: URL, in scratch: URL) async throws -> EarshotPlayer {
        let player = try EarshotPlayer(playing: [track], options: ["--sink", Self.fx], in: scratch)
        do {
            let status = try await player.waitUntilHeard(milliseconds: 1500)
            #expect(status.sink == Self.fx, "\(status)")
        } catch {
            player.kill()
            throw error
        }
        return player
    }

    @Test("unplug behind fx: Earshot corks at once; only the loopback's buffer reaches the speakers")
    func unplugBehindVirtualSink() async throws {
        try await scenario { scratch, track, recorders, loopback in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let (unplugging, unpluggingDate) = (ContinuousClock.now, Date())
            try ServerControl.unplug(sink: TestEnvironment.headphones)
            let (unplugged, unpluggedDate) = (ContinuousClock.now, Date())
            let lost = try await player.waitForStatus("paused for the lost device", timeout: .seconds(5)) {
                $0.pauseReason == "outputLost"
            }
            let statusSeen = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(1500))
            let settled = try player.status()
            let stream = try player.stream()
            let loopbackNow = try loopbackSink(of: loopback)
            let recordings = try await stopRecorders(recorders)
            let (headphones, speakers, fx) = (recordings[0], recordings[1], recordings[2])

            #expect(settled.playback == "paused" && settled.pauseReason == "outputLost"
                        && settled.outputLostReason == "deviceRemoved", "\(settled)")
            #expect(settled.positionMs == lost.positionMs, "the position moved while paused: \(lost) -> \(settled)")
            #expect(settled.sink == Self.fx && settled.corked, "\(settled)")
            let ours = try #require(stream, "our stream is gone: \(settled)")
            #expect(ours.corked && ours.sinkName == Self.fx, "our stream after the unplug: \(ours)")
            report("virtual sink unplug: status paused, seen by polling within",
                   (statusSeen - unplugged).seconds * 1000)
            report("virtual sink unplug: pactl unload-module took", (unplugged - unplugging).seconds * 1000)
            // The event log's own moment (wall clock, milliseconds) for the loss, and the cork it asked for.
            let decision = try #require(
                lossDecision(in: player.standardError), "no outputLost(deviceRemoved) in the log")
            #expect(decision.commands.hasPrefix("cork"), "the loss asked for \(decision.commands)")
            let decidedAfter = decision.date.timeIntervalSince(unpluggedDate) * 1000
            report("virtual sink unplug: Earshot decided the loss after the unplug returned", decidedAfter)
            report("virtual sink unplug: Earshot decided the loss after the unplug started",
                   decision.date.timeIntervalSince(unpluggingDate) * 1000)
            // How long the notice took to reach Earshot's decision is the server's and the scheduler's, and only
            // reported: on a loaded machine it is what it is (the log has millisecond steps).

            // Earshot's own part, RULES.md's "corked within 10 ms of the notice": its last sound on fx counted from its
            // decision (the log's moment, brought onto the monotonic clock through the two clocks read together before
            // the unplug), not from the pactl call's return, which also counts the notice's way to Earshot (35.8 ms
            // against a bound of 20 from the return, under load). The bound: the rule's 10 ms, 10 ms more for the
            // recordings' clocks, and one graph period on PipeWire, which stops a corked stream at a period's edge
            // (TestEnvironment.serverPeriodSeconds; 0 on PulseAudio). The sweep's edge is earlier where the stream
            // ends in a short tail (PipeWire under load: 6 ms once).
            let decided = try await player.lossDecided(sent: unplugging, sentDate: unpluggingDate)
            let onFx = try #require(fx.sweepStretches(positions: Self.positions).last, "no music on fx")
            let lastOnFx = fx.instant(atTime: try #require(fx.audibleRanges().last, "nothing on fx").upperBound)
            let quietAfterDecision = (lastOnFx - decided).seconds * 1000
            report("virtual sink unplug: Earshot's music on fx ended after the unplug returned",
                   (fx.instant(atTime: onFx.end) - unplugged).seconds * 1000)
            report("virtual sink unplug: Earshot's last sound on fx after the unplug returned",
                   (lastOnFx - unplugged).seconds * 1000)
            report("virtual sink unplug: Earshot's last sound on fx after its decision", quietAfterDecision)
            let bound = 10 + 10 + (try TestEnvironment.serverPeriodSeconds()) * 1000
            #expect(quietAfterDecision <= bound,
                    "Earshot played on \(quietAfterDecision) ms after deciding the loss (bound \(bound)): \(onFx)")

            // What the loopback had buffered, on the speakers (the loopback was moved there).
            report("virtual sink unplug: loopback's buffered audio on the speakers", speakers.audibleMilliseconds)
            if let lastOnSpeakers = speakers.audibleRanges().last {
                let after = (speakers.instant(atTime: lastOnSpeakers.upperBound) - lastOnFx).seconds
                report("virtual sink unplug: speakers' last sound after Earshot's last on fx", after * 1000)
            }
            // After the loopback's buffer, nothing: our stream is corked, so the loopback carries silence.
            let afterBuffer = speakers.time(of: lastOnFx) + 0.250
            let window = try span(max(0, afterBuffer), speakers.duration, "after the buffer")
            let late = speakers.audibleMilliseconds(within: window)
            #expect(late == 0,
                    "\(late) ms reached the speakers after the loopback's buffer: \(speakers.audibleRanges())")
            #expect(speakers.audibleMilliseconds <= 250, "speakers: \(speakers.audibleRanges())")
            if let loopbackNow { report("virtual sink unplug: the loopback now plays on \(loopbackNow)", 0, unit: "") }

            let lastOnHeadphones = try #require(headphones.sweepStretches(positions: Self.positions).last)
            report("virtual sink unplug: saved position minus last heard on headphones",
                   (Double(settled.positionMs) / 1000 - lastOnHeadphones.positionAtEnd) * 1000)
            report("virtual sink unplug: saved position minus last played on fx",
                   (Double(settled.positionMs) / 1000 - onFx.positionAtEnd) * 1000)
            player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
        }
    }

    @Test("a deliberate move of the loopback to the speakers while the headphones exist keeps Earshot playing")
    func deliberateLoopbackMove() async throws {
        try await scenario { scratch, track, recorders, loopback in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let carrier = try #require(try loopbackStream(of: loopback), "the loopback has no playback stream")
            let moving = ContinuousClock.now
            // pipewire-pulse may acknowledge a move it does not carry out (PLATFORM.md): up to 3 tries, 2 s apart.
            for attempt in 1...3 {
                try ServerControl.pactl(["move-sink-input", "\(carrier.index)", TestEnvironment.speakers])
                let arrived = try? await waitUntil("the loopback is on the speakers", timeout: .seconds(2)) {
                    try loopbackSink(of: loopback) == TestEnvironment.speakers
                }
                if arrived != nil { break }
                #expect(attempt < 3, "the loopback is not on the speakers after 3 moves")
            }
            // Four seconds: a null sink that was idle can take up to 2 s to pass a newly linked stream's audio to its
            // monitor (PLATFORM.md), and once on PipeWire 0.3.65 nothing reached the speakers' monitor in 2 s.
            var seen: [EarshotStatus] = []
            for _ in 0..<16 {
                seen.append(try player.status())
                try await Task.sleep(for: .milliseconds(250))
            }
            let recordings = try await stopRecorders(recorders)
            let (headphones, speakers) = (recordings[0], recordings[1])

            #expect(try ServerControl.sinkExists(TestEnvironment.headphones))
            // PulseAudio reports the loopback's move (a route change in the log); pipewire-pulse reports nothing of it.
            if try TestEnvironment.soundServerKind() == .pulseAudio {
                #expect(player.standardError.contains("event kind=routeChanged"), "log:\n\(player.standardError)")
            }
            #expect(seen.allSatisfy { $0.playback == "playing" && $0.sink == Self.fx && !$0.corked },
                    "status after the move: \(seen.map(\.description))")
            // The music went on, now on the speakers, and left the headphones. (A loopback of 20 ms can drop out under
            // load, 11 ms once on PipeWire 1.4 with the track continuous across: that gap is the loopback's.)
            let onSpeakers = speakers.sweepStretches(positions: Self.positions)
            #expect(onSpeakers.map(\.length).reduce(0, +) >= 1.5, "speakers: \(onSpeakers)")
            if let first = onSpeakers.first {
                #expect(first.start >= speakers.time(of: moving) - 0.030, "speakers played before the move")
            }
            let lastOnHeadphones = try #require(headphones.sweepStretches(positions: Self.positions).last)
            let afterMove = headphones.audibleMilliseconds(
                within: try span(lastOnHeadphones.end + 0.002, headphones.duration, "after the move"))
            #expect(afterMove <= 5, "\(afterMove) ms on headphones after the move")
            player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
        }
    }
}
