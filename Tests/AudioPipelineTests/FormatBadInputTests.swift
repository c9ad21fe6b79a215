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

/// Cover pictures that are too large or malformed (issue 15): each is reported with its reason and skipped, and the
/// track plays in full.
@Suite("Cover pictures: bad input")
struct CoverBadInputTests {
    /// `flac` with `block` (a metadata block's type and body) inserted after STREAMINFO, which is never the last.
    func inserting(type: UInt8, _ body: [UInt8], into flac: Data) -> Data {
        let length = body.count
        let header = [type, UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
        var bytes = [UInt8](flac)
        bytes.insert(contentsOf: header + body, at: 4 + 4 + 34)
        return Data(bytes)
    }

    /// Decodes `path` in full and returns its metadata, checking that every frame of the 1 s tone played.
    func playsInFull(_ path: String, frames: ClosedRange<Int> = 44_000...44_200) throws -> TrackMetadata {
        let outcome = DecodeOutcome.of(path)
        #expect(outcome.error == nil, "\(outcome)")
        #expect(frames.contains(outcome.frames), "\(outcome.frames) frames")
        return try AudioFileKind.openDecoder(path: TrackPath(path)).metadata
    }

    @Test("an MP3 with a 50 MB picture plays; the picture is skipped as too large, by its length")
    func fiftyMegabytePictureInMP3() throws {
        let mp3 = try Data(contentsOf: try Fixtures.tone(seconds: 1))
        let pictureLength = 50 << 20
        let head = [3] + Array("image/jpeg".utf8) + [0, 3, 0]
        let frameSize = head.count + pictureLength
        let frame = Array("APIC".utf8) + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: frameSize >> $0) } + [0, 0]
        let tagSize = frame.count + frameSize
        let tagHeader = Array("ID3".utf8) + [3, 0, 0] + [21, 14, 7, 0].map { UInt8((tagSize >> $0) & 0x7F) }
        // The picture's 50 MB are a hole in a sparse file: written without being held here either.
        let path = try TestAudio.file("picture-50MB.mp3") { path in
            _ = FileManager.default.createFile(atPath: path, contents: Data(tagHeader + frame + head))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.seek(toOffset: UInt64(tagHeader.count + tagSize))
            try handle.write(contentsOf: mp3)
            try handle.close()
        }
        let tags = try playsInFull(path, frames: 44_000...44_200)
        #expect(tags.cover == nil)
        #expect(tags.coverProblem?.hasPrefix("picture too large") == true, "\(String(describing: tags.coverProblem))")
    }

    @Test("a FLAC with a 15 MB PICTURE block (a block's most is 16 MiB) plays; the picture is skipped as too large")
    func largePictureInFLAC() throws {
        let flac = try Data(contentsOf: try Fixtures.tone(.flac, frequency: 440, seconds: 1))
        let picture = [UInt8](repeating: 0x5A, count: 15 << 20)
        let withPicture = inserting(type: 6, Fixtures.flacPictureStructure(picture), into: flac)
        let path = try TestAudio.bytesFile("picture-15MB.flac", [UInt8](withPicture))
        let tags = try playsInFull(path)
        #expect(tags.cover == nil)
        #expect(tags.coverProblem?.hasPrefix("picture too large") == true, "\(String(describing: tags.coverProblem))")
    }

    @Test("a FLAC PICTURE block whose picture length runs past the block: skipped as malformed, refused by libFLAC")
    func pictureLengthBeyondItsBlock() throws {
        let flac = try Data(contentsOf: try Fixtures.tone(.flac, frequency: 440, seconds: 1))
        let lying = Fixtures.flacPictureStructure(Array(repeating: 1, count: 100), dataLength: 50 << 20)
        let bytes = [UInt8](inserting(type: 6, lying, into: flac))
        let tags = FLACTags.read(TagSource(bytes: bytes))
        #expect(tags.cover == nil)
        #expect(tags.coverProblem?.hasPrefix("malformed picture block") == true)
        // libFLAC checks PICTURE blocks too, and refuses the whole file: reported for its headers, no crash.
        let outcome = DecodeOutcome.of(try TestAudio.bytesFile("picture-lying.flac", bytes))
        #expect(outcome.error?.kind == .badHeaders, "\(outcome)")
    }

    @Test("an Ogg Vorbis METADATA_BLOCK_PICTURE that is not base64 is skipped as malformed")
    func badBase64InVorbis() throws {
        let wav = try Fixtures.toneWAV(frequency: 440, seconds: 1)
        let url = Fixtures.directory.appendingPathComponent("picture-bad-base64.ogg")
        try Fixtures.encode(wav, as: .vorbis, into: url, tags: ["METADATA_BLOCK_PICTURE": "not*base64!", "TITLE": "T"])
        let tags = try playsInFull(url.path)
        #expect(tags.title == "T")
        #expect(tags.cover == nil)
        #expect(tags.coverProblem == "malformed picture comment (bad base64)")
    }

    @Test("a picture structure whose lengths lie, in memory, is skipped and never crashes", arguments: [0, 1, 7, 40])
    func truncatedPictureStructure(cut: Int) {
        let whole = Fixtures.flacPictureStructure(Array(repeating: 2, count: 50))
        var range = TagRange(TagSource(bytes: Array(whole.prefix(cut))), start: 0, count: cut)
        var findings = TagFindings()
        VorbisComments.readPicture(&range, into: &findings)
        #expect(findings.result.cover == nil)
        #expect(findings.result.coverProblem != nil)
    }
}
