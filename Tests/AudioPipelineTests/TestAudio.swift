// Test audio made at run time with sox and lame, so no binary media lives in the repository.
// A missing tool is a test failure, never a skip: the suite must not pass by testing nothing.
import Foundation
import Testing
@testable import AudioPipeline

/// A value shared between test threads behind an NSLock.
///
/// Not Synchronization's Mutex: ThreadSanitizer on Linux cannot see its futex hand-offs and would
/// report false races in the TSan run of this suite.
final class Locked<Value>: @unchecked Sendable {
    // Sendable because `value` is only touched inside `lock`.
    /// Guards `value`.
    private let lock = NSLock()
    /// The protected value.
    private var value: Value

    /// Wraps `value`.
    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// A failure to produce test material (a tool missing or failing).
struct TestAudioError: Error, CustomStringConvertible {
    /// What went wrong, for the test log.
    var description: String
}

/// Makes and caches the test files of one test process in a private temporary folder.
enum TestAudio {
    /// The folder all generated files go to, created once per process.
    static let folder: String = {
        let path = NSTemporaryDirectory() + "earshot-audio-tests-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// Paths already generated, by name; the lock also serialises generation so tests share files.
    private static let made = Locked<[String: String]>([:])

    /// Returns the path of `name` in the test folder, running `make` to create it the first time.
    static func file(_ name: String, make: (String) throws -> Void) throws -> String {
        try made.withLock { cache in
            if let path = cache[name] {
                return path
            }
            let path = folder + "/" + name
            try make(path)
            cache[name] = path
            return path
        }
    }

    /// Runs a command-line tool found on PATH, failing with its output when it is missing or fails.
    static func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: output, as: UTF8.self)
            let hint = process.terminationStatus == 127 ? " (not installed? apt-get install sox lame)" : ""
            throw TestAudioError(description: "\(tool) failed with \(process.terminationStatus)\(hint): \(text)")
        }
    }

    /// A sine MP3 made by sox (synth) and lame; cached by its parameters.
    static func sine(seconds: Double = 2, frequency: Int = 440, rate: Int = 44_100, channels: Int = 2,
                     bitrate: Int = 128, lameOptions: [String] = [], tag: String = "") throws -> String {
        let name = "sine-\(seconds)s-\(frequency)Hz-\(rate)-\(channels)ch-\(bitrate)k\(tag).mp3"
        return try file(name) { path in
            let wave = path + ".wav"
            try run("sox", ["-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", wave,
                            "synth", "\(seconds)", "sine", "\(frequency)", "vol", "0.5"])
            try run("lame", ["--quiet", "-b", "\(bitrate)"] + lameOptions + [wave, path])
        }
    }

    /// A WAV file (PCM, not MPEG) made by sox, saved under a name ending in .mp3.
    static func waveNamedMP3() throws -> String {
        try file("really-a-wave.mp3") { path in
            try run("sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", "-t", "wav", path, "synth", "1", "sine", "440"])
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
        var state = seed
        return (0..<count).map { _ in
            // SplitMix64: small, deterministic and well mixed.
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return UInt8(truncatingIfNeeded: mixed ^ (mixed >> 31))
        }
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
    static func decodeAll(_ decoder: MP3Decoder, chunkFrames: Int = 4096) throws -> [Int16] {
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
        let coefficient = 2 * cos(2 * Double.pi * frequency / rate)
        var previous = 0.0
        var beforePrevious = 0.0
        for sample in signal {
            let current = sample + coefficient * previous - beforePrevious
            beforePrevious = previous
            previous = current
        }
        return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
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
