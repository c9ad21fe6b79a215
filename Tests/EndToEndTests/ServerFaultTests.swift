// The sound server dying under `earshot serve` (issue 7), end to end: killed mid-play twenty times in a row,
// killed as the user pauses, while paused, right after a move, while the service starts, and absent when the
// service starts. Each time the service must survive, end paused (rule 10: output lost; it never plays by itself
// when the server comes back, rule 12), keep the position the listener last heard, reconnect, and play again from
// there on `resume`.
//
// PolitenessTests' test 9 kills the server once under `earshot play`; these tests drive the desktop service
// (ServiceHarness) and repeat the kill. The server is killed with SIGKILL and started again at the same address
// through scripts/lib/soundserver-ctl (SoundServerControl). What was heard is recorded from the headphones' monitor
// while the position sweep plays (Fixtures.positionTrack), so a recording tells which moment of the track was heard.
//
// How "the position kept is what was heard" is measured: a recorder on the headphones' monitor runs until the
// kill (parec ends with the server). The last frame it holds is the last moment of the track the sink rendered
// that reached the recorder; its track position is read from the sweep's frequency at the recording's end (to
// about 2 ms). After the kill, `status` must report a position within 50 ms of it. On a quiet machine the recorder
// misses at most the block it had not yet been sent when the server died (parec asks for 10 ms blocks), and the
// tolerance covers it; on a loaded one parec may not have been scheduled for a while, and what the sink played but
// the server had not yet sent it dies with the server (385 ms once at a load of 20). The recording then ends before
// the kill, and the position kept is then ahead of it by at least that much (`Recording.missingTail`), within the
// tolerance. On PipeWire the kill takes pipewire-pulse (our connection) first and the graph a little later, so the
// recording ends with a few milliseconds of silence: the last moment heard is the end of the sweep, not of the
// recording.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("earshot serve when the sound server dies", .serialized)
struct ServerFaultTests {
    /// The length of the position track played (the longest the sweep allows: twenty rounds play from it).
    static let trackSeconds = Fixtures.longestPositionTrack
    /// How many times the loop kills the server.
    static let killRounds = 20
    /// How far the position kept after a kill may be from the last moment heard on the monitor, plus on PipeWire
    /// one graph period (`TestEnvironment.serverPeriodSeconds()`).
    static let keptTolerance = 0.050
    /// How far the first moment heard after `resume` may be from the position kept: the 20 ms RULES.md allows after
    /// an interruption (seen here: 0 to 11 ms on PulseAudio). On PipeWire the new stream's first moments after the
    /// stack restarted can be cut or delayed on a loaded machine while WirePlumber links it (seen: -62 to +43 ms
    /// with a load average of 18, 0 to 1 ms otherwise), as PolitenessTests' test 9 allows for too.
    static func resumeTolerance() throws -> Double {
        try TestEnvironment.soundServerKind() == .pipeWire ? 0.100 : 0.020
    }

    // MARK: 1: twenty kills in a row

    @Test("the server killed mid-play 20 times: the service survives, pauses at what was heard, resumes there")
    func killedMidPlayTwentyTimes() async throws {
        try await Self.withTrack(seconds: Self.trackSeconds) { harness, track in
            let service = try await harness.startService()
            // Started before the music, to hear it from its first moment.
            var recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones, promptly: true)
            try harness.earshotChecked(["play", track.path])
            var playingFrom = try await harness.waitForStatus(of: service, "1.5 s of the track were heard") {
                $0.playback == "playing" && $0.positionMs >= 1500
            }.positionMs
            // The position kept by the previous round, and when `resume` was sent; nil in the first round.
            var resumed: (kept: Int, at: ContinuousClock.Instant)?
            let resumeTolerance = try Self.resumeTolerance()
            var survived = 0
            var keptErrors: [Double] = []
            var missingTails: [Double] = []
            var resumeErrors: [Double] = []
            for round in 1...Self.killRounds {
                // A different moment each round, so the kill lands anywhere between two of the service's ticks.
                let playFor = Int.random(in: 250...600)
                try await harness.waitForStatus(of: service, "round \(round): \(playFor) ms more were heard") {
                    $0.playback == "playing" && $0.positionMs >= playingFrom + playFor
                }
                let killed = ContinuousClock.now
                try SoundServerControl.run("kill")
                let heard = try await recorder.stop()
                let lost = try await harness.waitForStatus(of: service, "round \(round): paused for the lost server") {
                    $0.playback == "paused" && $0.pauseReason == "outputLost"
                }
                #expect(lost.outputLostReason == "serverLost" && lost.server == nil, "round \(round): \(lost)")
                let window = max(0.8, Double(playingFrom) / 1000 - 1)...(Double(lost.positionMs) / 1000 + 2)
                let stretches = heard.sweepStretches(positions: window)
                if case let (kept, at)? = resumed {
                    // The previous round's resume.
                    resumeErrors += Self.checkResume(
                        heard, stretches: stretches, sentAt: at, kept: kept, tolerance: resumeTolerance,
                        context: "round \(round)")
                }
                let last = try #require(stretches.last, "round \(round): nothing heard before the kill")
                // The music was playing when the server died: it ran to the end of the recording (but for the
                // silence a dying PipeWire graph renders, see the top).
                #expect(last.end >= heard.duration - 0.050,
                        "round \(round): music stopped at \(last.end) of \(heard.duration) s: \(stretches); \(lost)")
                let error = Double(lost.positionMs) / 1000 - last.positionAtEnd
                keptErrors.append(error * 1000)
                // Played up to the kill but never delivered to the recorder: the position kept may be ahead of the
                // recording by that much (reported; under load it was 385 ms once).
                let missing = heard.missingTail(before: killed)
                missingTails.append(missing * 1000)
                let tolerance = Self.keptTolerance + (try TestEnvironment.serverPeriodSeconds())
                let detail = "round \(round): kept \(lost.positionMs) ms, last heard \(last), \(missing) s missing "
                    + "from the recording's end; all \(stretches); \(lost)"
                // What was heard ends at least `missing` after the recording's end, so the lower bound moves with it.
                #expect(error >= missing - tolerance && error <= tolerance + missing, "\(detail)")

                guard service.isRunning else {
                    Issue.record(
                        "round \(round): earshot serve exited when the server died: \(service.standardError())")
                    break
                }
                try SoundServerControl.run("start")
                // The recorder starts while the service reconnects, which with the status checks below is also the
                // time a careless player would take to start by itself.
                async let nextRecorder = MonitorRecorder.start(sink: TestEnvironment.headphones, promptly: true)
                let back = try await harness.waitForStatus(of: service, "round \(round): reconnected") {
                    $0.server != nil
                }
                recorder = try await nextRecorder
                let waited = try harness.status()
                #expect(back.playback == "paused" && back.pauseReason == "outputLost"
                            && back.positionMs == lost.positionMs, "round \(round): after the server returned: \(back)")
                #expect(waited.playback == "paused" && waited.positionMs == lost.positionMs,
                        "round \(round): before `resume`: \(waited)")
                survived += 1
                resumed = (lost.positionMs, .now)
                try harness.earshotChecked(["resume"])
                playingFrom = lost.positionMs
            }
            // The last round's resume, heard.
            if case let (kept, at)? = resumed {
                try await harness.waitForStatus(of: service, "the last resume was heard for 500 ms") {
                    $0.playback == "playing" && $0.positionMs >= kept + 500
                }
                let heard = try await recorder.stop()
                let window = max(0.8, Double(kept) / 1000 - 1)...(Double(kept) / 1000 + 3)
                resumeErrors += Self.checkResume(
                    heard, stretches: heard.sweepStretches(positions: window), sentAt: at, kept: kept,
                    tolerance: resumeTolerance, context: "last round")
            } else {
                _ = try? await recorder.stop()
            }
            print("server kills survived: \(survived)/\(Self.killRounds)")
            report("server kill x\(Self.killRounds): kept minus last heard, min", keptErrors.min() ?? .nan)
            report("server kill x\(Self.killRounds): kept minus last heard, max", keptErrors.max() ?? .nan)
            report("server kill x\(Self.killRounds): resumed minus kept, min", resumeErrors.min() ?? .nan)
            report("server kill x\(Self.killRounds): resumed minus kept, max", resumeErrors.max() ?? .nan)
            print("kept minus last heard (ms): \(keptErrors.map { Int($0.rounded()) })")
            print("missing from the recording's end at the kill (ms): \(missingTails.map { Int($0.rounded()) })")
            print("resumed minus kept (ms): \(resumeErrors.map { Int($0.rounded()) })")
            #expect(survived == Self.killRounds, "the service survived \(survived) of \(Self.killRounds) kills")
            await Self.stop(service, harness)
        }
    }

    // MARK: 2: killed while something else is under way

    @Test("the server killed as the user pauses: paused, reconnects, silent until `resume`, then plays")
    func killedDuringCork() async throws {
        try await Self.withTrack { harness, track in
            let service = try await Self.startPlaying(track, harness)
            // The pause and the kill race: the pause may be answered before, during or after the server dies.
            let pauseDone = StopFlag()
            Thread.detachNewThread {
                _ = try? harness.earshot(["pause"], timeout: .seconds(10))
                pauseDone.raise()
            }
            try SoundServerControl.run("kill")
            try await waitUntil("`earshot pause` returns", timeout: .seconds(15)) { pauseDone.isRaised }
            let paused = try await harness.waitForStatus(of: service, "paused") {
                $0.playback == "paused" && $0.server == nil
            }
            #expect(["user", "outputLost"].contains(paused.pauseReason ?? ""), "\(paused)")
            try await Self.reconnectAndResume(harness, service, kept: paused)
            await Self.stop(service, harness)
        }
    }

    @Test("the server killed while the user has paused: resume continues where the pause stopped, nothing skipped")
    func killedWhilePaused() async throws {
        try await Self.withTrack { harness, track in
            let service = try await Self.startPlaying(track, harness)
            try harness.earshotChecked(["pause"])
            // A pause corks without flushing: the server still holds what it had been given beyond the pause.
            let paused = try await harness.waitForStatus(of: service, "paused by the user") {
                $0.playback == "paused" && $0.pauseReason == "user"
            }
            try SoundServerControl.run("kill")
            let lost = try await harness.waitForStatus(of: service, "the server is gone") { $0.server == nil }
            #expect(lost.playback == "paused" && lost.positionMs == paused.positionMs, "\(paused) -> \(lost)")
            try await Self.reconnectAndResume(harness, service, kept: lost)
            await Self.stop(service, harness)
        }
    }

    @Test("the server killed right after our stream was moved: paused, reconnects, silent until `resume`, then plays")
    func killedDuringMove() async throws {
        try await Self.withTrack { harness, track in
            let service = try await Self.startPlaying(track, harness)
            let ours = try #require(
                try ServerControl.sinkInputs(ofProcess: service.processIdentifier).first, "no stream of earshot serve")
            // No waiting for the move to be carried out: the server dies while it is under way.
            try ServerControl.pactl(["move-sink-input", "\(ours.index)", TestEnvironment.speakers])
            try SoundServerControl.run("kill")
            let paused = try await harness.waitForStatus(of: service, "paused for the lost server") {
                $0.playback == "paused" && $0.pauseReason == "outputLost" && $0.server == nil
            }
            try await Self.reconnectAndResume(harness, service, kept: paused)
            await Self.stop(service, harness)
        }
    }

    @Test("the server killed while the service starts: it survives, restores paused, reconnects, plays on `resume`")
    func killedDuringStartup() async throws {
        try await Self.withTrack { harness, track in
            // A saved queue to restore: play a little, then stop the service the way systemd does.
            await Self.stop(try await Self.startPlaying(track, harness), harness)
            // At once (the service has not connected yet), and a little later (it is connecting, or just has).
            for delay in [0, Int.random(in: 20...300)] {
                let service = try harness.spawnService()
                try await Task.sleep(for: .milliseconds(delay))
                try SoundServerControl.run("kill")
                let up = try await harness.waitForStatus(of: service, "killed after \(delay) ms: status answers") {
                    $0.server == nil
                }
                #expect(up.playback == "paused" && up.trackCount == 1, "killed \(delay) ms after the start: \(up)")
                try await Self.reconnectAndResume(harness, service, kept: up)
                await Self.stop(service, harness)
            }
        }
    }

    // MARK: 3: no server at the start

    @Test("no server at the start: the service waits and answers; `play` pauses it; the server comes, `resume` plays")
    func serverAbsentAtStart() async throws {
        try await Self.withTrack { harness, track in
            try SoundServerControl.run("kill")
            let service = try await harness.startService()
            try await Task.sleep(for: .milliseconds(500))
            let waiting = try harness.status()
            #expect(service.isRunning && waiting.playback == "stopped" && waiting.server == nil, "\(waiting)")
            // Asked to play with no server: it cannot, so it is paused for the lost output, not failed.
            try harness.earshotChecked(["play", track.path])
            let paused = try await harness.waitForStatus(of: service, "paused without a server") {
                $0.playback == "paused"
            }
            #expect(paused.pauseReason == "outputLost" && paused.outputLostReason == "serverLost"
                        && paused.trackCount == 1, "\(paused)")
            // Moving on while the server is away is kept too (and puts the resume where the analysis can read it).
            try harness.earshotChecked(["seek", "5"])
            let moved = try await harness.waitForStatus(of: service, "sought to 5 s") { $0.positionMs == 5000 }
            #expect(moved.playback == "paused" && moved.server == nil, "\(moved)")
            // The attempts while it is away (one after 400 ms, then every 0.8 and 1 s) decide nothing the user hears:
            // the log says once that the server is unavailable, and not each attempt (a night away would be 7200
            // lines an hour). The one failure logged as an event is that of the attempt the play asked for, which
            // paused it.
            let log = service.standardError()
            #expect(log.components(separatedBy: "server state=unavailable").count == 2, "\(log)")
            #expect(!log.contains("event kind=timerFired"), "\(log)")
            #expect(log.components(separatedBy: "event kind=serverConnectFailed").count <= 2, "\(log)")
            try await Self.reconnectAndResume(harness, service, kept: moved)
            await Self.stop(service, harness)
        }
    }

    // MARK: Helpers

    /// Has the server to itself and gives `body` a harness and a position track of `seconds` under the private
    /// name; starts the server again afterwards if `body` left it dead.
    private static func withTrack(
        seconds: Double = 20, _ body: (ServiceHarness, URL) async throws -> Void
    ) async throws {
        try await ServiceHarness.run { harness in
            // Fades off: where the music stops and resumes is measured to a millisecond (EdgesTests measures fades).
            try harness.writeConfiguration(#"{"fadeMs": 0}"#)
            let track = try Fixtures.copy(
                try Fixtures.positionTrack(seconds: seconds), to: harness.root, named: PrivateNames.fileName)
            defer { try? SoundServerControl.run("start") }
            try await body(harness, track)
        }
    }

    /// Starts `earshot serve`, plays `track` and waits until 1.5 s of it were heard.
    private static func startPlaying(_ track: URL, _ harness: ServiceHarness) async throws -> ChildProcess {
        let service = try await harness.startService()
        try harness.earshotChecked(["play", track.path])
        try await harness.waitForStatus(of: service, "1.5 s were heard") {
            $0.playback == "playing" && $0.positionMs >= 1500
        }
        return service
    }

    /// Stops `service` as systemd does and checks that it exits cleanly and that its log kept the track private.
    private static func stop(
        _ service: ChildProcess, _ harness: ServiceHarness, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let status = await harness.stopService(service)
        #expect(status == 0, "earshot serve exited with \(status)", sourceLocation: sourceLocation)
        expectPrivateLog(service, hiding: [harness.root.path], sourceLocation: sourceLocation)
    }

    /// With the server dead and the service paused at `kept`: starts the server, waits until the service has
    /// reconnected, checks that it stays paused and silent on both sinks, sends `resume`, and checks that the
    /// track is heard again on the sink the status names, from about where it was kept.
    private static func reconnectAndResume(
        _ harness: ServiceHarness, _ service: ChildProcess, kept: EarshotStatus,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        #expect(service.isRunning, "earshot serve exited: \(service.standardError())", sourceLocation: sourceLocation)
        try SoundServerControl.run("start")
        // Both monitors from before the resume, started while the service reconnects.
        async let starting = MonitorRecorder.start(
            sinks: [TestEnvironment.headphones, TestEnvironment.speakers], promptly: true)
        try await harness.waitForStatus(of: service, "reconnected") { $0.server != nil }
        let recorders = try await starting
        let before = try harness.status()
        #expect(before.playback == "paused" && before.positionMs == kept.positionMs,
                "after the server came back: \(before); kept \(kept)", sourceLocation: sourceLocation)
        let resumed = ContinuousClock.now
        try harness.earshotChecked(["resume"])
        let playing = try await harness.waitForStatus(of: service, "500 ms heard after `resume`") {
            $0.playback == "playing" && $0.positionMs >= kept.positionMs + 500
        }
        let sink = try #require(playing.sink, "no sink in \(playing)", sourceLocation: sourceLocation)
        let window = max(0.8, Double(kept.positionMs) / 1000 - 1)...(Double(kept.positionMs) / 1000 + 3)
        for recorder in recorders {
            let recording = try await recorder.stop()
            // The sink it plays on: silent before `resume`, then the track from where it was kept. The other: silent.
            let stretches = recorder.sink == sink ? recording.sweepStretches(positions: window) : []
            let error = checkResume(
                recording, stretches: stretches, sentAt: resumed, kept: kept.positionMs,
                tolerance: try resumeTolerance(), context: recorder.sink, expectsMusic: recorder.sink == sink,
                sourceLocation: sourceLocation)
            if recorder.sink == sink, let error = error.first {
                report("server fault: resumed minus kept on \(sink)", error)
            }
        }
    }

    /// Checks a recording that ran across a `resume` sent at `sentAt`: nothing was heard before it, and (with
    /// `expectsMusic`) the first of `stretches` (the sweep heard in it) starts within `tolerance` of `kept` (ms).
    /// Returns that start's distance from `kept` in milliseconds (none when nothing was heard).
    private static func checkResume(
        _ recording: Recording, stretches: [HeardStretch], sentAt: ContinuousClock.Instant, kept: Int,
        tolerance: Double, context: String, expectsMusic: Bool = true, sourceLocation: SourceLocation = #_sourceLocation
    ) -> [Double] {
        // The recording's clock maps to the test's to about 20 ms (MonitorRecorder): a margin on top.
        let early = recording.audibleMilliseconds(within: 0..<max(0, recording.time(of: sentAt) - 0.030))
        #expect(early == 0, "\(context): \(early) ms were heard before `resume`", sourceLocation: sourceLocation)
        guard let first = stretches.first else {
            if expectsMusic {
                Issue.record("\(context): nothing was heard after `resume`", sourceLocation: sourceLocation)
            }
            return []
        }
        let error = first.positionAtStart - Double(kept) / 1000
        #expect(abs(error) <= tolerance, "\(context): kept \(kept) ms, resumed at \(first)",
                sourceLocation: sourceLocation)
        return [error * 1000]
    }

    /// Checks that the service logged events and named neither the track nor `secrets`.
    private static func expectPrivateLog(
        _ service: ChildProcess, hiding secrets: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let log = service.standardError()
        #expect(log.contains("event "), "no event log:\n\(log)", sourceLocation: sourceLocation)
        for secret in PrivateNames.secrets + secrets {
            #expect(!log.contains(secret), "the log contains \"\(secret)\":\n\(log)", sourceLocation: sourceLocation)
        }
    }
}
