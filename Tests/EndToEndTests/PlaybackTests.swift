// `earshot play` end to end (issue 3, item 5): what each sink's monitor really played. A tone is heard at its
// frequency, level and length on the sink it was sent to and nowhere else; two LAME-tagged tracks join without
// a gap; an undecodable file is skipped with its reason; SIGTERM stops the music at once and cleanly.
//
// Each test has the private server to itself (withExclusiveSoundServer) and its own control socket. They fail,
// never skip, without the server scripts/test starts. Waits for readiness are generous (a shared two-core
// machine); outcomes are checked strictly. A new stream's first ~10 ms never reach a null sink's monitor, so
// measured lengths can be up to that much short of the file's.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("earshot play", .serialized)
struct PlaybackTests {
    /// The ID3 title of the second gapless track; it must never reach the log.
    static let secretTitle = "Secret Title Axolotl 3b7e"
    /// Its artist.
    static let secretArtist = "Artist Quetzal 3b7e"
    /// The file name the second gapless track is played under.
    static let secretFileName = "Private Axolotl Track 3b7e.mp3"

    /// Plays `files` with `earshot play OPTIONS` while both sinks are recorded, waits for the player to exit by
    /// itself, and returns its exit status, the recordings (headphones, speakers) and the player.
    private func playToEnd(
        _ files: [URL], options: [String] = [], in scratch: URL
    ) async throws -> (status: Int32, headphones: Recording, speakers: Recording, player: EarshotPlayer) {
        // Fades off: the start and the seams are measured to a millisecond (EdgesTests measures fades).
        try writeConfiguration(#"{"fadeMs": 0}"#, in: scratch)
        return try await withMonitorRecorders { recorders in
            let player = try EarshotPlayer(playing: files, options: options, in: scratch)
            defer { player.kill() }
            let exited = await player.process.exit(within: .seconds(60))
            // Let the last block reach the monitors.
            try await Task.sleep(for: .milliseconds(300))
            let headphones = try await recorders[0].stop()
            let speakers = try await recorders[1].stop()
            #expect(exited, "earshot did not finish; log:\n\(player.standardError)")
            return (player.process.exitStatus ?? -1, headphones, speakers, player)
        }
    }

    @Test("a tone played to headphones is heard there at its frequency, level and length, and not on speakers")
    func toneOnHeadphones() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let seconds = 2.0
                let tone = try Fixtures.copy(
                    try Fixtures.tone(frequency: 440, seconds: seconds), to: scratch, named: PrivateNames.fileName)
                let run = try await playToEnd([tone], in: scratch)
                #expect(run.status == 0, "exit status; log:\n\(run.player.standardError)")
                let ranges = run.headphones.audibleRanges()
                #expect(ranges.count == 1, "audible ranges on headphones: \(ranges)")
                let heard = try #require(ranges.first)
                let length = heard.upperBound - heard.lowerBound
                report("tone length short of the file", (seconds - length) * 1000)
                // Up to 10 ms of a new stream's start never reach the monitor; nothing else may be missing.
                #expect(length >= seconds - 0.020 && length <= seconds + 0.005, "headphones played \(length) s")
                // A stretch under a second (a gap split the tone) has no middle to read: a failure, not a trap.
                let middle = try span(heard.lowerBound + 0.5, heard.upperBound - 0.5, "a middle in \(ranges)")
                let frequency = try #require(run.headphones.dominantFrequency(in: middle))
                #expect(abs(frequency - 440) <= 1, "frequency \(frequency) Hz")
                // The fixture's sine peaks at -6 dBFS (0.5); Earshot plays at 100 % volume.
                let amplitude = run.headphones.toneAmplitude(atFrequency: 440, in: middle)
                #expect(abs(amplitude - 0.5) <= 0.03, "amplitude \(amplitude)")
                #expect(run.speakers.audibleMilliseconds == 0, "speakers played \(run.speakers.audibleMilliseconds) ms")
                run.player.expectPrivateLog(hiding: PrivateNames.secrets)
            }
        }
    }

    @Test("two LAME-tagged tracks play back to back without a gap, for exactly their combined length")
    func gaplessSeam() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let first = try Fixtures.copy(
                    try Fixtures.tone(frequency: 440, seconds: 1.5), to: scratch, named: "first.mp3")
                let second = try Fixtures.copy(
                    try Fixtures.titledTrack(title: Self.secretTitle, artist: Self.secretArtist, seconds: 2,
                                             frequency: 660),
                    to: scratch, named: Self.secretFileName)
                let run = try await playToEnd([first, second], in: scratch)
                #expect(run.status == 0, "exit status; log:\n\(run.player.standardError)")
                let recording = run.headphones
                let ranges = recording.audibleRanges()
                #expect(ranges.count == 1, "audible ranges: \(ranges)")
                let heard = try #require(ranges.first)
                let length = heard.upperBound - heard.lowerBound
                report("gapless total short of 3.5 s", (3.5 - length) * 1000)
                #expect(abs(length - 3.5) <= 0.020, "the two tracks played for \(length) s, not 3.5 s")
                // The seam: where the first track's 440 Hz ends (10 ms windows), about 1.5 s after the start.
                let firstTone = recording.toneRanges(atFrequency: 440, amplitude: 0.2, within: heard)
                let seam = try #require(firstTone.last?.upperBound)
                #expect(abs(seam - heard.lowerBound - 1.5) <= 0.03, "the seam is at \(seam - heard.lowerBound) s")
                let seamSilence = recording.longestSilence(within: (seam - 0.1)..<(seam + 0.1))
                let anySilence = recording.longestSilence(within: heard)
                report("longest silence at the seam", seamSilence * 1000)
                #expect(seamSilence <= 0.005, "\(seamSilence * 1000) ms of silence at the seam")
                #expect(anySilence <= 0.005, "\(anySilence * 1000) ms of silence inside the music")
                // The second track really is the 660 Hz one.
                let secondMiddle = (seam + 0.5)..<(seam + 1.0)
                let frequency = try #require(recording.dominantFrequency(in: secondMiddle))
                #expect(abs(frequency - 660) <= 1, "second track at \(frequency) Hz")
                #expect(run.speakers.audibleMilliseconds == 0)
                run.player.expectPrivateLog(
                    hiding: [Self.secretTitle, Self.secretArtist, Self.secretFileName, "Axolotl", "Quetzal"])
            }
        }
    }

    /// One queue of every format, each as a gapless pair cut from one recording, in this order; the tones are 300 Hz
    /// apart, so 10 ms windows tell them apart.
    static let formatQueue: [(format: Fixtures.Format, frequencies: [Double])] = [
        (.mp3, [400, 700]), (.flac, [1000, 1300]), (.vorbis, [1600, 1900]), (.opus, [2200, 2500]),
    ]
    /// How long each track of `formatQueue` lasts, in seconds.
    static let formatTrackSeconds = 0.6

    @Test("a queue of MP3, FLAC, Vorbis and Opus plays in order, each pair cut from one recording joined with no gap")
    func everyFormatInOneQueue() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                var files: [URL] = []
                for (format, frequencies) in Self.formatQueue {
                    let cut = try Fixtures.cutRecording(
                        frequencies.map { (frequency: $0, seconds: Self.formatTrackSeconds) }, as: format)
                    for (index, track) in cut.tracks.enumerated() {
                        // Names that do not say the format: the content decides.
                        files.append(try Fixtures.copy(track, to: scratch, named: "track \(files.count + 1)-\(index)"))
                    }
                }
                let run = try await playToEnd(files, in: scratch)
                #expect(run.status == 0, "exit status; log:\n\(run.player.standardError)")
                let recording = run.headphones
                guard let heard = recording.audibleRanges().first.map({ $0.lowerBound..<recording.duration }) else {
                    Issue.record("nothing was heard; log:\n\(run.player.standardError)")
                    return
                }
                // Every track's tone is heard, in queue order, for its length.
                var previousEnd = heard.lowerBound
                for (format, frequencies) in Self.formatQueue {
                    let first = recording.toneRanges(atFrequency: frequencies[0], amplitude: 0.2, within: heard)
                    let second = recording.toneRanges(atFrequency: frequencies[1], amplitude: 0.2, within: heard)
                    guard let start = first.first?.lowerBound, let seam = first.last?.upperBound,
                          let end = second.last?.upperBound else {
                        Issue.record("\(format): a tone of the pair was not heard (\(first), \(second))")
                        continue
                    }
                    #expect(start >= previousEnd - 0.03, "\(format) began at \(start) s, before the track before ended")
                    #expect(abs(seam - start - Self.formatTrackSeconds) <= 0.03,
                            "\(format): the seam is \(seam - start) s after the pair's start")
                    #expect(abs(end - seam - Self.formatTrackSeconds) <= 0.03,
                            "\(format): the second track lasted \(end - seam) s")
                    let seamSilence = recording.longestSilence(within: (seam - 0.1)..<(seam + 0.1))
                    report("longest silence at the \(format) seam", seamSilence * 1000)
                    #expect(seamSilence <= 0.005, "\(format): \(seamSilence * 1000) ms of silence at the seam")
                    let middle = (seam + 0.2)..<(seam + 0.4)
                    let frequency = try #require(recording.dominantFrequency(in: middle))
                    #expect(abs(frequency - frequencies[1]) <= 2, "\(format): second track at \(frequency) Hz")
                    previousEnd = end
                }
                #expect(run.speakers.audibleMilliseconds == 0)
            }
        }
    }

    @Test("--sink speakers plays on speakers only")
    func sinkOption() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let tone = try Fixtures.copy(
                    try Fixtures.tone(frequency: 550, seconds: 1), to: scratch, named: PrivateNames.fileName)
                let run = try await playToEnd([tone], options: ["--sink", TestEnvironment.speakers], in: scratch)
                #expect(run.status == 0, "exit status; log:\n\(run.player.standardError)")
                let ranges = run.speakers.audibleRanges()
                #expect(ranges.count == 1, "audible ranges on speakers: \(ranges)")
                let heard = try #require(ranges.first)
                let length = heard.upperBound - heard.lowerBound
                // The upper bound allows 10 ms: a lossy codec's ringing at the tone's cut end stays above the
                // threshold for a few milliseconds (5.5 ms was measured).
                #expect(length >= 1 - 0.020 && length <= 1.010, "speakers played \(length) s")
                // Too short a range has no middle to measure: fail here rather than form an empty range.
                let middle = try span(heard.lowerBound + 0.3, heard.upperBound - 0.3, "a middle in \(ranges)")
                let frequency = try #require(run.speakers.dominantFrequency(in: middle))
                #expect(abs(frequency - 550) <= 1, "frequency on speakers \(frequency) Hz")
                #expect(run.headphones.audibleMilliseconds == 0,
                        "headphones played \(run.headphones.audibleMilliseconds) ms")
                run.player.expectPrivateLog(hiding: PrivateNames.secrets)
            }
        }
    }

    @Test("--sink naming no sink plays on the default sink (PulseAudio: the rules' choice, configuredSinkRefused)")
    func missingSinkFallsBackToTheDefault() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let tone = try Fixtures.copy(
                    try Fixtures.tone(frequency: 550, seconds: 1), to: scratch, named: PrivateNames.fileName)
                let run = try await playToEnd([tone], options: ["--sink", "earshot-no-such-sink"], in: scratch)
                #expect(run.status == 0, "exit status; log:\n\(run.player.standardError)")
                // The headphones are the server's default sink in the test configuration.
                #expect(run.headphones.audibleMilliseconds >= 900,
                        "headphones played \(run.headphones.audibleMilliseconds) ms")
                #expect(run.speakers.audibleMilliseconds == 0)
                // PulseAudio refuses a stream for a sink it does not have: the executor reported the refusal, the
                // rules chose the default sink. pipewire-pulse takes the stream and plays it on its default sink
                // itself.
                if try TestEnvironment.soundServerKind() == .pulseAudio {
                    #expect(run.player.standardError.contains("kind=configuredSinkRefused"),
                            "\(run.player.standardError)")
                    #expect(run.player.standardError.contains("commands=openStreamOnDefaultSink"))
                }
            }
        }
    }

    @Test("a corrupt file in the queue is reported with its reason and skipped; an all-bad queue exits non-zero")
    func corruptFilesAreSkipped() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let first = try Fixtures.copy(
                    try Fixtures.tone(frequency: 440, seconds: 1), to: scratch, named: "a.mp3")
                let broken = try Fixtures.copy(
                    try Fixtures.undecodable(), to: scratch, named: "Private Broken Wombat 9c2f.mp3")
                let last = try Fixtures.copy(try Fixtures.tone(frequency: 660, seconds: 1), to: scratch, named: "c.mp3")
                let run = try await playToEnd([first, broken, last], in: scratch)
                let log = run.player.standardError
                #expect(run.status == 0, "exit status with one bad file among good ones; log:\n\(log)")
                // "earshot: track 2 of 3 skipped: <kind>: <mpg123's reason>", once.
                let reports = log.split(separator: "\n").filter { $0.contains("track 2 of 3 skipped: ") }
                #expect(reports.count == 1, "reports of the bad track: \(reports); log:\n\(log)")
                if let line = reports.first {
                    let reason = line.components(separatedBy: "skipped: ").last?.trimmed ?? ""
                    #expect(reason.count >= 10, "the reason is missing: \(line)")
                }
                #expect(!log.contains("track 1 of 3 skipped") && !log.contains("track 3 of 3 skipped"), "log:\n\(log)")
                // Both good tracks were played, in full (sound only: whether the skip leaves a gap is not at issue).
                let heard = run.headphones.audibleRanges(bridging: 0.002)
                    .reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } * 1000
                #expect(heard >= 1980 && heard <= 2005, "headphones played \(heard) ms of the two good seconds")
                #expect(run.headphones.toneMilliseconds(atFrequency: 440, amplitude: 0.2,
                                                         within: run.headphones.wholeRange) >= 950)
                #expect(run.headphones.toneMilliseconds(atFrequency: 660, amplitude: 0.2,
                                                         within: run.headphones.wholeRange) >= 950)
                run.player.expectPrivateLog(hiding: ["Wombat", scratch.path])

                // Nothing playable at all: non-zero, every file reported, no sound.
                let empty = scratch.appendingPathComponent("empty.mp3")
                try Data().write(to: empty)
                let bad = try await playToEnd([broken, empty], in: scratch)
                let badLog = bad.player.standardError
                #expect(bad.status != 0, "exit status of an all-bad queue; log:\n\(badLog)")
                for track in 1...2 {
                    let reports = badLog.components(separatedBy: "track \(track) of 2 skipped: ").count - 1
                    #expect(reports == 1, "track \(track) reported \(reports) times; log:\n\(badLog)")
                }
                #expect(bad.headphones.audibleMilliseconds == 0 && bad.speakers.audibleMilliseconds == 0)
            }
        }
    }

    @Test("SIGTERM while playing stops the music at once, exits 0 and removes our stream")
    func terminateWhilePlaying() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let track = try Fixtures.copy(
                    try Fixtures.positionTrack(seconds: 20), to: scratch, named: PrivateNames.fileName)
                try await withMonitorRecorders([TestEnvironment.headphones]) { recorders in
                    let player = try EarshotPlayer(playing: [track], in: scratch)
                    defer { player.kill() }
                    try await player.waitUntilHeard(milliseconds: 1000)
                    #expect(try player.stream() != nil)
                    let signalled = ContinuousClock.now
                    player.process.signal(SIGTERM)
                    let exited = await player.process.exit(within: .seconds(5))
                    let exitTime = ContinuousClock.now - signalled
                    let streamsLeft = try ServerControl.sinkInputs(ofProcess: player.process.processIdentifier)
                    try await Task.sleep(for: .milliseconds(500))
                    let recording = try await recorders[0].stop()

                    report("exit after SIGTERM", exitTime.seconds * 1000)
                    #expect(exited && exitTime < .seconds(1), "earshot took \(exitTime) to exit after SIGTERM")
                    #expect(player.process.exitStatus == 0, "exit status; log:\n\(player.standardError)")
                    #expect(streamsLeft.isEmpty, "our stream is still there: \(streamsLeft)")
                    // Sound after the signal: what the server had queued (about the 50 ms target latency) at
                    // most, measured against the signal's instant (about +/-20 ms).
                    let after = recording.audibleMilliseconds(after: signalled)
                    report("audio after SIGTERM", after)
                    #expect(after <= 80, "\(after) ms of music after SIGTERM")
                    player.expectPrivateLog(hiding: PrivateNames.secrets)
                }
            }
        }
    }

    @Test("an unplug while the queue's tail plays out: status answers at once, paused at the position heard")
    func unplugWhileTheTailPlaysOut() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                // A 2 s server buffer makes the end of the queue a long drain: the last 2 s of the 4 s track are
                // handed over when 2 s have been heard, and the unplug comes in the middle of playing them out.
                let config = scratch.appendingPathComponent("config/earshot/config.json")
                try FileManager.default.createDirectory(
                    at: config.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(#"{"targetLatencyMilliseconds": 2000}"#.utf8).write(to: config)
                let track = try Fixtures.copy(
                    try Fixtures.positionTrack(seconds: 4), to: scratch, named: PrivateNames.fileName)
                let player = try EarshotPlayer(playing: [track], in: scratch)
                defer { player.kill() }
                try await player.waitUntilHeard(milliseconds: 1500)
                try await Task.sleep(for: .milliseconds(1500))
                try ServerControl.unplug(sink: TestEnvironment.headphones)
                try await Task.sleep(for: .milliseconds(300))

                let asked = ContinuousClock.now
                let status = try player.status()
                let answeredIn = ContinuousClock.now - asked
                report("unplug during the drain: status answered in", Double(answeredIn.components.attoseconds) / 1e15
                       + Double(answeredIn.components.seconds) * 1000)
                // The owner never waits for the drain: a status costs a process start and a socket round trip.
                #expect(answeredIn < .seconds(1), "status took \(answeredIn): the owner was stuck in the drain")
                // RULES.md: the queue's end is its last audio played out, which the unplug prevented; rule 10 holds.
                #expect(status.playback == "paused" && status.pauseReason == "outputLost", "\(status)")
                #expect(status.positionMs >= 2000 && status.positionMs < 4000, "\(status)")
                #expect(player.process.isRunning, "earshot play ended although its queue was not played out")
                if status.streamOpen { #expect(status.corked, "\(status)") }
            }
        }
    }

    @Test("tracks added while the tail drains: the queue's end and then a format change's drain give way, all heard")
    func addWhileTheTailDrains() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                // A 2 s server buffer makes each drain long enough for an `earshot add` to come in the middle of it.
                try writeConfiguration(#"{"targetLatencyMilliseconds": 2000, "fadeMs": 0}"#, in: scratch)
                // A 44.1 kHz MP3, then two 48 kHz FLACs: a stream keeps its rate, so the second track is a format
                // change (its tail drained, the stream opened again), the third joins it without one.
                let first = try Fixtures.copy(try Fixtures.tone(frequency: 400, seconds: 3), to: scratch,
                                              named: "first.mp3")
                let second = try Fixtures.copy(try Fixtures.tone(.flac, frequency: 1000, seconds: 1, rate: 48_000),
                                               to: scratch, named: "second.flac")
                let third = try Fixtures.copy(try Fixtures.tone(.flac, frequency: 1600, seconds: 1, rate: 48_000),
                                              to: scratch, named: "third.flac")
                let (exitStatus, recording, log) = try await withMonitorRecorders([TestEnvironment.headphones]) {
                    recorders in
                    let player = try EarshotPlayer(playing: [first], in: scratch)
                    defer { player.kill() }
                    func waitForEvent(_ line: String) async throws {
                        try await waitUntil(line, timeout: .seconds(20)) {
                            guard player.process.isRunning else {
                                throw ToolkitError("earshot exited before \(line):\n\(player.standardError)")
                            }
                            return player.standardError.contains(line)
                        }
                    }
                    // The queue's end is handed over and drains: the second track comes in the middle of that.
                    try await waitForEvent(
                        "event kind=tailHandedOver(queueEnd) playback=playing commands=drain(queueEnd)")
                    try player.control(["add", second.path])
                    // Its rate is a format change whose tail drains in turn: the third track comes during that drain.
                    try await waitForEvent(
                        "event kind=tailHandedOver(formatChange) playback=playing commands=drain(formatChange)")
                    try player.control(["add", third.path])
                    let exited = await player.process.exit(within: .seconds(30))
                    // Let the last block reach the monitor.
                    try await Task.sleep(for: .milliseconds(300))
                    let recording = try await recorders[0].stop()
                    #expect(exited, "earshot did not finish; log:\n\(player.standardError)")
                    return (player.process.exitStatus ?? -1, recording, player.standardError)
                }
                #expect(exitStatus == 0, "exit status; log:\n\(log)")
                // Both additions came while a drain ran: the first before the queue was played out, the second before
                // the format change was reached.
                let events = log.components(separatedBy: "\n").filter { $0.contains(" event kind=") }
                func position(_ kind: String) -> Int? { events.firstIndex { $0.contains("kind=\(kind) ") } }
                let added = try #require(position("queueExtended(2 tracks)"), "\(log)")
                let addedDuringChange = try #require(position("queueExtended(3 tracks)"), "\(log)")
                let changeReached = try #require(position("formatChangeReached"), "\(log)")
                let playedOut = try #require(position("queuePlayedOut"), "\(log)")
                #expect(added < changeReached && addedDuringChange < changeReached && changeReached < playedOut,
                        "\(events.joined(separator: "\n"))")
                // Every track is heard whole, in order (a new stream's first ~10 ms never reach the monitor).
                let whole = 0..<recording.duration
                var previousEnd = 0.0
                for (frequency, seconds) in [(400.0, 3.0), (1000, 1), (1600, 1)] {
                    let ranges = recording.toneRanges(atFrequency: frequency, amplitude: 0.2, within: whole)
                    let heard = recording.toneMilliseconds(atFrequency: frequency, amplitude: 0.2, within: whole)
                    report("added while draining: \(Int(frequency)) Hz heard", heard)
                    #expect(abs(heard - seconds * 1000) <= 40, "\(frequency) Hz heard for \(heard) ms: \(ranges)")
                    guard let start = ranges.first?.lowerBound, let end = ranges.last?.upperBound else { continue }
                    #expect(start >= previousEnd - 0.02, "\(frequency) Hz began at \(start) s, before \(previousEnd) s")
                    previousEnd = end
                }
            }
        }
    }
}
