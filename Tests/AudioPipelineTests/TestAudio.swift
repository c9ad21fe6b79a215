// Test audio made at run time with sox and lame (EarshotTestSupport's Fixtures), so no binary media lives in the
// repository. A missing tool is a test failure, never a skip: the suite must not pass by testing nothing.
import EarshotTestSupport
import Foundation
import Testing
@testable import AudioPipeline

/// Makes and caches the test files of one test process (in `Fixtures.directory`), as paths.
enum TestAudio {
    /// The folder all generated files go to, created once per process.
    static let folder: String = {
        try? FileManager.default.createDirectory(at: Fixtures.directory, withIntermediateDirectories: true)
        return Fixtures.directory.path
    }()

    /// Returns the path of `name` in the test folder, running `make` to create it the first time.
    static func file(_ name: String, make: (String) throws -> Void) throws -> String {
        try Fixtures.file(named: name) { try make($0.path) }.path
    }

    /// A sine MP3 made by sox (synth) and lame at `rate` (never resampled by lame); cached by its parameters.
    static func sine(seconds: Double = 2, frequency: Int = 440, rate: Int = 44_100, channels: Int = 2,
                     bitrate: Int = 128, lameOptions: [String] = []) throws -> String {
        try Fixtures.tone(
            frequency: Double(frequency), seconds: seconds, rate: rate, channels: channels, bitRate: bitrate,
            lameOptions: lameOptions
        ).path
    }

    /// A WAV file (PCM, not MPEG) made by sox, saved under a name ending in .mp3.
    static func waveNamedMP3() throws -> String {
        try file("really-a-wave.mp3") { path in
            try ProcessRunner.runChecked(
                "sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", "-t", "wav", path, "synth", "1", "sine", "440"])
        }
    }

    /// Writes `bytes` to a new file called `name`.
    static func bytesFile(_ name: String, _ bytes: [UInt8]) throws -> String {
        try file(name) { path in
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
    }

    /// `count` pseudo-random bytes from a fixed seed, so the "random" file is the same every run.
    static func randomBytes(count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    /// An ID3v2.4 tag with UTF-8 TIT2/TPE1/TALB frames, built by hand to test the UTF-8 path.
    static func id3v24Tag(title: String, artist: String, album: String) -> [UInt8] {
        func syncsafe(_ value: Int) -> [UInt8] {
            [UInt8((value >> 21) & 0x7F), UInt8((value >> 14) & 0x7F), UInt8((value >> 7) & 0x7F), UInt8(value & 0x7F)]
        }
        func frame(_ id: String, _ text: String) -> [UInt8] {
            // Encoding byte 3 means UTF-8 in ID3v2.4.
            let body = [UInt8(3)] + Array(text.utf8)
            return Array(id.utf8) + syncsafe(body.count) + [0, 0] + body
        }
        let frames = frame("TIT2", title) + frame("TPE1", artist) + frame("TALB", album)
        return Array("ID3".utf8) + [4, 0, 0] + syncsafe(frames.count) + frames
    }

    /// Decodes the whole file, returning the interleaved samples and the format seen at the end.
    static func decodeAll(_ decoder: any AudioDecoder, chunkFrames: Int = 4096) throws -> [Int16] {
        var samples: [Int16] = []
        var chunk = [Int16](repeating: 0, count: chunkFrames * 2)
        while true {
            let step = try chunk.withUnsafeMutableBufferPointer { buffer in
                try decoder.decode(into: buffer)
            }
            switch step {
            case .frames(let frames):
                samples.append(contentsOf: chunk[0..<(frames * 2)])
            case .formatChanged:
                continue
            case .finished:
                return samples
            }
        }
    }
}

/// Signal checks on interleaved stereo samples.
enum Signal {
    /// One channel (0 = left, 1 = right) of interleaved stereo samples, as Double.
    static func channel(_ samples: [Int16], _ index: Int) -> [Double] {
        stride(from: index, to: samples.count, by: 2).map { Double(samples[$0]) }
    }

    /// Goertzel power of `frequency` in `signal` sampled at `rate`.
    static func power(of frequency: Double, in signal: [Double], rate: Double) -> Double {
        signal.withUnsafeBufferPointer { Goertzel.power(of: frequency, in: $0, sampleRate: rate) }
    }

    /// The candidate frequency with the most power in `signal`.
    static func dominant(of candidates: [Double], in signal: [Double], rate: Double) -> Double {
        candidates.max { power(of: $0, in: signal, rate: rate) < power(of: $1, in: signal, rate: rate) } ?? 0
    }

    /// The frequency estimated from zero crossings (rising and falling) over the whole signal.
    static func zeroCrossingFrequency(_ signal: [Double], rate: Double) -> Double {
        var crossings = 0
        for index in 1..<signal.count where (signal[index - 1] < 0) != (signal[index] < 0) {
            crossings += 1
        }
        return Double(crossings) / 2 / (Double(signal.count) / rate)
    }
}
