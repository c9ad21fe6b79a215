// Bad files, end to end: one `earshot play` run queues every kind of damaged, mislabelled or unopenable file that
// the reliability issue lists, each between two good tone tracks, and checks what the headphones' monitor heard and
// what earshot wrote. Every file is generated here (sox, lame, and by hand), in a scratch folder.
//
// What is heard: the good tracks are a 440 Hz tone, every bad file that holds audio carries a 1500 Hz tone, so the
// recording reads as a sequence of runs (good, bad, good, ...) with skipped files leaving no run of their own.
//
// The unreadable file: the tests run as root, and root reads a mode-000 file (CAP_DAC_OVERRIDE). Running earshot as
// `nobody` would also need the private server's socket, its runtime folder and every other queued file opened up to
// that user, which changes more than the case under test. Instead earshot runs as root without the two capabilities
// that bypass file modes (`setpriv --bounding-set=-dac_override,-dac_read_search`): same user, same server, same
// files, and the kernel enforces mode 000 for that one process. Run as another user, chmod alone suffices.
//
// The non-UTF-8 file name cannot travel through Swift strings, so earshot gets its arguments as raw bytes
// (`ChildProcess(rawArguments:)`), as a shell passes them.
//
// Files that change under a playing service (deleted, or replaced by another file renamed over the path): what a user
// expects is what any Unix program holding a file open does. The track that is playing plays to its end from the
// file it opened: a deletion or a rename removes the name, not the data of an open file. The queue goes on and the
// service stays up. Whatever opens the path again later (previous, a seek, a restart of the track after the output
// was lost, a service restart) gets what the path names then: nothing, reported as `unreadable` (the decoder's
// `cannotOpen`) and skipped, or the new file, which plays. Those tests use `earshot serve` with three tones: the
// good tone for the file that changes, the bad tone for its replacement, and a third tone for the next track.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("Bad files", .serialized)
struct BadFilesTests {
    /// The good tracks' tone, in Hz.
    static let goodFrequency = 440.0
    /// The good tracks' length, in seconds.
    static let goodSeconds = 0.5
    /// The tone of every bad file that holds audio, in Hz (well apart from the good tone in a 10 ms window).
    static let badFrequency = 1500.0
    /// The length of every bad file's audio before damage, in seconds.
    static let badSeconds = 0.5
    /// A third tone, in Hz, for the track after a file that changes while it plays.
    static let thirdFrequency = 880.0

    /// Every bad file queued between good tracks; the run plays them all and exits 0.
    @Test("bad files are played or skipped with a reason; the good tracks between them play; no names on stderr")
    func badFilesBetweenGoodTracks() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let maker = try BadFileMaker(scratch: scratch)
                defer { maker.removeUnusualFiles() }
                let badFiles = try maker.makeAll()
                let good = try Fixtures.copy(
                    try Fixtures.tone(frequency: Self.goodFrequency, seconds: Self.goodSeconds), to: scratch,
                    named: "good.mp3")
                var queue: [[UInt8]] = [Array(good.path.utf8)]
                for badFile in badFiles {
                    queue += [badFile.path, Array(good.path.utf8)]
                }

                let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
                let started = ContinuousClock.now
                let player = try maker.launchEarshotPlay(queue)
                let finished = await player.exit(within: .seconds(120))
                let playTime = ContinuousClock.now - started
                // Let the last block reach the monitor.
                try await Task.sleep(for: .milliseconds(300))
                let recording = try await recorder.stop()
                if !finished { player.kill() }
                let standardError = player.standardError()
                let standardOutput = player.standardOutput()
                defer { player.removeOutputFiles() }

                #expect(finished, "earshot play did not finish within 120 s; stderr:\n\(standardError)")
                #expect(player.exitStatus == 0, "earshot play exited with \(player.exitStatus ?? -1)")
                print("[bad files] earshot play ran \(playTime) for \(queue.count) tracks")

                // earshot names files only by their place in the queue: no name, tag text or content reaches it.
                for marker in [BadFileMaker.nameMarker, BadFileMaker.contentMarker, scratch.lastPathComponent] {
                    #expect(!standardError.contains(marker), "stderr mentions \(marker):\n\(standardError)")
                    #expect(!standardOutput.contains(marker), "stdout mentions \(marker)")
                }

                #expect(standardError.contains("cover art skipped: picture too large"), "stderr:\n\(standardError)")
                let skips = SkipLine.all(in: standardError)
                var heardOutcomes: [Bool] = []
                for (index, badFile) in badFiles.enumerated() {
                    let trackNumber = 2 * index + 2
                    let skip = skips[trackNumber]
                    #expect(skip == nil || skip?.trackCount == queue.count, "\(badFile.label): \(skip as Any)")
                    heardOutcomes.append(badFile.check(skip: skip))
                }
                let goodSkips = skips.keys.filter { $0 % 2 == 1 }.sorted()
                #expect(goodSkips.isEmpty, "good tracks were skipped: \(goodSkips)")

                checkHeard(recording, badFiles: badFiles, heard: heardOutcomes)
            }
        }
    }

    /// How long the file that changes while it plays lasts, in seconds: longer than the decoder's lead (the ring
    /// holds about 3 s), so that it still has part of the file to read when the file changes.
    static let changingSeconds = 8.0
    /// The latest heard position, in milliseconds, at which changing the file still leaves part of it unread.
    static let latestChangeMilliseconds = 4000
    /// How long the next track and the replacement file last, in seconds.
    static let nextSeconds = 3.0

    @Test("a file deleted while it plays plays to its end; the queue goes on; reopened later it is skipped as unreadable")
    func deletedWhilePlaying() async throws {
        try await ServiceHarness.run { harness in
            let (changing, next) = try Self.makeChangingQueue(in: harness)
            let service = try await harness.startService()
            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            try harness.earshotChecked(["play", changing.path, next.path])
            try await Self.waitUntilHeard(harness, service, track: 0, milliseconds: 1000)
            try FileManager.default.removeItem(at: changing)
            let deletedAt = try harness.status()
            try await Self.waitUntilHeard(harness, service, track: 1, milliseconds: 1000)
            // The path names nothing now: `previous` opens it again.
            try harness.earshotChecked(["previous"])
            let ended = try await harness.settle("stopped", timeout: .seconds(30)) { try harness.status().playback }
            let recording = try await Self.stopAfterTail(recorder)
            let status = try harness.status()
            let statusText = try harness.earshotChecked(["status"]).standardOutput

            print("[bad files] deleted at \(deletedAt.positionMs) ms into the track")
            #expect(deletedAt.trackIndex == 0 && deletedAt.positionMs < Self.latestChangeMilliseconds,
                    "the file was deleted too late to test an open file: \(deletedAt)")
            #expect(ended == "stopped", "the queue did not finish: \(status)")
            #expect(status.lastError == EarshotStatus.TrackError(trackIndex: 0, kind: "unreadable"), "\(status)")
            #expect(statusText.contains("last error: track 1: unreadable"), "\(statusText)")
            let skips = SkipLine.all(in: service.standardError())
            #expect(skips[1]?.kind == "cannotOpen", "\(skips)")
            // The whole deleted file, then the next track: once before `previous`, once in full after the skip.
            let runs = Self.expectTones(recording, [.good, .third])
            if runs.count == 2 {
                #expect(abs(runs[0].seconds - Self.changingSeconds) <= 0.1, "the deleted file played \(runs[0].seconds) s")
                #expect(runs[1].seconds >= Self.nextSeconds + 0.8, "the next track played \(runs[1].seconds) s")
            }
            #expect(service.isRunning, "the service stopped: \(service.standardError())")
            Self.expectNoNames(service, in: harness)
        }
    }

    @Test("a file replaced while it plays plays to its end as it was; the queue goes on; reopened later it is the new file")
    func replacedWhilePlaying() async throws {
        try await ServiceHarness.run { harness in
            let (changing, next) = try Self.makeChangingQueue(in: harness)
            let replacement = try Fixtures.copy(
                try Fixtures.tone(frequency: Self.badFrequency, seconds: Self.nextSeconds),
                to: changing.deletingLastPathComponent(), named: "\(BadFileMaker.nameMarker) replacement.tmp")
            let service = try await harness.startService()
            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            try harness.earshotChecked(["play", changing.path, next.path])
            try await Self.waitUntilHeard(harness, service, track: 0, milliseconds: 1000)
            // What a download manager or `cp --remove-destination`-like tool does: a new file renamed over the name.
            guard rename(replacement.path, changing.path) == 0 else {
                throw ToolkitError("rename over the playing file failed: errno \(errno)")
            }
            let replacedAt = try harness.status()
            try await Self.waitUntilHeard(harness, service, track: 1, milliseconds: 1000)
            try harness.earshotChecked(["previous"])
            let ended = try await harness.settle("stopped", timeout: .seconds(30)) { try harness.status().playback }
            let recording = try await Self.stopAfterTail(recorder)
            let status = try harness.status()

            print("[bad files] replaced at \(replacedAt.positionMs) ms into the track")
            #expect(replacedAt.trackIndex == 0 && replacedAt.positionMs < Self.latestChangeMilliseconds,
                    "the file was replaced too late to test an open file: \(replacedAt)")
            #expect(ended == "stopped", "the queue did not finish: \(status)")
            #expect(status.lastError == nil, "\(status)")
            // The old file in full (none of the new one), the next track, after `previous` the new file, the next again.
            let runs = Self.expectTones(recording, [.good, .third, .bad, .third])
            if runs.count == 4 {
                #expect(abs(runs[0].seconds - Self.changingSeconds) <= 0.1, "the replaced file played \(runs[0].seconds) s")
                #expect(abs(runs[2].seconds - Self.nextSeconds) <= 0.1, "the new file played \(runs[2].seconds) s")
                #expect(abs(runs[3].seconds - Self.nextSeconds) <= 0.1, "the next track played \(runs[3].seconds) s")
            }
            #expect(service.isRunning, "the service stopped: \(service.standardError())")
            Self.expectNoNames(service, in: harness)
        }
    }

    @Test("names that are not UTF-8 play through the service: found by `add DIR`, given to `add`, listed escaped, kept")
    func nonUTF8NamesThroughTheService() async throws {
        try await ServiceHarness.run { harness in
            let folder = harness.root.appendingPathComponent("album", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let found = Array(folder.path.utf8) + Array("/1 \(BadFileMaker.nameMarker)-".utf8) + [0xFF, 0xFE, 0x0A]
                + Array(".mp3".utf8)
            let named = Array(harness.root.path.utf8) + Array("/\(BadFileMaker.nameMarker)-caf".utf8) + [0xE9]
                + Array(".mp3".utf8)
            let seconds = 1.0
            try BadFileMaker.write(try Data(contentsOf: try Fixtures.tone(frequency: Self.goodFrequency, seconds: seconds)),
                                   toRawPath: found)
            try BadFileMaker.write(try Data(contentsOf: try Fixtures.tone(frequency: Self.badFrequency, seconds: seconds)),
                                   toRawPath: named)
            defer {
                for path in [found, named] { _ = path.withCString { unlink($0) } }
            }
            var service = try await harness.startService(waitForMPRIS: true)
            try harness.earshotChecked(["add", folder.path])
            try harness.earshotChecked(rawArguments: [Array("add".utf8), named])
            // Shown escaped: the invalid bytes and the newline as \xHH, one line per track.
            let listing = "> 1. \(folder.path)/1 \(BadFileMaker.nameMarker)-\\xFF\\xFE\\x0A.mp3\n"
                + "  2. \(harness.root.path)/\(BadFileMaker.nameMarker)-caf\\xE9.mp3\n"
            #expect(try harness.earshotChecked(["queue"]).standardOutput == listing)
            // MPRIS metadata stays valid UTF-8: the URL percent-escapes the bytes.
            let url = try harness.playerctlEarshot(["metadata", "xesam:url"])
            let escapedFolder = folder.path.replacingOccurrences(of: " ", with: "%20")
            #expect(url == "file://\(escapedFolder)/1%20\(BadFileMaker.nameMarker)-%FF%FE%0A.mp3", "\(url)")

            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            try harness.earshotChecked(["play"])
            let ended = try await harness.settle("stopped", timeout: .seconds(30)) { try harness.status().playback }
            #expect(ended == "stopped")
            let recording = try await Self.stopAfterTail(recorder)
            #expect(try harness.status().lastError == nil)
            let runs = Self.expectTones(recording, [.good, .bad])
            for run in runs {
                #expect(abs(run.seconds - seconds) <= 0.06, "a track played \(run.seconds) s, not \(seconds) s")
            }

            // The state file keeps the bytes, and a restarted service lists the same queue.
            #expect(await harness.stopService(service) == 0)
            let state = try String(contentsOf: harness.stateFile, encoding: .utf8)
            #expect(state.contains(#"{"base64":"\#(Data(found).base64EncodedString())"}"#), "\(state)")
            #expect(state.contains(#"{"base64":"\#(Data(named).base64EncodedString())"}"#), "\(state)")
            service = try await harness.startService()
            // (Which track is current is another matter: compare the entries only.)
            let entries = { (text: String) in text.split(separator: "\n").map { $0.dropFirst() } }
            #expect(entries(try harness.earshotChecked(["queue"]).standardOutput) == entries(listing))
            Self.expectNoNames(service, in: harness)
        }
    }

    /// The file that will change (good tone, `changingSeconds`) and the next track (third tone, `nextSeconds`), in
    /// a `music` folder of the harness.
    private static func makeChangingQueue(in harness: ServiceHarness) throws -> (changing: URL, next: URL) {
        let music = harness.root.appendingPathComponent("music", isDirectory: true)
        let changing = try Fixtures.copy(try Fixtures.tone(frequency: goodFrequency, seconds: changingSeconds),
                                         to: music, named: "\(BadFileMaker.nameMarker) changing.mp3")
        let next = try Fixtures.copy(try Fixtures.tone(frequency: thirdFrequency, seconds: nextSeconds),
                                     to: music, named: "\(BadFileMaker.nameMarker) next.mp3")
        return (changing, next)
    }

    /// Waits until the service has played `milliseconds` of track `track` (a generous deadline); the error gives the
    /// last status and the service's log.
    private static func waitUntilHeard(
        _ harness: ServiceHarness, _ service: ChildProcess, track: Int, milliseconds: Int
    ) async throws {
        var last: EarshotStatus?
        do {
            _ = try await waitUntil("track \(track + 1) heard for \(milliseconds) ms", timeout: .seconds(30)) {
                let status = try harness.status()
                last = status
                return status.playback == "playing" && status.trackIndex == track && status.positionMs >= milliseconds
            }
        } catch {
            throw ToolkitError("\(error); last status: \(last.map { "\($0)" } ?? "none"); service log:\n"
                + service.standardError())
        }
    }

    /// Stops `recorder` after the last block has had time to reach the monitor.
    private static func stopAfterTail(_ recorder: MonitorRecorder) async throws -> Recording {
        try await Task.sleep(for: .milliseconds(300))
        return try await recorder.stop()
    }

    /// The tone runs of `recording`, after checking that they are `tones` in order (an issue otherwise).
    private static func expectTones(
        _ recording: Recording, _ tones: [ToneRun.Tone], sourceLocation: SourceLocation = #_sourceLocation
    ) -> [ToneRun] {
        let runs = ToneRun.runs(in: recording)
        let summary = runs.map { "\($0.tone)(\(String(format: "%.3f", $0.seconds)))" }.joined(separator: " ")
        print("[bad files] heard: \(summary)")
        #expect(runs.map(\.tone) == tones, "the headphones heard \(summary)", sourceLocation: sourceLocation)
        return runs
    }

    /// Checks that the service's log names no file.
    private static func expectNoNames(
        _ service: ChildProcess, in harness: ServiceHarness, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let log = service.standardError()
        for marker in [BadFileMaker.nameMarker, harness.root.lastPathComponent] {
            #expect(!log.contains(marker), "the service's stderr mentions \(marker):\n\(log)",
                    sourceLocation: sourceLocation)
        }
    }

    /// Compares the runs of tone the headphones played with the queue: every good track, and each bad file that
    /// played (as `heard` says), for about their lengths and in order.
    private func checkHeard(_ recording: Recording, badFiles: [BadFile], heard: [Bool]) {
        var expected: [ToneRun] = [ToneRun(tone: .good, seconds: Self.goodSeconds, label: "good track 1")]
        var goodTracks = 1
        for (badFile, played) in zip(badFiles, heard) {
            if played, case .played(let seconds) = badFile.heard {
                expected.append(ToneRun(tone: .bad, seconds: seconds.upperBound, label: badFile.label,
                                        allowed: seconds))
                expected.append(ToneRun(tone: .good, seconds: 0, label: ""))
            }
            goodTracks += 1
            // Consecutive good tracks (around a skipped file) are one run.
            let last = expected.count - 1
            expected[last].seconds += Self.goodSeconds
            expected[last].label = expected[last].label.isEmpty ? "good track \(goodTracks)" : expected[last].label
        }
        let observed = ToneRun.runs(in: recording)
        let summary = observed.map { "\($0.tone)(\(String(format: "%.3f", $0.seconds)))" }.joined(separator: " ")
        print("[bad files] heard: \(summary)")
        guard observed.count == expected.count, zip(observed, expected).allSatisfy({ $0.tone == $1.tone }) else {
            let wanted = expected.map { "\($0.tone)(\($0.label))" }.joined(separator: " ")
            Issue.record("the headphones heard \(summary)\nexpected \(wanted)")
            return
        }
        for (run, want) in zip(observed, expected) {
            switch want.tone {
            case .good:
                // A run of n good tracks lasts n * 0.5 s; the first may lose a little to the stream's start.
                let tolerance = 0.05 + 0.01 * (want.seconds / Self.goodSeconds)
                #expect(abs(run.seconds - want.seconds) <= tolerance,
                        "the good run from \(want.label) lasted \(run.seconds) s, not \(want.seconds) s")
            case .bad, .third:
                // (No third tone is queued here: the runs' tones matched.)
                let allowed = want.allowed ?? want.seconds...want.seconds
                #expect((allowed.lowerBound - 0.03...allowed.upperBound + 0.03).contains(run.seconds),
                        "\(want.label) played \(run.seconds) s, expected \(allowed)")
            }
        }
    }
}
