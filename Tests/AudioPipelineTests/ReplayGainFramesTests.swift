// The MP3 gains besides TXXX: ID3v2 RVA2 frames (built byte by byte here) and the LAME tag's (written by lame's own
// analysis), each checked against the value written and against what mpg123 --rva-mix / --rva-album apply.
import EarshotTestSupport
import Foundation
import Testing
@testable import AudioPipeline
import TrackPaths

@Suite("ReplayGain: RVA2 and the LAME tag")
struct ReplayGainFramesTests {
    /// A syncsafe 32-bit number.
    static func syncsafe(_ value: Int) -> [UInt8] { [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) } }

    /// An ID3v2.4 frame.
    static func frame(_ id: String, _ body: [UInt8]) -> [UInt8] {
        Array(id.utf8) + syncsafe(body.count) + [0, 0] + body
    }

    /// An RVA2 frame body: `identification`, then channels of (type, adjustment in 1/512 dB, peak bits, peak bytes).
    static func rva2(_ identification: String, _ channels: [(UInt8, Int16, UInt8, [UInt8])]) -> [UInt8] {
        Array(identification.utf8) + [0] + channels.flatMap { channel in
            let raw = UInt16(bitPattern: channel.1)
            return [channel.0, UInt8(raw >> 8), UInt8(raw & 0xFF), channel.2] + channel.3
        }
    }

    /// An ID3v2.4 tag holding `frames`.
    static func tag(_ frames: [UInt8]) -> [UInt8] { Array("ID3".utf8) + [4, 0, 0] + syncsafe(frames.count) + frames }

    /// A 2 s tone (peak 0.5) encoded by lame with `options`; lame's standard error is returned too.
    static func lameMP3(_ name: String, _ options: [String]) throws -> (url: URL, log: String) {
        _ = try ProcessRunner.requireTool("lame", package: "lame")
        let wav = try Fixtures.toneWAV(frequency: 440, seconds: 2)
        let mp3 = Fixtures.directory.appendingPathComponent(name)
        let result = try ProcessRunner.runChecked("lame", options + ["-b", "192", wav.path, mp3.path],
                                                  timeout: .seconds(120))
        return (mp3, result.standardError + result.standardOutput)
    }

    @Test("RVA2 by hand: master channel, track and album by identification, peak scaled by its width")
    func rva2ByHand() {
        // -4.5 dB = -2304/512 with a 16-bit peak of 0x4000 (0.5); album +2 dB = 1024/512 with an 8-bit peak of 0x60.
        let frames = Self.frame("RVA2", Self.rva2("track", [(2, 512, 0, []), (1, -2304, 16, [0x40, 0x00])]))
            + Self.frame("RVA2", Self.rva2("Album", [(1, 1024, 8, [0x60])]))
        let gains = ID3v2Tags.read(TagSource(bytes: Self.tag(frames))).metadata.replayGain
        #expect(gains.trackGain == -4.5)
        #expect(gains.trackPeak == 0.5)
        #expect(gains.albumGain == 2)
        #expect(gains.albumPeak == 0.75)
        #expect(gains.problems.isEmpty)
    }

    @Test("RVA2's bad values: out of range and zero peaks counted, a truncated frame and no master channel ignored")
    func rva2BadValues() {
        let frames = Self.frame("RVA2", Self.rva2("track", [(1, Int16.max, 16, [0, 0])]))
            + Self.frame("RVA2", Self.rva2("album", [(1, 512, 16, [0x40])]))
            + Self.frame("RVA2", Self.rva2("album", [(3, 512, 0, [])]))
            + Self.frame("RVA2", [0x61, 0x6C])
        let gains = ID3v2Tags.read(TagSource(bytes: Self.tag(frames))).metadata.replayGain
        #expect(gains.isEmpty)
        #expect(gains.problems == [.gainOutOfRange, .peakOutOfRange])
    }

    @Test("TXXX wins over RVA2 wherever the frames stand; RVA2 fills what TXXX left")
    func txxxBeforeRVA2() {
        let txxx = Self.frame("TXXX", [0] + Array("REPLAYGAIN_TRACK_GAIN".utf8) + [0] + Array("-1.00 dB".utf8))
        let frames = Self.frame("RVA2", Self.rva2("track", [(1, -2304, 0, [])]))
            + Self.frame("RVA2", Self.rva2("album", [(1, -1024, 0, [])])) + txxx
        let gains = ID3v2Tags.read(TagSource(bytes: Self.tag(frames))).metadata.replayGain
        #expect(gains.trackGain == -1)
        #expect(gains.albumGain == -2)
    }

    @Test("the LAME tag's track gain and peak: lame's own analysis, as it printed it, and what mpg123 --rva-mix adds")
    func lameTagGain() throws {
        let (mp3, log) = try Self.lameMP3("replaygain-lame.mp3", ["--replaygain-accurate"])
        // lame prints "ReplayGain: -8.6dB".
        let printed = try #require(log.split(separator: "\n").first { $0.contains("ReplayGain:") })
        let value = try #require(Double(printed.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)
            .replacingOccurrences(of: "dB", with: "")))
        let gains = try AudioFileKind.openDecoder(path: TrackPath(mp3.path)).metadata.replayGain
        #expect(gains.trackGain == value)
        #expect(gains.albumGain == nil)
        let peak = try #require(gains.trackPeak)
        #expect(abs(peak - 0.5) < 0.02, "the tone's peak is 0.5; the tag says \(peak)")
        let plain = (earshot: ReplayGainMPG123Tests.level(try ReplayGainMPG123Tests.earshot(mp3, .off)),
                     mpg123: ReplayGainMPG123Tests.level(try ReplayGainMPG123Tests.mpg123(mp3, [])))
        let ours = ReplayGainMPG123Tests.level(try ReplayGainMPG123Tests.earshot(mp3, .track)) - plain.earshot
        let theirs = ReplayGainMPG123Tests.level(try ReplayGainMPG123Tests.mpg123(mp3, ["--rva-mix"])) - plain.mpg123
        print(String(format: "[measure] LAME tag gain %+.1f dB: Earshot %+.3f dB, mpg123 --rva-mix %+.3f dB", value,
                     ours, theirs))
        #expect(abs(ours - theirs) <= 0.1)
        #expect(abs(ours - value) <= 0.1)
    }

    @Test("RVA2 frames before a LAME-tagged MP3: they win over the LAME tag, and match mpg123's --rva-mix/--rva-album")
    func rva2AgainstMPG123() throws {
        let (lameFile, _) = try Self.lameMP3("replaygain-rva2-inner.mp3", ["--quiet"])
        // The LAME tag says what lame measured (about -8.6 dB); RVA2 says -6.5 dB for the track, +3 dB for the album.
        let frames = Self.frame("RVA2", Self.rva2("track", [(1, -3328, 0, [])]))
            + Self.frame("RVA2", Self.rva2("album", [(1, 1536, 0, [])]))
        let mp3 = Fixtures.directory.appendingPathComponent("replaygain-rva2.mp3")
        try Data(Self.tag(frames) + Array(try Data(contentsOf: lameFile))).write(to: mp3)
        let gains = try AudioFileKind.openDecoder(path: TrackPath(mp3.path)).metadata.replayGain
        #expect(gains.trackGain == -6.5)
        #expect(gains.albumGain == 3)
        let plain = (earshot: ReplayGainMPG123Tests.level(try ReplayGainMPG123Tests.earshot(mp3, .off)),
                     mpg123: ReplayGainMPG123Tests.level(try ReplayGainMPG123Tests.mpg123(mp3, [])))
        for (mode, option, expected) in [(ReplayGainMode.track, "--rva-mix", -6.5), (.album, "--rva-album", 3.0)] {
            let ours = ReplayGainMPG123Tests.level(try ReplayGainMPG123Tests.earshot(mp3, mode)) - plain.earshot
            let theirs = ReplayGainMPG123Tests.level(try ReplayGainMPG123Tests.mpg123(mp3, [option])) - plain.mpg123
            print(String(format: "[measure] RVA2 %@: Earshot %+.3f dB, mpg123 %@ %+.3f dB", mode.rawValue, ours,
                         option, theirs))
            #expect(abs(ours - theirs) <= 0.1, "\(mode): Earshot \(ours) dB, mpg123 \(theirs) dB")
            #expect(abs(ours - expected) <= 0.1)
        }
    }

    @Test("a LAME tag from before 3.95 (another reference level) and one without gains give nothing")
    func lameTagOldOrEmpty() throws {
        let (mp3, _) = try Self.lameMP3("replaygain-lame-old.mp3", ["--quiet", "--replaygain-accurate"])
        var bytes = Array(try Data(contentsOf: mp3))
        let at = try #require(bytes.indices.first { bytes[$0...].starts(with: Array("LAME3.".utf8)) })
        #expect(LAMETag.replayGain(TagSource(bytes: bytes)).trackGain != nil)
        bytes.replaceSubrange((at + 4)..<(at + 9), with: Array("3.90 ".utf8))
        #expect(LAMETag.replayGain(TagSource(bytes: bytes)).isEmpty)
        let (plain, _) = try Self.lameMP3("replaygain-lame-none.mp3", ["--quiet", "--noreplaygain"])
        #expect(LAMETag.replayGain(TagSource(bytes: Array(try Data(contentsOf: plain)))).isEmpty)
    }

    @Test("an MP3's gain, applied by libmpg123 in its synthesis, holds from the first sample (within 1 LSB)")
    func scaledInsideFromTheFirstSample() throws {
        let (mp3, _) = try Self.lameMP3("replaygain-inside.mp3", ["--quiet", "--noreplaygain"])
        let plain = try TestAudio.decodeAll(try AudioFileKind.openDecoder(path: TrackPath(mp3.path)))
        let control = ReplayGainControl()
        // No gain in the file: the fallback, -6.02 dB (a factor of 0.5).
        control.set(ReplayGainSettings(mode: .track, fallbackDb: -6.0206), shuffled: false)
        let opened = try AudioFileKind.openDecoder(path: TrackPath(mp3.path))
        let scaled = try TestAudio.decodeAll(control.applied(to: opened))
        #expect(scaled.count == plain.count)
        let worst = zip(plain, scaled).map { abs(Double($0) * 0.5 - Double($1)) }.max() ?? .infinity
        #expect(worst <= 1, "the largest difference is \(worst)")
        // The first decoded samples are scaled too (the tone starts at once: the first 1000 are not all silence).
        #expect(plain.prefix(2000).contains { abs($0) > 100 })
        #expect(zip(plain.prefix(2000), scaled.prefix(2000)).allSatisfy { abs(Double($0) * 0.5 - Double($1)) <= 1 })
    }
}
