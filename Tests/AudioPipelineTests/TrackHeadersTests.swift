// TrackHeaders against the decoders: what a library scan reads from headers alone (kind, tags, rate, length) is what
// opening the decoder gives, on every kind of file it answers for; and it leaves to the decoder what its headers do
// not settle (an Info tag's gapless trim, a cut frame, bytes between frames, a FLAC with no sample count, Ogg).
import EarshotTestSupport
import Foundation
import Testing
@testable import AudioPipeline
import TrackPaths

@Suite("Track facts from headers, against the decoder's")
struct TrackHeadersTests {
    /// The decoder's facts for `path`: tags, the file's own rate and the length played, in seconds.
    static func decoderFacts(_ path: TrackPath) throws -> (TrackMetadata, Int, Double?, Int) {
        let decoder = try AudioFileKind.openDecoder(path: path)
        let fileRate = (decoder as? MP3Decoder)?.nativeSampleRate ?? decoder.format.sampleRate
        let seconds = decoder.lengthFrames.map { Double($0) / Double(decoder.format.sampleRate) }
        return (decoder.metadata, fileRate, seconds, decoder.format.sampleRate)
    }

    /// Checks that the headers answer for `url` and agree with the decoder: the tags and rate exactly, the length to
    /// one output sample (libmpg123 counts a converted file's length at its output rate).
    static func expectAgreement(_ url: URL, _ note: Comment) throws {
        let path = TrackPath(url.path)
        let facts = try #require(TrackHeaders.read(path), note)
        let (metadata, rate, seconds, outputRate) = try decoderFacts(path)
        #expect(facts.metadata == metadata, note)
        #expect(facts.sampleRate == rate, note)
        let played = try #require(seconds, note)
        #expect(abs(facts.seconds - played) <= 1 / Double(outputRate), "\(note): \(facts.seconds) against \(played)")
    }

    /// A WAV of `seconds` at `rate`, channels `channels`: a sweep, so that VBR frames differ in size.
    static func sweep(seconds: Double, rate: Int, channels: Int) throws -> URL {
        try Fixtures.file(named: "headers-sweep-\(seconds)-\(rate)-\(channels).wav") { output in
            _ = try ProcessRunner.requireTool("sox", package: "sox")
            try ProcessRunner.runChecked("sox", ["-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", output.path,
                                                 "synth", "\(seconds)", "sine", "100-\(rate / 3)", "gain", "-6"],
                                         timeout: .seconds(120))
        }
    }

    /// An MP3 made by LAME from `wav` with `options`, named `name`.
    static func mp3(_ wav: URL, _ name: String, _ options: [String]) throws -> URL {
        try Fixtures.file(named: "headers-\(name).mp3") { output in
            _ = try ProcessRunner.requireTool("lame", package: "lame")
            try ProcessRunner.runChecked("lame", ["--quiet", "--noreplaygain"] + options + [wav.path, output.path],
                                         timeout: .seconds(120))
        }
    }

    @Test("MP3 without an Info frame, CBR and VBR, every MPEG version, mono and stereo, with ID3v2, ID3v1 or none",
          arguments: [8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000])
    func mp3WithoutInfoFrame(rate: Int) throws {
        for channels in [1, 2] {
            let wav = try Self.sweep(seconds: 1.3, rate: rate, channels: channels)
            let stem = "\(rate)-\(channels)"
            let tags = ["--tt", "Título", "--ta", "Ørsted", "--tl", "Album", "--ty", "1999", "--tn", "3/9"]
            let cases: [(String, [String])] = [
                ("cbr-\(stem)", ["-t", "-b", "64", "--cbr"]),
                ("vbr-\(stem)", ["-t", "-V", "4"] + tags + ["--add-id3v2"]),
                ("v1-\(stem)", ["-t", "-V", "6", "--id3v1-only", "--tt", "Old", "--tn", "7", "--tg", "Jazz"]),
                ("both-\(stem)", ["-t", "-b", "32", "--cbr"] + tags + ["--id3v2-only"]),
            ]
            for (name, options) in cases {
                try Self.expectAgreement(try Self.mp3(wav, name, options), "\(name)")
            }
        }
    }

    @Test("FLAC at several rates, widths and channel counts, with tags")
    func flac() throws {
        for (rate, channels) in [(44100, 2), (48000, 1), (96000, 2), (22050, 1)] {
            let wav = try Self.sweep(seconds: 0.7, rate: rate, channels: channels)
            let output = Fixtures.directory.appendingPathComponent("headers-\(rate)-\(channels).flac")
            try Fixtures.encode(wav, as: .flac, into: output, tags: ["TITLE": "Ça", "ALBUMARTIST": "Björk"])
            try Self.expectAgreement(output, "FLAC \(rate) Hz, \(channels) channel(s)")
        }
    }

    @Test("what the headers do not settle is left to the decoder")
    func leftToTheDecoder() throws {
        let wav = try Self.sweep(seconds: 0.9, rate: 44100, channels: 2)
        // A LAME Info frame: its gapless trim is libmpg123's to apply.
        let tagged = try Self.mp3(wav, "info-frame", ["-b", "128", "--cbr"])
        #expect(TrackHeaders.read(TrackPath(tagged.path)) == nil)
        // VBR with a Xing frame.
        #expect(TrackHeaders.read(TrackPath(try Self.mp3(wav, "xing-frame", ["-V", "2"]).path)) == nil)
        // The last frame cut short, and junk between frames.
        let plain = try Data(contentsOf: try Self.mp3(wav, "plain", ["-t", "-b", "128", "--cbr"]))
        let cut = Fixtures.directory.appendingPathComponent("headers-cut.mp3")
        try plain.prefix(plain.count - 100).write(to: cut)
        #expect(TrackHeaders.read(TrackPath(cut.path)) == nil)
        let junk = Fixtures.directory.appendingPathComponent("headers-junk.mp3")
        try (plain.prefix(4180) + Data(repeating: 0x55, count: 7) + plain.dropFirst(4180)).write(to: junk)
        #expect(TrackHeaders.read(TrackPath(junk.path)) == nil)
        // A FLAC whose STREAMINFO gives no sample count, and Ogg.
        let flac = Fixtures.directory.appendingPathComponent("headers-unknown-length.flac")
        try Fixtures.encode(wav, as: .flac, into: flac)
        try Fixtures.patchingFLACTotalSamples(try Data(contentsOf: flac)) { _ in 0 }.write(to: flac)
        #expect(TrackHeaders.read(TrackPath(flac.path)) == nil)
        let ogg = Fixtures.directory.appendingPathComponent("headers.ogg")
        try Fixtures.encode(wav, as: .vorbis, into: ogg)
        #expect(TrackHeaders.read(TrackPath(ogg.path)) == nil)
    }
}
