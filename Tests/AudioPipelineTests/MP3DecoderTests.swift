// MP3Decoder against files the tests make with sox and lame: lengths, signal, formats, tags,
// seeking, and every kind of file that must be refused with a clear reason.
import Foundation
import Testing
@testable import AudioPipeline
import EarshotTestSupport

/// The decoder on generated files, good and bad.
@Suite("MP3Decoder")
struct MP3DecoderTests {
    /// Frames of tolerance on LAME-tagged gapless lengths.
    let lengthTolerance = 4

    @Test("a 2 s 440 Hz stereo file decodes gaplessly to 88200 frames of 440 Hz")
    func decodesSineAtNativeRate() throws {
        let decoder = try MP3Decoder(path: TestAudio.sine())
        #expect(decoder.format == AudioFormat(sampleRate: 44_100, channels: 2))
        #expect(decoder.nativeSampleRate == 44_100)
        let length = try #require(decoder.lengthFrames)
        #expect(abs(length - 88_200) <= lengthTolerance)

        let samples = try TestAudio.decodeAll(decoder)
        #expect(abs(samples.count / 2 - 88_200) <= lengthTolerance)
        #expect(samples.count / 2 == length)
        #expect(decoder.positionFrame == samples.count / 2)

        let left = Signal.channel(samples, 0)
        #expect(Signal.dominant(of: [220, 330, 440, 550, 880], in: left, rate: 44_100) == 440)
        #expect(abs(Signal.zeroCrossingFrequency(left, rate: 44_100) - 440) < 3)
        // Not silence: a 0.5 amplitude sine peaks near 16384.
        #expect((left.map(abs).max() ?? 0) > 12_000)
    }

    @Test("after finishing, decode keeps answering finished")
    func finishedIsSticky() throws {
        let decoder = try MP3Decoder(path: TestAudio.sine(seconds: 0.5))
        _ = try TestAudio.decodeAll(decoder)
        var buffer = [Int16](repeating: 0, count: 64)
        let step = try buffer.withUnsafeMutableBufferPointer { try decoder.decode(into: $0) }
        #expect(step == .finished)
    }

    @Test("a mono file is delivered as two identical channels")
    func upmixesMono() throws {
        let decoder = try MP3Decoder(path: TestAudio.sine(channels: 1, bitrate: 64))
        #expect(decoder.format.channels == 2)
        let samples = try TestAudio.decodeAll(decoder)
        #expect(abs(samples.count / 2 - 88_200) <= lengthTolerance)
        let left = Signal.channel(samples, 0)
        let right = Signal.channel(samples, 1)
        #expect(left == right)
        #expect(Signal.dominant(of: [220, 440, 880], in: left, rate: 44_100) == 440)
    }

    @Test("a 48 kHz file keeps 48000 Hz")
    func keeps48k() throws {
        let decoder = try MP3Decoder(path: TestAudio.sine(rate: 48_000))
        #expect(decoder.format.sampleRate == 48_000)
        let samples = try TestAudio.decodeAll(decoder)
        #expect(abs(samples.count / 2 - 96_000) <= lengthTolerance)
        #expect(Signal.dominant(of: [220, 440, 880], in: Signal.channel(samples, 0), rate: 48_000) == 440)
    }

    @Test("a chosen output rate converts a 48 kHz file to 44.1 kHz, keeping pitch and duration")
    func chosenOutputRate() throws {
        let path = try TestAudio.sine(seconds: 1, frequency: 660, rate: 48_000)
        let decoder = try MP3Decoder(path: path, outputRate: 44_100)
        #expect(decoder.format == AudioFormat(sampleRate: 44_100))
        #expect(decoder.nativeSampleRate == 48_000)
        let samples = try TestAudio.decodeAll(decoder)
        #expect(abs(samples.count / 2 - 44_100) <= 64)
        #expect(abs(Signal.zeroCrossingFrequency(Signal.channel(samples, 0), rate: 44_100) - 660) < 10)
    }

    @Test("MPEG-2 and 2.5 rates are converted to 44100 Hz, keeping pitch and duration",
          arguments: [22_050, 16_000, 8_000])
    func convertsLowRates(rate: Int) throws {
        #expect(MP3Decoder.canConvertRates)
        // The tone writer passes --resample, which keeps lame from picking yet another rate for the low bitrate.
        let path = try TestAudio.sine(rate: rate, bitrate: 32)
        let decoder = try MP3Decoder(path: path)
        #expect(decoder.nativeSampleRate == rate)
        #expect(decoder.format == AudioFormat(sampleRate: 44_100))
        let samples = try TestAudio.decodeAll(decoder)
        // Without a LAME tag (lame writes none for some low-rate files) the length includes padding.
        #expect(abs(samples.count / 2 - 88_200) < 4_000)
        let left = Signal.channel(samples, 0)
        #expect(Signal.dominant(of: [220, 330, 440, 550, 880], in: left, rate: 44_100) == 440)
    }

    @Test("an MP3 converted from 16 or 22.05 kHz keeps its LAME tag's gapless trim: its length is mpg123's at its own rate",
          arguments: [(16_000, 48), (22_050, 64)])
    func convertedKeepsGaplessTrim(rate: Int, bitRate: Int) throws {
        // At these bit rates a frame has room for the LAME tag (at 32 kbit/s lame leaves it out: nothing to trim by).
        let file = try Fixtures.tone(seconds: 0.4, rate: rate, bitRate: bitRate)
        let native = try ReplayGainMPG123Tests.mpg123(file, []).count / 2
        #expect(native * 10 == rate * 4, "mpg123 decodes \(native) frames of 0.4 s at \(rate) Hz")
        let decoder = try MP3Decoder(path: file.path)
        #expect(decoder.nativeSampleRate == rate && decoder.format.sampleRate == 44_100)
        let frames = try TestAudio.decodeAll(decoder).count / 2
        #expect(abs(frames - native * 44_100 / rate) <= 1, "\(frames) frames at 44.1 kHz")
        #expect(decoder.lengthFrames == frames)
    }

    @Test("ID3v2 title, artist and album written by lame are read")
    func readsLameTags() throws {
        let path = try TestAudio.sine(seconds: 0.5, lameOptions: ["--tt", "Song Title", "--ta", "Some Artist",
                                                                  "--tl", "An Album"])
        let decoder = try MP3Decoder(path: path)
        #expect(decoder.metadata == TrackMetadata(title: "Song Title", artist: "Some Artist", album: "An Album"))
    }

    @Test("ID3v1-only tags are read")
    func readsVersion1Tags() throws {
        let path = try TestAudio.sine(seconds: 0.5, lameOptions: ["--id3v1-only", "--tt", "Old Title",
                                                                  "--ta", "Old Artist", "--tl", "Old Album"])
        let decoder = try MP3Decoder(path: path)
        #expect(decoder.metadata == TrackMetadata(title: "Old Title", artist: "Old Artist", album: "Old Album"))
    }

    @Test("an ID3v1 genre byte is the genre's name (ID3v1's list, Winamp's extensions); 255 and unknown ones are none",
          arguments: [(0, "Blues"), (8, "Jazz"), (79, "Hard Rock"), (80, "Folk"), (131, "Indie"), (191, "Psybient"),
                      (192, nil), (255, nil)] as [(UInt8, String?)])
    func readsVersion1Genre(byte: UInt8, genre: String?) throws {
        let audio = try [UInt8](Data(contentsOf: URL(fileURLWithPath: TestAudio.sine(seconds: 0.5))))
        func field(_ text: String, _ width: Int) -> [UInt8] {
            Array(text.utf8) + Array(repeating: 0, count: width - text.utf8.count)
        }
        // ID3v1.1: title, artist, album, year, a comment of 28 bytes, a zero, the track, the genre.
        let tag = Array("TAG".utf8) + field("Title", 30) + field("Artist", 30) + field("Album", 30) + field("1999", 4)
            + field("", 28) + [0, 5, byte]
        let decoder = try MP3Decoder(path: TestAudio.bytesFile("id3v1-genre-\(byte).mp3", audio + tag))
        #expect(decoder.metadata.genre == genre)
        #expect(decoder.metadata.title == "Title" && decoder.metadata.trackNumber == 5)
    }

    @Test("UTF-8 ID3v2.4 text arrives intact")
    func readsUTF8Tags() throws {
        let plain = try TestAudio.sine(seconds: 0.5)
        let audio = try [UInt8](Data(contentsOf: URL(fileURLWithPath: plain)))
        let tag = TestAudio.id3v24Tag(title: "Tïtle ♪", artist: "Ärtist", album: "Албум")
        let decoder = try MP3Decoder(path: TestAudio.bytesFile("utf8-tagged.mp3", tag + audio))
        #expect(decoder.metadata == TrackMetadata(title: "Tïtle ♪", artist: "Ärtist", album: "Албум"))
    }

    @Test("an untagged file has empty metadata")
    func untaggedMetadata() throws {
        let decoder = try MP3Decoder(path: TestAudio.sine(seconds: 0.5))
        #expect(decoder.metadata.title == nil)
        #expect(decoder.metadata.artist == nil)
        #expect(decoder.metadata.album == nil)
    }

    @Test("seeking to frame N gives the same samples as decoding from the start and skipping N",
          arguments: [0, 1, 1_151, 12_345, 44_100, 80_000])
    func seekIsSampleAccurate(frame: Int) throws {
        let path = try TestAudio.sine(frequency: 1_000)
        let reference = try TestAudio.decodeAll(try MP3Decoder(path: path))

        let decoder = try MP3Decoder(path: path)
        // Decode a little first, so the seek has to go backwards as well as forwards.
        var scratch = [Int16](repeating: 0, count: 3_000)
        _ = try scratch.withUnsafeMutableBufferPointer { try decoder.decode(into: $0) }
        try decoder.seek(toFrame: frame)
        #expect(decoder.positionFrame == frame)
        let afterSeek = try TestAudio.decodeAll(decoder, chunkFrames: 1_000)
        #expect(afterSeek.count == reference.count - frame * 2)
        let compared = min(afterSeek.count, 20_000)
        #expect(Array(afterSeek[0..<compared]) == Array(reference[(frame * 2)..<(frame * 2 + compared)]))
    }

    @Test("seeking past the end finishes")
    func seekPastEnd() throws {
        let decoder = try MP3Decoder(path: TestAudio.sine(seconds: 0.5))
        try decoder.seek(toFrame: 10_000_000)
        #expect(try TestAudio.decodeAll(decoder).isEmpty)
    }

    @Test("a truncated file ends with finished and fewer frames than its length")
    func truncatedFileFinishes() throws {
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: TestAudio.sine())))
        let path = try TestAudio.bytesFile("truncated.mp3", Array(whole[0..<(whole.count * 6 / 10)]))
        let decoder = try MP3Decoder(path: path)
        let length = try #require(decoder.lengthFrames)
        let samples = try TestAudio.decodeAll(decoder)
        #expect(samples.count / 2 > 0)
        #expect(samples.count / 2 < length - 10_000)
        #expect(decoder.positionFrame == samples.count / 2)
    }

    @Test("a LAME tag claiming two billion frames is not believed, converted or not (fuzzing regressions)")
    func overclaimingTag() throws {
        // The first frame of a lame file holds the Info tag: "Info" (or "Xing"), 4 flag bytes, then (flag bit 0)
        // the frame count, big-endian. Claim 0x7FFFFFFF frames in a 2 s file.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: TestAudio.sine())))
        let tagStart = try #require((0..<(bytes.count - 12)).first { start in
            let name = Array(bytes[start..<(start + 4)])
            return name == Array("Info".utf8) || name == Array("Xing".utf8)
        })
        #expect(bytes[tagStart + 7] & 1 == 1, "the tag has a frame count")
        bytes.replaceSubrange((tagStart + 8)..<(tagStart + 12), with: [0x7F, 0xFF, 0xFF, 0xFF])
        let path = try TestAudio.bytesFile("overclaiming-tag.mp3", bytes)
        // Converted to 48 kHz, the 44.1 kHz file opens (libmpg123 would otherwise walk two billion frames first),
        // its length is measured from the file rather than taken from the tag, and it decodes to its real end.
        let decoder = try MP3Decoder(path: path, outputRate: 48_000)
        #expect(decoder.format.sampleRate == 48_000)
        let length = try #require(decoder.lengthFrames)
        #expect(length < 48_000 * 3)
        let samples = try TestAudio.decodeAll(decoder)
        #expect(abs(samples.count / 2 - 96_000) < 4_800)
        // At the file's own rate a seek into the claimed middle walked the claimed frames: the length is the
        // file's here too, and a seek to its middle lands there.
        let native = try MP3Decoder(path: path)
        let nativeLength = try #require(native.lengthFrames)
        #expect(nativeLength < 44_100 * 3)
        try native.seek(toFrame: nativeLength / 2)
        #expect(native.positionFrame == nativeLength / 2)
        #expect(abs(try TestAudio.decodeAll(native).count / 2 - (nativeLength - nativeLength / 2)) < 4_410)
    }

    @Test("a tag frame over frames only a converting handle takes is not believed either (fuzzing regression)")
    func untrustedTagBeforeOddFrames() throws {
        // Reduced from a fuzzer's input that held the decoder in libmpg123 for 105 s at open: an MPEG-1 layer III
        // frame (128 kbps, 44.1 kHz) whose Xing tag claims 0xF7FF000D frames, with a LAME extension of 0xFF bytes,
        // then a frame header that a handle accepting every format rejects, then zeros.
        var tagFrame = [UInt8](repeating: 0, count: 417)
        tagFrame.replaceSubrange(0..<4, with: [0xFF, 0xFB, 0x90, 0x64])
        tagFrame.replaceSubrange(36..<52, with: Array("Xing".utf8) + [0, 0, 0, 0x0F, 0xF7, 0xFF, 0x00, 0x0D,
                                                                      0, 0, 0x09, 0x8F])
        tagFrame.replaceSubrange(156..<164, with: [UInt8](repeating: 0xFF, count: 8))
        tagFrame.replaceSubrange(172..<180, with: [UInt8](repeating: 0xFF, count: 8))
        let path = try TestAudio.bytesFile("untrusted-tag.mp3", tagFrame + [0xFF, 0xFB, 0x33, 0x2E]
                                                + [UInt8](repeating: 0, count: 200))
        // Converted to 48 kHz, it opens at once with a length measured from the file, not four billion frames.
        let decoder = try MP3Decoder(path: path, outputRate: 48_000)
        #expect(decoder.lengthFrames ?? 0 < 48_000)
        _ = try TestAudio.decodeAll(decoder)
    }

    @Test("garbage after good audio ends decoding within bounds instead of looping")
    func trailingGarbageEnds() throws {
        let audio = try [UInt8](Data(contentsOf: URL(fileURLWithPath: TestAudio.sine())))
        let path = try TestAudio.bytesFile("garbage-tail.mp3", audio + TestAudio.randomBytes(count: 300_000, seed: 7))
        let decoder = try MP3Decoder(path: path)
        var frames = 0
        var chunk = [Int16](repeating: 0, count: 8_192)
        var calls = 0
        decoding: while calls < 100_000 {
            calls += 1
            do {
                let step = try chunk.withUnsafeMutableBufferPointer { try decoder.decode(into: $0) }
                switch step {
                case .frames(let count): frames += count
                case .formatChanged: continue
                case .finished: break decoding
                }
            } catch let error as DecodeError {
                #expect(error.kind == .decodeFailed)
                #expect(!error.message.isEmpty)
                break decoding
            }
        }
        #expect(calls < 100_000)
        #expect(frames >= 88_200 - lengthTolerance)
    }

    @Test("files that are not playable MP3s are refused with a kind and a message",
          arguments: RefusedFile.allCases)
    func refusesUnplayableFiles(file: RefusedFile) throws {
        let path = try file.make()
        do {
            _ = try MP3Decoder(path: path)
            Issue.record("\(file) was accepted")
        } catch {
            #expect(error.kind == file.expectedKind, "\(file): \(error)")
            #expect(!error.message.isEmpty)
            // Messages may be logged: they must not leak the path.
            #expect(!error.message.contains(TestAudio.folder))
        }
    }
}

/// The unplayable inputs and the kind of error each must give.
enum RefusedFile: String, CaseIterable, CustomStringConvertible {
    case empty, randomBytes, fewRandomBytes, moreRandomBytes, wave, directory, device, missing, id3Only

    /// The test case's name.
    var description: String { rawValue }

    /// The error kind the decoder must report.
    var expectedKind: DecodeError.Kind {
        switch self {
        case .empty: .empty
        case .randomBytes, .fewRandomBytes, .moreRandomBytes, .wave: .notMPEGAudio
        case .directory, .device, .missing: .cannotOpen
        case .id3Only: .noAudio
        }
    }

    /// Creates the input and returns its path.
    func make() throws -> String {
        switch self {
        case .empty:
            return try TestAudio.bytesFile("empty.mp3", [])
        case .randomBytes:
            return try TestAudio.bytesFile("random.mp3", TestAudio.randomBytes(count: 100_000, seed: 42))
        case .fewRandomBytes:
            return try TestAudio.bytesFile("random-small.mp3", TestAudio.randomBytes(count: 1_000, seed: 5))
        case .moreRandomBytes:
            // This size and seed make libmpg123 search to the end of the file (DONE) instead of failing.
            return try TestAudio.bytesFile("random-medium.mp3", TestAudio.randomBytes(count: 50_000, seed: 9))
        case .wave:
            return try TestAudio.waveNamedMP3()
        case .directory:
            return try TestAudio.file("folder.mp3") { path in
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            }
        case .device:
            return "/dev/zero"
        case .missing:
            return TestAudio.folder + "/does-not-exist.mp3"
        case .id3Only:
            return try TestAudio.bytesFile("tag-only.mp3", TestAudio.id3v24Tag(title: "T", artist: "A", album: "B"))
        }
    }
}
