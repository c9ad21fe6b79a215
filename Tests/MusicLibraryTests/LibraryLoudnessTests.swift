// The library's own ReplayGain for files whose tags carry none: EBU R128 (libebur128) on files made by sox at stated
// loudness (a 1 kHz stereo sine whose peak is at X dBFS measures X LUFS: EBU Tech 3341's first case), kept in the
// database and never written into the files; tagged files are left to their tags.
import AudioPipeline
import EarshotTestSupport
import Foundation
import Testing
@testable import MusicLibrary
import TrackPaths

@Suite("Music library: measured loudness")
struct LibraryLoudnessTests {
    /// A scratch folder for music and the database.
    static func scratch() -> (music: URL, database: String) {
        let scratch = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("loudness-\(UUID().uuidString)", isDirectory: true)
        let music = scratch.appendingPathComponent("music", isDirectory: true)
        try? FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        return (music, scratch.appendingPathComponent("library.sqlite").path)
    }

    /// A 1 kHz sine of `seconds` peaking at `level` dBFS (in stereo `level` LUFS), as FLAC at `path`, with `tags`.
    static func sine(_ path: URL, level: Double, seconds: Double = 4, channels: Int = 2, tags: [String] = []) throws {
        _ = try ProcessRunner.requireTool("sox", package: "sox")
        _ = try ProcessRunner.requireTool("flac", package: "flac")
        try FileManager.default.createDirectory(at: path.deletingLastPathComponent(),
                                                withIntermediateDirectories: true)
        let wav = path.deletingPathExtension().appendingPathExtension("wav")
        try ProcessRunner.runChecked("sox", ["-n", "-r", "44100", "-c", "\(channels)", "-b", "16", wav.path, "synth",
                                             "\(seconds)", "sine", "1000", "gain", "\(level)"])
        try ProcessRunner.runChecked("flac", ["-s", "-f"] + tags.flatMap { ["-T", $0] } + ["-o", path.path, wav.path])
        try FileManager.default.removeItem(at: wav)
    }

    /// The gains the database holds for `file`.
    static func gains(_ database: LibraryDatabase, _ file: URL) throws -> ReplayGainTags? {
        try database.measuredGains(for: TrackPath(file.path))
    }

    @Test("tracks made at -23 and -13 LUFS measure within 0.5 LU; an album of them gets its combined gain")
    func measuresKnownLoudness() throws {
        let (music, path) = Self.scratch()
        let quiet = music.appendingPathComponent("Album/01 quiet.flac")
        let loud = music.appendingPathComponent("Album/02 loud.flac")
        let single = music.appendingPathComponent("single.flac")
        try Self.sine(quiet, level: -23, tags: ["ALBUM=Levels"])
        try Self.sine(loud, level: -13, tags: ["ALBUM=Levels"])
        try Self.sine(single, level: -18)
        let before = try Data(contentsOf: quiet)
        let database = try LibraryDatabase(path: path)
        _ = try LibraryScanner(roots: [TrackPath(music.path)]).scan(into: database)
        let counts = try LibraryScanner.measureLoudness(into: database, cancelled: { false })
        #expect(counts.measured == 3 && counts.failed == 0 && counts.withMeasuredGain == 3 && counts.toMeasure == 0,
                "\(counts)")
        let quietGains = try #require(try Self.gains(database, quiet))
        let loudGains = try #require(try Self.gains(database, loud))
        let singleGains = try #require(try Self.gains(database, single))
        print(String(format: "[measure] R128: -23 LUFS gain %+.2f dB, -13 LUFS %+.2f dB, -18 LUFS %+.2f dB, album %+.2f dB",
                     quietGains.trackGain ?? .nan, loudGains.trackGain ?? .nan, singleGains.trackGain ?? .nan,
                     quietGains.albumGain ?? .nan))
        // ReplayGain 2's reference is -18 LUFS.
        #expect(abs((quietGains.trackGain ?? .nan) - 5) <= 0.5)
        #expect(abs((loudGains.trackGain ?? .nan) + 5) <= 0.5)
        #expect(abs((singleGains.trackGain ?? .nan) - 0) <= 0.5)
        #expect(quietGains.measured)
        // The album: the two tracks' energy together, -15.4 LUFS (equal lengths), so about -2.6 dB for both.
        let albumLoudness = 10 * log10((pow(10, -23 / 10.0) + pow(10, -13 / 10.0)) / 2)
        #expect(abs((quietGains.albumGain ?? .nan) - (-18 - albumLoudness)) <= 0.5)
        #expect(quietGains.albumGain == loudGains.albumGain)
        #expect(singleGains.albumGain == nil)
        // Peaks: the sines' own, the album's the louder one's.
        #expect(abs((quietGains.trackPeak ?? 0) - pow(10, -23 / 20.0)) < 0.01)
        #expect(abs((quietGains.albumPeak ?? 0) - pow(10, -13 / 20.0)) < 0.01)
        // What the decode thread is given for a library track: its tags as stored, and the measured gains.
        let info = try #require(try database.trackInfo(for: TrackPath(quiet.path)))
        #expect(info.tags?.album == "Levels")
        #expect(info.measuredGains == quietGains)
        #expect(try database.trackInfo(for: TrackPath(music.appendingPathComponent("none.flac").path)) == nil)
        // Never written into the files.
        #expect(try Data(contentsOf: quiet) == before)
        // Nothing is measured twice.
        #expect(try LibraryScanner.measureLoudness(into: database, cancelled: { false }).measured == 0)
    }

    @Test("a file with tagged gains is not measured; silence is counted as not measurable; a change measures again")
    func taggedSilentAndChanged() throws {
        let (music, path) = Self.scratch()
        let tagged = music.appendingPathComponent("tagged.flac")
        let silent = music.appendingPathComponent("silent.flac")
        try Self.sine(tagged, level: -20, tags: ["REPLAYGAIN_TRACK_GAIN=-1.00 dB"])
        try Self.sine(silent, level: -200)
        let database = try LibraryDatabase(path: path)
        let scanner = LibraryScanner(roots: [TrackPath(music.path)])
        _ = try scanner.scan(into: database)
        let counts = try LibraryScanner.measureLoudness(into: database, cancelled: { false })
        #expect(counts.measured == 0 && counts.failed == 1, "\(counts)")
        #expect(try Self.gains(database, tagged) == nil)
        #expect(try Self.gains(database, silent) == nil)
        // The silent file replaced by a tone (another size): read again, measured again.
        try Self.sine(silent, level: -28, seconds: 3)
        _ = try scanner.scan(into: database)
        #expect(try LibraryScanner.measureLoudness(into: database, cancelled: { false }).measured == 1)
        #expect(abs((try Self.gains(database, silent)?.trackGain ?? .nan) - 10) <= 0.5)
    }

    @Test("a mono sine measures as its one channel on both speakers: as loud as the stereo file of the same sine")
    func monoOnTwoSpeakers() throws {
        let (music, _) = Self.scratch()
        let mono = music.appendingPathComponent("mono.flac")
        let stereo = music.appendingPathComponent("stereo.flac")
        try Self.sine(mono, level: -20, channels: 1)
        try Self.sine(stereo, level: -20)
        // The same sine as a mono MP3 (libmpg123 duplicates it as libsndfile does).
        let mp3 = music.appendingPathComponent("mono.mp3")
        _ = try ProcessRunner.requireTool("lame", package: "lame")
        let wav = music.appendingPathComponent("mono.wav")
        try ProcessRunner.runChecked("sox", ["-n", "-r", "44100", "-c", "1", "-b", "16", wav.path, "synth", "4",
                                             "sine", "1000", "gain", "-20"])
        try ProcessRunner.runChecked("lame", ["--quiet", "-b", "128", wav.path, mp3.path])
        var measured: [String: Double] = [:]
        for file in [mono, stereo, mp3] {
            let meter = try #require(LoudnessMeter(path: TrackPath(file.path), cancelled: { false }))
            let loudness = meter.loudness ?? .nan
            measured[file.lastPathComponent] = loudness
            #expect(try AudioFileKind.openDecoder(path: TrackPath(file.path)).isMono == (file != stereo))
            // A 1 kHz sine on both speakers measures its peak in dBFS as LUFS (EBU Tech 3341's first case). lame's
            // mono encoding comes out 0.44 dB under its input (sox's stats on mpg123's decode agree), so each file
            // is held to its own peak, and the FLACs to the level they were made at.
            #expect(abs(loudness - 20 * log10(meter.peak)) <= 0.2, "\(file.lastPathComponent) peak \(meter.peak)")
        }
        print(String(format: "[measure] R128 of a -20 dBFS 1 kHz sine: mono FLAC %.2f LUFS, mono MP3 %.2f LUFS, "
                     + "stereo FLAC %.2f LUFS", measured["mono.flac"] ?? .nan, measured["mono.mp3"] ?? .nan,
                     measured["stereo.flac"] ?? .nan))
        // On two speakers a mono file is the stereo file whose channels are equal: -20 LUFS, a gain of +2 dB.
        // Measured as a one-channel programme it would be -23.01 LUFS and play 3 dB louder than the stereo file
        // that sounds the same.
        #expect(abs((measured["mono.flac"] ?? .nan) - -20) <= 0.5)
        #expect(abs((measured["mono.flac"] ?? .nan) - (measured["stereo.flac"] ?? .nan)) <= 0.05)
    }

    @Test("a file that does not open, or is no audio, is not measurable; the meter frees nothing it did not make")
    func unopenable() throws {
        let (music, _) = Self.scratch()
        #expect(LoudnessMeter(path: TrackPath(music.appendingPathComponent("missing.flac").path),
                              cancelled: { false }) == nil)
        let text = music.appendingPathComponent("text.flac")
        try Data("not audio".utf8).write(to: text)
        #expect(LoudnessMeter(path: TrackPath(text.path), cancelled: { false }) == nil)
        #expect(LoudnessMeter(path: TrackPath(text.path), cancelled: { true }) == nil)
    }

    @Test("a pass asked to stop leaves the rest for the next one")
    func cancelled() throws {
        let (music, path) = Self.scratch()
        for index in 1...3 { try Self.sine(music.appendingPathComponent("\(index).flac"), level: -20, seconds: 1) }
        let database = try LibraryDatabase(path: path)
        _ = try LibraryScanner(roots: [TrackPath(music.path)]).scan(into: database)
        var asked = 0
        let first = try LibraryScanner.measureLoudness(into: database, cancelled: {
            asked += 1
            return asked > 12
        })
        #expect(first.toMeasure > 0 && first.measured < 3, "\(first)")
        let rest = try LibraryScanner.measureLoudness(into: database, cancelled: { false })
        #expect(first.measured + rest.measured == 3 && rest.toMeasure == 0, "\(first) then \(rest)")
    }
}
