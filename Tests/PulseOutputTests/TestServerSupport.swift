// Helpers for the integration tests: reaching the private server that scripts/test starts (PulseAudio or PipeWire,
// EARSHOT_TEST_SERVER), recording notices, feeding a sine into a FrameRing from a producer thread, recording a sink's
// monitor, and driving the server with pactl / paplay and scripts/lib/soundserver-ctl.
import AudioPipeline
import Foundation
import PulseOutput
import Synchronization
import Testing

/// What to tell someone who ran the integration tests without the private sound server.
let noServerAdvice = "No sound server reachable: run scripts/test, which starts a private PulseAudio and then a "
    + "private PipeWire (sinks `headphones` and `speakers`) and sets PULSE_SERVER"

/// The sample rate every test stream uses.
let testRate = 48_000

/// Connects to the test server, recording a loud failure (never a skip) when it is not there.
func connectToTestServer(
    _ name: String = "EarshotPulseOutputTests",
    notices: NoticeRecorder<ConnectionNotice>? = nil
) throws -> PulseConnection {
    let connection = try PulseConnection(noticeHandler: { notice in notices?.record(notice) })
    do {
        try connection.connect(applicationName: name)
    } catch {
        let server = ProcessInfo.processInfo.environment["PULSE_SERVER"] ?? "(PULSE_SERVER unset)"
        Issue.record("\(noServerAdvice). Connecting to \(server) failed: \(error)")
        throw error
    }
    return connection
}

/// Collects notices from the libpulse thread, with the moment each arrived, for tests to wait on.
final class NoticeRecorder<Notice: Sendable & Equatable>: Sendable {
    private let entries = Mutex<[(notice: Notice, at: ContinuousClock.Instant)]>([])

    /// Records one notice; called on the libpulse thread, so it only appends.
    func record(_ notice: Notice) {
        let now = ContinuousClock.now
        entries.withLock { $0.append((notice, now)) }
    }

    /// Every notice so far, in arrival order.
    var all: [Notice] {
        entries.withLock { $0.map(\.notice) }
    }

    /// Notices with their arrival moments.
    var timed: [(notice: Notice, at: ContinuousClock.Instant)] {
        entries.withLock { $0 }
    }

    /// Waits until a notice matching `predicate` has arrived (at or after position `from`); returns it and its
    /// moment, or nil after `timeout`.
    func waitFor(
        _ timeout: Duration = .seconds(5),
        from start: Int = 0,
        where predicate: (Notice) -> Bool
    ) async -> (notice: Notice, at: ContinuousClock.Instant)? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let found = entries.withLock { list in
                list.dropFirst(start).first { predicate($0.notice) }
            }
            if let found { return found }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    /// Waits for exactly `notice`.
    func waitFor(_ notice: Notice, timeout: Duration = .seconds(5), from start: Int = 0) async -> Bool {
        await waitFor(timeout, from: start) { $0 == notice } != nil
    }

    /// How many notices have arrived so far (a starting point for later waits).
    var count: Int {
        entries.withLock { $0.count }
    }
}

/// A producer thread that keeps a FrameRing full of a 440 Hz sine until stopped (or until `limitFrames`).
final class SineFeeder: Sendable {
    /// The ring it fills (its only producer while running).
    let ring: FrameRing
    private let running = Atomic<Bool>(true)
    private let finished = Atomic<Bool>(false)
    /// How many frames to produce in all; nil for no end.
    let limitFrames: Int?

    /// Starts the producer thread.
    init(ring: FrameRing, limitFrames: Int? = nil) {
        self.ring = ring
        self.limitFrames = limitFrames
        let thread = Thread { [self] in produce() }
        thread.name = "test-sine-producer"
        thread.start()
    }

    /// Stops the producer and waits until it has left the ring alone.
    func stop() {
        running.store(false, ordering: .releasing)
        ring.wakeProducer()
        while !finished.load(ordering: .acquiring) {
            usleep(1000)
        }
    }

    private func produce() {
        let chunk = 1024
        var samples = [Int16](repeating: 0, count: chunk * 2)
        var phase = 0
        var produced = 0
        while running.load(ordering: .acquiring) {
            let remaining = limitFrames.map { $0 - produced } ?? Int.max
            if remaining <= 0 { break }
            let frames = min(chunk, ring.writableFrames, remaining)
            if frames <= 0 {
                _ = ring.waitForSpace(minimumFrames: chunk, timeoutMilliseconds: 20)
                continue
            }
            for frame in 0..<frames {
                let value = Int16(8000 * sin(2 * Double.pi * 440 * Double(phase + frame) / Double(testRate)))
                samples[frame * 2] = value
                samples[frame * 2 + 1] = value
            }
            let written = samples.withUnsafeBufferPointer { buffer in
                ring.write(UnsafeBufferPointer(rebasing: buffer[0..<(frames * 2)]))
            }
            phase += written
            produced += written
        }
        finished.store(true, ordering: .releasing)
    }
}

/// The output and exit status of a finished command.
struct CommandResult {
    /// The exit status.
    let status: Int32
    /// Standard output and standard error, together.
    let output: String
}

/// Runs a command from PATH to completion (pactl and friends talk to PULSE_SERVER from the environment).
@discardableResult
func run(_ arguments: [String]) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
}

/// Stops a command started with `start` and waits for it. SIGKILL, because a child that Foundation's Process spawns
/// from a test thread inherits that thread's signal mask, in which SIGTERM and SIGINT are blocked (parec would never
/// see `terminate()`).
func stopChild(_ process: Process) {
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
    }
    process.waitUntilExit()
}

/// Starts a command and returns it without waiting; stop it with `stopChild`.
func start(_ arguments: [String]) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    try process.run()
    return process
}

/// Writes a 16-bit stereo WAV file of a 660 Hz tone, `seconds` long, and returns its path.
func writeToneWAV(seconds: Double, rate: Int = 44_100) throws -> String {
    let frames = Int(Double(rate) * seconds)
    var data = Data()
    func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }
    data.append(contentsOf: Array("RIFF".utf8))
    append(UInt32(36 + frames * 4))
    data.append(contentsOf: Array("WAVEfmt ".utf8))
    append(UInt32(16))
    append(UInt16(1))
    append(UInt16(2))
    append(UInt32(rate))
    append(UInt32(rate * 4))
    append(UInt16(4))
    append(UInt16(16))
    data.append(contentsOf: Array("data".utf8))
    append(UInt32(frames * 4))
    for frame in 0..<frames {
        let value = Int16(6000 * sin(2 * Double.pi * 660 * Double(frame) / Double(rate)))
        append(value)
        append(value)
    }
    let path = NSTemporaryDirectory() + "earshot-call-\(UUID().uuidString).wav"
    try data.write(to: URL(fileURLWithPath: path))
    return path
}

/// A stream on `sinkName` fed by a sine producer, with its notices recorded; `close()` undoes everything.
final class PlayingStream {
    /// The connection the stream is on.
    let connection: PulseConnection
    /// The ring the stream reads.
    let ring: FrameRing
    /// The producer filling the ring.
    let feeder: SineFeeder
    /// Every notice the stream delivered.
    let notices = NoticeRecorder<StreamNotice>()
    /// The stream under test.
    let stream: PlaybackStream

    /// Creates the ring, the producer and the (corked) stream, with `writeProbe` around its write callback if given.
    init(
        connection: PulseConnection,
        sinkName: String?,
        role: String = "music",
        limitFrames: Int? = nil,
        writeProbe: WriteCallbackProbe? = nil
    ) throws {
        self.connection = connection
        ring = FrameRing(minimumCapacity: testRate / 2)
        feeder = SineFeeder(ring: ring, limitFrames: limitFrames)
        let recorder = notices
        stream = try PlaybackStream(
            connection: connection,
            sampleRate: testRate,
            ring: ring,
            properties: StreamProperties(mediaRole: role, mediaName: "Test tone"),
            sinkName: sinkName,
            writeProbe: writeProbe,
            noticeHandler: { recorder.record($0) }
        )
    }

    /// Uncorks and waits until audio really reaches the sink (null sinks start 1-2 s after READY).
    func startPlaying() async throws {
        // Give the producer a head start so the first request finds audio.
        let deadline = ContinuousClock.now + .seconds(2)
        while ring.readableFrames < testRate / 10 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try stream.uncork()
        let started = await notices.waitFor(.started, timeout: .seconds(5))
        #expect(started, "the stream never reported started")
    }

    /// Closes the stream, then stops the producer.
    func close() {
        stream.close()
        feeder.stop()
    }
}

/// The test server's sink called `name`, if present.
func sink(named name: String, on connection: PulseConnection) throws -> SinkSnapshot? {
    try connection.sinks().first { $0.name == name }
}

/// Puts the `headphones` null sink back (after an unplug test) and makes it the default again.
func restoreHeadphonesSink(on connection: PulseConnection) throws {
    if try sink(named: "headphones", on: connection) == nil {
        try run([
            "pactl", "load-module", "module-null-sink", "sink_name=headphones",
            "sink_properties=device.description=Headphones",
        ])
    }
    try run(["pactl", "set-default-sink", "headphones"])
}

/// Which private server scripts/test started: `EARSHOT_TEST_SERVER` (`pulseaudio` unless it names a PipeWire:
/// `pipewire`, the system's 0.3.65, or `pipewire-1.4`, the private prefix's 1.4.2; the two behave alike here).
enum TestServerKind: String {
    /// PulseAudio 16 with module-role-cork (Config/pulse-test.pa).
    case pulseaudio
    /// PipeWire with pipewire-pulse and WirePlumber: no cork requests, no module-role-cork.
    case pipewire

    /// The server under test.
    static var current: TestServerKind {
        let name = ProcessInfo.processInfo.environment["EARSHOT_TEST_SERVER"] ?? ""
        return name.hasPrefix("pipewire") ? .pipewire : .pulseaudio
    }
}

/// Records what a sink really plays, from its monitor with parec, to count our audio that reached it.
///
/// The recorder names the monitor explicitly and carries `node.dont-reconnect=true`, so that on PipeWire WirePlumber
/// never moves it to another source (harmless on PulseAudio, whose default source is the null source `silence`).
/// A recorder on an idle null sink gets its first data 0.9-1.9 s late, so `start` waits for data.
final class MonitorTap {
    /// The sink whose monitor is recorded.
    let sink: String
    private let file: String
    private let process: Process

    /// Starts recording `sink`.monitor and waits until data arrives (at most 5 s).
    init(sink: String) async throws {
        self.sink = sink
        file = NSTemporaryDirectory() + "earshot-tap-\(sink)-\(UUID().uuidString).raw"
        process = try start([
            "parec", "--device=\(sink).monitor", "--rate=\(testRate)", "--channels=2", "--format=s16le", "--raw",
            "--latency-msec=10", "--property=node.dont-reconnect=true", file,
        ])
        let deadline = ContinuousClock.now + .seconds(5)
        while recordedBytes == 0 && ContinuousClock.now < deadline && process.isRunning {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard recordedBytes > 0 else {
            stopProcess()
            throw PulseError(code: .timeout, step: "record \(sink).monitor")
        }
    }

    private var recordedBytes: Int {
        ((try? FileManager.default.attributesOfItem(atPath: file)[.size]) as? Int) ?? 0
    }

    private func stopProcess() {
        stopChild(process)
    }

    /// Stops recording and returns how many milliseconds of the recording were audible (any sample louder than
    /// -40 dBFS in a 1 ms block). Only our test streams play sines on the test server, so this is our audio.
    func stop() -> Double {
        stopProcess()
        defer { try? FileManager.default.removeItem(atPath: file) }
        guard let data = FileManager.default.contents(atPath: file) else { return 0 }
        let threshold: Int16 = 328
        let blockFrames = testRate / 1000
        var audibleBlocks = 0
        data.withUnsafeBytes { raw in
            let samples = raw.count / 2
            let frames = samples / 2
            var block = 0
            while (block + 1) * blockFrames <= frames {
                var loud = false
                for sample in (block * blockFrames * 2)..<((block + 1) * blockFrames * 2) {
                    let value = Int16(littleEndian: raw.loadUnaligned(fromByteOffset: sample * 2, as: Int16.self))
                    if value > threshold || value < -threshold {
                        loud = true
                        break
                    }
                }
                if loud { audibleBlocks += 1 }
                block += 1
            }
        }
        return Double(audibleBlocks)
    }
}

/// Runs scripts/lib/soundserver-ctl (`$SOUNDSERVER_CTL`, exported by scripts/test) with `arguments`: kill, start,
/// freeze, thaw, unplug and replug the private server of either kind. Fails the test when it is missing or fails.
@discardableResult
func soundServerControl(_ arguments: [String]) throws -> CommandResult {
    guard let control = ProcessInfo.processInfo.environment["SOUNDSERVER_CTL"], !control.isEmpty else {
        Issue.record("SOUNDSERVER_CTL is not set: \(noServerAdvice)")
        throw PulseError(code: .badState, step: "find soundserver-ctl")
    }
    let result = try run([control] + arguments)
    if result.status != 0 {
        Issue.record("soundserver-ctl \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.output)")
        throw PulseError(code: .badState, step: "soundserver-ctl \(arguments.first ?? "")")
    }
    return result
}

/// Moves sink input `index` to the sink called `sinkName` with pactl, checks where it is afterwards, and retries:
/// pipewire-pulse sometimes acknowledges `move-sink-input` without carrying it out (PLATFORM.md), and on a loaded
/// machine WirePlumber can take over a second to relink a corked stream. Returns how many attempts it took, or nil
/// when the stream is still elsewhere after three of two seconds each.
func moveSinkInput(_ index: UInt32, to sinkName: String, on connection: PulseConnection) async throws -> Int? {
    for attempt in 1...3 {
        let move = try run(["pactl", "move-sink-input", "\(index)", sinkName])
        #expect(move.status == 0, "pactl: \(move.output)")
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline {
            let target = try sink(named: sinkName, on: connection)
            if let target, try connection.sinkInputs().first(where: { $0.index == index })?.sinkIndex == target.index {
                return attempt
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
    return nil
}
