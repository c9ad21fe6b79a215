// PulseOutput against a real server: the private PulseAudio that scripts/test starts (Config/pulse-test.pa: null
// sinks `headphones` (default) and `speakers`, module-role-cork). Without that server these tests fail, loudly.
// Serialized: several tests change the server (unplug, move, phone call) and would disturb each other.
import AudioPipeline
import Foundation
import PulseOutput
import Testing

/// The adapter against the real server, one test at a time.
@Suite("PulseOutput on the private PulseAudio", .serialized)
struct PulseIntegrationTests {
    @Test("Connects through libpulse and finds the test sinks and the server's identity")
    func connectsAndFindsSinks() throws {
        let connection = try connectToTestServer()
        let info = try connection.serverInfo()
        #expect(info.displayName.hasPrefix("PulseAudio"))
        #expect(!info.serverVersion.isEmpty)
        #expect(info.defaultSinkName == "headphones")
        let names = Set(try connection.sinks().map(\.name))
        #expect(names.isSuperset(of: ["headphones", "speakers"]), "sinks: \(names.sorted())")
        let headphones = try #require(try sink(named: "headphones", on: connection))
        #expect(headphones.description == "Headphones")
        #expect(headphones.ownerModuleIndex != nil)
    }

    @Test("A stream plays a sine on headphones and shows up as a music sink input there")
    func playsOnHeadphones() async throws {
        let connection = try connectToTestServer()
        let playing = try PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        #expect(stream.sinkName == "headphones")
        let index = try #require(stream.sinkInputIndex)
        #expect(playing.notices.all.first == .ready(sinkName: "headphones", sinkInputIndex: index))

        try await playing.startPlaying()
        let headphones = try #require(try sink(named: "headphones", on: connection))
        let ours = try #require(try connection.sinkInputs().first { $0.index == index })
        #expect(ours.mediaRole == "music")
        #expect(ours.sinkIndex == headphones.index)
        #expect(ours.applicationName == "Earshot")
        #expect(!ours.corked)
        #expect(stream.sinkIndex == headphones.index)

        let metrics = try #require(stream.bufferMetrics)
        // 50 ms of S16LE stereo at 48 kHz is 9600 bytes; the server may round, never to seconds.
        #expect(metrics.targetLengthBytes <= 2 * 9600)
        #expect(metrics.prebufferBytes > 0)
    }

    @Test("Cork and uncork are acknowledged, repeatable, and isCorked follows the server")
    func corkAndUncork() async throws {
        let connection = try connectToTestServer()
        let playing = try PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        #expect(stream.isCorked, "streams start corked")
        try await playing.startPlaying()
        #expect(!stream.isCorked)
        try stream.uncork()
        #expect(!stream.isCorked)

        try stream.cork()
        #expect(stream.isCorked)
        try stream.cork()
        #expect(stream.isCorked)
        let index = try #require(stream.sinkInputIndex)
        #expect(try connection.sinkInputs().first { $0.index == index }?.corked == true)

        try stream.uncork()
        #expect(!stream.isCorked)
        #expect(try connection.sinkInputs().first { $0.index == index }?.corked == false)
        for _ in 0..<5 {
            try stream.cork()
            try stream.uncork()
        }
        #expect(!stream.isCorked)
    }

    @Test("The heard position advances while playing and stands still while corked")
    func heardPositionFollowsPlayback() async throws {
        let connection = try connectToTestServer()
        let playing = try PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        try await playing.startPlaying()

        let first = try #require(stream.heardRingFrame())
        try await Task.sleep(for: .milliseconds(400))
        let second = try #require(stream.heardRingFrame())
        // 400 ms is 19200 frames; allow for scheduling and timing-update slack.
        #expect(second - first > testRate / 5, "advanced \(second - first) frames in 400 ms")
        #expect(second <= playing.ring.totalFramesRead)

        try stream.cork()
        let corked = try #require(stream.heardRingFrame())
        try await Task.sleep(for: .milliseconds(400))
        let later = try #require(stream.heardRingFrame())
        // Still within a millisecond: nothing plays while corked.
        #expect(abs(later - corked) <= testRate / 1000, "moved \(later - corked) frames while corked")
        #expect(stream.underrunCount == 0)
    }

    @Test("A phone call on our sink sends request-cork, and request-uncork once we really corked")
    func phoneCallRequestsCork() async throws {
        let connection = try connectToTestServer()
        let playing = try PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        try await playing.startPlaying()
        let index = try #require(stream.sinkInputIndex)

        let wav = try writeToneWAV(seconds: 1.0)
        defer { try? FileManager.default.removeItem(atPath: wav) }
        let mark = playing.notices.count
        let call = try start(["paplay", "--property=media.role=phone", "--device=headphones", wav])
        defer { if call.isRunning { call.terminate() } }

        #expect(await playing.notices.waitFor(.corkRequested, timeout: .seconds(5), from: mark))
        // Obey, as the player does: module-role-cork only sends request-uncork to a stream that really corked.
        try stream.cork()
        // module-role-cork also mutes the stream it corks (PLATFORM.md); it unmutes when the call ends.
        #expect(try connection.sinkInputs().first { $0.index == index }?.muted == true)

        #expect(await playing.notices.waitFor(.uncorkRequested, timeout: .seconds(5), from: mark))
        let order = playing.notices.all.dropFirst(mark).filter { $0 == .corkRequested || $0 == .uncorkRequested }
        #expect(order == [.corkRequested, .uncorkRequested])
        try stream.uncork()
        try stream.setMuted(false)
        #expect(try connection.sinkInputs().first { $0.index == index }?.muted == false)
    }

    @Test("Unplugging the headphones sink moves us to speakers, corked, and says the old sink is gone")
    func unplugMovesAndCorks() async throws {
        let connectionNotices = NoticeRecorder<ConnectionNotice>()
        let connection = try connectToTestServer(notices: connectionNotices)
        try connection.subscribe()
        defer { #expect(throws: Never.self) { try restoreHeadphonesSink(on: connection) } }
        let headphones = try #require(try sink(named: "headphones", on: connection))
        let module = try #require(headphones.ownerModuleIndex)

        let playing = try PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        try await playing.startPlaying()
        let mark = playing.notices.count

        let unplug = try run(["pactl", "unload-module", "\(module)"])
        #expect(unplug.status == 0, "pactl: \(unplug.output)")

        let moved = await playing.notices.waitFor(.seconds(3), from: mark) {
            if case .moved = $0 { return true }
            return false
        }
        #expect(moved?.notice == .moved(toSinkName: "speakers", oldSinkStillExists: false))
        #expect(stream.isSafetyHoldActive)
        #expect(stream.sinkName == "speakers")
        // The cork sent from the moved callback is acknowledged without anyone waiting for it.
        let deadline = ContinuousClock.now + .seconds(1)
        while !stream.isCorked && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(stream.isCorked)
        #expect(await connectionNotices.waitFor(.sinkRemoved(headphones.index), timeout: .seconds(3)))
        // Output lost: the owner keeps it corked; releasing the hold now would be wrong, so it only flushes.
        try stream.cork()
        try stream.flush()
        #expect(stream.isCorked)
    }

    @Test("A deliberate move to speakers keeps the old sink; releasing the hold resumes")
    func deliberateMove() async throws {
        let connection = try connectToTestServer()
        let playing = try PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        try await playing.startPlaying()
        let index = try #require(stream.sinkInputIndex)
        let mark = playing.notices.count

        let move = try run(["pactl", "move-sink-input", "\(index)", "speakers"])
        #expect(move.status == 0, "pactl: \(move.output)")
        let moved = await playing.notices.waitFor(.seconds(3), from: mark) {
            if case .moved = $0 { return true }
            return false
        }
        #expect(moved?.notice == .moved(toSinkName: "speakers", oldSinkStillExists: true))
        #expect(stream.isSafetyHoldActive)

        // A route change: the owner wanted to play, so releasing the hold uncorks.
        #expect(try stream.releaseSafetyHold())
        #expect(!stream.isCorked)
        #expect(!stream.isSafetyHoldActive)
        let speakers = try #require(try sink(named: "speakers", on: connection))
        #expect(try connection.sinkInputs().first { $0.index == index }?.sinkIndex == speakers.index)

        // Paused by the owner before a move: the hold never resumes it.
        try stream.cork()
        let second = playing.notices.count
        #expect(try run(["pactl", "move-sink-input", "\(index)", "headphones"]).status == 0)
        let movedBack = await playing.notices.waitFor(.seconds(3), from: second) {
            if case .moved = $0 { return true }
            return false
        }
        #expect(movedBack?.notice == .moved(toSinkName: "headphones", oldSinkStillExists: true))
        #expect(try stream.releaseSafetyHold() == false)
        #expect(stream.isCorked)
    }

    @Test("The subscription reports our sink input appearing and going away")
    func subscriptionSeesOurStream() async throws {
        let notices = NoticeRecorder<ConnectionNotice>()
        let connection = try connectToTestServer(notices: notices)
        try connection.subscribe()
        let playing = try PlayingStream(connection: connection, sinkName: "headphones")
        let index = try #require(playing.stream.sinkInputIndex)
        let appeared = await notices.waitFor {
            if case .sinkInputChanged(let input) = $0 { return input.index == index }
            return false
        }
        guard case .sinkInputChanged(let input)? = appeared?.notice else {
            Issue.record("no sinkInputChanged for our stream: \(notices.all)")
            playing.close()
            return
        }
        #expect(input.mediaRole == "music")
        #expect(notices.all.contains(.serverChange(ServerChange(facility: .sinkInput, kind: .new, index: index))))
        playing.close()
        #expect(await notices.waitFor(.sinkInputRemoved(index)))
    }

    @Test("Flush empties ring and server buffer and keeps the heard position")
    func flushKeepsHeardPosition() async throws {
        let connection = try connectToTestServer()
        let playing = try PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        try await playing.startPlaying()
        try await Task.sleep(for: .milliseconds(200))
        try stream.cork()
        playing.feeder.stop()
        let heard = try #require(stream.heardRingFrame())
        try stream.flush()
        #expect(playing.ring.readableFrames == 0)
        let after = try #require(stream.heardRingFrame())
        #expect(abs(after - heard) <= testRate / 1000, "heard \(heard) before, \(after) after the flush")
        let latency = try #require(stream.latencyMilliseconds)
        #expect(latency < 50, "latency after flush: \(latency) ms")

        // Playing on with an empty ring plays only silence: the heard position stays put.
        let flushPoint = playing.ring.totalFramesRead
        try stream.uncork()
        try await Task.sleep(for: .milliseconds(150))
        #expect(stream.heardRingFrame() == after)
        // New audio is numbered from the flush point on.
        let refill = SineFeeder(ring: playing.ring)
        defer { refill.stop() }
        try await Task.sleep(for: .milliseconds(400))
        let resumed = try #require(stream.heardRingFrame())
        #expect(resumed > flushPoint && resumed < flushPoint + testRate / 2, "resumed at \(resumed - flushPoint)")
    }

    @Test("Drain plays the tail without silence and reports drained")
    func drainPlaysTheTail() async throws {
        let connection = try connectToTestServer()
        let frames = testRate / 2
        let playing = try PlayingStream(connection: connection, sinkName: "headphones", limitFrames: frames)
        defer { playing.close() }
        let stream = playing.stream
        let deadline = ContinuousClock.now + .seconds(2)
        while playing.ring.totalFramesWritten < frames && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        stream.setEndOfData(true)
        try stream.uncork()
        try stream.drain()
        #expect(playing.notices.all.contains(.drained))
        #expect(playing.ring.totalFramesRead == frames)
        #expect(stream.underrunCount == 0)
        let heard = try #require(stream.heardRingFrame())
        #expect(heard >= frames - testRate / 100, "heard \(heard) of \(frames)")
    }

    @Test("Volume, mute and media name updates are acknowledged")
    func volumeMuteAndName() async throws {
        let connection = try connectToTestServer()
        let playing = try PlayingStream(connection: connection, sinkName: "speakers")
        defer { playing.close() }
        let stream = playing.stream
        let index = try #require(stream.sinkInputIndex)
        try stream.setVolume(percent: 40)
        try stream.setMuted(true)
        #expect(try connection.sinkInputs().first { $0.index == index }?.muted == true)
        try stream.setMuted(false)
        #expect(try connection.sinkInputs().first { $0.index == index }?.muted == false)
        try stream.updateMediaName("Another title")
    }

    @Test("A waiting call from inside a notice handler throws instead of deadlocking")
    func waitingInsideHandlerThrows() async throws {
        let errors = NoticeRecorder<PulseError>()
        let holder = ConnectionHolder()
        let connection = try connectToTestServer(notices: nil)
        let reentrant = try PulseConnection(noticeHandler: { notice in
            guard case .serverChange = notice, let connection = holder.connection else { return }
            do throws(PulseError) {
                _ = try connection.serverInfo()
            } catch {
                errors.record(error)
            }
        })
        holder.connection = reentrant
        defer { holder.connection = nil }
        try reentrant.connect(applicationName: "EarshotReentrancyTest")
        try reentrant.subscribe()
        let playing = try PlayingStream(connection: connection, sinkName: "speakers")
        playing.close()
        let error = await errors.waitFor { _ in true }
        #expect(error?.notice.code == .badState)
        // The connection still works afterwards.
        #expect(try reentrant.serverInfo().displayName.hasPrefix("PulseAudio"))
    }

    @Test("A server that dies fails the connection and its stream")
    func serverDeath() async throws {
        let server = try DisposableServer()
        defer { server.stop() }
        let notices = NoticeRecorder<ConnectionNotice>()
        let connection = try PulseConnection(noticeHandler: { notices.record($0) })
        try connection.connect(applicationName: "EarshotServerDeathTest", server: server.address)
        let ring = FrameRing(minimumCapacity: 4096)
        let streamNotices = NoticeRecorder<StreamNotice>()
        let stream = try PlaybackStream(
            connection: connection, sampleRate: testRate, ring: ring, noticeHandler: { streamNotices.record($0) })
        defer { stream.close() }

        server.kill()
        let failed = await notices.waitFor(.seconds(5)) {
            if case .failed = $0 { return true }
            return false
        }
        guard case .failed(let error)? = failed?.notice else {
            Issue.record("no failure notice: \(notices.all)")
            return
        }
        #expect(error.code == .connectionTerminated)
        #expect(!connection.isReady)
        let streamFailed = await streamNotices.waitFor { notice in
            if case .failed = notice { return true }
            return false
        }
        #expect(streamFailed != nil)
        #expect(throws: PulseError.self) { try stream.cork() }
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

/// A second private PulseAudio with one null sink, for tests that kill their server.
final class DisposableServer {
    /// The server's private directory (configuration, socket, log).
    let directory: String
    /// The running server.
    let process: Process
    /// The address to connect to.
    var address: String { "unix:\(directory)/native" }

    /// Starts the server and waits for its socket.
    init() throws {
        directory = try makeTemporaryDirectory(prefix: "/tmp/earshot-dying.")
        let configuration = """
            load-module module-native-protocol-unix auth-anonymous=1 socket=\(directory)/native
            load-module module-null-sink sink_name=lonely
            set-default-sink lonely
            """
        try configuration.write(toFile: "\(directory)/server.pa", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: "\(directory)/run", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: "\(directory)/home", withIntermediateDirectories: true)
        chmod("\(directory)/run", 0o700)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "pulseaudio", "-n", "-F", "\(directory)/server.pa", "--exit-idle-time=-1", "--daemonize=no",
            "--use-pid-file=no", "--disallow-exit", "--log-target=file:\(directory)/pulseaudio.log",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = "\(directory)/run"
        environment["HOME"] = "\(directory)/home"
        environment["PULSE_SERVER"] = nil
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: "\(directory)/native") && Date() < deadline && process.isRunning {
            usleep(20_000)
        }
        guard FileManager.default.fileExists(atPath: "\(directory)/native") else {
            stop()
            throw PulseError(code: .connectionRefused, step: "start a disposable pulseaudio")
        }
    }

    /// Kills the server the hard way, as a crash would.
    func kill() {
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Kills the server and removes its directory.
    func stop() {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Creates a fresh directory whose path starts with `prefix` (kept short: socket paths are limited to 108 bytes).
func makeTemporaryDirectory(prefix: String) throws -> String {
    var template = Array((prefix + "XXXXXX").utf8CString)
    guard let result = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw PulseError(code: .invalid, step: "mkdtemp")
    }
    return String(cString: result)
}
