// Politeness end to end (issue 4): phone calls, unplugging, replugging, moving, a dying server and a confused
// client, each proven by recording what the sinks' monitors really played while `earshot play` plays the
// position sweep (Fixtures.positionTrack), so that a recording tells which moment of the track was heard when:
// where the music stopped, where it continued, and whether anything of the track was lost.
//
// Numbered as in the issue. Each test has the private server to itself (withExclusiveSoundServer), its own
// control socket, and plays the track under a distinctive file name that its log must never show. Waits for
// readiness are generous (a shared two-core machine); outcomes are checked strictly. Measurements are printed as
// `[measure] name: value` lines.
//
// PulseAudio and pipewire-pulse differ (PLATFORM.md): on PulseAudio module-role-cork asks our stream to cork and
// mutes it; pipewire-pulse does neither and Earshot notices the phone stream itself. The checks here are what
// RULES.md promises on both; where a check only makes sense on one server it branches on soundServerKind().

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("Politeness on a real sound server", .serialized)
struct PolitenessTests {
    /// The length of the position track played.
    static let trackSeconds = 20.0
    /// The track positions the analysis looks for: from 0.8 s (700 Hz, clear of the dial tone) to the end.
    static let positions = 0.8...trackSeconds
    /// How much of the track is heard before anything happens, in milliseconds (past 0.8 s, see `positions`).
    static let heardBeforeEvent = 1500
    /// The length of a phone call, in seconds.
    static let callSeconds = 4.0

    // MARK: The analysis itself

    @Test("the stretch analysis finds a pause's edges and positions to a millisecond, also under a dial tone")
    func stretchAnalysisIsExact() throws {
        // A known signal, no server: the decoded sweep up to 2.0 s, then 0.5 s of the dial tone alone, then the
        // sweep again from 2.0 s on (a call that paused the music without losing any of it).
        let sweep = try Recording.decode(try Fixtures.positionTrack(seconds: 4))
        let call = try Recording.decode(try Fixtures.phoneCall(seconds: 0.5))
        let cut = 2 * Fixtures.sampleRate
        let left = Array(sweep.left[..<cut]) + call.left + Array(sweep.left[cut...])
        let right = Array(sweep.right[..<cut]) + call.right + Array(sweep.right[cut...])
        let recording = Recording(sink: "synthetic", sampleRate: Fixtures.sampleRate, left: left, right: right,
                                  startInstant: .now)
        let stretches = recording.sweepStretches(positions: Self.positions)
        #expect(stretches.count == 2, "\(stretches)")
        let (before, after) = (try #require(stretches.first), try #require(stretches.last))
        #expect(abs(before.end - 2.0) <= 0.001 && abs(before.positionAtEnd - 2.0) <= 0.001, "\(before)")
        #expect(abs(after.start - 2.5) <= 0.001 && abs(after.positionAtStart - 2.0) <= 0.001, "\(after)")
        #expect(abs(after.end - 4.5) <= 0.015 && abs(after.positionAtEnd - 4.0) <= 0.015, "\(after)")
        #expect(recording.sweepMilliseconds(within: 2.015..<2.485, positions: Self.positions) == 0)
        // (Below 0.6 s the sweep itself is within a 10 ms window's reach of 440 Hz: the tests look later.)
        let tone = recording.dialToneRanges(within: try span(0.8, recording.duration, "the dial tone"))
        #expect(tone.count == 1 && abs((tone.first?.lowerBound ?? 0) - 2.0) <= 0.010
                    && abs((tone.first?.upperBound ?? 0) - 2.5) <= 0.010, "\(tone)")
    }

    // MARK: 1-5: phone calls

    // Run on an MP3 and on a FLAC (issue 15): the same measurement, whichever decoder feeds the ring.
    @Test("1. a phone call silences the music at once; nothing of the track is lost and it continues where it stopped",
          arguments: [Fixtures.Format.mp3, .flac])
    func phoneCallWhilePlaying(format: Fixtures.Format) async throws {
        // The measurements' names: MP3's as they always were, FLAC's saying so.
        let label = format == .mp3 ? "call" : "call (\(format.rawValue))"
        try await scenario(format: format) { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let callPlaced = ContinuousClock.now
            let call = try placeCall()
            defer { call.kill() }
            try await player.waitForStatus("paused for the call") { $0.playback == "paused" }
            // The position in the status follows the stream's timing every 50 ms: let it catch up with the cork.
            try await Task.sleep(for: .milliseconds(150))
            let during = try await statuses(of: player, during: call)
            let resumed = try await player.waitForStatus("playing again after the call") { $0.playback == "playing" }
            try await Task.sleep(for: .seconds(1))
            let recordings = try await stop(recorders)
            let headphones = recordings[0]

            #expect(during.count >= 5
                        && during.allSatisfy { $0.playback == "paused" && $0.pauseReason == "interruption" },
                    "status during the call: \(during.map(\.description))")
            #expect(during.allSatisfy { !$0.activeInterruptions.isEmpty && $0.corked })
            // The position stands still while the call lasts.
            let positions = during.map(\.positionMs)
            let drift = (positions.max() ?? 0) - (positions.min() ?? 0)
            #expect(drift <= 2, "the position moved during the call: \(positions)")
            #expect(resumed.activeInterruptions.isEmpty && !resumed.waitingForInterruptionEnd)

            let callHeard = try heardCall(in: headphones, after: callPlaced)
            let (before, after, all) = try stretches(around: callHeard.lowerBound, in: headphones)
            let start = callStart(in: headphones, coarse: callHeard.lowerBound, musicEnd: before.end)
            let latency = before.end - start
            report("\(label): music end after the call's first sound", latency * 1000)
            report("\(label): music end after the call was placed (wall clock)",
                   (before.end - headphones.time(of: callPlaced)) * 1000)
            #expect(latency <= 0.030, "music went on \(latency * 1000) ms into the call; \(all)")
            // No music while the call is heard, and the music is back promptly once it ends.
            let silent = headphones.sweepMilliseconds(
                within: try span(before.end + 0.015, after.start - 0.015, "a call"), positions: Self.positions)
            #expect(silent == 0, "\(silent) ms of music during the call; \(all)")
            #expect(after.start >= callHeard.upperBound - 0.010, "music \(after) during the call \(callHeard)")
            report("\(label): music back after the call's last sound", (after.start - callHeard.upperBound) * 1000)
            #expect(after.start - callHeard.upperBound <= 1.0)
            // The position kept is the last one heard, and the track goes on from there: nothing lost or repeated.
            let kept = Double(positions.last ?? 0) / 1000 - before.positionAtEnd
            report("\(label): kept position minus last heard", kept * 1000)
            #expect(abs(kept) <= 0.020 + (try TestEnvironment.serverPeriodSeconds()),
                    "kept \(positions.last ?? 0) ms; the headphones last played \(before)")
            try expectContinues(before, after, label)
            #expect(recordings[1].audibleMilliseconds == 0, "speakers played \(recordings[1].audibleMilliseconds) ms")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    @Test("2. a user pause during the call holds after the call")
    func userPauseDuringCall() async throws {
        try await scenario { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let callPlaced = ContinuousClock.now
            let call = try placeCall(seconds: 3)
            defer { call.kill() }
            try await player.waitForStatus("paused for the call") { $0.pauseReason == "interruption" }
            try player.control(["pause"])
            let paused = try player.status()
            #expect(paused.playback == "paused" && paused.pauseReason == "user", "after `earshot pause`: \(paused)")
            _ = try await statuses(of: player, during: call)
            // Time enough for a careless player to have resumed.
            try await Task.sleep(for: .milliseconds(2500))
            let after = try player.status()
            let recordings = try await stop(recorders)
            let headphones = recordings[0]

            #expect(after.playback == "paused" && after.pauseReason == "user" && after.corked,
                    "after the call: \(after)")
            #expect(after.activeInterruptions.isEmpty && !after.waitingForInterruptionEnd, "\(after)")
            let callHeard = try heardCall(in: headphones, after: callPlaced)
            let all = headphones.sweepStretches(positions: Self.positions)
            let musicEnd = try #require(all.last { $0.start < callHeard.lowerBound }?.end, "\(all)")
            let later = headphones.sweepMilliseconds(
                within: try span(musicEnd + 0.015, headphones.duration, "after the music"), positions: Self.positions)
            #expect(later == 0, "\(later) ms of music after the call started; \(all)")
            let afterCall = headphones.audibleMilliseconds(
                within: try span(callHeard.upperBound + 0.020, headphones.duration, "a recording after the call"))
            #expect(afterCall == 0, "\(afterCall) ms of sound after the call ended")
            #expect(recordings[1].audibleMilliseconds == 0)
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    @Test("3. paused before the call (the phone stream created un-corked): still paused and silent after it")
    func pausedBeforeCall() async throws {
        try await scenario { scratch, track, recorders in
            let server = try TestEnvironment.soundServerKind()
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            try player.control(["pause"])
            let pausedAt = ContinuousClock.now
            try await player.waitForStatus("paused by the user and corked") {
                $0.playback == "paused" && $0.pauseReason == "user" && $0.corked
            }
            try await Task.sleep(for: .milliseconds(500))
            let callPlaced = ContinuousClock.now
            // paplay creates its stream un-corked: on PulseAudio module-role-cork then sends request-cork to our
            // (already corked) stream and request-uncork when the call ends (PLATFORM.md, the edge case).
            let call = try placeCall(seconds: 3)
            defer { call.kill() }
            let during = try await statuses(of: player, during: call)
            try await Task.sleep(for: .milliseconds(2500))
            let after = try player.status()
            let recordings = try await stop(recorders)
            let headphones = recordings[0]

            #expect(during.count >= 3
                        && during.allSatisfy { $0.playback == "paused" && $0.pauseReason == "user" && $0.corked },
                    "status during the call: \(during.map(\.description))")
            #expect(after.playback == "paused" && after.pauseReason == "user" && after.corked,
                    "after the call: \(after)")
            #expect(after.activeInterruptions.isEmpty && !after.waitingForInterruptionEnd, "\(after)")
            let log = player.standardError
            if server == .pulseAudio {
                // The edge case was really exercised: the server asked our paused stream to uncork.
                #expect(log.contains("interruptionEnded(server"), "no request-uncork arrived; log:\n\(log)")
            }
            let callHeard = try heardCall(in: headphones, after: callPlaced)
            let musicAfterPause = headphones.sweepMilliseconds(
                within: try span(headphones.time(of: pausedAt) + 0.100, headphones.duration, "after the pause"),
                positions: Self.positions)
            #expect(musicAfterPause == 0, "\(musicAfterPause) ms of music after the pause")
            let afterCall = headphones.audibleMilliseconds(
                within: try span(callHeard.upperBound + 0.020, headphones.duration, "a recording after the call"))
            #expect(afterCall == 0, "\(afterCall) ms of sound after the call ended")
            #expect(recordings[1].audibleMilliseconds == 0)
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    @Test("4. `earshot resume` during the call waits for the call to end, then plays")
    func resumeDuringCall() async throws {
        try await scenario { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let callPlaced = ContinuousClock.now
            let call = try placeCall()
            defer { call.kill() }
            try await player.waitForStatus("paused for the call") { $0.pauseReason == "interruption" }
            try await Task.sleep(for: .milliseconds(500))
            try player.control(["resume"])
            let waiting = try player.status()
            let during = try await statuses(of: player, during: call)
            let resumed = try await player.waitForStatus("playing after the call") { $0.playback == "playing" }
            try await Task.sleep(for: .seconds(1))
            let recordings = try await stop(recorders)
            let headphones = recordings[0]

            #expect(waiting.waitingForInterruptionEnd && waiting.playback == "paused" && waiting.corked,
                    "right after `earshot resume`: \(waiting)")
            #expect(during.count >= 5
                        && during.allSatisfy { $0.waitingForInterruptionEnd && $0.playback == "paused" && $0.corked },
                    "status during the call: \(during.map(\.description))")
            #expect(!resumed.waitingForInterruptionEnd)
            let callHeard = try heardCall(in: headphones, after: callPlaced)
            let (before, after, all) = try stretches(around: callHeard.lowerBound, in: headphones)
            let silent = headphones.sweepMilliseconds(
                within: try span(before.end + 0.015, after.start - 0.015, "a call"), positions: Self.positions)
            #expect(silent == 0, "\(silent) ms of music during the call; \(all)")
            #expect(after.start >= callHeard.upperBound - 0.010, "music \(after) began during the call \(callHeard)")
            #expect(after.start - callHeard.upperBound <= 1.0, "music \(after) long after the call \(callHeard)")
            report("resume during call: music back after the call's last sound",
                   (after.start - callHeard.upperBound) * 1000)
            try expectContinues(before, after, "resume during call")
            #expect(recordings[1].audibleMilliseconds == 0)
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    @Test("5. two overlapping calls: the music resumes only after the second ends")
    func overlappingCalls() async throws {
        try await scenario { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let callPlaced = ContinuousClock.now
            let first = try placeCall()
            defer { first.kill() }
            try await player.waitForStatus("paused for the first call") { $0.pauseReason == "interruption" }
            try await Task.sleep(for: .milliseconds(1500))
            let second = try placeCall()
            defer { second.kill() }
            _ = try await statuses(of: player, during: first)
            let firstEnded = ContinuousClock.now
            let between = try await statuses(of: player, during: second)
            let secondEnded = ContinuousClock.now
            try await player.waitForStatus("playing after both calls") { $0.playback == "playing" }
            try await Task.sleep(for: .seconds(1))
            let recordings = try await stop(recorders)
            let headphones = recordings[0]

            #expect(!between.isEmpty && between.allSatisfy {
                $0.playback == "paused" && $0.pauseReason == "interruption" && !$0.activeInterruptions.isEmpty
            }, "status between the calls' ends: \(between.map(\.description))")
            #expect((secondEnded - firstEnded) >= .seconds(1), "the calls did not overlap long enough")
            let callsHeard = try heardCall(in: headphones, after: callPlaced)
            let (before, after, all) = try stretches(around: callsHeard.lowerBound, in: headphones)
            // The first call's end, placed on the recording by the wall clock (about +/-20 ms).
            let firstEnd = headphones.time(of: firstEnded)
            #expect(callsHeard.upperBound - firstEnd >= 0.9, "calls heard \(callsHeard), first ended at \(firstEnd)")
            let silent = headphones.sweepMilliseconds(
                within: try span(before.end + 0.015, after.start - 0.015, "a call"), positions: Self.positions)
            #expect(silent == 0, "\(silent) ms of music during the calls; \(all)")
            #expect(after.start >= callsHeard.upperBound - 0.010, "music \(after) before the second call ended")
            #expect(after.start - callsHeard.upperBound <= 1.0)
            try expectContinues(before, after, "two calls")
            #expect(recordings[1].audibleMilliseconds == 0)
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    // MARK: 6-8: devices

    /// Unplugs the headphones and waits until the player says the output is lost; returns that status and the two
    /// clocks read together before the unplug (for `expectSpeakersQuietAfterUnplug`).
    private func unplugWhilePlaying(
        _ player: EarshotPlayer
    ) async throws -> (lost: EarshotStatus, sent: ContinuousClock.Instant, sentDate: Date) {
        let (sent, sentDate) = (ContinuousClock.now, Date())
        try ServerControl.unplug(sink: TestEnvironment.headphones)
        return (try await player.waitForStatus("paused for the lost output") { $0.pauseReason == "outputLost" },
                sent, sentDate)
    }

    /// The output-lost reasons a USB/Bluetooth-like removal may be reported with on the server under test.
    private func removalReasons() throws -> Set<String> {
        switch try TestEnvironment.soundServerKind() {
        case .pulseAudio:
            // The moved callback finds the old sink gone (PLATFORM.md: PulseAudio >= 14 moves, then removes).
            return ["deviceRemoved"]
        case .pipeWire:
            // SINK REMOVE comes first there, and WirePlumber may also kill and relink the stream: RULES.md
            // counts a killed stream as the same output loss.
            return ["deviceRemoved", "streamFailed"]
        }
    }

    /// Issue 12: the stream that an unplug moved was corked because the rules said so. In earshot's event log, the
    /// cork that follows the last uncork comes after the output-loss decision that asked for it (with the flush); an
    /// adapter that corked by itself would have had the cork reported first.
    private func expectCorkedByTheRules(log: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = log.split(separator: "\n").map(String.init)
        guard let loss = lines.firstIndex(where: { $0.contains("event kind=outputLost(") }) else {
            Issue.record("no output-loss decision in the log:\n\(log)", sourceLocation: sourceLocation)
            return
        }
        #expect(lines[loss].contains("commands=cork,flush"), "\(lines[loss])", sourceLocation: sourceLocation)
        let running = lines[..<loss].lastIndex { $0.contains("event kind=streamUncorked") } ?? -1
        let corked = lines.indices.filter { $0 > running && lines[$0].contains("event kind=streamCorked") }
        #expect(corked.first.map { $0 > loss } == true,
                "the cork was reported before the rules decided (lines \(corked), decision \(loss)):\n\(log)",
                sourceLocation: sourceLocation)
    }

    @Test("6. unplugging headphones: at most 10 ms and a period reach the speakers, paused at the last position heard")
    func unplugHeadphones() async throws {
        try await scenario { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let (lost, sent, sentDate) = try await unplugWhilePlaying(player)
            try await Task.sleep(for: .milliseconds(1500))
            let settled = try player.status()
            let stream = try player.stream()
            let recordings = try await stop(recorders)
            let (headphones, speakers) = (recordings[0], recordings[1])

            try await player.expectSpeakersQuietAfterUnplug(speakers, sent: sent, sentDate: sentDate, label: "unplug")
            #expect(settled.playback == "paused" && settled.pauseReason == "outputLost", "\(settled)")
            let reason = try #require(settled.outputLostReason)
            #expect(try removalReasons().contains(reason), "\(settled)")
            #expect(settled.positionMs == lost.positionMs, "the position moved while paused: \(lost) -> \(settled)")
            if settled.streamOpen {
                // Moved to the speakers (PulseAudio, or relinked by WirePlumber): it must be there, and quiet.
                let stream = try #require(stream, "status shows a stream, the server none: \(settled)")
                #expect(stream.corked, "our stream is not corked after the unplug: \(stream)")
                expectCorkedByTheRules(log: player.standardError)
            } else {
                // Killed with its sink (PipeWire): nothing of ours may be left on the server.
                #expect(settled.outputLostReason == "streamFailed", "no stream, but \(settled)")
                #expect(stream == nil, "status shows no stream, the server one: \(String(describing: stream))")
            }
            let lastHeard = try #require(headphones.sweepStretches(positions: Self.positions).last)
            let difference = Double(settled.positionMs) / 1000 - lastHeard.positionAtEnd
            report("unplug: saved position minus last heard on headphones", difference * 1000)
            // The saved position is the stream's clock at the unplug; the monitor cannot show what the removed sink
            // still held (up to a server period) nor, on PipeWire, the period its recorder had not yet been given: two
            // periods plus 30 ms. One period was the bound until a fresh-clone run of 0c4e86d saw 51.5 ms on PipeWire
            // 0.3.65 (1024-frame periods: 51.3 allowed).
            #expect(abs(difference) <= 0.030 + 2 * (try TestEnvironment.serverPeriodSeconds()),
                    "saved \(settled.positionMs) ms; headphones last played \(lastHeard)")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    @Test("7. replugging headphones after an unplug: Earshot stays paused and silent")
    func replugHeadphones() async throws {
        try await scenario { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let (lost, _, _) = try await unplugWhilePlaying(player)
            try await Task.sleep(for: .milliseconds(500))
            // The headphones recorder was moved off the vanished monitor; the speakers one runs on.
            _ = try await recorders[0].stop()
            let replugged = ContinuousClock.now
            try ServerControl.replug(sink: TestEnvironment.headphones)
            let newHeadphones = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            var seen: [EarshotStatus] = []
            var streams: [SinkInput] = []
            for _ in 0..<15 {
                seen.append(try player.status())
                if let stream = try player.stream() { streams.append(stream) }
                try await Task.sleep(for: .milliseconds(200))
            }
            let headphones = try await newHeadphones.stop()
            let speakers = try await recorders[1].stop()

            #expect(seen.allSatisfy { $0.playback == "paused" && $0.pauseReason == "outputLost" },
                    "status after the replug: \(seen.map(\.description))")
            #expect(seen.allSatisfy { $0.positionMs == lost.positionMs }, "\(seen.map(\.positionMs))")
            #expect(streams.allSatisfy { $0.corked }, "our stream uncorked after the replug: \(streams)")
            #expect(headphones.duration >= 2.5, "recorded only \(headphones.duration) s on the new headphones")
            #expect(headphones.audibleMilliseconds == 0,
                    "the new headphones played \(headphones.audibleMilliseconds) ms")
            let sinceReplug = try span(
                max(0, speakers.time(of: replugged) - 0.1), speakers.duration, "after the replug")
            let afterReplug = speakers.audibleMilliseconds(within: sinceReplug)
            #expect(afterReplug == 0, "speakers played \(afterReplug) ms after the replug")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    @Test("8. a deliberate move to speakers keeps playing there with a gap under 50 ms and nothing lost")
    func deliberateMove() async throws {
        try await scenario { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let ours = try await player.waitForStream()
            let moving = ContinuousClock.now
            try await ServerControl.move(sinkInput: ours.index, to: TestEnvironment.speakers)
            try await Task.sleep(for: .milliseconds(1500))
            let moved = try player.status()
            let recordings = try await stop(recorders)
            let (headphones, speakers) = (recordings[0], recordings[1])

            #expect(moved.playback == "playing" && moved.sink == TestEnvironment.speakers && !moved.corked, "\(moved)")
            let lastOnHeadphones = try #require(headphones.sweepStretches(positions: Self.positions).last)
            let onSpeakers = speakers.sweepStretches(positions: Self.positions)
            #expect(onSpeakers.count == 1, "music on speakers: \(onSpeakers)")
            let firstOnSpeakers = try #require(onSpeakers.first)
            #expect(firstOnSpeakers.start >= speakers.time(of: moving) - 0.030, "speakers played before the move")
            // Nothing more of ours on headphones after the move; PipeWire's relink can leave a sub-millisecond tail
            // (0.84 ms seen once) past the last full analysis window, so a few milliseconds are tolerated.
            let afterMove = headphones.audibleMilliseconds(
                within: try span(lastOnHeadphones.end + 0.002, headphones.duration, "after the move"))
            #expect(afterMove <= 5, "\(afterMove) ms on headphones after the move")
            // The two recordings' clocks agree to well under a millisecond on PulseAudio (MonitorRecorder); on
            // PipeWire each recorder gets its data a period at a time, so each timeline may be off by up to a period,
            // and the two by a whole period between them: seen 10.3 ms apart with 1024-frame periods on a quiet
            // machine, 20.7 ms in a loaded CI run (PipeWire 0.3.65). The track's own position, `jump`, stays exact.
            let clocks = 0.010 + (try TestEnvironment.serverPeriodSeconds())
            let gap = (speakers.instant(atTime: firstOnSpeakers.start)
                - headphones.instant(atTime: lastOnHeadphones.end)).seconds
            let jump = firstOnSpeakers.positionAtStart - lastOnHeadphones.positionAtEnd
            report("move: gap between headphones and speakers", gap * 1000)
            report("move: track position jump across the move", jump * 1000)
            #expect(gap < 0.050 && gap > -clocks, "gap \(gap * 1000) ms: \(lastOnHeadphones) -> \(firstOnSpeakers)")
            #expect(abs(jump) <= 0.030, "the track jumped \(jump * 1000) ms across the move")
            #expect(firstOnSpeakers.length >= 1.0, "speakers played \(firstOnSpeakers)")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    // MARK: 9: the server dies

    @Test("9. the server killed mid-play and restarted: paused with the position kept, resume continues there")
    func serverKilledAndRestarted() async throws {
        try await scenario(recording: [TestEnvironment.headphones]) { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            // Whatever happens, the following tests get a running server with the standard layout.
            defer { try? SoundServerControl.run("start") }
            let killed = ContinuousClock.now
            try SoundServerControl.run("kill")
            let lost = try await player.waitForStatus("paused for the lost server") {
                $0.pauseReason == "outputLost" && $0.outputLostReason == "serverLost"
            }
            let beforeKill = try await recorders[0].stop()
            try await Task.sleep(for: .milliseconds(500))
            #expect(player.process.isRunning, "earshot exited when the server died: \(player.standardError)")
            let whileDown = try player.status()

            try SoundServerControl.run("start")
            try await waitUntil("earshot reconnected", timeout: .seconds(20)) {
                player.standardError.components(separatedBy: "server state=connected").count - 1 >= 2
            }
            // Time enough for a careless player to start by itself.
            try await Task.sleep(for: .milliseconds(1500))
            let reconnected = try player.status()
            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            try player.control(["resume"])
            try await player.waitUntilHeard(milliseconds: lost.positionMs + 1000)
            let afterRestart = try await recorder.stop()

            #expect(whileDown.playback == "paused" && whileDown.positionMs == lost.positionMs, "\(whileDown)")
            #expect(reconnected.playback == "paused" && reconnected.pauseReason == "outputLost",
                    "after the server came back: \(reconnected)")
            #expect(reconnected.positionMs == lost.positionMs,
                    "position \(lost.positionMs) -> \(reconnected.positionMs)")
            let saved = Double(lost.positionMs) / 1000
            let lastHeard = try #require(beforeKill.sweepStretches(positions: Self.positions).last)
            report("server kill: saved position minus last heard", (saved - lastHeard.positionAtEnd) * 1000)
            // What the sink played up to the kill but the recorder never got (see `missingTail`): the position kept
            // is ahead of the recording's end by at least that much.
            let missing = beforeKill.missingTail(before: killed)
            report("server kill: missing from the recording's end", missing * 1000)
            let keptAhead = saved - lastHeard.positionAtEnd
            #expect(keptAhead >= missing - 0.100 && keptAhead <= 0.100 + missing,
                    "saved \(saved) s; last heard \(lastHeard); \(missing) s missing from the recording's end")
            let resumed = try #require(afterRestart.sweepStretches(positions: Self.positions).first,
                                       "nothing heard after the resume")
            report("server kill: resumed position minus saved", (resumed.positionAtStart - saved) * 1000)
            #expect(abs(resumed.positionAtStart - saved) <= 0.100, "saved \(saved) s; resumed at \(resumed)")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }

    // MARK: 10: a confused client

    @Test("10. malformed requests on the control socket get error replies; playback goes on untouched")
    func malformedRequests() async throws {
        try await scenario(recording: [TestEnvironment.headphones]) { scratch, track, recorders in
            let player = try await startPlaying(track, in: scratch)
            defer { player.kill() }
            let socket = try #require(player.environment["EARSHOT_SOCKET"])
            let before = try player.status()
            let started = ContinuousClock.now
            let notJSON = Array("this is not json\n".utf8)
            let unknown = Array(#"{"command":"frobnicate"}"#.utf8) + [10]
            let huge = [UInt8](repeating: UInt8(ascii: "x"), count: 100_000) + [10]
            let binary: [UInt8] = [0xFF, 0xFE, 0x00, 0x7B, 0x0A]
            var replies: [String] = []
            for payload in [notJSON, unknown, huge, binary] {
                replies += try ControlSocketProbe.exchange(path: socket, payload: payload, replies: 1)
            }
            // All of them on one connection, then a good request: the connection survives each.
            let status = Array(#"{"command":"status"}"#.utf8) + [10]
            let together = try ControlSocketProbe.exchange(
                path: socket, payload: notJSON + unknown + huge + binary + status, replies: 5)
            let finished = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(500))
            let after = try player.status()
            let headphones = try await recorders[0].stop()

            for reply in replies + together.prefix(4) {
                let parsed = ControlSocketProbe.parse(reply)
                #expect(parsed.ok == false && !(parsed.error ?? "").isEmpty, "reply: \(reply)")
            }
            #expect(ControlSocketProbe.parse(replies[1]).error?.contains("unknown command") == true, "\(replies[1])")
            #expect(together.count == 5 && ControlSocketProbe.parse(together[4]).ok == true
                        && ControlSocketProbe.parse(together[4]).playback == "playing", "\(together)")
            #expect(after.playback == "playing" && after.underruns == before.underruns, "\(before) -> \(after)")
            // The music went on through it all, continuously and at the right pace.
            let span = (headphones.time(of: started) - 0.100)..<(headphones.time(of: finished) + 0.300)
            let heard = headphones.sweepStretches(positions: Self.positions)
            let covering = heard.filter { $0.start < span.lowerBound && $0.end > span.upperBound }
            #expect(covering.count == 1, "music around the requests: \(heard)")
            let silence = headphones.longestSilence(within: span)
            #expect(silence <= 0.002, "\(silence * 1000) ms of silence while the requests were handled")
            let trace = headphones.positionTrace(in: span, step: 0.050, positions: Self.positions)
            let offsets = trace.compactMap { sample in sample.position.map { $0 - sample.time } }
            let wander = (offsets.max() ?? 0) - (offsets.min() ?? 0)
            #expect(offsets.count == trace.count && wander <= 0.005,
                    "the track did not advance with time: offsets wander \(wander * 1000) ms")
            player.expectPrivateLog(hiding: secrets(scratch))
        }
    }
}
