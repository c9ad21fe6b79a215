// Helpers for the integration tests: reaching the private server that scripts/test starts (PulseAudio or PipeWire,
// EARSHOT_TEST_SERVER), and feeding a sine into a FrameRing from a producer thread. Recording notices
// (`NoticeRecorder`), a sink's monitor and driving the server with pactl / paplay and scripts/lib/soundserver-ctl are
// EarshotTestSupport's.
import AudioPipeline
import EarshotTestSupport
import Foundation
import PulseOutput
import Synchronization
import SystemSupport
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

/// A command's acknowledgement did not arrive as a notice: the server refused the command, or said nothing in time.
struct AcknowledgementMissing: Error, CustomStringConvertible {
    /// The notice that was expected.
    let expected: StreamNotice
    /// What arrived after the command was sent.
    let seen: [StreamNotice]

    var description: String {
        "no \(expected) after the command; notices since: \(seen)"
    }
}

/// A stream on `sinkName` fed by a sine producer, with its notices recorded; `close()` undoes everything.
///
/// The stream's commands never wait; the methods here send one and then wait for its acknowledgement among the
/// notices, as a test may (the product does not: its owner handles the notice when it comes).
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

    /// Creates the ring, the producer and the (corked) stream, with `writeProbe` around its write callback if given,
    /// and waits until the stream is ready (its `.ready` notice).
    init(
        connection: PulseConnection,
        sinkName: String?,
        role: String = "music",
        limitFrames: Int? = nil,
        writeProbe: WriteCallbackProbe? = nil
    ) async throws {
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
        let opened = await notices.waitFor(.seconds(5)) { notice in
            switch notice {
            case .ready, .failed, .killed: return true
            default: return false
            }
        }
        guard case .ready? = opened?.notice else {
            let seen = notices.all
            close()
            throw AcknowledgementMissing(expected: .ready(sinkName: sinkName, sinkInputIndex: nil), seen: seen)
        }
    }

    /// Sends `command` and waits until `expected` arrives among the notices that follow it; throws when
    /// `.commandFailed` arrives instead, or nothing within `timeout`.
    func acknowledged(
        _ expected: StreamNotice, timeout: Duration = .seconds(5), _ command: (PlaybackStream) throws -> Void
    ) async throws {
        let mark = notices.count
        try command(stream)
        let answer = await notices.waitFor(timeout, from: mark) { notice in
            if case .commandFailed = notice { return true }
            return notice == expected
        }
        guard answer?.notice == expected else {
            throw AcknowledgementMissing(expected: expected, seen: Array(notices.all.dropFirst(mark)))
        }
    }

    /// Corks and waits for `.corked`.
    func cork() async throws {
        try await acknowledged(.corked) { try $0.cork() }
    }

    /// Uncorks and waits for `.uncorked`.
    func uncork() async throws {
        try await acknowledged(.uncorked) { try $0.uncork() }
    }

    /// Flushes (the ring is empty when this is sent) and waits for `.flushed`.
    func flush() async throws {
        try await acknowledged(.flushed) { $0.flush() }
    }

    /// Sets the server-side mute and waits for `.applied(.setMute)`.
    func setMuted(_ muted: Bool) async throws {
        try await acknowledged(.applied(.setMute)) { try $0.setMuted(muted) }
    }

    /// Uncorks and waits until audio really reaches the sink (null sinks start 1-2 s after READY).
    func startPlaying() async throws {
        // Give the producer a head start so the first request finds audio.
        let deadline = ContinuousClock.now + .seconds(2)
        while ring.readableFrames < testRate / 10 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try await uncork()
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

/// Checks that the server's sink-input list shows `index` corked (or not), as our acknowledged state says.
///
/// PulseAudio reports the flag it set when it acknowledged the cork, so the list agrees at once. pipewire-pulse
/// acknowledges first and reports "corked" as "the node is not RUNNING" (module-protocol-pulse/pulse-server.c), which
/// follows a moment later, when the graph has paused or started the node: there the list is given up to a second.
func expectServerShows(
    corked: Bool, sinkInput index: UInt32, on connection: PulseConnection,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let grace: Duration = try TestEnvironment.soundServerKind() == .pipeWire ? .seconds(1) : .zero
    let deadline = ContinuousClock.now + grace
    var shown = try connection.sinkInputs().first { $0.index == index }?.corked
    while shown != corked && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
        shown = try connection.sinkInputs().first { $0.index == index }?.corked
    }
    #expect(shown == corked, "the server shows corked=\(shown.map(String.init) ?? "nothing")", sourceLocation: sourceLocation)
}

/// Lets a notice handler reach the stream it belongs to (set after creation, cleared to break the cycle).
final class StreamHolder: @unchecked Sendable {
    // Unchecked Sendable: written by the test before and after the handler may run; a lock guards the access.
    private let lock = NSLock()
    private var stored: PlaybackStream?

    /// The stream, once the test has created it.
    var stream: PlaybackStream? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// Lets a notice handler reach the connection it belongs to (set after creation, cleared to break the cycle).
final class ConnectionHolder: @unchecked Sendable {
    // Unchecked Sendable: written by the test before and after the handler may run; a lock guards the access.
    private let lock = NSLock()
    private var stored: PulseConnection?

    /// The connection, once the test has created it.
    var connection: PulseConnection? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
