// The bad files BadFilesTests queues: what each should do (Expectation, BadFile), how a skip is reported (SkipLine), the
// runs of tone a recording reads as (ToneRun), and the maker that generates them all in a scratch folder.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

/// What a bad file should do to the queue.
enum Expectation {
    /// Plays for `seconds` (within the range), with no skip report.
    case played(seconds: ClosedRange<Double>)
    /// Reported as skipped with one of `kinds` (DecodeError kinds), and nothing of it heard.
    case skipped(kinds: Set<String>)
    /// Plays for `seconds`, then reported as skipped with `kind` (damage that stops decoding part-way).
    case playedThenSkipped(seconds: ClosedRange<Double>, kind: String)
}

/// One generated bad file and what earshot should make of it.
struct BadFile {
    /// What the file is, for messages (never given to earshot).
    let label: String
    /// The path as raw bytes (a name may not be UTF-8).
    let path: [UInt8]
    /// What should happen.
    let expectation: Expectation

    /// What the recording should hold for this file.
    var heard: Expectation {
        if case .playedThenSkipped(let seconds, _) = expectation { return .played(seconds: seconds) }
        return expectation
    }

    /// Checks the file's skip report (or its absence); returns whether the file's audio is to be heard.
    func check(skip: SkipLine?) -> Bool {
        switch expectation {
        case .played:
            #expect(skip == nil, "\(label) was skipped: \(skip?.reason ?? "")")
        case .skipped(let kinds):
            #expect(skip != nil, "\(label) was neither skipped nor reported")
            if let skip {
                #expect(kinds.contains(skip.kind), "\(label) skipped as \(skip.kind), expected one of \(kinds)")
                #expect(skip.reason.count >= 5, "\(label) skipped without a reason")
            }
        case .playedThenSkipped(_, let kind):
            #expect(skip?.kind == kind, "\(label) should be reported as \(kind): \(skip as Any)")
        }
        switch expectation {
        case .played: return skip == nil
        case .skipped: return false
        case .playedThenSkipped: return true
        }
    }
}

/// One `earshot: track N of M skipped: KIND: REASON` line.
struct SkipLine: CustomStringConvertible {
    /// The queue length the line gives (M).
    let trackCount: Int
    /// The error kind, e.g. `notMPEGAudio`.
    let kind: String
    /// The reason after the kind.
    let reason: String

    var description: String { "of \(trackCount) skipped: \(kind): \(reason)" }

    /// The skip lines of `standardError`, by track number (1-based).
    static func all(in standardError: String) -> [Int: SkipLine] {
        var lines: [Int: SkipLine] = [:]
        let prefix = "earshot: track "
        for line in standardError.split(separator: "\n") where line.hasPrefix(prefix) {
            let words = line.dropFirst(prefix.count).split(separator: " ", maxSplits: 5)
            guard words.count == 6, words[1] == "of", words[3] == "skipped:", let number = Int(words[0]),
                  let count = Int(words[2]), words[4].hasSuffix(":") else { continue }
            lines[number] = SkipLine(trackCount: count, kind: String(words[4].dropLast()), reason: String(words[5]))
        }
        return lines
    }
}

/// A stretch of the recording where one tone is heard.
struct ToneRun {
    /// The good tracks' tone, the bad files' tone, or the third tone.
    enum Tone: CaseIterable, CustomStringConvertible {
        case good, bad, third

        var description: String {
            switch self {
            case .good: return "G"
            case .bad: return "B"
            case .third: return "T"
            }
        }

        /// The tone's frequency, in Hz.
        var frequency: Double {
            switch self {
            case .good: return BadFilesTests.goodFrequency
            case .bad: return BadFilesTests.badFrequency
            case .third: return BadFilesTests.thirdFrequency
            }
        }
    }

    /// Which tone.
    var tone: Tone
    /// How long it was heard (observed runs) or should be (expected runs).
    var seconds: Double
    /// What the run stands for, for messages (expected runs).
    var label: String
    /// The lengths accepted for a bad file's run, when not just `seconds`.
    var allowed: ClosedRange<Double>?

    /// The runs of each tone in `recording`, in 10 ms windows; silence between windows of one tone does not split a
    /// run, and runs shorter than 50 ms (a window straddling two tracks) are dropped.
    static func runs(in recording: Recording) -> [ToneRun] {
        let window = Recording.defaultWindow
        var runs: [ToneRun] = []
        var start = 0.0
        while start + window <= recording.duration {
            let range = start..<start + window
            let amplitudes = Tone.allCases.map { ($0, recording.toneAmplitude(atFrequency: $0.frequency, in: range)) }
            start += window
            guard let loudest = amplitudes.max(by: { $0.1 < $1.1 }), loudest.1 >= 0.1 else { continue }
            append(loudest.0, window, to: &runs)
        }
        var merged: [ToneRun] = []
        for run in runs where run.seconds >= 0.05 {
            append(run.tone, run.seconds, to: &merged)
        }
        return merged
    }

    private static func append(_ tone: Tone, _ seconds: Double, to runs: inout [ToneRun]) {
        if runs.last?.tone == tone {
            runs[runs.count - 1].seconds += seconds
        } else {
            runs.append(ToneRun(tone: tone, seconds: seconds, label: ""))
        }
    }
}

/// Makes the bad files in a scratch folder, and starts `earshot play` on a queue of raw-byte paths.
struct BadFileMaker {
    /// In every bad file's name (and in the deep folders' names): must never appear in earshot's output.
    static let nameMarker = "Quagga"
    /// In the tags and content of the bad files: must never appear in earshot's output.
    static let contentMarker = "Narwhal"

    /// The test's scratch folder (control socket, config and state folders).
    let scratch: URL
    /// Where the bad files are made: `bad/` in the scratch folder.
    let folder: URL
    /// Where their sources (WAVs, clean MP3s) go: `work/` in the scratch folder.
    let work: URL
    /// Whether earshot must run without CAP_DAC_OVERRIDE for mode 000 to stop it (the tests run as root).
    let dropsFileCapabilities = geteuid() == 0
    /// The non-UTF-8 file, removed by hand: Foundation cannot name it.
    private let nonUTF8Name: [UInt8]

    /// Prepares the `bad/` and `work/` folders in `scratch`.
    init(scratch: URL) throws {
        self.scratch = scratch
        folder = scratch.appendingPathComponent("bad", isDirectory: true)
        work = scratch.appendingPathComponent("work", isDirectory: true)
        nonUTF8Name = Array(folder.path.utf8) + Array("/\(Self.nameMarker)-".utf8) + [0xFF, 0xFE]
            + Array("-latin1-".utf8) + [0xE9] + Array(".mp3".utf8)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    /// Makes every bad file, in queue order.
    func makeAll() throws -> [BadFile] {
        let full = BadFilesTests.badSeconds
        let played = (full - 0.03)...(full + 0.03)
        let notMPEG: Set = ["notMPEGAudio"]
        let base = try encode(rate: 44_100, channels: 2, ["-b", "128", "--cbr"], named: "base")
        let frames = Self.mpeg1LayerIIIFrames(in: base)
        guard frames.count > 10 else { throw ToolkitError("the base MP3 has \(frames.count) frames") }
        let cut = frames[frames.count * 6 / 10]
        var generator = SplitMix64(seed: 0xBAD_F11E)
        var files: [BadFile] = []

        func add(_ label: String, _ name: String, _ contents: Data?, _ expectation: Expectation) throws {
            let url = folder.appendingPathComponent("\(Self.nameMarker) \(name)")
            if let contents { try contents.write(to: url) }
            files.append(BadFile(label: label, path: Array(url.path.utf8), expectation: expectation))
        }

        try add("empty file", "empty.mp3", Data(), .skipped(kinds: ["empty"]))
        try add("truncated mid-frame", "truncated frame.mp3", base.prefix(cut.offset + cut.size / 2),
                .played(seconds: 0.2...0.38))
        try add("truncated mid-header", "truncated header.mp3", base.prefix(cut.offset + 2),
                .played(seconds: 0.2...0.38))
        try add("truncated inside its ID3v2 header", "truncated tag.mp3", Data("ID3\u{3}\u{0}\u{0}\u{0}\u{0}".utf8),
                .skipped(kinds: ["notMPEGAudio", "noAudio"]))
        var random = Data((0..<16_384).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        random.replaceSubrange(100..<120, with: Data("\(Self.contentMarker) random bytes".utf8.prefix(20)))
        try add("random bytes", "random.mp3", random, .skipped(kinds: notMPEG))
        let wave = try synthesize(rate: 44_100, channels: 2, named: "pcm")
        // The decoder recognises the RIFF signature before libmpg123 could find a false frame sync in the PCM.
        try add("a WAV named .mp3", "wave.mp3", try Data(contentsOf: wave), .skipped(kinds: ["notMPEGAudio"]))
        // A name that lies: the content decides, so these play as the FLAC and the Ogg Vorbis they are.
        try add("a FLAC named .mp3", "flac.mp3", try convert(wave, to: "flac"), .played(seconds: played))
        try add("an Ogg Vorbis named .mp3", "ogg.mp3", try convert(wave, to: "ogg"), .played(seconds: played))
        let title = Self.id3Frame("TIT2", [0] + Array("\(Self.contentMarker) tag only title".utf8))
        try add("an ID3v2 tag only", "tag only.mp3", Self.id3v2Tag([title]), .skipped(kinds: ["noAudio"]))
        try add("50 MB embedded picture", "big picture.mp3", Self.withBigPicture(base),
                .played(seconds: played))
        // How much around the damage is lost depends on where libmpg123 resyncs, and the tone analysis may drop a
        // noisy window next to it (seen at 0.33 s once on PipeWire): what matters is that the track plays on.
        try add("400 bytes overwritten in the middle", "corrupt.mp3",
                Self.overwriting(base, at: base.count / 2, count: 400, generator: &generator),
                .played(seconds: (full - 0.2)...(full + 0.03)))
        // Beyond libmpg123's resync limit (1024 bytes): it plays up to the damage and reports it, like mpg123 -t.
        try add("1500 bytes overwritten in the middle", "corrupt wide.mp3",
                Self.overwriting(base, at: base.count / 2, count: 1500, generator: &generator),
                .playedThenSkipped(seconds: 0.15...0.35, kind: "decodeFailed"))
        for rate in [8_000, 11_025, 16_000, 22_050, 24_000, 32_000] {
            let mp3 = try encode(rate: rate, channels: 2, [], named: "rate-\(rate)")
            try add("layer III at \(rate) Hz", "rate \(rate).mp3", mp3, .played(seconds: played))
        }
        try add("mono", "mono.mp3", try encode(rate: 44_100, channels: 1, ["-m", "m"], named: "mono"),
                .played(seconds: played))
        try add("48 kHz", "48k.mp3", try encode(rate: 48_000, channels: 2, [], named: "48k"), .played(seconds: played))
        try add("8 kbit/s", "8 kbps.mp3", try encode(rate: 8_000, channels: 1, ["-b", "8", "-m", "m"], named: "8k"),
                .played(seconds: played))
        let vbr = try encode(rate: 44_100, channels: 2, ["-V", "5"], named: "vbr")
        try add("VBR with a Xing frame count far too small", "xing small.mp3",
                try Self.patchingXingFrameCount(vbr) { max(1, $0 / 3) }, .played(seconds: played))
        try add("VBR with a Xing frame count far too large", "xing large.mp3",
                try Self.patchingXingFrameCount(vbr) { $0 * 1000 }, .played(seconds: played))
        try addNewFormatFiles(add, played: played)
        let directory = folder.appendingPathComponent("\(Self.nameMarker) directory.mp3", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try add("a directory", "directory.mp3", nil, .skipped(kinds: ["cannotOpen"]))
        let fifo = folder.appendingPathComponent("\(Self.nameMarker) fifo.mp3")
        guard mkfifo(fifo.path, 0o644) == 0 else { throw ToolkitError("mkfifo failed: errno \(errno)") }
        try add("a FIFO", "fifo.mp3", nil, .skipped(kinds: ["cannotOpen"]))
        try add("no read permission", "unreadable.mp3", base, .skipped(kinds: ["cannotOpen"]))
        let unreadable = folder.appendingPathComponent("\(Self.nameMarker) unreadable.mp3")
        try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: unreadable.path)
        try requireUnreadable(unreadable)

        try Self.write(base, toRawPath: nonUTF8Name)
        files.append(BadFile(
            label: "a non-UTF-8 file name", path: nonUTF8Name, expectation: .played(seconds: played)))
        files.append(BadFile(label: "a 4000-byte path", path: try makeLongPath(base, bytes: 4000),
                             expectation: .played(seconds: played)))
        return files
    }

    /// The damaged FLAC, Ogg Vorbis and Opus files (issue 15), each added with `add`.
    private func addNewFormatFiles(
        _ add: (String, String, Data?, Expectation) throws -> Void, played: ClosedRange<Double>
    ) throws {
        let flac = try encode(.flac)
        // flac leaves 8 KB of padding after the headers, so half the bytes hold well under half the audio.
        try add("a truncated FLAC", "truncated.flac", flac.prefix(flac.count / 2),
                .playedThenSkipped(seconds: 0.05...0.3, kind: "decodeFailed"))
        try add("a FLAC whose STREAMINFO claims twice its length", "liar.flac",
                Fixtures.patchingFLACTotalSamples(flac) { $0 * 2 },
                .playedThenSkipped(seconds: played, kind: "decodeFailed"))
        // Long enough for several audio pages: the one broken in the middle is lost, the rest plays.
        let longSeconds = 4.0
        var vorbis = [UInt8](try encode(.vorbis, seconds: longSeconds))
        let pages = Fixtures.oggPageRanges(vorbis)
        guard pages.count > 4 else { throw ToolkitError("the Vorbis file has \(pages.count) pages") }
        let broken = pages[pages.count / 2]
        for index in (broken.lowerBound + 30)..<broken.upperBound { vorbis[index] = 0x55 }
        try add("an Ogg Vorbis with a broken page in the middle", "broken page.ogg", Data(vorbis),
                .playedThenSkipped(seconds: (longSeconds - 2.2)...(longSeconds - 0.5), kind: "decodeFailed"))
        let opus = [UInt8](try encode(.opus))
        let opusPages = Fixtures.oggPageRanges(opus)
        guard opusPages.count > 2 else { throw ToolkitError("the Opus file has \(opusPages.count) pages") }
        try add("an Opus with no OpusHead", "no head.opus", Data(opus[opusPages[1].lowerBound...]),
                .skipped(kinds: ["badHeaders"]))
        let comment = work.appendingPathComponent("huge comment.txt")
        let commentLine = "COMMENT=\(Self.contentMarker)" + String(repeating: "x", count: 8 << 20) + "\n"
        try Data(commentLine.utf8).write(to: comment)
        let plainVorbis = work.appendingPathComponent("plain.ogg")
        try encode(.vorbis).write(to: plainVorbis)
        let hugeComment = folder.appendingPathComponent("\(Self.nameMarker) huge comment.ogg")
        try ProcessRunner.runChecked("vorbiscomment", ["-w", "-c", comment.path, plainVorbis.path, hugeComment.path])
        try add("an Ogg Vorbis with an 8 MB comment header", "huge comment.ogg", nil, .played(seconds: played))
        try add("an MP3 named .flac", "mp3.flac", try encode(rate: 44_100, channels: 2, [], named: "named-flac"),
                .played(seconds: played))
        try add("an Opus named .mp3", "opus.mp3", Data(opus), .played(seconds: played))
    }

    /// Removes what Foundation's recursive removal cannot: the non-UTF-8 name.
    func removeUnusualFiles() {
        _ = nonUTF8Name.withCString { unlink($0) }
    }

    /// Starts `earshot play` on `queue` (raw-byte paths) with a private socket and empty config and state folders,
    /// without the file-mode capabilities when running as root (setpriv then `exec`s earshot: same process id).
    func launchEarshotPlay(_ queue: [[UInt8]]) throws -> ChildProcess {
        let socket = scratch.appendingPathComponent("control.sock").path
        guard socket.utf8.count < 100 else { throw ToolkitError("control socket path too long: \(socket)") }
        var command = [try TestEnvironment.earshotBinary.path]
        if dropsFileCapabilities {
            command = [try ProcessRunner.locate("setpriv").path, Self.dropFileCapabilities] + command
        }
        let arguments = (command.dropFirst() + ["play", "--"]).map { Array($0.utf8) } + queue
        return try ChildProcess(command[0], rawArguments: arguments, environment: [
            "EARSHOT_SOCKET": socket,
            "XDG_CONFIG_HOME": scratch.appendingPathComponent("config").path,
            "XDG_STATE_HOME": scratch.appendingPathComponent("state").path,
            "EARSHOT_LOG": "",
        ])
    }

    /// setpriv's option that takes away root's power to ignore file modes.
    private static let dropFileCapabilities = "--bounding-set=-dac_override,-dac_read_search"

    /// Fails early, with the reason, when the unreadable file would be readable by earshot after all.
    private func requireUnreadable(_ file: URL) throws {
        var command = ["test", "-r", file.path]
        if dropsFileCapabilities { command = ["setpriv", Self.dropFileCapabilities] + command }
        let result = try ProcessRunner.run(command[0], Array(command.dropFirst()))
        guard result.status == 1 else {
            throw ToolkitError("cannot make a file unreadable for earshot (`\(result.commandLine)` gave "
                + "\(result.status): \(result.standardError.trimmed)); setpriv (util-linux) must be able to drop "
                + "CAP_DAC_OVERRIDE")
        }
    }

    // MARK: Audio sources

    /// A 16-bit WAV of the bad files' tone.
    private func synthesize(
        rate: Int, channels: Int, seconds: Double = BadFilesTests.badSeconds, named name: String
    ) throws -> URL {
        let wav = work.appendingPathComponent("\(name).wav")
        try ProcessRunner.runChecked("sox", [
            "-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", "-e", "signed-integer", wav.path,
            "synth", "\(seconds)", "sine", "\(BadFilesTests.badFrequency)", "gain", "-6",
        ])
        return wav
    }

    /// The bad files' tone encoded by LAME at `rate` with `options` (LAME picks the bit rate unless told).
    private func encode(rate: Int, channels: Int, _ options: [String], named name: String) throws -> Data {
        let wav = try synthesize(rate: rate, channels: channels, named: name)
        let mp3 = work.appendingPathComponent("\(name).mp3")
        try ProcessRunner.runChecked("lame", ["--quiet", "--noreplaygain"] + options + [wav.path, mp3.path])
        return try Data(contentsOf: mp3)
    }

    /// The bad files' tone (`seconds` long) encoded as `format` by its reference encoder.
    private func encode(_ format: Fixtures.Format, seconds: Double = BadFilesTests.badSeconds) throws -> Data {
        let name = "\(format.rawValue)-\(seconds)s"
        let wav = try synthesize(rate: 44_100, channels: 2, seconds: seconds, named: name)
        let output = work.appendingPathComponent("\(name).\(format.fileExtension)")
        try Fixtures.encode(wav, as: format, into: output)
        return try Data(contentsOf: output)
    }

    /// `wav` converted by sox to `type` (flac, ogg).
    private func convert(_ wav: URL, to type: String) throws -> Data {
        let output = work.appendingPathComponent("converted.\(type)")
        try ProcessRunner.runChecked("sox", [wav.path, output.path])
        return try Data(contentsOf: output)
    }

    // MARK: Damage

    /// The offsets and sizes of the MPEG-1 layer III frames of `data`, found by walking the headers.
    static func mpeg1LayerIIIFrames(in data: Data) -> [(offset: Int, size: Int)] {
        let bitRates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0]
        let sampleRates = [44_100, 48_000, 32_000, 0]
        let bytes = [UInt8](data)
        var frames: [(offset: Int, size: Int)] = []
        var offset = 0
        while offset + 4 <= bytes.count {
            // Sync, MPEG-1 (11), layer III (01).
            guard bytes[offset] == 0xFF, bytes[offset + 1] & 0xFE == 0xFA else {
                offset += 1
                continue
            }
            let bitRate = bitRates[Int(bytes[offset + 2] >> 4)] * 1000
            let sampleRate = sampleRates[Int((bytes[offset + 2] >> 2) & 3)]
            guard bitRate > 0, sampleRate > 0 else {
                offset += 1
                continue
            }
            let size = 144 * bitRate / sampleRate + Int((bytes[offset + 2] >> 1) & 1)
            frames.append((offset, size))
            offset += size
        }
        return frames
    }

    /// `data` with `count` bytes from `offset` replaced by pseudo-random ones.
    static func overwriting(_ data: Data, at offset: Int, count: Int, generator: inout SplitMix64) -> Data {
        var damaged = data
        for index in offset..<min(offset + count, damaged.count) {
            damaged[damaged.startIndex + index] = UInt8(truncatingIfNeeded: generator.next())
        }
        return damaged
    }

    /// `vbr` with the frame count of its Xing header replaced by `change(count)`.
    static func patchingXingFrameCount(_ vbr: Data, _ change: (UInt32) -> UInt32) throws -> Data {
        var bytes = [UInt8](vbr)
        let xing = Array("Xing".utf8)
        guard let start = (0..<min(bytes.count - 12, 200)).first(where: { Array(bytes[$0..<$0 + 4]) == xing }),
              bytes[start + 7] & 1 == 1 else {
            throw ToolkitError("LAME wrote no Xing header with a frame count")
        }
        let count = bytes[start + 8..<start + 12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let patched = change(count)
        for index in 0..<4 {
            bytes[start + 8 + index] = UInt8(truncatingIfNeeded: patched >> (24 - 8 * UInt32(index)))
        }
        return Data(bytes)
    }

    // MARK: ID3v2

    /// An ID3v2.3 frame: four-letter id, 32-bit size, no flags, then `body`.
    static func id3Frame(_ id: String, _ body: [UInt8]) -> [UInt8] {
        let size = UInt32(body.count)
        return Array(id.utf8) + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: size >> $0) } + [0, 0] + body
    }

    /// An ID3v2.3 tag holding `frames`; its size is "synchsafe" (7 bits per byte).
    static func id3v2Tag(_ frames: [[UInt8]]) -> Data {
        let body = frames.flatMap { $0 }
        let size = body.count
        let synchsafe = [21, 14, 7, 0].map { UInt8((size >> $0) & 0x7F) }
        return Data(Array("ID3".utf8) + [3, 0, 0] + synchsafe + body)
    }

    /// `mp3` behind an ID3v2 tag with a title and a 50 MB front-cover picture (a JPEG start, then zeros): skipped by
    /// its length as too large, with the reason on standard error.
    static func withBigPicture(_ mp3: Data) -> Data {
        let picture: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0, count: 50 << 20)
        let header = Array("image/jpeg".utf8) + [0, 3] + Array("\(contentMarker) cover".utf8) + [0]
        let title = id3Frame("TIT2", [0] + Array("\(contentMarker) big picture title".utf8))
        return id3v2Tag([title, id3Frame("APIC", [0] + header + picture)]) + mp3
    }

    // MARK: Paths

    /// Writes `data` to a path given as raw bytes (which Foundation could not name).
    static func write(_ data: Data, toRawPath path: [UInt8]) throws {
        let descriptor = path.withCString { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        guard descriptor >= 0 else { throw ToolkitError("cannot create a file with a raw name: errno \(errno)") }
        defer { close(descriptor) }
        let written = data.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        guard written == data.count else { throw ToolkitError("short write to a file with a raw name") }
    }

    /// Copies `data` to a file whose absolute path is exactly `bytes` long, in nested folders (names under 255).
    private func makeLongPath(_ data: Data, bytes: Int) throws -> [UInt8] {
        let component = "\(Self.nameMarker)-deep-" + String(repeating: "d", count: 188)
        let stem = "/\(Self.nameMarker)-long-path-"
        let shortestName = stem.utf8.count + ".mp3".utf8.count + 1
        var directory = folder.path
        while directory.utf8.count + 1 + component.utf8.count + shortestName <= bytes {
            directory += "/" + component
        }
        let padding = bytes - directory.utf8.count - stem.utf8.count - ".mp3".utf8.count
        let path = directory + stem + String(repeating: "x", count: padding) + ".mp3"
        precondition(path.utf8.count == bytes && padding > 0 && bytes - directory.utf8.count <= 255,
                     "long path arithmetic")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: path))
        return Array(path.utf8)
    }
}

extension Array where Element == UInt8 {
    /// Calls `body` with the bytes as a NUL-terminated C string.
    func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try (self + [0]).withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }
}
