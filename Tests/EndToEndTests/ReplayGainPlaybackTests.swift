// ReplayGain end to end (issue 38): what the headphones' monitor really played for tracks tagged with ReplayGain
// values, with the mode set in the configuration file. Two tones 10 dB apart come out at one level in `track` mode
// and 10 dB apart with `off`; a tone peaking at -1 dBFS asked to rise 12 dB is held under full scale by its peak; a
// gain change at a gapless seam takes effect on the seam's first sample, with no ramp. Through `earshot serve`, the
// `replaygain` verb changes the mode from the next track, and status names the gain and its source. Three tones of
// one album in `album` mode keep their steps under the album's one gain. Two untagged
// tones 10 dB apart in the service's music folder are measured by the library (EBU R128) and then level as tagged
// ones do, with status and MPRIS naming the measured gain.
//
// The fixtures are FLAC (lossless) sines made by sox, so every level is known exactly. The tolerances come from the
// signal, not from timing: a sine's RMS over whole cycles is its amplitude / √2 whatever the window's place, 16-bit
// rounding moves a -16 dBFS sine's RMS by under 0.001 dB, and the sink plays at 100 % volume, which PulseAudio passes
// through untouched. Windows are taken well inside each track (0.3 s from either end), so a start or a seam found a
// few milliseconds off changes nothing. Each test has the private server to itself.

import EarshotTestSupport
import Foundation
import Testing

@Suite("ReplayGain playback", .serialized)
struct ReplayGainPlaybackTests {
    /// A stereo 44.1 kHz FLAC sine of `seconds` at `frequency`, peaking at `peakDBFS`, tagged with `tags`, in
    /// `scratch`.
    private func tone(
        _ name: String, frequency: Double, seconds: Double, peakDBFS: Double, tags: [String: String], in scratch: URL
    ) throws -> URL {
        let wav = scratch.appendingPathComponent("\(name).wav")
        let flac = scratch.appendingPathComponent("\(name).flac")
        try ProcessRunner.runChecked("sox", [
            "-n", "-r", "44100", "-c", "2", "-b", "16", "-e", "signed-integer", wav.path,
            "synth", "\(seconds)", "sine", "\(frequency)", "gain", "\(peakDBFS)",
        ], timeout: .seconds(120))
        try Fixtures.encode(wav, as: .flac, into: flac, tags: tags)
        return flac
    }

    /// Plays `files` with the configuration `replayGain` = `mode` (fades off) to its end while the headphones are
    /// recorded; returns the recording and the part of it that was audible.
    private func play(_ files: [URL], mode: String, in scratch: URL) async throws -> (Recording, Range<Double>) {
        try writeConfiguration(#"{"fadeMs": 0, "replayGain": "\#(mode)"}"#, in: scratch)
        return try await withMonitorRecorders([TestEnvironment.headphones]) { recorders in
            let player = try EarshotPlayer(playing: files, in: scratch)
            defer { player.kill() }
            let exited = await player.process.exit(within: .seconds(60))
            // Let the last block reach the monitor.
            try await Task.sleep(for: .milliseconds(300))
            let recording = try await recorders[0].stop()
            #expect(exited, "earshot did not finish; log:\n\(player.standardError)")
            #expect(player.process.exitStatus == 0, "exit status; log:\n\(player.standardError)")
            let ranges = recording.audibleRanges()
            #expect(ranges.count == 1, "audible ranges: \(ranges)")
            return (recording, try #require(ranges.first))
        }
    }

    /// The RMS level in dBFS of the recording's left channel over `range` (seconds from the recording's start).
    private func level(_ recording: Recording, _ range: Range<Double>) -> Double {
        Recording.dBFS(magnitude: recording.rms(in: range))
    }

    @Test("two tones 10 dB apart play at one level in track mode, and 10 dB apart with off",
          arguments: ["track", "off"])
    func levelsMatch(mode: String) async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                // -6 and -16 dBFS peaks; their gains bring both to -10 dBFS (peaks below full scale: no limit).
                let loud = try tone("loud", frequency: 440, seconds: 1.5, peakDBFS: -6, tags: [
                    "REPLAYGAIN_TRACK_GAIN": "-4.00 dB", "REPLAYGAIN_TRACK_PEAK": "0.501187",
                ], in: scratch)
                let quiet = try tone("quiet", frequency: 660, seconds: 1.5, peakDBFS: -16, tags: [
                    "REPLAYGAIN_TRACK_GAIN": "+6.00 dB", "REPLAYGAIN_TRACK_PEAK": "0.158489",
                ], in: scratch)
                let (recording, heard) = try await play([loud, quiet], mode: mode, in: scratch)
                let start = heard.lowerBound
                let first = level(recording, (start + 0.3)..<(start + 1.2))
                let second = level(recording, (start + 1.8)..<(start + 2.7))
                report("ReplayGain \(mode): first track", first, unit: "dBFS RMS")
                report("ReplayGain \(mode): second track", second, unit: "dBFS RMS")
                // A sine's RMS is 3.01 dB under its peak: -13 dBFS for both in track mode.
                if mode == "track" {
                    #expect(abs(first - second) <= 0.5, "track mode: \(first) and \(second) dBFS")
                    #expect(abs(first - -13.01) <= 0.5, "track mode: the first track at \(first) dBFS")
                } else {
                    #expect(abs(first - second - 10) <= 0.5, "off: \(first) and \(second) dBFS")
                    #expect(abs(first - -9.01) <= 0.5, "off: the first track at \(first) dBFS")
                }
            }
        }
    }

    @Test("an album of three in album mode keeps its relative levels: one album gain, whatever the tracks' own")
    func albumKeepsItsLevels() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                // Peaks -6, -10 and -16 dBFS, one album gain of -4 dB (the album's loudest track at -10 dBFS), and
                // track gains that would level them all: album mode must use the album's gain and keep the steps.
                let peaks = [-6.0, -10.0, -16.0]
                let files = try peaks.enumerated().map { index, peak in
                    try tone("album\(index)", frequency: 440 + 220 * Double(index), seconds: 1.5, peakDBFS: peak,
                             tags: ["REPLAYGAIN_TRACK_GAIN": String(format: "%+.2f dB", -4 - (peak + 6)),
                                    "REPLAYGAIN_ALBUM_GAIN": "-4.00 dB", "REPLAYGAIN_ALBUM_PEAK": "0.501187"],
                             in: scratch)
                }
                let (recording, heard) = try await play(files, mode: "album", in: scratch)
                let levels = (0..<3).map { index in
                    level(recording, (heard.lowerBound + 1.5 * Double(index) + 0.3)
                        ..< (heard.lowerBound + 1.5 * Double(index) + 1.2))
                }
                for (index, heardLevel) in levels.enumerated() {
                    report("ReplayGain album: track \(index + 1)", heardLevel, unit: "dBFS RMS")
                }
                // Each sine's RMS is 3.01 dB under its peak, then -4 dB: -13.01, -17.01 and -23.01 dBFS.
                for (index, peak) in peaks.enumerated() {
                    #expect(abs(levels[index] - (peak - 3.01 - 4)) <= 0.5, "album mode: \(levels) dBFS")
                }
            }
        }
    }

    @Test("a tone peaking at -1 dBFS with a +12 dB gain is lifted only as far as its peak allows: no sample clips")
    func peakLimitsTheGain() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                // The tagged peak (0.9) is a little above the sine's (0.891): the gain becomes 1/0.9, so the
                // loudest sample is 0.99 of full scale. Without the limit, +12 dB would flatten every crest at 1.
                let peaked = try tone("peaked", frequency: 440, seconds: 1.5, peakDBFS: -1, tags: [
                    "REPLAYGAIN_TRACK_GAIN": "+12.00 dB", "REPLAYGAIN_TRACK_PEAK": "0.9",
                ], in: scratch)
                let (recording, heard) = try await play([peaked], mode: "track", in: scratch)
                let frames = recording.frames(in: heard)
                let loudest = frames.reduce(Float(0)) { max($0, abs(recording.left[$1]), abs(recording.right[$1])) }
                report("ReplayGain peak-limited loudest sample", Recording.dBFS(magnitude: Double(loudest)),
                       unit: "dBFS")
                #expect(loudest <= 0.995, "the loudest sample is \(loudest) of full scale")
                #expect(loudest >= 0.98, "the gain was not applied up to the peak: \(loudest)")
                let middle = (heard.lowerBound + 0.3)..<(heard.upperBound - 0.3)
                // An unclipped sine of peak 0.99: RMS 0.99/√2, -3.10 dBFS; clipped at +12 dB it would be near 0 dBFS.
                let rms = level(recording, middle)
                #expect(abs(rms - -3.10) <= 0.2, "RMS \(rms) dBFS")
            }
        }
    }

    @Test("two gapless tracks cut from one sine, at gains 6 dB apart: the new gain holds from the seam's first sample")
    func seamIsSampleExact() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                // One 3 s sine at 2205 Hz (20 samples a cycle), peaking at 0.5, cut at frame 66 150 (1.5 s); the first
                // half is tagged -6.02 dB (halved to 0.25), the second 0 dB.
                let whole = scratch.appendingPathComponent("whole.wav")
                try ProcessRunner.runChecked("sox", [
                    "-n", "-r", "44100", "-c", "2", "-b", "16", "-e", "signed-integer", whole.path,
                    "synth", "3", "sine", "2205", "gain", "-6",
                ], timeout: .seconds(120))
                var tracks: [URL] = []
                for (index, (trim, gain)) in [(["0", "66150s"], "-6.0206 dB"), (["66150s"], "0.00 dB")].enumerated() {
                    let part = scratch.appendingPathComponent("part\(index).wav")
                    try ProcessRunner.runChecked("sox", [whole.path, part.path, "trim"] + trim, timeout: .seconds(60))
                    let flac = scratch.appendingPathComponent("part\(index).flac")
                    try Fixtures.encode(part, as: .flac, into: flac, tags: [
                        "REPLAYGAIN_TRACK_GAIN": gain, "REPLAYGAIN_TRACK_PEAK": "0.5",
                    ])
                    tracks.append(flac)
                }
                let (recording, heard) = try await play(tracks, mode: "track", in: scratch)
                let samples = recording.left
                let frames = recording.frames(in: heard)
                // The seam: the first sample louder than the first track's 0.25 can be (plus a little for rounding),
                // searched from the first track's middle on.
                let searchFrom = frames.lowerBound + recording.sampleRate * 3 / 4
                let seam = try #require((searchFrom..<frames.upperBound).first { abs(samples[$0]) > 0.26 })
                let seconds = Double(seam - frames.lowerBound) / Double(recording.sampleRate)
                #expect(abs(seconds - 1.5) <= 0.03, "the seam is at \(seconds) s")
                // Before it, 200 cycles at the first gain exactly: every crest 0.25, none louder.
                let before = samples[(seam - 4000)..<seam]
                #expect(before.allSatisfy { abs($0) <= 0.26 }, "a sample before the seam is louder than 0.25")
                #expect(before.map(abs).max() ?? 0 >= 0.24)
                // From it on, every cycle (20 samples) reaches the second gain's crest at once: a ramp of even a
                // millisecond would leave the first few cycles short of it.
                for cycle in 0..<50 {
                    let start = seam + cycle * 20
                    let crest = samples[start..<(start + 20)].map(abs).max() ?? 0
                    #expect(crest >= 0.49 && crest <= 0.51, "cycle \(cycle) after the seam peaks at \(crest)")
                }
            }
        }
    }

    @Test("earshot replaygain: status names the mode; a change applies from the next track opened, with its source")
    func verbAndStatus() async throws {
        try await ServiceHarness.run { harness in
            // Long tracks: the first is still playing (and the second not yet decoded ahead) when the mode changes.
            let first = try tone("first", frequency: 440, seconds: 20, peakDBFS: -6, tags: [
                "REPLAYGAIN_TRACK_GAIN": "-4.00 dB", "REPLAYGAIN_TRACK_PEAK": "0.501187",
            ], in: harness.root)
            let second = try tone("second", frequency: 660, seconds: 20, peakDBFS: -16, tags: [
                "REPLAYGAIN_TRACK_GAIN": "+6.00 dB", "REPLAYGAIN_TRACK_PEAK": "0.158489",
            ], in: harness.root)
            try harness.writeConfiguration(#"{"replayGain": "off"}"#)
            _ = try await harness.startService()
            func status() throws -> [String: Any] {
                try harness.requestChecked(["command": "status"])["status"] as? [String: Any] ?? [:]
            }
            func gain(_ status: [String: Any]) -> [String: Any] { status["replayGain"] as? [String: Any] ?? [:] }
            try harness.earshotChecked(["play", first.path, second.path])
            try await waitUntil("the first track plays, with no gain", timeout: .seconds(20)) {
                let now = try status()
                return now["playback"] as? String == "playing" && now["trackIndex"] as? Int == 0
                    && gain(now)["mode"] as? String == "off"
            }
            try harness.earshotChecked(["replaygain", "track"])
            // The track playing keeps the gain it began with.
            let kept = gain(try status())
            #expect(kept["mode"] as? String == "track")
            #expect(kept["source"] as? String == "off", "\(kept)")
            try harness.earshotChecked(["next"])
            try await waitUntil("the second track plays at its tagged gain", timeout: .seconds(20)) {
                let now = try status()
                let applied = gain(now)
                return now["trackIndex"] as? Int == 1 && applied["source"] as? String == "trackTag"
                    && abs((applied["gainDb"] as? Double ?? 0) - 6) < 0.01
            }
            let text = try harness.earshotChecked(["status"]).standardOutput
            #expect(text.contains("replaygain track: 6.0 dB from the track tag"), "\(text)")
            let refused = try harness.earshot(["replaygain", "loud"])
            #expect(!refused.succeeded, "replaygain loud was accepted")
        }
    }

    @Test("untagged tones 10 dB apart, measured by the library, play within 0.5 dB; status and MPRIS say measured")
    func measuredByTheLibrary() async throws {
        try await ServiceHarness.run { harness in
            let music = harness.root.appendingPathComponent("music", isDirectory: true)
            try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
            // 1 kHz stereo sines peaking at -6 and -16 dBFS measure -6 and -16 LUFS: gains of -12 and -2 dB bring both
            // to -18 dBFS peaks, -21.0 dBFS RMS. No tags: the gains can only come from the library.
            let loud = try tone("loud", frequency: 1000, seconds: 1.5, peakDBFS: -6, tags: [:], in: music)
            let quiet = try tone("quiet", frequency: 1000, seconds: 1.5, peakDBFS: -16, tags: [:], in: music)
            try harness.writeConfiguration(
                #"{"fadeMs": 0, "replayGain": "track", "musicDirectories": ["\#(music.path)"]}"#)
            let service = try await harness.startService()
            func status() throws -> [String: Any] {
                try harness.requestChecked(["command": "status"])["status"] as? [String: Any] ?? [:]
            }
            // Measured under SCHED_IDLE after the first scan: generous on a loaded machine.
            try await waitUntil("the library measured both tracks", timeout: .seconds(180),
                                interval: .milliseconds(50)) {
                (try status()["library"] as? [String: Any])?["gainsMeasured"] as? Int == 2
            }
            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            try harness.earshotChecked(["play", loud.path, quiet.path])
            try await waitUntil("the first track plays at its measured gain", timeout: .seconds(20)) {
                let gain = try status()["replayGain"] as? [String: Any] ?? [:]
                return gain["source"] as? String == "trackMeasured"
            }
            let applied = try status()["replayGain"] as? [String: Any] ?? [:]
            #expect(abs((applied["gainDb"] as? Double ?? 0) - -12) <= 0.5, "\(applied)")
            let text = try harness.earshotChecked(["status"]).standardOutput
            #expect(text.contains(" dB, the track as the library measured it"), "\(text)")
            #expect(text.contains("\nlibrary gains: 2 measured, 0 to measure"), "\(text)")
            let metadata = try harness.playerctlEarshot(["metadata", "--format",
                                                         "{{earshot:replayGainSource}} {{earshot:replayGainDb}}"])
            #expect(metadata.hasPrefix("trackMeasured -1"), "MPRIS metadata: \(metadata)")
            _ = try await harness.settle("stopped", timeout: .seconds(30)) { try harness.status().playback }
            try await Task.sleep(for: .milliseconds(300))
            let recording = try await recorder.stop()
            let ranges = recording.audibleRanges()
            #expect(ranges.count == 1, "audible ranges: \(ranges)")
            let start = try #require(ranges.first).lowerBound
            let first = level(recording, (start + 0.3)..<(start + 1.2))
            let second = level(recording, (start + 1.8)..<(start + 2.7))
            report("ReplayGain measured: first track", first, unit: "dBFS RMS")
            report("ReplayGain measured: second track", second, unit: "dBFS RMS")
            #expect(abs(first - second) <= 0.5, "measured gains: \(first) and \(second) dBFS")
            #expect(abs(first - -21.01) <= 0.5, "the first track at \(first) dBFS")
            #expect(service.isRunning, "the service stopped: \(service.standardError())")
        }
    }
}
