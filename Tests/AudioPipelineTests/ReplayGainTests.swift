// The ReplayGain values read from tags (good and bad), the gain each mode applies, and the scaling of samples.
import EarshotTestSupport
import Foundation
import Testing
@testable import AudioPipeline
import TrackPaths

@Suite("ReplayGain")
struct ReplayGainTests {
    @Test("gains: sign, fraction and ' dB' as the specification writes them")
    func goodGains() {
        #expect(ReplayGainTags.gain("-6.54 dB") == .success(-6.54))
        #expect(ReplayGainTags.gain("+3.20 dB") == .success(3.2))
        #expect(ReplayGainTags.gain("2 dB") == .success(2))
        #expect(ReplayGainTags.gain("-0.5") == .success(-0.5))
        #expect(ReplayGainTags.gain("-1.5dB") == .success(-1.5))
        #expect(ReplayGainTags.peak("0.988525") == .success(0.988525))
        #expect(ReplayGainTags.peak("1.2") == .success(1.2))
    }

    @Test("bad gains and peaks are dropped with their reason",
          arguments: [
              ("+80 dB", ReplayGainProblem.gainOutOfRange), ("-41 dB", .gainOutOfRange), ("NaN", .malformedGain),
              ("nan dB", .malformedGain), ("inf dB", .malformedGain), ("loud", .malformedGain), ("", .malformedGain),
              (" -6.5 dB", .malformedGain), ("-6.5 dB ", .malformedGain), ("-6.5  dB", .malformedGain),
              ("- 6.5 dB", .malformedGain), ("-6.5 DB", .malformedGain), ("-6,5 dB", .malformedGain),
              ("1e1 dB", .malformedGain), ("-.5 dB", .malformedGain), ("1.2.3 dB", .malformedGain),
              ("0x10", .malformedGain),
          ])
    func badGains(text: String, problem: ReplayGainProblem) {
        #expect(ReplayGainTags.gain(text) == .failure(problem))
    }

    @Test("bad peaks are dropped with their reason",
          arguments: [
              ("0", ReplayGainProblem.peakOutOfRange), ("0.000", .peakOutOfRange), ("10.5", .peakOutOfRange),
              ("-0.5", .malformedPeak), ("NaN", .malformedPeak), (" 0.9", .malformedPeak), ("0.9 dB", .malformedPeak),
          ])
    func badPeaks(text: String, problem: ReplayGainProblem) {
        #expect(ReplayGainTags.peak(text) == .failure(problem))
    }

    @Test("R128 gains: Q7.8 dB relative to -23 LUFS, moved to ReplayGain's -18 LUFS")
    func r128() {
        #expect(ReplayGainTags.r128Gain("0") == .success(5))
        #expect(ReplayGainTags.r128Gain("-2560") == .success(-5))
        #expect(ReplayGainTags.r128Gain("+384") == .success(6.5))
        #expect(ReplayGainTags.r128Gain("-1.5") == .failure(.malformedGain))
        #expect(ReplayGainTags.r128Gain("40000") == .failure(.gainOutOfRange))
        #expect(ReplayGainTags.r128Gain("32767") == .failure(.gainOutOfRange))
        #expect(ReplayGainTags.r128Gain(" 0") == .failure(.malformedGain))
    }

    @Test("the first sane value of each field wins; bad ones are counted; names in any case")
    func fieldsAndCounting() {
        var tags = ReplayGainTags()
        for (name, value) in [
            ("replaygain_track_gain", "+80 dB"), ("REPLAYGAIN_TRACK_GAIN", "-3.00 dB"),
            ("ReplayGain_Track_Gain", "-9.00 dB"), ("REPLAYGAIN_TRACK_PEAK", "0"), ("REPLAYGAIN_TRACK_PEAK", "0.5"),
            ("REPLAYGAIN_ALBUM_GAIN", "text"), ("R128_ALBUM_GAIN", "-512"), ("REPLAYGAIN_TRACK_GAIN ", "1 dB"),
        ] {
            if let field = ReplayGainTags.field(named: name) { tags.take(field, value) }
        }
        #expect(tags.trackGain == -3)
        #expect(tags.trackPeak == 0.5)
        #expect(tags.albumGain == 3)
        #expect(tags.problems == [.gainOutOfRange, .peakOutOfRange, .malformedGain])
        // A name with a stray space is not a ReplayGain name at all.
        #expect(ReplayGainTags.field(named: "REPLAYGAIN_TRACK_GAIN ") == nil)
    }

    @Test("ID3v2.3 by hand: TXXX frames in Latin-1 and UTF-16 with the ReplayGain values, a bad one counted")
    func id3ByHand() {
        func size(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }
        func frame(_ id: String, _ body: [UInt8]) -> [UInt8] { Array(id.utf8) + size(body.count) + [0, 0] + body }
        func syncsafe(_ value: Int) -> [UInt8] { [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) } }
        func utf16(_ text: String) -> [UInt8] {
            [0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        }
        let frames = frame("TXXX", [0] + Array("REPLAYGAIN_TRACK_GAIN".utf8) + [0] + Array("-7.25 dB".utf8))
            + frame("TXXX", [1] + utf16("replaygain_track_peak") + [0, 0] + utf16("0.75"))
            + frame("TXXX", [0] + Array("REPLAYGAIN_ALBUM_GAIN".utf8) + [0] + Array("-4.00 dB".utf8))
            + frame("TXXX", [0] + Array("REPLAYGAIN_ALBUM_PEAK".utf8) + [0] + Array("11".utf8))
        let tag = Array("ID3".utf8) + [3, 0, 0] + syncsafe(frames.count) + frames
        let gains = ID3v2Tags.read(TagSource(bytes: tag)).metadata.replayGain
        #expect(gains.trackGain == -7.25)
        #expect(gains.trackPeak == 0.75)
        #expect(gains.albumGain == -4)
        #expect(gains.albumPeak == nil)
        #expect(gains.problems == [.peakOutOfRange])
    }

    @Test("each format's tools write ReplayGain (Opus: R128) values the decoders find",
          arguments: Fixtures.Format.allCases)
    func writtenByTheFormatsTools(format: Fixtures.Format) throws {
        let wav = try Fixtures.toneWAV(frequency: 440, seconds: 0.3)
        let output = Fixtures.directory.appendingPathComponent("replaygain-\(format.rawValue).\(format.rawValue)")
        let tags: [String: String]
        switch format {
        case .mp3: tags = ["TXXX": "REPLAYGAIN_TRACK_GAIN=-6.50 dB"]
        case .opus: tags = ["R128_TRACK_GAIN": "-2944", "R128_ALBUM_GAIN": "+80 dB"]
        case .flac, .vorbis:
            tags = ["REPLAYGAIN_TRACK_GAIN": "-6.50 dB", "REPLAYGAIN_TRACK_PEAK": "0.5",
                    "REPLAYGAIN_ALBUM_GAIN": "+80 dB", "replaygain_album_peak": "0.6"]
        }
        try Fixtures.encode(wav, as: format, into: output, tags: tags)
        let gains = try AudioFileKind.openDecoder(path: TrackPath(output.path)).metadata.replayGain
        // -2944/256 = -11.5 dB against -23 LUFS: -6.5 dB against -18 LUFS.
        #expect(gains.trackGain == -6.5)
        switch format {
        case .mp3:
            #expect(gains.problems.isEmpty)
        case .opus:
            #expect(gains.problems == [.malformedGain])
        case .flac, .vorbis:
            #expect(gains.trackPeak == 0.5)
            #expect(gains.albumPeak == 0.6)
            #expect(gains.albumGain == nil)
            #expect(gains.problems == [.gainOutOfRange])
        }
    }
}

@Suite("Opus header gain")
struct OpusHeaderGainTests {
    /// The Ogg page checksum: CRC-32 with polynomial 0x04C11DB7, not reflected, initial value 0, over the page with
    /// its checksum field zeroed.
    static func oggChecksum(_ page: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0
        for byte in page {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }

    @Test("libsndfile applies the OpusHead output gain itself: -6 dB in the header plays 6 dB quieter, and no more")
    func headerGainIsApplied() throws {
        let plain = try Fixtures.tone(.opus, frequency: 440, seconds: 1, rate: 48_000)
        var bytes = [UInt8](try Data(contentsOf: plain))
        // The first page holds OpusHead alone; its output gain is the signed Q7.8 at byte 16 of the packet.
        let headStart = 27 + Int(bytes[26])
        let pageEnd = headStart + bytes[27..<headStart].reduce(0) { $0 + Int($1) }
        #expect(Array(bytes[headStart..<(headStart + 8)]) == Array("OpusHead".utf8))
        // -6 dB (the fixture peaks at -6 dBFS: a positive gain would meet full scale and measure the clipping too).
        let gain = Int16(-6 * 256)
        bytes[headStart + 16] = UInt8(truncatingIfNeeded: gain)
        bytes[headStart + 17] = UInt8(truncatingIfNeeded: gain >> 8)
        bytes.replaceSubrange(22..<26, with: [0, 0, 0, 0])
        let checksum = Self.oggChecksum(bytes[0..<pageEnd])
        bytes.replaceSubrange(22..<26, with: (0..<4).map { UInt8(truncatingIfNeeded: checksum >> ($0 * 8)) })
        let quieter = Fixtures.directory.appendingPathComponent("opus-header-gain-minus-6dB.opus")
        try Data(bytes).write(to: quieter)

        func rms(_ url: URL) throws -> Double {
            let samples = try TestAudio.decodeAll(AudioFileKind.openDecoder(path: TrackPath(url.path)))
            // Past the encoder's start, where the level has settled.
            let settled = samples.dropFirst(samples.count / 4)
            return (settled.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(settled.count)).squareRoot()
        }
        let difference = 20 * log10(try rms(quieter) / rms(plain))
        #expect(abs(difference + 6) <= 0.1, "the header's -6 dB played as \(difference) dB")
    }
}
