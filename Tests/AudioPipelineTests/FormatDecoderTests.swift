// FLAC, Ogg Vorbis and Opus through SndfileDecoder, and the choice of decoder by content: exact lengths, gapless
// joins of tracks cut from one recording, seeks (the track's own samples after each),
// mono, and a worker queue that mixes all four formats and changes rate for Opus. Audio is made by the tests with
// sox, flac, oggenc, opusenc and lame (Fixtures).
import EarshotTestSupport
import Foundation
import Testing
@testable import AudioPipeline
import TrackPaths

/// The three formats libsndfile decodes here.
let sndfileFormats: [Fixtures.Format] = [.flac, .vorbis, .opus]

/// The rate a file of `format` made from 44.1 kHz audio plays at: its own, except Opus, which is always 48 kHz.
func playedRate(_ format: Fixtures.Format) -> Int {
    format == .opus ? 48_000 : 44_100
}

/// The decoder kind a fixture format is opened as.
func decoderKind(_ format: Fixtures.Format) -> AudioFileKind {
    switch format {
    case .mp3: return .mp3
    case .flac: return .flac
    case .vorbis: return .vorbis
    case .opus: return .opus
    }
}

@Suite("FLAC, Vorbis and Opus decoders")
struct FormatDecoderTests {
    @Test("each format opens by content, with its exact length, and decodes its tone", arguments: sndfileFormats)
    func exactLengthAndTone(format: Fixtures.Format) throws {
        let path = TrackPath(try Fixtures.tone(format, frequency: 660, seconds: 1.5).path)
        #expect(try AudioFileKind.identify(path) == decoderKind(format))
        let decoder = try AudioFileKind.openDecoder(path: path)
        let rate = playedRate(format)
        #expect(decoder.format == AudioFormat(sampleRate: rate))
        // Opus's pre-skip and end padding are trimmed: the length is the source's, at 48 kHz.
        #expect(decoder.lengthFrames == rate * 3 / 2)
        let samples = try TestAudio.decodeAll(decoder)
        #expect(samples.count / 2 == rate * 3 / 2)
        #expect(decoder.positionFrame == rate * 3 / 2)
        let left = Signal.channel(samples, 0)
        #expect(Signal.dominant(of: [440, 660, 880], in: left, rate: Double(rate)) == 660)
    }

    @Test("a mono file plays as two identical channels", arguments: sndfileFormats)
    func monoIsDuplicated(format: Fixtures.Format) throws {
        let path = TrackPath(try Fixtures.tone(format, frequency: 440, seconds: 0.5, channels: 1).path)
        let decoder = try AudioFileKind.openDecoder(path: path)
        #expect(decoder.format.channels == 2)
        let samples = try TestAudio.decodeAll(decoder, chunkFrames: 1_000)
        #expect(samples.count / 2 == playedRate(format) / 2)
        let identical = Signal.channel(samples, 0) == Signal.channel(samples, 1)
        #expect(identical, "the two channels of a mono file differ")
        #expect(Signal.channel(samples, 0).contains { abs($0) > 8_000 }, "the mono tone is not there")
    }

    @Test("tracks cut from one recording join with no gap and no lost or extra frame (MP3: also at 16 and 22.05 kHz)",
          arguments: Fixtures.Format.allCases.map { ($0, Fixtures.sampleRate) } + [(.mp3, 16_000), (.mp3, 22_050)])
    func cutRecordingJoinsExactly(format: Fixtures.Format, recordedRate: Int) throws {
        let segments = [(frequency: 440.0, seconds: 0.7), (frequency: 660.0, seconds: 0.45),
                        (frequency: 880.0, seconds: 0.6)]
        let cut = try Fixtures.cutRecording(segments, as: format, rate: recordedRate)
        let rate = playedRate(format)
        // libmpg123's conversion rounds each track's length to a whole frame of its output. (lame takes 160 kbit/s, the
        // most MPEG-2 has, for the fixtures' 192 at 16 and 22.05 kHz: room for its LAME tag.)
        let slack = recordedRate == Fixtures.sampleRate ? 0 : cut.tracks.count
        var joined: [Int16] = []
        var seams: [Int] = []
        for track in cut.tracks {
            joined += try TestAudio.decodeAll(try AudioFileKind.openDecoder(path: TrackPath(track.path)))
            seams.append(joined.count / 2)
        }
        let wholeFrames = Int((1.75 * Double(rate)).rounded())
        #expect(abs(joined.count / 2 - wholeFrames) <= slack,
                "\(format) from \(recordedRate) Hz: \(joined.count / 2) frames, not \(wholeFrames)")
        if format == .flac {
            // Lossless: the join is the recording itself, sample for sample.
            let whole = try Fixtures.file(named: "recording-whole.flac") { output in
                try Fixtures.encode(cut.whole, as: .flac, into: output)
            }
            let reference = try TestAudio.decodeAll(try AudioFileKind.openDecoder(path: TrackPath(whole.path)))
            let identical = joined == reference
            #expect(identical, "the joined FLAC tracks differ from the recording")
        }
        // No silence at any seam: the longest run of near-silent frames (below -40 dBFS) within 50 ms of a seam is at
        // most 1 ms (a sine at -6 dBFS crosses zero, it never rests there).
        for seam in seams.dropLast() {
            let window = max(0, seam - rate / 20)..<min(joined.count / 2, seam + rate / 20)
            var longest = 0
            var run = 0
            for frame in window {
                let quiet = abs(Int(joined[2 * frame])) < 328 && abs(Int(joined[2 * frame + 1])) < 328
                run = quiet ? run + 1 : 0
                longest = max(longest, run)
            }
            #expect(longest <= rate / 1000, "\(format): \(longest) quiet frames at the seam at frame \(seam)")
        }
    }

    @Test("a seek lands on its frame and decodes the track's own samples there", arguments: sndfileFormats)
    func seekAccuracy(format: Fixtures.Format) throws {
        let path = try Fixtures.file(named: "sweep-noise-8s.\(format.fileExtension)") { output in
            let wav = output.appendingPathExtension("wav")
            defer { try? FileManager.default.removeItem(at: wav) }
            // A sweep with quiet noise: no stretch of it looks like another, so a wrong landing shows.
            try ProcessRunner.runChecked("sox", [
                "-n", "-r", "44100", "-c", "2", "-b", "16", wav.path, "synth", "8", "sine", "100-6000",
                "synth", "8", "pinknoise", "mix", "gain", "-6",
            ])
            try Fixtures.encode(wav, as: format, into: output)
        }
        let trackPath = TrackPath(path.path)
        let reference = try TestAudio.decodeAll(try AudioFileKind.openDecoder(path: trackPath))
        let decoder = try AudioFileKind.openDecoder(path: trackPath)
        let rate = playedRate(format)
        var buffer = [Int16](repeating: 0, count: 1_024 * 2)
        // Forty targets spread over the track besides the edge cases: before the decoder primed libsndfile's Vorbis
        // seeks, four of these 45 decoded wrong for their first thousand frames or so, though they landed right.
        let spread = (0..<40).map { 4_567 + $0 * (7 * rate / 40) }
        var keptNote: String?
        for target in [1, rate / 3, 2 * rate + 17, 5 * rate + 4_321, 7 * rate] + spread {
            try decoder.seek(toFrame: target)
            #expect(decoder.positionFrame == target)
            let step = try buffer.withUnsafeMutableBufferPointer { try decoder.decode(into: $0) }
            #expect(step == .frames(1_024))
            // The frames after the seek are the ones decoding from the start gives there: the same samples for
            // FLAC, give or take rounding for the lossy formats. Only when they are not is the landing searched for,
            // to say how far off it was (within 20 ms is the issue's bound for lossy formats; a wrongly decoded
            // block fails even when it is near).
            var largestDifference = 0
            for index in 0..<2_048 {
                largestDifference = max(largestDifference, abs(Int(reference[2 * target + index]) - Int(buffer[index])))
            }
            let tolerance = format == .flac ? 0 : 2
            if largestDifference > tolerance {
                let landed = Self.bestOffset(of: buffer, in: reference, near: target, reach: rate / 20)
                // The fixture is made afresh in each run and a failure has been rare (one run in many, seen only
                // with Vorbis): the file it happened on is kept for study, outside the fixtures' folder.
                if keptNote == nil {
                    keptNote = Self.keep(path).map { "the file is kept as \($0)" }
                        ?? "no copy of the file could be kept"
                }
                let message = "\(format): after a seek to frame \(target) a sample is \(largestDifference) off the "
                    + "track's; the best match is \(landed) frames away (\(keptNote ?? ""))"
                Issue.record(Comment(rawValue: message))
            }
        }
        // Beyond the end the decoder is finished.
        try decoder.seek(toFrame: 9 * rate)
        let step = try buffer.withUnsafeMutableBufferPointer { try decoder.decode(into: $0) }
        #expect(step == .finished)
    }

    /// A copy of `file` in the temporary folder that outlives the test run, or `nil` if it could not be made.
    private static func keep(_ file: URL) -> String? {
        let copy = FileManager.default.temporaryDirectory
            .appendingPathComponent("earshot-seek-mismatch-\(UUID().uuidString).\(file.pathExtension)")
        return (try? FileManager.default.copyItem(at: file, to: copy)).map { copy.path }
    }

    @Test("title, artist and album come from the Vorbis comments", arguments: sndfileFormats)
    func vorbisComments(format: Fixtures.Format) throws {
        let wav = try Fixtures.toneWAV(frequency: 440, seconds: 0.3)
        let tags = ["TITLE": "Título ☃", "ARTIST": "Ärtist", "ALBUM": "An Album"]
        let path = try TestAudio.file("tagged.\(format.fileExtension)") { output in
            try Fixtures.encode(wav, as: format, into: URL(fileURLWithPath: output), tags: tags)
        }
        let decoder = try AudioFileKind.openDecoder(path: TrackPath(path))
        #expect(decoder.metadata == TrackMetadata(title: "Título ☃", artist: "Ärtist", album: "An Album"))
        let untagged = try AudioFileKind.openDecoder(path: TrackPath(try Fixtures.tone(format, seconds: 0.5).path))
        #expect(untagged.metadata == TrackMetadata())
    }

    @Test("a file whose name lies plays as what its content is")
    func lyingExtension() throws {
        let flac = try Fixtures.tone(.flac, frequency: 440, seconds: 0.5)
        let named = try TestAudio.file("really-a-flac.mp3") {
            try FileManager.default.copyItem(atPath: flac.path, toPath: $0)
        }
        #expect(try AudioFileKind.identify(TrackPath(named)) == .flac)
        #expect(try TestAudio.decodeAll(try AudioFileKind.openDecoder(path: TrackPath(named))).count == 44_100)
        let mp3 = try TestAudio.sine(seconds: 0.5)
        let mp3Named = try TestAudio.file("really-an-mp3.opus") {
            try FileManager.default.copyItem(atPath: mp3, toPath: $0)
        }
        #expect(try AudioFileKind.identify(TrackPath(mp3Named)) == .mp3)
        #expect(try AudioFileKind.openDecoder(path: TrackPath(mp3Named)) is MP3Decoder)
    }

    @Test("a queue of MP3, FLAC, Vorbis and Opus plays in order; Opus's 48 kHz is announced as a format change")
    func mixedQueueInTheWorker() throws {
        let formats: [Fixtures.Format] = [.mp3, .flac, .vorbis, .opus]
        let frequencies = [440.0, 550.0, 660.0, 880.0]
        let files = try zip(formats, frequencies).map { try Fixtures.tone($0, frequency: $1, seconds: 0.5) }
        let ring = FrameRing(minimumCapacity: 8_192)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { notice in
            log.record(notice)
        }
        defer { worker.stop() }
        worker.load(paths: TrackList(files.map { TrackPath($0.path) }))
        var heard: [Int16] = []
        var continued = false
        let finished = eventually(timeout: .seconds(30), interval: .milliseconds(1)) {
            heard += drainReadable(ring)
            if !continued, log.contains(where: { if case .formatChange = $0 { return true }; return false }) {
                // The consumer has played the ring out (drained it) and re-made its stream at the new rate.
                heard += drainReadable(ring)
                continued = true
                worker.continueAfterFormatChange()
            }
            return log.contains(where: isQueueFinished) && ring.readableFrames == 0
        }
        #expect(finished)
        let started = log.all.compactMap { notice -> (Int, AudioFormat)? in
            if case .trackStarted(let index, _, let format, _, _) = notice { return (index, format) }
            return nil
        }
        #expect(started.map(\.0) == [0, 1, 2, 3])
        #expect(started.map(\.1.sampleRate) == [44_100, 44_100, 44_100, 48_000])
        #expect(log.all.contains(.formatChange(from: AudioFormat(sampleRate: 44_100),
                                                   to: AudioFormat(sampleRate: 48_000), ringFrame: 3 * 22_050)))
        #expect(heard.count / 2 == 3 * 22_050 + 24_000)
        // Each track's tone, in order.
        for (index, frequency) in frequencies.enumerated() {
            let start = index * 22_050 + 4_000
            let rate = index == 3 ? 48_000.0 : 44_100
            let left = Signal.channel(Array(heard[(2 * start)..<(2 * start + 8_000)]), 0)
            #expect(Signal.dominant(of: frequencies, in: left, rate: rate) == frequency, "track \(index)")
        }
    }

    /// The shift (in frames) of `window` against `reference` at `target`, within `reach`, that matches best: 0 when
    /// the window is the reference's frames from `target` on.
    static func bestOffset(of window: [Int16], in reference: [Int16], near target: Int, reach: Int) -> Int {
        let frames = window.count / 2
        var best = 0
        var bestError = Double.infinity
        for shift in -reach...reach {
            let start = target + shift
            guard start >= 0, start + frames <= reference.count / 2 else { continue }
            var error = 0.0
            for index in 0..<frames {
                let difference = Double(reference[2 * (start + index)]) - Double(window[2 * index])
                error += difference * difference
            }
            if error < bestError {
                bestError = error
                best = shift
            }
        }
        return best
    }
}
