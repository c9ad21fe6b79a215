// Audio the tests make for themselves with sox and lame, so that nothing binary is checked in
// and every signal is known exactly. Each fixture is made once per test process and cached.
//
// The position track: a linear sine sweep whose frequency says where in the track a moment of sound
// comes from. f(t) = 500 Hz + 250 Hz/s * t, so t = (f - 500 Hz) / (250 Hz/s): 1 Hz of frequency error
// is 4 ms of position error. Tracks are at most 56 s long, so the sweep stays at or below 14.5 kHz,
// under LAME's low-pass at 192 kbit/s. The phone call is a dial tone (350 Hz + 440 Hz), below the
// sweep's band, so that analysis can tell music and call apart on one sink.

import Foundation
import SystemSupport

/// Test audio files, generated on demand with sox and lame and cached for the life of the test process.
///
/// A missing tool is a test failure, never a skip: a suite must not pass by testing nothing.
public enum Fixtures {
    /// The sample rate of every fixture unless stated otherwise, and of the recordings.
    public static let sampleRate = 44_100

    /// The position sweep's frequency at track time 0, in Hz.
    public static let sweepStartFrequency = 500.0

    /// How fast the position sweep rises, in Hz per second of track time.
    public static let sweepRate = 250.0

    /// The longest position track that keeps the sweep within the band an MP3 carries (14.5 kHz at the end).
    public static let longestPositionTrack = 56.0

    /// The frequencies of the phone call's dial tone, both below the position sweep's band.
    public static let phoneCallFrequencies = [350.0, 440.0]

    /// The bit rate of the MP3 fixtures, in kbit/s (constant, so durations are exact).
    public static let mp3BitRate = 192

    /// The position sweep's frequency, in Hz, at `trackTime` seconds into the track.
    public static func sweepFrequency(atTrackTime trackTime: Double) -> Double {
        sweepStartFrequency + sweepRate * trackTime
    }

    /// The track time, in seconds, at which the position sweep has `frequency` (Hz).
    public static func trackTime(atSweepFrequency frequency: Double) -> Double {
        (frequency - sweepStartFrequency) / sweepRate
    }

    /// The band, in Hz, that a position sweep of `seconds` covers, widened by `margin` on both sides.
    public static func sweepBand(seconds: Double = longestPositionTrack, margin: Double = 50) -> ClosedRange<Double> {
        (sweepStartFrequency - margin)...(sweepFrequency(atTrackTime: seconds) + margin)
    }

    /// An MP3 (LAME, constant bit rate, with the gapless information in its LAME tag) of a sine at `frequency` Hz.
    ///
    /// - Parameters:
    ///   - seconds: the length of the audio (the gapless length a decoder should report).
    ///   - rate: the sample rate; MP3 allows 8000 to 48000 Hz. LAME keeps it (never resamples on its own).
    ///   - channels: 2 for stereo (the same sine in both), 1 for mono.
    ///   - bitRate: the bit rate in kbit/s.
    ///   - lameOptions: more LAME options, such as ID3 tags (`--tt`, `--id3v1-only`).
    public static func tone(
        frequency: Double = 440, seconds: Double, rate: Int = sampleRate, channels: Int = 2,
        bitRate: Int = mp3BitRate, lameOptions: [String] = []
    ) throws -> URL {
        let options = lameOptions.isEmpty ? "" : "-\(stableHash(lameOptions.joined(separator: "\u{0}")))"
        let name = "tone-\(frequency)Hz-\(seconds)s-\(rate)-\(channels)ch-\(bitRate)k\(options).mp3"
        return try file(named: name) { output in
            let wav = output.deletingPathExtension().appendingPathExtension("wav")
            defer { try? FileManager.default.removeItem(at: wav) }
            try sox(rate: rate, channels: channels, into: wav,
                    ["synth", "\(seconds)", "sine", "\(frequency)", "gain", "-6"])
            try lame(wav, into: output, rate: rate, bitRate: bitRate, extraArguments: lameOptions)
        }
    }

    /// A stereo 16-bit WAV of a sine at `frequency` Hz, to play with paplay (for example as "other music").
    public static func toneWAV(frequency: Double = 1000, seconds: Double) throws -> URL {
        try file(named: "tone-\(frequency)Hz-\(seconds)s.wav") { output in
            try sox(rate: sampleRate, into: output, ["synth", "\(seconds)", "sine", "\(frequency)", "gain", "-6"])
        }
    }

    /// A 44.1 kHz stereo file whose content tells the track position: the linear sweep described at the top,
    /// encoded as `format` (MP3 by default) by that format's encoder (`encode(_:as:into:tags:)`).
    ///
    /// Decoded with gapless handling, sample `n` of it is the sweep at `n / 44100` s, exactly as in
    /// `positionTrackWAV(seconds:)` (FLAC bit for bit). Analyse it with `Recording.trackPosition(atTime:)`.
    public static func positionTrack(seconds: Double, format: Format = .mp3) throws -> URL {
        let wav = try positionTrackWAV(seconds: seconds)
        return try file(named: "position-\(seconds)s.\(format.fileExtension)") { output in
            try encode(wav, as: format, into: output)
        }
    }

    /// The position sweep of `positionTrack(seconds:)` as a 44.1 kHz stereo 16-bit WAV, the reference.
    public static func positionTrackWAV(seconds: Double) throws -> URL {
        guard seconds > 0, seconds <= longestPositionTrack else {
            throw ToolkitError("a position track lasts 0 to \(longestPositionTrack) s, not \(seconds) s")
        }
        return try file(named: "position-\(seconds)s.wav") { output in
            // sox's `a:b` sweep is linear in frequency (`a-b` is exponential).
            let end = sweepFrequency(atTrackTime: seconds)
            try sox(rate: sampleRate, into: output, ["synth", "\(seconds)", "sine", "\(sweepStartFrequency):\(end)",
                                                     "gain", "-6"])
        }
    }

    /// A phone call to play with `ServerControl.startPhoneCall`: a continuous dial tone (350 + 440 Hz) WAV.
    public static func phoneCall(seconds: Double) throws -> URL {
        try file(named: "phone-call-\(seconds)s.wav") { output in
            // synth makes one tone per channel; remix puts both into each channel, gain sets the peak to -6 dBFS.
            try sox(rate: sampleRate, into: output, [
                "synth", "\(seconds)", "sine", "\(phoneCallFrequencies[0])", "sine", "\(phoneCallFrequencies[1])",
                "remix", "1,2", "1,2", "gain", "-n", "-6",
            ])
        }
    }

    /// A 44.1 kHz stereo MP3 of a sine at `frequency` Hz carrying ID3 title and artist tags.
    public static func titledTrack(
        title: String, artist: String, seconds: Double = 2, frequency: Double = 660
    ) throws -> URL {
        let key = "titled-\(stableHash(title + "\u{0}" + artist))-\(seconds)s-\(frequency)Hz.mp3"
        return try file(named: key) { output in
            let wav = output.deletingPathExtension().appendingPathExtension("wav")
            defer { try? FileManager.default.removeItem(at: wav) }
            try sox(rate: sampleRate, into: wav, ["synth", "\(seconds)", "sine", "\(frequency)", "gain", "-6"])
            let tags = ["--add-id3v2", "--tt", title, "--ta", artist]
            try lame(wav, into: output, rate: sampleRate, extraArguments: tags)
        }
    }

    /// The formats Earshot plays, as the fixtures encode them.
    public enum Format: String, CaseIterable, Sendable {
        /// MPEG-1 layer III by LAME, constant bit rate, with its LAME tag.
        case mp3
        /// FLAC by `flac` (lossless).
        case flac
        /// Ogg Vorbis by `oggenc`.
        case vorbis
        /// Ogg Opus by `opusenc` (whose output always plays at 48 kHz).
        case opus

        /// The usual file name extension.
        public var fileExtension: String {
            switch self {
            case .mp3: return "mp3"
            case .flac: return "flac"
            case .vorbis: return "ogg"
            case .opus: return "opus"
            }
        }
    }

    /// A sine at `frequency` Hz encoded as `format`; like `tone(...)` for MP3, which it calls for `.mp3`.
    public static func tone(
        _ format: Format, frequency: Double = 440, seconds: Double, rate: Int = sampleRate, channels: Int = 2
    ) throws -> URL {
        if format == .mp3 {
            return try tone(frequency: frequency, seconds: seconds, rate: rate, channels: channels)
        }
        let name = "tone-\(frequency)Hz-\(seconds)s-\(rate)-\(channels)ch.\(format.fileExtension)"
        return try file(named: name) { output in
            let wav = output.appendingPathExtension("wav")
            defer { try? FileManager.default.removeItem(at: wav) }
            try sox(rate: rate, channels: channels, into: wav,
                    ["synth", "\(seconds)", "sine", "\(frequency)", "gain", "-6"])
            try encode(wav, as: format, into: output)
        }
    }

    /// One recording of tones one after another (each `segments` item a frequency in Hz and a length in seconds), at
    /// `rate`, cut at the segment boundaries into one file per segment, each encoded as `format`: consecutive files
    /// are consecutive stretches of one recording, as a live album's tracks, and must play with no gap between.
    /// The second value is the recording itself, uncut (a WAV).
    public static func cutRecording(
        _ segments: [(frequency: Double, seconds: Double)], as format: Format, rate: Int = sampleRate
    ) throws -> (tracks: [URL], whole: URL) {
        let key = stableHash(segments.map { "\($0.frequency):\($0.seconds)" }.joined(separator: ",") + "@\(rate)")
        let whole = try file(named: "recording-\(key).wav") { output in
            var parts: [URL] = []
            defer { parts.forEach { try? FileManager.default.removeItem(at: $0) } }
            for (index, segment) in segments.enumerated() {
                let part = output.deletingPathExtension().appendingPathExtension("part\(index).wav")
                try sox(rate: rate, into: part, ["synth", "\(segment.seconds)", "sine", "\(segment.frequency)",
                                                 "gain", "-6"])
                parts.append(part)
            }
            try ProcessRunner.runChecked("sox", parts.map(\.path) + [output.path], timeout: .seconds(120))
        }
        var tracks: [URL] = []
        var startFrame = 0
        for (index, segment) in segments.enumerated() {
            let frames = Int((segment.seconds * Double(rate)).rounded())
            let track = try file(named: "recording-\(key)-\(index).\(format.fileExtension)") { output in
                let cut = output.appendingPathExtension("wav")
                defer { try? FileManager.default.removeItem(at: cut) }
                try ProcessRunner.runChecked(
                    "sox", [whole.path, cut.path, "trim", "\(startFrame)s", "\(frames)s"], timeout: .seconds(120))
                try encode(cut, as: format, into: output)
            }
            tracks.append(track)
            startFrame += frames
        }
        return (tracks, whole)
    }

    /// Encodes the WAV `input` as `format` into `output`, with the format's reference encoder (LAME for MP3, at
    /// `bitRate` kbit/s, constant).
    public static func encode(
        _ input: URL, as format: Format, into output: URL, tags: [String: String] = [:], bitRate: Int = mp3BitRate
    ) throws {
        switch format {
        case .mp3:
            let options = tags.sorted { $0.key < $1.key }.flatMap { ["--tv", "\($0.key)=\($0.value)"] }
            try lame(input, into: output, rate: wavSampleRate(of: input), bitRate: bitRate, extraArguments: options)
        case .flac:
            _ = try ProcessRunner.requireTool("flac", package: "flac")
            let options = tags.sorted { $0.key < $1.key }.flatMap { ["-T", "\($0.key)=\($0.value)"] }
            try ProcessRunner.runChecked("flac", ["-s", "-f"] + options + ["-o", output.path, input.path],
                                         timeout: .seconds(120))
        case .vorbis:
            _ = try ProcessRunner.requireTool("oggenc", package: "vorbis-tools")
            let options = tags.sorted { $0.key < $1.key }.flatMap { ["-c", "\($0.key)=\($0.value)"] }
            try ProcessRunner.runChecked("oggenc", ["-Q", "-q", "4"] + options + ["-o", output.path, input.path],
                                         timeout: .seconds(120))
        case .opus:
            _ = try ProcessRunner.requireTool("opusenc", package: "opus-tools")
            let options = tags.sorted { $0.key < $1.key }.flatMap { ["--comment", "\($0.key)=\($0.value)"] }
            try ProcessRunner.runChecked(
                "opusenc", ["--quiet", "--bitrate", "96"] + options + [input.path, output.path], timeout: .seconds(120))
        }
    }

    /// The byte ranges of the Ogg pages at the start of `data`, in order, as far as whole page headers go.
    public static func oggPageRanges(_ data: [UInt8]) -> [Range<Int>] {
        var pages: [Range<Int>] = []
        var offset = 0
        while offset + 27 <= data.count, data[offset..<offset + 4].elementsEqual("OggS".utf8) {
            let segments = Int(data[offset + 26])
            guard offset + 27 + segments <= data.count else { break }
            let body = data[(offset + 27)..<(offset + 27 + segments)].reduce(0) { $0 + Int($1) }
            pages.append(offset..<min(data.count, offset + 27 + segments + body))
            offset += 27 + segments + body
        }
        return pages
    }

    /// The FLAC file `flac` with its STREAMINFO total-samples field (36 bits ending at byte 26) set to `change(old)`:
    /// a header that lies about the length.
    public static func patchingFLACTotalSamples(_ flac: Data, _ change: (Int) -> Int) -> Data {
        var bytes = [UInt8](flac)
        let field = 18..<26
        let packed = bytes[field].reduce(0) { $0 << 8 | Int($1) }
        let mask = (1 << 36) - 1
        let patched = (packed & ~mask) | (change(packed & mask) & mask)
        for (index, position) in field.enumerated() {
            bytes[position] = UInt8(truncatingIfNeeded: patched >> (8 * (7 - index)))
        }
        return Data(bytes)
    }

    /// The sample rate of the WAV `file`, from its header.
    private static func wavSampleRate(of file: URL) throws -> Int {
        let bytes = [UInt8](try Data(contentsOf: file).prefix(28))
        guard bytes.count == 28 else { throw ToolkitError("\(file.lastPathComponent) is not a WAV file") }
        return (24..<28).reversed().reduce(0) { $0 << 8 | Int(bytes[$1]) }
    }

    /// A file named like an MP3 that holds `bytes` pseudo-random bytes (no MP3 frames): undecodable.
    public static func undecodable(bytes: Int = 16_384) throws -> URL {
        try file(named: "undecodable-\(bytes).mp3") { output in
            var generator = SplitMix64(seed: 0xEA25_407)
            let data = Data((0..<bytes).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
            try data.write(to: output)
        }
    }

    /// Copies the fixture `file` into `directory` under `name` (a distinctive name, a queue order) and returns it.
    ///
    /// An existing file of that name is replaced.
    @discardableResult
    public static func copy(_ file: URL, to directory: URL, named name: String) throws -> URL {
        let destination = directory.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if FileManager.default.fileExists(atPath: destination.path) {
            try FileManager.default.removeItem(at: destination)
        }
        try FileManager.default.copyItem(at: file, to: destination)
        return destination
    }

    /// The folder holding this process's fixtures.
    public static var directory: URL {
        TestEnvironment.processTemporaryDirectory.appendingPathComponent("fixtures", isDirectory: true)
    }

    /// The fixtures made so far, by file name. Generation happens under the lock, so one fixture is made
    /// once even when tests ask for it at the same time.
    private static let made = LockedValue<Set<String>>([])

    /// Returns the fixture called `name`, running `make` with its path first if this process has not made it.
    ///
    /// For test files made some other way (bytes written by hand, a tool's odd output); `make` must create the file.
    public static func file(named name: String, make: (URL) throws -> Void) throws -> URL {
        let output = directory.appendingPathComponent(name)
        try made.withLock { made in
            guard !made.contains(name) else { return }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(at: output)
            try make(output)
            guard FileManager.default.fileExists(atPath: output.path) else {
                throw ToolkitError("making fixture \(name) produced no file")
            }
            made.insert(name)
        }
        return output
    }

    /// Runs sox to synthesize 16-bit audio (stereo unless `channels` says) at `rate` Hz into `output`; `effects`
    /// starts with `synth`.
    static func sox(rate: Int, channels: Int = 2, into output: URL, _ effects: [String]) throws {
        _ = try ProcessRunner.requireTool("sox", package: "sox")
        let arguments = ["-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", "-e", "signed-integer", output.path]
        try ProcessRunner.runChecked("sox", arguments + effects, timeout: .seconds(120))
    }

    /// Encodes the WAV `input` to a constant bit-rate MP3 at `rate` Hz with LAME (which writes a LAME tag).
    private static func lame(
        _ input: URL, into output: URL, rate: Int, bitRate: Int = mp3BitRate, extraArguments: [String] = []
    ) throws {
        _ = try ProcessRunner.requireTool("lame", package: "lame")
        let kilohertz = String(format: "%g", Double(rate) / 1000)
        let arguments = ["--quiet", "--noreplaygain", "-b", "\(bitRate)", "--cbr", "--resample", kilohertz]
        let files = [input.path, output.path]
        try ProcessRunner.runChecked("lame", arguments + extraArguments + files, timeout: .seconds(120))
    }

    /// A hash of `text` that is the same in every process (FNV-1a, 64 bit), for file names.
    private static func stableHash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}

/// A small deterministic pseudo-random generator (SplitMix64), so undecodable fixtures are the same every run.
public struct SplitMix64: RandomNumberGenerator {
    /// The generator's state.
    private var state: UInt64

    /// Makes a generator that produces the sequence for `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next pseudo-random 64 bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
