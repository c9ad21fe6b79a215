// The driver of the fake sound card, on both kinds of server: one command a line, each answered by an `ok VERB` line
// (or an error).
// - PipeWire: the card is a client, the helper Tests/FakeCard (built by scripts/test into EARSHOT_FAKECARD), started as
//   a child whose standard input is a FIFO this process keeps open; it answers on its standard output.
// - PulseAudio 16: the card is a module of the server, Tests/FakeCardModule (built by scripts/test into
//   EARSHOT_FAKECARD_MODULE), loaded and driven through PulseAudio's command line protocol (module-cli-protocol-unix,
//   loaded on a socket of this card's own): the native protocol behind `pactl load-module` refuses a module's path, the
//   command line does not (and pacmd, its usual client, needs the pid file the tests' server does not write). Each
//   command goes as `send-message /card/CARD/earshot COMMAND`, which the module answers `ok COMMAND`.
// Where the card cannot run that is an error, never a skip (scripts/test runs these suites where the card runs).

import Foundation
import Glibc

/// A running fake sound card: an analog card with a headphone jack, or a Bluetooth headset with profiles.
public final class FakeCard: @unchecked Sendable {
    // Unchecked Sendable: `commandsSent` is only touched under `lock`; everything else is immutable (the link guards
    // its own state).

    /// The kinds of card faked (the helper's and the module's banners say what each fakes and what it does not).
    public enum Kind: String, Sendable {
        /// One profile, one sink (`analogSink`), ports `analog-output-headphones` and `analog-output-speaker`.
        case analog
        /// Profiles `off`, A2DP and headset (`a2dpProfile`, `headsetProfile`); its sink `sink`, a microphone in the
        /// headset profile.
        case headset
    }

    /// The analog card's sink (the same name on both servers).
    public static let analogSink = "fakecard_analog"
    /// The analog card's headphones port.
    public static let headphonesPort = "analog-output-headphones"
    /// The analog card's speaker port.
    public static let speakerPort = "analog-output-speaker"
    /// The headset's card, as pactl names it on both servers.
    public static let headsetCard = "bluez_card.00_11_22_33_44_55"

    /// The card's sink as it starts: the analog sink, or the headset's A2DP sink (named as the server's own Bluetooth
    /// support names it: `bluez_output.ADDR.1` on PipeWire, in both profiles; `bluez_sink.ADDR.a2dp_sink` on
    /// PulseAudio, whose headset profile has a sink of another name).
    public let sink: String
    /// The headset's A2DP profile (`a2dp-sink` on PipeWire, `a2dp_sink` on PulseAudio).
    public let a2dpProfile: String
    /// The headset's call profile (`headset-head-unit` on PipeWire, `headset_head_unit` on PulseAudio).
    public let headsetProfile: String
    /// How commands reach the card.
    private let link: FakeCardLink
    /// Where the commands go: nil for the helper (its own words), the module's message path on PulseAudio.
    private let messagePath: String?
    private let lock = NSLock()
    private var commandsSent = 0

    /// Starts a card of `kind` on the tests' server and waits until the server shows its sink. Throws (loudly: the
    /// caller's test fails) when the card is not built or cannot run there.
    public init(_ kind: Kind, timeout: Duration = .seconds(15)) async throws {
        let onPulseAudio = try TestEnvironment.soundServerKind() == .pulseAudio
        let variable = onPulseAudio ? "EARSHOT_FAKECARD_MODULE" : "EARSHOT_FAKECARD"
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty else {
            throw ToolkitError("\(variable) is not set: run scripts/test, which builds the fake card")
        }
        switch (kind, onPulseAudio) {
        case (.analog, _):
            (sink, a2dpProfile, headsetProfile) = (Self.analogSink, "", "")
        case (.headset, false):
            (sink, a2dpProfile, headsetProfile) = ("bluez_output.00_11_22_33_44_55.1", "a2dp-sink", "headset-head-unit")
        case (.headset, true):
            (sink, a2dpProfile, headsetProfile) = ("bluez_sink.00_11_22_33_44_55.a2dp_sink", "a2dp_sink",
                                                   "headset_head_unit")
        }
        if onPulseAudio {
            messagePath = "/card/\(kind == .analog ? "fakecard_analog_card" : Self.headsetCard)/earshot"
            link = try FakeCardLink.commandLine()
            try link.write("load-module \(path) kind=\(kind.rawValue)")
        } else {
            messagePath = nil
            link = try FakeCardLink.helper(path, kind.rawValue)
        }
        let (link, sink) = (link, sink)
        do {
            try await waitUntil("the fake \(kind.rawValue) card's sink \(sink) is there", timeout: timeout) {
                guard link.isRunning else { throw ToolkitError("the fake card's driver exited") }
                return try ServerControl.sinkExists(sink)
            }
        } catch {
            link.close(abruptly: true)
            throw ToolkitError("\(error); the fake card's driver said: \(link.output()) \(link.diagnostics())"
                + (onPulseAudio ? " (the server's log says why a module did not load)" : ""))
        }
    }

    /// Sends one command (`unplug`, `plug`, `select speaker`, `profile NAME`, `remove`) and waits until the card says
    /// the server has applied it; throws on an error reply.
    public func send(_ command: String, timeout: Duration = .seconds(10)) async throws {
        let number = try post(command)
        let link = link
        try await waitUntil("the fake card answered `\(command)`", timeout: timeout) {
            let replies = Self.replies(in: link.output())
            if let error = replies.first(where: { !$0.hasPrefix("ok ") }) {
                throw ToolkitError("the fake card refused `\(command)`: \(error)")
            }
            guard link.isRunning else { throw ToolkitError("the fake card exited: \(link.diagnostics())") }
            return replies.count >= number
        }
    }

    /// Sends one command without waiting for its reply (many in a row, as a flapping jack); returns its number.
    @discardableResult
    public func post(_ command: String) throws -> Int {
        let number = lock.withLock { () -> Int in
            commandsSent += 1
            return commandsSent
        }
        try link.write(messagePath.map { "send-message \($0) \(command)" } ?? command)
        return number
    }

    /// Takes the card away at once: the PipeWire helper killed (SIGKILL), as a crash would; on PulseAudio the module
    /// unloaded, as a disconnected headset's is. The card's sinks go with it. Nothing more for a card already gone.
    public func kill() {
        removeModule()
        link.close(abruptly: true)
    }

    /// Ends the card's driver (the helper's input closed, then SIGKILL if it lingers; the module unloaded).
    public func stop() async {
        removeModule()
        link.close(abruptly: false)
    }

    /// On PulseAudio: sends `remove` and waits (3 s at most) for its answer, so that the module is gone before the
    /// command line's connection is (an error answer: it was gone already). Nothing for the PipeWire helper.
    private func removeModule() {
        guard messagePath != nil, link.isRunning, let number = try? post("remove") else { return }
        let deadline = ContinuousClock.now + .seconds(3)
        while Self.replies(in: link.output()).count < number && link.isRunning && ContinuousClock.now < deadline {
            usleep(5_000)
        }
    }

    /// Starts a call's capture as a calling application makes it, from the microphone it opens before the headset
    /// switches profile, recording to `file`: on PipeWire WirePlumber 0.5's source of the headset
    /// (`bluez_input.ADDR`, made by the helper) with pw-record; on PulseAudio the default source with parec, as a
    /// `media.role=phone` capture: the only kind PulseAudio 16's module-bluetooth-policy switches a headset for by
    /// default (`auto_switch=1`).
    public func startCall(recordingTo file: String) throws -> ChildProcess {
        if messagePath != nil {
            return try ChildProcess(
                "parec", ["--device=@DEFAULT_SOURCE@", "--property=media.role=phone", "--file-format=wav", file])
        }
        return try ChildProcess("pw-record", ["--target", "bluez_input.00_11_22_33_44_55", file])
    }

    /// The active port of sink `name`, as `pactl list sinks` shows it (nil when it has none or is gone).
    public static func activePort(ofSink name: String) throws -> String? {
        let listing = try ServerControl.pactl(["list", "sinks"])
        var current: String?
        for line in listing.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("Name: ") { current = String(text.dropFirst("Name: ".count)) }
            if text.hasPrefix("Active Port: "), current == name { return String(text.dropFirst("Active Port: ".count)) }
        }
        return nil
    }

    /// The card's replies in its driver's output: `ok VERB` lines, and the errors of either driver (the helper's
    /// `error ...`, the command line's `... failed: ...`); the helper's `ready` line, the command line's welcome and
    /// its `>>> ` prompts are not replies.
    private static func replies(in output: String) -> [Substring] {
        output.replacingOccurrences(of: ">>> ", with: "").split(separator: "\n")
            .filter { $0.hasPrefix("ok ") || $0.hasPrefix("error ") || $0.contains("failed:") }
    }
}
