// Recording what a sink really played, from its monitor source, with parec.
//
// Timing: a recorder on an idle null sink gets its first data 0.9-1.9 s after it connects, so
// `start` returns only once data is arriving; start the recorders before the player. The wall-clock
// instant of each recording's first sample is estimated while it records: whenever the file has grown
// to `n` frames at instant `t`, frame `n` was rendered no later than `t`, so sample 0 was rendered no
// later than `t - n / rate`; the smallest such bound over the first 0.5 s of data is the estimate (the
// null sink renders on the same monotonic clock, so it does not drift later). Within one recording
// timing is sample-exact (server time). Measured here: two recorders fed one stream (module-combine-sink)
// agreed to 0.25 ms, and across an unplug the track jump between the headphones' and the speakers'
// recordings matched their mapped wall-clock gap to 0.1 ms. Against an instant the test took (before an
// unplug, say), trust the mapping to about +/-20 ms: parec receives 10 ms blocks, a sink renders a
// little ahead of what it "plays", and the test's own clock reading races the server.
//
// After its sink is unloaded a recorder on PulseAudio keeps running on the default source (silence),
// faster than real time: the part of its recording after the unplug is silent and not on the wall clock.

import Foundation
import Glibc
import SystemSupport

/// What one sink played while it was recorded: 32-bit float samples in -1...1 and their timing.
public struct Recording: Sendable {
    /// The sink whose monitor was recorded (or a file name, for a decoded file).
    public let sink: String
    /// Frames per second.
    public let sampleRate: Int
    /// The left channel.
    public let left: [Float]
    /// The right channel.
    public let right: [Float]
    /// The estimated wall-clock instant at which the first sample was rendered (see the file comment).
    public let startInstant: ContinuousClock.Instant

    /// Makes a recording from its two channels.
    public init(sink: String, sampleRate: Int, left: [Float], right: [Float], startInstant: ContinuousClock.Instant) {
        precondition(left.count == right.count, "channels of different lengths")
        self.sink = sink
        self.sampleRate = sampleRate
        self.left = left
        self.right = right
        self.startInstant = startInstant
    }

    /// Makes a recording from interleaved stereo signed 16-bit little-endian samples (parec's raw output).
    ///
    /// A trailing partial frame is dropped.
    public init(sink: String, sampleRate: Int, interleavedS16LE data: Data, startInstant: ContinuousClock.Instant) {
        let frameCount = data.count / 4
        var left = [Float](repeating: 0, count: frameCount)
        var right = [Float](repeating: 0, count: frameCount)
        data.withUnsafeBytes { raw in
            for frame in 0..<frameCount {
                let l = Int16(littleEndian: raw.loadUnaligned(fromByteOffset: frame * 4, as: Int16.self))
                let r = Int16(littleEndian: raw.loadUnaligned(fromByteOffset: frame * 4 + 2, as: Int16.self))
                left[frame] = Float(l) / 32768
                right[frame] = Float(r) / 32768
            }
        }
        self.init(sink: sink, sampleRate: sampleRate, left: left, right: right, startInstant: startInstant)
    }

    /// Decodes an audio file to a 44.1 kHz stereo recording: MP3 with mpg123 (gapless), anything else with sox.
    ///
    /// Useful to check fixtures and the analysis itself against a known signal. `startInstant` is now.
    public static func decode(_ file: URL) throws -> Recording {
        let raw = ProcessRunner.outputDirectory.appendingPathComponent("decoded-\(UUID().uuidString).raw")
        defer { try? FileManager.default.removeItem(at: raw) }
        if file.pathExtension.lowercased() == "mp3" {
            try ProcessRunner.runChecked(
                "mpg123", ["--quiet", "--stereo", "--rate", "\(Fixtures.sampleRate)", "--encoding", "s16",
                           "--outfile", raw.path, file.path])
        } else {
            try ProcessRunner.runChecked(
                "sox", [file.path, "-t", "raw", "-r", "\(Fixtures.sampleRate)", "-c", "2", "-b", "16",
                        "-e", "signed-integer", "-L", raw.path])
        }
        return Recording(
            sink: file.lastPathComponent, sampleRate: Fixtures.sampleRate,
            interleavedS16LE: try Data(contentsOf: raw), startInstant: .now)
    }

    /// The number of frames (samples per channel).
    public var frameCount: Int { left.count }

    /// The length of the recording in seconds.
    public var duration: Double { Double(frameCount) / Double(sampleRate) }

    /// Both channels mixed to one: the mean of left and right.
    public var mono: [Float] { zip(left, right).map { ($0 + $1) / 2 } }

    /// The recording time, in seconds from the first sample, of the wall-clock `instant` (about +/-20 ms).
    public func time(of instant: ContinuousClock.Instant) -> Double {
        (instant - startInstant).seconds
    }

    /// The wall-clock instant of recording time `time` (seconds from the first sample), about +/-20 ms.
    public func instant(atTime time: Double) -> ContinuousClock.Instant {
        startInstant + .seconds(time)
    }

    /// How much of the time up to `instant` the recording lacks at its end, in seconds (0 when it reaches it).
    ///
    /// A recorder whose server is killed loses what the server had rendered but not yet sent it: one 10 ms block on
    /// a quiet machine, hundreds of milliseconds when parec was not scheduled for a while. Audio the sink played up to
    /// the kill is then missing from the recording, and a position measured against its end is that much early.
    public func missingTail(before instant: ContinuousClock.Instant) -> Double {
        max(0, time(of: instant) - duration)
    }

    /// The frame index of recording time `time`, clamped to the recording.
    public func frame(atTime time: Double) -> Int {
        min(max(Int((time * Double(sampleRate)).rounded()), 0), frameCount)
    }

    /// The recording time, in seconds, of frame `frame`.
    public func time(ofFrame frame: Int) -> Double {
        Double(frame) / Double(sampleRate)
    }
}

/// Records one sink's monitor with parec into a file until stopped.
///
/// Two or more recorders may run at once (for example headphones and speakers). When the recorded sink is
/// unloaded, the recorder goes on recording silence from the default source (parec has no option to
/// forbid the move); start a new recorder after a replug.
public final class MonitorRecorder: Sendable {
    /// The recorded sink's name.
    public let sink: String
    /// The raw file parec writes (interleaved stereo s16le at `Fixtures.sampleRate`); removed by `stop`.
    public let rawFile: URL
    /// The running parec.
    private let parec: ChildProcess
    /// What the file-size watcher has learned about timing.
    private let timing: RecorderTiming
    /// The task that watches the file size until `stop`.
    private let watcher: Task<Void, Never>

    /// Bytes per frame of the raw file.
    private static let bytesPerFrame = 4

    /// Starts parec on `sink`'s monitor and returns once its data is arriving.
    ///
    /// - Parameters:
    ///   - dataTimeout: how long to wait for the first data (normally 0.9-1.9 s, more on a loaded machine).
    ///   - promptly: on PulseAudio, suspend and resume the sink while waiting (`wakeIdleSink`), so that data
    ///     arrives within about 0.1 s. Only for a sink on which nothing under test is playing.
    /// - Throws: if parec cannot start, ends early, or delivers nothing within `dataTimeout`.
    public static func start(
        sink: String, dataTimeout: Duration = .seconds(20), promptly: Bool = false
    ) async throws -> MonitorRecorder {
        let recorder = try MonitorRecorder(sink: sink)
        do {
            if promptly { try await recorder.wakeIdleSink() }
            try await recorder.waitForData(timeout: dataTimeout)
        } catch {
            _ = try? await recorder.stop()
            throw error
        }
        return recorder
    }

    /// Starts one recorder per sink, all at once, and returns them (in the order of `sinks`) once each receives data.
    /// `promptly` as for `start(sink:dataTimeout:promptly:)`.
    public static func start(
        sinks: [String], dataTimeout: Duration = .seconds(20), promptly: Bool = false
    ) async throws -> [MonitorRecorder] {
        var recorders: [MonitorRecorder] = []
        do {
            for sink in sinks {
                recorders.append(try MonitorRecorder(sink: sink))
            }
            for recorder in recorders {
                if promptly { try await recorder.wakeIdleSink() }
                try await recorder.waitForData(timeout: dataTimeout)
            }
        } catch {
            for recorder in recorders {
                _ = try? await recorder.stop()
            }
            throw error
        }
        return recorders
    }

    /// Launches parec on `sink`'s monitor and the file-size watcher; does not wait for data.
    private init(sink: String) throws {
        self.sink = sink
        let folder = TestEnvironment.processTemporaryDirectory.appendingPathComponent("recordings", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        rawFile = folder.appendingPathComponent("\(sink)-\(UUID().uuidString).raw")
        parec = try ChildProcess(
            "parec",
            [
                "--device=\(sink).monitor", "--raw", "--format=s16le", "--rate=\(Fixtures.sampleRate)",
                "--channels=2", "--latency-msec=10",
                "--client-name=earshot-e2e-recorder", "--stream-name=monitor of \(sink)",
                // Keeps PipeWire from moving the recorder elsewhere; PulseAudio ignores it.
                "--property=node.dont-reconnect=true",
            ],
            standardOutput: rawFile)
        let timing = RecorderTiming()
        self.timing = timing
        let path = rawFile.path
        watcher = Task.detached(priority: .high) {
            // The size of the file, read through a descriptor of our own: seeking to its end is cheap.
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            defer { if descriptor >= 0 { close(descriptor) } }
            while !Task.isCancelled, descriptor >= 0 {
                let size = lseek(descriptor, 0, SEEK_END)
                if size > 0 {
                    timing.observe(bytes: Int(size), at: .now)
                }
                try? await Task.sleep(for: .milliseconds(4))
            }
        }
    }

    /// The number of bytes parec has written so far.
    public var bytesRecorded: Int { timing.bytes }

    /// Waits until what parec has written reaches `instant` (by this recorder's estimate of its sample 0), so that a
    /// recording stopped then has room after `instant`. A monitor delivers in the server's blocks (a graph period on
    /// PipeWire), later still on a loaded machine: stopping as soon as a status answered can leave the recording
    /// short of a moment the test took before. Throws when it does not get there within `timeout`.
    public func waitUntilRecorded(
        past instant: ContinuousClock.Instant, timeout: Duration = .seconds(20)
    ) async throws {
        let timing = self.timing
        try await waitUntil("\(sink).monitor is recorded past the moment asked for", timeout: timeout,
                            interval: .milliseconds(5)) {
            guard let sampleZero = timing.sampleZeroEstimate else { return false }
            let recorded = Double(timing.bytes / Self.bytesPerFrame) / Double(Fixtures.sampleRate)
            return sampleZero + .seconds(recorded) > instant
        }
    }

    /// What was recorded from the wall-clock `instant` until now, without stopping: the file's tail, read anew.
    ///
    /// For a driver that listens after every step of a long run (the randomized checker): stopping and starting
    /// recorders would cost a second or two each time. Timing as for `Recording.time(of:)`. Empty (starting now)
    /// before the first data.
    public func recorded(since instant: ContinuousClock.Instant) throws -> Recording {
        guard let zero = timing.sampleZeroEstimate else {
            return Recording(sink: sink, sampleRate: Fixtures.sampleRate, left: [], right: [], startInstant: .now)
        }
        let firstFrame = max(0, Int(((instant - zero) / .seconds(1)) * Double(Fixtures.sampleRate)))
        let handle = try FileHandle(forReadingFrom: rawFile)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(firstFrame * Self.bytesPerFrame))
        let data = try handle.readToEnd() ?? Data()
        return Recording(
            sink: sink, sampleRate: Fixtures.sampleRate, interleavedS16LE: data,
            startInstant: zero + .seconds(Double(firstFrame) / Double(Fixtures.sampleRate)))
    }

    /// Whether parec is still running (on PulseAudio it goes on, recording silence, after its sink is unloaded).
    public var isRecording: Bool { parec.isRunning }

    /// Makes an idle PulseAudio null sink deliver to this recorder at once. Such a sink renders in blocks as long
    /// as its streams allow (2 s with none), and a new recorder's 10 ms only counts from the next block on;
    /// suspending and resuming the sink restarts its timer with the recorder's latency. Tried a few times, as the
    /// recorder may not be connected yet; does nothing on PipeWire, whose recorders start within 0.1 s anyway.
    private func wakeIdleSink() async throws {
        guard try TestEnvironment.soundServerKind() == .pulseAudio else { return }
        for _ in 0..<5 where timing.bytes == 0 {
            try await Task.sleep(for: .milliseconds(60))
            guard timing.bytes == 0 else { return }
            try ServerControl.pactl(["suspend-sink", sink, "1"])
            try ServerControl.pactl(["suspend-sink", sink, "0"])
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Waits until the file starts growing; throws, quoting parec's errors, on a timeout or an early exit.
    private func waitForData(timeout: Duration) async throws {
        let parec = self.parec
        let timing = self.timing
        let sink = self.sink
        try await waitUntil("\(sink).monitor delivers data to parec", timeout: timeout, interval: .milliseconds(5)) {
            if timing.bytes > 0 { return true }
            if !parec.isRunning {
                throw ToolkitError("parec on \(sink).monitor ended before any data: \(parec.standardError().trimmed)")
            }
            return false
        }
    }

    /// Stops parec and returns everything it recorded; removes the raw file.
    ///
    /// - Throws: if the recording cannot be read.
    public func stop() async throws -> Recording {
        parec.signal(SIGINT)
        if await !parec.exit(within: .seconds(5)) {
            await parec.terminate(grace: .seconds(2))
        }
        watcher.cancel()
        await watcher.value
        defer { parec.removeOutputFiles() }
        let data = try Data(contentsOf: rawFile)
        // The only observation if the watcher never saw data (then timing is poor, but there is some).
        timing.observe(bytes: data.count, at: .now)
        return Recording(
            sink: sink, sampleRate: Fixtures.sampleRate, interleavedS16LE: data,
            startInstant: timing.sampleZeroEstimate ?? .now)
    }
}

/// The timing a recorder's file-size watcher has observed, shared between the watcher and the recorder.
private final class RecorderTiming: Sendable {
    /// How long after the first data observations still refine the estimate of sample 0's instant.
    ///
    /// Only the start is trusted: when a recorded sink is unloaded, PulseAudio moves parec to the default
    /// source (the null source `silence`), which delivers its zeros faster than real time, and bounds
    /// taken then would drag the estimate seconds too early.
    static let calibrationPeriod = Duration.milliseconds(500)

    /// What was observed, guarded by a lock: the watcher writes, the test's task reads.
    private struct State {
        /// The largest file size observed, in bytes.
        var bytes = 0
        /// When data was first seen.
        var firstData: ContinuousClock.Instant?
        /// The tightest bound so far on the instant at which sample 0 was rendered.
        var sampleZeroEstimate: ContinuousClock.Instant?
    }

    /// The observations so far.
    private let state = LockedValue(State())

    /// Records that the file held `bytes` bytes at `instant`: sample 0 was rendered `bytes` worth of audio earlier.
    func observe(bytes: Int, at instant: ContinuousClock.Instant) {
        guard bytes > 0 else { return }
        let frames = bytes / 4
        let sampleZeroBound = instant - .seconds(Double(frames) / Double(Fixtures.sampleRate))
        state.withLock { state in
            state.bytes = max(state.bytes, bytes)
            let firstData = state.firstData ?? instant
            state.firstData = firstData
            guard instant - firstData <= Self.calibrationPeriod else { return }
            if let estimate = state.sampleZeroEstimate, estimate <= sampleZeroBound { return }
            state.sampleZeroEstimate = sampleZeroBound
        }
    }

    /// The largest file size observed, in bytes.
    var bytes: Int { state.withLock { $0.bytes } }

    /// The estimate of the instant at which sample 0 was rendered, once data has been seen.
    var sampleZeroEstimate: ContinuousClock.Instant? { state.withLock { $0.sampleZeroEstimate } }
}
