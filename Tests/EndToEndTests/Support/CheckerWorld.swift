// What a checker run plays against: one private `earshot serve` (ServiceHarness) with MPRIS on its bus, a USB-like
// sink `usb` as the default beside the standard headphones and speakers, a recorder on every sink's monitor, an
// `earshot events` follower the oracle reads, and the things steps start and stop (a phone call, a microphone
// capture, a second follower that gets SIGSTOP). The recorders run for the whole run and the oracle reads their
// files' tails (`MonitorRecorder.recorded(since:)`): starting a recorder costs a second or two, a step much less.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation

/// The world one checker run acts on and observes.
///
/// `@unchecked Sendable`: one run's task owns it and uses it one step at a time; the catalogue's closures only
/// receive it from that task.
final class CheckerWorld: @unchecked Sendable {
    /// The USB-like sink: the default, unplugged and replugged by steps.
    static let usb = "usb"

    /// The service's harness (bus, socket, folders).
    let harness: ServiceHarness
    /// The running service.
    let service: ChildProcess
    /// The folder holding `CheckerMusic`'s files.
    let music: URL
    /// The service's MPD socket, which `mpc` steps use.
    let mpdSocket: String
    /// An internet radio station on the loopback that never ends (`add-station`, `live`).
    let station: LoopbackHTTPServer
    /// The follower the oracle reads: it always reads, so its last line is the event log's latest word.
    let eventLog: ChildProcess
    /// The follower steps stop and continue (a client that stops reading).
    private(set) var client: ChildProcess?
    /// Whether `client` is stopped.
    private(set) var clientStopped = false
    /// The phone call running, if any (a silent `media.role=phone` stream: every sound heard is ours).
    private(set) var phone: ChildProcess?
    /// The microphone capture running, if any.
    private(set) var microphone: ChildProcess?
    /// A recorder per present sink, by sink name.
    private(set) var recorders: [String: MonitorRecorder] = [:]
    /// When the recorders were started, to restart them in long runs before their files grow large.
    private var recordersStarted = ContinuousClock.now

    /// Makes the world: the USB sink as the default, the music, the service, the followers and the recorders.
    init(harness: ServiceHarness) async throws {
        self.harness = harness
        music = harness.root.appendingPathComponent("music", isDirectory: true)
        try CheckerMusic.make(in: music)
        station = try LoopbackStation.start(
            try [UInt8](Data(contentsOf: Fixtures.tone(frequency: CheckerMusic.stationHz, seconds: 10))), looping: true)
        try Self.loadUSB()
        // Fades off would hide nothing here, but the default (50 ms) is what users have: keep it.
        // The music folder is the library's, and MPD's protocol is served on a socket of the run's own (no port).
        mpdSocket = harness.root.appendingPathComponent("mpd.socket").path
        try harness.writeConfiguration(#"""
            {"resumeWindowMinutes": 30, "musicDirectories": ["\#(music.path)"], "mpdListen": ["\#(mpdSocket)"]}
            """#)
        _ = try ProcessRunner.requireTool("mpc", package: "mpc")
        service = try await harness.startService(waitForMPRIS: true)
        eventLog = try TestEnvironment.launchEarshot(["events"], environment: harness.environment)
        client = try TestEnvironment.launchEarshot(["events"], environment: harness.environment)
        try await restartRecorders()
    }

    /// Ends what the world started and puts the server back in its standard layout.
    func tearDown() async {
        station.stop()
        continueFollower()
        await endPhoneCall()
        await endMicrophone()
        for recorder in recorders.values { _ = try? await recorder.stop() }
        recorders = [:]
        for follower in [eventLog, client].compactMap({ $0 }) where follower.isRunning {
            _ = await follower.terminate(grace: .seconds(2))
        }
        if (try? ServerControl.sinkExists(Self.usb)) == true,
           let index = try? ServerControl.sinkModuleIndex(name: Self.usb)
        {
            _ = try? ServerControl.pactl(["unload-module", "\(index)"])
        }
        try? ServerControl.restoreStandardLayout()
    }

    /// Runs `earshot ARGUMENTS` as the user would; a command that does not return is a finding.
    func earshot(_ arguments: [String]) throws {
        let names = Set(CheckerMusic.names)
        // An `add`'s file names become paths in the music folder; a library query names them as the library does,
        // relative to it (`findadd file good.ogg`).
        let words = arguments.first == "add"
            ? arguments.map { names.contains($0) ? music.appendingPathComponent($0).path : $0 } : arguments
        _ = try harness.earshot(words, timeout: .seconds(10))
    }

    /// Queues the station, as `earshot add URL`.
    func addStation() throws {
        _ = try harness.earshot(["add", station.baseURL + "/live"], timeout: .seconds(10))
    }

    /// Runs `mpc ARGUMENTS` on the MPD socket as a user of an MPD client would (an `ACK` is an answer, not a
    /// failure); a command that does not return is a finding.
    func mpc(_ arguments: [String]) throws {
        _ = try ProcessRunner.run("mpc", ["-h", mpdSocket] + arguments, timeout: .seconds(10))
    }

    /// Runs `playerctl -p earshot ARGUMENTS` on the run's session bus, as the desktop's media keys would.
    func playerctl(_ arguments: [String]) throws {
        _ = try harness.playerctl(["-p", "earshot"] + arguments)
    }

    /// Loads the USB-like null sink and makes it the default.
    private static func loadUSB() throws {
        if try !ServerControl.sinkExists(usb) {
            try ServerControl.pactl([
                "load-module", "module-null-sink", "sink_name=\(usb)", "sink_properties=device.description=USB",
            ])
        }
        try ServerControl.setDefaultSink(usb)
    }

    /// Unplugs the USB sink, if present.
    func unplugUSB() throws {
        guard try ServerControl.sinkExists(Self.usb) else { return }
        try ServerControl.unplug(sink: Self.usb)
        // Its recorder now records the default source's silence, on another clock: drop it.
        if let recorder = recorders.removeValue(forKey: Self.usb) {
            Task { _ = try? await recorder.stop() }
        }
    }

    /// Plugs the USB sink back (the default again, as a desktop makes a newly connected device) if it is missing.
    func replugUSB() async throws {
        guard try !ServerControl.sinkExists(Self.usb) else { return }
        try Self.loadUSB()
        recorders[Self.usb] = try await MonitorRecorder.start(sink: Self.usb, promptly: true)
    }

    /// Starts a phone call on the headphones if none runs.
    func startPhoneCall() throws {
        guard phone?.isRunning != true else { return }
        let silence = try Fixtures.file(named: "checker-silent-call.wav") { output in
            // Silent, so that whatever a monitor hears is Earshot's: Earshot knows a call by its role, not its sound.
            try ProcessRunner.runChecked(
                "sox", ["-n", "-r", "8000", "-c", "1", output.path, "trim", "0", "600"], timeout: .seconds(60))
        }
        phone = try ServerControl.startPhoneCall(wav: silence, sink: TestEnvironment.headphones)
    }

    /// Ends the phone call, if one runs.
    func endPhoneCall() async {
        if let phone, phone.isRunning { _ = await phone.terminate(grace: .seconds(2)) }
        phone = nil
    }

    /// Starts a capture from the microphone (a call as real applications make one) if none runs.
    func startMicrophone() throws {
        guard microphone?.isRunning != true else { return }
        microphone = try CallScenario.startNativeCapture(in: harness.root)
    }

    /// Ends the microphone capture, if one runs.
    func endMicrophone() async {
        if let microphone, microphone.isRunning { _ = await microphone.terminate(grace: .seconds(2)) }
        microphone = nil
    }

    /// Our playback streams on the server now.
    func ourStreams() throws -> [SinkInput] {
        try ServerControl.sinkInputs(ofProcess: service.processIdentifier)
    }

    /// Moves our stream to another sink with `pactl move-sink-input` (a deliberate move), if there is a stream.
    func moveOurStream() async throws {
        guard let stream = try ourStreams().first else { return }
        let others = try ServerControl.sinks().map(\.name).filter { $0 != stream.sinkName }
        guard let target = others.first(where: { $0 == TestEnvironment.speakers }) ?? others.first else { return }
        try await ServerControl.move(sinkInput: stream.index, to: target)
    }

    /// Kills the sound server and starts it again (its sinks are fresh; the USB sink is loaded again as the
    /// default), then waits until the service is connected again.
    func restartServer() async throws {
        for recorder in recorders.values { _ = try? await recorder.stop() }
        recorders = [:]
        try SoundServerControl.run("kill")
        phone = nil
        microphone = nil
        try SoundServerControl.run("start")
        try Self.loadUSB()
        try await harness.waitForStatus(of: service, "connected to the restarted server") { $0.server != nil }
        try await restartRecorders()
    }

    /// Stops the second follower (SIGSTOP), if it runs and is not stopped.
    func stopFollower() {
        guard let client, client.isRunning, !clientStopped else { return }
        client.signal(SIGSTOP)
        clientStopped = true
    }

    /// Lets the second follower carry on (SIGCONT).
    func continueFollower() {
        guard let client, clientStopped else { return }
        client.signal(SIGCONT)
        clientStopped = false
    }

    /// Starts a recorder on every sink that has none (all of them after a server restart), and restarts them all
    /// every ten minutes so that a long run's files stay small.
    func restartRecorders() async throws {
        if ContinuousClock.now - recordersStarted > .seconds(600) {
            for recorder in recorders.values { _ = try? await recorder.stop() }
            recorders = [:]
        }
        let missing = try ServerControl.sinks().map(\.name).filter { recorders[$0] == nil }
        guard !missing.isEmpty else { return }
        if recorders.isEmpty { recordersStarted = .now }
        // Promptly only where nothing of ours plays (PulseAudio suspends the sink to wake it).
        let playing = Set(try ourStreams().filter { !$0.corked }.compactMap(\.sinkName))
        for sink in missing {
            recorders[sink] = try await MonitorRecorder.start(sink: sink, promptly: !playing.contains(sink))
        }
    }

    /// The event log's latest playback state (`playing`, `paused`, `stopped`, ...: what stands before any
    /// parenthesis in `playback=`), or nil before any event.
    func eventLogPlayback() -> String? {
        let lines = eventLog.standardOutput().split(separator: "\n")
        guard let last = lines.last(where: { $0.contains(" playback=") }),
              let range = last.range(of: " playback=")
        else { return nil }
        let value = last[range.upperBound...].prefix { $0 != " " && $0 != "(" }
        return String(value)
    }
}
