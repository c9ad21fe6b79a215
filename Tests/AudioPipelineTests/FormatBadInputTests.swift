// Damaged and mislabelled FLAC, Ogg Vorbis and Opus files, decoded directly: each either plays or is refused with a
// kind and a reason, and nothing crashes or loops. The end-to-end counterpart, through `earshot play` with good
// tracks around each file, is in Tests/EndToEndTests/BadFilesTests.swift.
import EarshotTestSupport
import Foundation
import Testing
@testable import AudioPipeline
import TrackPaths

/// The outcome of decoding a whole file: the frames delivered, and the error that ended it, if one did.
struct DecodeOutcome {
    var frames = 0
    var error: DecodeError?

    /// Opens `path` with the decoder its content calls for and decodes it to the end or to an error.
    static func of(_ path: String) -> DecodeOutcome {
        var outcome = DecodeOutcome()
        var buffer = [Int16](repeating: 0, count: 4_096 * 2)
        do {
            let decoder = try AudioFileKind.openDecoder(path: TrackPath(path))
            for _ in 0..<100_000 {
                let step = try buffer.withUnsafeMutableBufferPointer { try decoder.decode(into: $0) }
                switch step {
                case .frames(let count): outcome.frames += count
                case .formatChanged: continue
                case .finished: return outcome
                }
            }
            outcome.error = DecodeError(kind: .libraryFailure, message: "the decoder never finished")
        } catch {
            outcome.error = error as? DecodeError
        }
        return outcome
    }
}

@Suite("FLAC, Vorbis and Opus: bad input")
struct FormatBadInputTests {
    /// The bytes of a 1 s, 44.1 kHz stereo tone in `format`.
    func toneBytes(_ format: Fixtures.Format, seconds: Double = 1) throws -> Data {
        try Data(contentsOf: try Fixtures.tone(format, frequency: 440, seconds: seconds))
    }

    /// Writes `data` as test file `name` and returns its path.
    func write(_ data: Data, _ name: String) throws -> String {
        try TestAudio.bytesFile(name, [UInt8](data))
    }

    @Test("a truncated FLAC plays what it holds, then is reported as truncated")
    func truncatedFLAC() throws {
        let flac = try toneBytes(.flac)
        let outcome = DecodeOutcome.of(try write(flac.prefix(flac.count / 2), "truncated.flac"))
        #expect(outcome.frames > 10_000 && outcome.frames < 44_100, "\(outcome.frames) frames")
        #expect(outcome.error?.kind == .decodeFailed)
        #expect(outcome.error?.message.contains("truncated") == true, "\(outcome)")
    }

    @Test("a FLAC cut inside its STREAMINFO is refused for its headers")
    func flacWithoutWholeHeaders() throws {
        let outcome = DecodeOutcome.of(try write(try toneBytes(.flac).prefix(20), "header-only.flac"))
        #expect(outcome.frames == 0)
        #expect(outcome.error?.kind == .badHeaders, "\(outcome.error as Any)")
    }

    @Test("a FLAC whose STREAMINFO claims twice its length plays all of its audio, then is reported")
    func flacClaimingMore() throws {
        let liar = Fixtures.patchingFLACTotalSamples(try toneBytes(.flac)) { $0 * 2 }
        let path = try write(liar, "claims-more.flac")
        #expect(try AudioFileKind.openDecoder(path: TrackPath(path)).lengthFrames == 88_200)
        let outcome = DecodeOutcome.of(path)
        #expect(outcome.frames == 44_100)
        #expect(outcome.error?.kind == .decodeFailed, "\(outcome.error as Any)")
    }

    @Test("a FLAC whose STREAMINFO claims half its length plays that half (libsndfile stops where STREAMINFO says)")
    func flacClaimingLess() throws {
        let outcome = DecodeOutcome.of(try write(Fixtures.patchingFLACTotalSamples(try toneBytes(.flac)) { $0 / 2 },
                                                 "claims-less.flac"))
        #expect(outcome.frames == 22_050)
        #expect(outcome.error == nil)
    }

    @Test("an Ogg Vorbis file with a broken page in the middle plays on past it, then is reported as damaged")
    func vorbisWithBrokenPage() throws {
        // A steady tone packs tightly: 4 s make five pages, and libsndfile then counts only what it can decode, so
        // the loss shows only against the last page's granule position.
        var bytes = [UInt8](try toneBytes(.vorbis, seconds: 4))
        let pages = Fixtures.oggPageRanges(bytes)
        try #require(pages.count > 4, "\(pages.count) pages")
        let broken = pages[pages.count / 2]
        for index in (broken.lowerBound + 30)..<broken.upperBound { bytes[index] = 0x55 }
        let outcome = DecodeOutcome.of(try write(Data(bytes), "broken-page.ogg"))
        #expect(outcome.frames > 44_100 && outcome.frames < 4 * 44_100, "\(outcome.frames) frames")
        #expect(outcome.error?.kind == .decodeFailed, "\(outcome.error as Any)")
    }

    @Test("an Opus file with no OpusHead is refused for its headers, with the reason")
    func opusWithoutHead() throws {
        let bytes = [UInt8](try toneBytes(.opus))
        let pages = Fixtures.oggPageRanges(bytes)
        try #require(pages.count > 2)
        let outcome = DecodeOutcome.of(try write(Data(bytes[pages[1].lowerBound...]), "no-head.opus"))
        #expect(outcome.frames == 0)
        #expect(outcome.error?.kind == .badHeaders)
        #expect(outcome.error?.message.contains("OpusHead") == true, "\(outcome.error as Any)")
    }

    @Test("an Ogg Vorbis file with an 8 MB comment header plays whole")
    func vorbisWithHugeComment() throws {
        // Made before: fixtures are made under one lock, so one is never made inside another's making.
        let source = try Fixtures.tone(.vorbis, frequency: 440, seconds: 1).path
        let path = try TestAudio.file("huge-comment.ogg") { output in
            let comment = output + ".comment"
            defer { try? FileManager.default.removeItem(atPath: comment) }
            try Data(("COMMENT=" + String(repeating: "x", count: 8 << 20) + "\n").utf8)
                .write(to: URL(fileURLWithPath: comment))
            try ProcessRunner.runChecked("vorbiscomment", ["-w", "-c", comment, source, output])
        }
        let outcome = DecodeOutcome.of(path)
        #expect(outcome.error == nil, "\(outcome.error as Any)")
        #expect(outcome.frames == 44_100)
    }

    @Test("Ogg FLAC and three-channel FLAC are refused with their reasons")
    func unplayedVariants() throws {
        let wav = try Fixtures.toneWAV(frequency: 440, seconds: 0.5)
        let oggFLAC = try TestAudio.file("ogg-flac.oga") { output in
            try ProcessRunner.runChecked("flac", ["-s", "-f", "--ogg", "-o", output, wav.path])
        }
        let ogg = DecodeOutcome.of(oggFLAC)
        #expect(ogg.error?.kind == .badHeaders && ogg.error?.message.contains("Ogg FLAC") == true, "\(ogg)")
        let threeChannels = try TestAudio.file("three-channels.flac") { output in
            let wav = output + ".wav"
            defer { try? FileManager.default.removeItem(atPath: wav) }
            try ProcessRunner.runChecked("sox", ["-n", "-r", "44100", "-c", "3", "-b", "16", wav, "synth", "0.5",
                                                 "sine", "440"])
            // sox marks no speaker layout for three channels, which flac accepts only when told to ignore it.
            try ProcessRunner.runChecked("flac", ["-s", "-f", "--channel-map=none", "-o", output, wav])
        }
        let three = DecodeOutcome.of(threeChannels)
        #expect(three.error?.kind == .unsupportedFormat, "\(three)")
    }

    @Test("an MP3 named .flac and a FLAC named .opus play as what they are")
    func lyingNames() throws {
        let mp3 = DecodeOutcome.of(try write(try Data(contentsOf: URL(fileURLWithPath: TestAudio.sine(seconds: 0.5))),
                                             "an-mp3.flac"))
        #expect(mp3.error == nil && mp3.frames == 22_050, "\(mp3)")
        let flac = DecodeOutcome.of(try write(try toneBytes(.flac, seconds: 0.5), "a-flac.opus"))
        #expect(flac.error == nil && flac.frames == 22_050, "\(flac)")
    }
}
