// ReplayGain on FLAC, Ogg Vorbis and Ogg Opus: libsndfile's floats are converted to 16 bits with the gain folded into
// that conversion (SndfileDecoder.scaleOutput), from the track's first sample, whatever the chunks; each sample is
// the plain decode's times the factor, rounded to the nearest.
import AudioPipeline
import EarshotTestSupport
import Foundation
import Testing
import TrackPaths

@Suite("ReplayGain folded into libsndfile's conversion")
struct ReplayGainSndfileTests {
    /// A 2 s 440 Hz sine (stereo or mono) at -3 dBFS as `format` (flac, ogg, opus).
    static func file(_ format: String, channels: Int) throws -> String {
        try TestAudio.file("replaygain-sndfile-\(channels)ch.\(format)") { path in
            let wav = path + ".wav"
            try ProcessRunner.runChecked("sox", ["-n", "-r", "48000", "-c", "\(channels)", "-b", "16", wav, "synth",
                                                 "2", "sine", "440", "gain", "-3"])
            switch format {
            case "flac": try ProcessRunner.runChecked("flac", ["-s", "-f", "-o", path, wav])
            case "ogg": try ProcessRunner.runChecked("oggenc", ["-Q", "-o", path, wav])
            default: try ProcessRunner.runChecked("opusenc", ["--quiet", wav, path])
            }
            try FileManager.default.removeItem(atPath: wav)
        }
    }

    /// The file decoded whole through the decode thread's gain (track mode; the file has no gain, so `fallbackDb`).
    static func decode(_ path: String, fallbackDb: Double?, chunkFrames: Int) throws -> [Int16] {
        let decoder = try AudioFileKind.openDecoder(path: TrackPath(path))
        guard let fallbackDb else { return try TestAudio.decodeAll(decoder, chunkFrames: chunkFrames) }
        let control = ReplayGainControl()
        control.set(ReplayGainSettings(mode: .track, fallbackDb: fallbackDb), shuffled: false)
        return try TestAudio.decodeAll(control.applied(to: decoder), chunkFrames: chunkFrames)
    }

    @Test("every sample, from the first, is the plain decode's times the factor, rounded; louder saturates",
          arguments: ["flac", "ogg", "opus"], [1, 2])
    func scaledFromTheFirstSample(format: String, channels: Int) throws {
        _ = try ProcessRunner.requireTool("sox", package: "sox")
        let path = try Self.file(format, channels: channels)
        let plain = try Self.decode(path, fallbackDb: nil, chunkFrames: 4096)
        for (decibels, chunk) in [(-6.0206, 1000), (-11.3, 10_000), (9.0, 4096)] {
            let scaled = try Self.decode(path, fallbackDb: decibels, chunkFrames: chunk)
            #expect(scaled.count == plain.count)
            let factor = AppliedGain.linearFactor(decibels)
            // FLAC's samples are exact integers, so the product rounds within half a step. A lossy format's float is
            // rounded to 16 bits for the plain decode (off by up to half a step, which the factor scales) and once
            // for the scaled one (half a step).
            let bound = (format == "flac" ? 0.5 : 0.5 + 0.5 * factor) + 1e-3
            var worst = 0.0
            var firstOff: Int?
            for (index, (ours, theirs)) in zip(scaled, plain).enumerated() {
                let expected = min(max(Double(theirs) * factor, -32768), 32767)
                let off = abs(Double(ours) - expected)
                worst = max(worst, off)
                if off > bound, firstOff == nil { firstOff = index }
            }
            let place = "\(format) \(channels) ch at \(decibels) dB: sample \(firstOff ?? -1)"
            #expect(firstOff == nil, "\(place) off by more than \(bound) (worst \(worst))")
            // A mono file's two channels stay equal.
            if channels == 1 {
                #expect(stride(from: 0, to: scaled.count, by: 2).allSatisfy { scaled[$0] == scaled[$0 + 1] })
            }
            // The first frame is already scaled (not only the later ones).
            let firstLoud = try #require(plain.firstIndex { abs($0) > 1000 })
            #expect(abs(Double(scaled[firstLoud]) - Double(plain[firstLoud]) * factor) <= bound + 1)
        }
    }
}
