// The gain Earshot applies to an MP3's ReplayGain tags against mpg123's own (`--rva-mix` for the track gain,
// `--rva-album` for the album's): both decode the same file, and the level each gain adds is compared.
import EarshotTestSupport
import Foundation
import Testing
@testable import AudioPipeline
import TrackPaths

@Suite("ReplayGain against mpg123")
struct ReplayGainMPG123Tests {
    /// The RMS level in dB of full scale of interleaved 16-bit samples, past their first quarter (the decoder's start).
    static func level(_ samples: [Int16]) -> Double {
        let settled = samples.dropFirst(samples.count / 4)
        let power = settled.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(settled.count)
        return 10 * log10(power) - 20 * log10(32768)
    }

    /// What mpg123 decodes of `file` with `options`, as 16-bit samples.
    static func mpg123(_ file: URL, _ options: [String]) throws -> [Int16] {
        _ = try ProcessRunner.requireTool("mpg123", package: "mpg123")
        let raw = file.deletingPathExtension().appendingPathExtension("\(options.joined()).raw")
        try ProcessRunner.runChecked("mpg123", ["-q"] + options + ["-O", raw.path, file.path], timeout: .seconds(120))
        let data = try Data(contentsOf: raw)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }.map { Int16(littleEndian: $0) }
    }

    /// What Earshot's decode thread makes of `file` in `mode`.
    static func earshot(_ file: URL, _ mode: ReplayGainMode) throws -> [Int16] {
        let control = ReplayGainControl()
        control.set(ReplayGainSettings(mode: mode), shuffled: false)
        return try TestAudio.decodeAll(control.applied(to: AudioFileKind.openDecoder(path: TrackPath(file.path))))
    }

    @Test("track and album gains of TXXX frames add what mpg123's --rva-mix and --rva-album add, within 0.1 dB")
    func sameGainAsMPG123() throws {
        _ = try ProcessRunner.requireTool("lame", package: "lame")
        let wav = try Fixtures.toneWAV(frequency: 440, seconds: 2)
        let mp3 = Fixtures.directory.appendingPathComponent("replaygain-mpg123.mp3")
        // Peaks of 0.5 (the tone's): neither gain meets full scale, so neither player limits it.
        try ProcessRunner.runChecked("lame", [
            "--quiet", "--noreplaygain", "-b", "192", "--tv", "TXXX=REPLAYGAIN_TRACK_GAIN=-6.50 dB",
            "--tv", "TXXX=REPLAYGAIN_TRACK_PEAK=0.5", "--tv", "TXXX=REPLAYGAIN_ALBUM_GAIN=+3.00 dB",
            "--tv", "TXXX=REPLAYGAIN_ALBUM_PEAK=0.5", wav.path, mp3.path,
        ], timeout: .seconds(120))
        let plain = (earshot: Self.level(try Self.earshot(mp3, .off)), mpg123: Self.level(try Self.mpg123(mp3, [])))
        for (mode, option, expected) in [(ReplayGainMode.track, "--rva-mix", -6.5), (.album, "--rva-album", 3.0)] {
            let ours = Self.level(try Self.earshot(mp3, mode)) - plain.earshot
            let theirs = Self.level(try Self.mpg123(mp3, [option])) - plain.mpg123
            print(String(format: "[measure] ReplayGain %@: Earshot %+.3f dB, mpg123 %@ %+.3f dB", mode.rawValue, ours,
                         option, theirs))
            #expect(abs(ours - theirs) <= 0.1, "\(mode): Earshot \(ours) dB, mpg123 \(theirs) dB")
            #expect(abs(ours - expected) <= 0.1, "\(mode): Earshot \(ours) dB, the tag \(expected) dB")
        }
    }
}
