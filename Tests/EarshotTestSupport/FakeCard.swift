// The driver of the fake sound card (Tests/FakeCard, built by scripts/test into EARSHOT_FAKECARD): starts it as a
// child whose standard input is a FIFO this process keeps open, sends it one command a line, and waits for its
// `ok VERB` replies. Only the PipeWire servers run it (scripts/test's PIPEWIRE_ONLY); there a card that cannot run
// is an error, never a skip.

import Foundation
import Glibc

/// A running fake sound card: an analog card with a headphone jack, or a Bluetooth headset with profiles.
public final class FakeCard: @unchecked Sendable {
    // Unchecked Sendable: `commandsSent` is only touched under `lock`; everything else is immutable.

    /// The kinds of card the helper fakes (its banners say what each fakes and what it does not).
    public enum Kind: String, Sendable {
        /// One profile, one sink (`analogSink`), routes `analog-output-headphones` and `analog-output-speaker`.
        case analog
        /// Profiles `off`, `a2dp-sink` and `headset-head-unit`; sink `headsetSink`, microphone in the headset profile.
        case headset
    }

    /// The analog card's sink.
    public static let analogSink = "fakecard_analog"
    /// The analog card's headphones port.
    public static let headphonesPort = "analog-output-headphones"
    /// The analog card's speaker port.
    public static let speakerPort = "analog-output-speaker"
    /// The headset's card, as pactl names it.
    public static let headsetCard = "bluez_card.00_11_22_33_44_55"
    /// The headset's sink, in both profiles (as a real headset's is named).
    public static let headsetSink = "bluez_output.00_11_22_33_44_55.1"
    /// The source a calling application opens before the switch (WirePlumber 0.5's, made by the helper itself).
    public static let headsetCallSource = "bluez_input.00_11_22_33_44_55"

    /// The helper's process.
    public let process: ChildProcess
    /// The device's global id in the PipeWire daemon.
    public let deviceID: Int
    /// The write end of the helper's standard input.
    private let input: FileHandle
    private let lock = NSLock()
    private var commandsSent = 0

    /// Starts a card of `kind` and waits until the daemon has it and pipewire-pulse shows its first sink.
    /// Throws (loudly: the caller's test fails) when the helper is not built or cannot reach PipeWire.
    public init(_ kind: Kind, timeout: Duration = .seconds(15)) async throws {
        guard let path = ProcessInfo.processInfo.environment["EARSHOT_FAKECARD"], !path.isEmpty else {
            throw ToolkitError("EARSHOT_FAKECARD is not set: run scripts/test, which builds the fake card")
        }
        let fifo = ProcessRunner.outputDirectory.appendingPathComponent("fakecard-\(UUID().uuidString).in")
        guard mkfifo(fifo.path, 0o600) == 0 else {
            throw ToolkitError("cannot make the fake card's FIFO: \(String(cString: strerror(errno)))")
        }
        // Opened for reading and writing, so that neither this open nor the child's blocks, and the child sees the
        // end of its input only when this process closes it (or exits).
        let descriptor = open(fifo.path, O_RDWR)
        guard descriptor >= 0 else {
            throw ToolkitError("cannot open the fake card's FIFO: \(String(cString: strerror(errno)))")
        }
        input = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        process = try ChildProcess(path, [kind.rawValue], standardInput: fifo)
        var ready: Int?
        let process = process
        do {
            try await waitUntil("the fake \(kind.rawValue) card is ready", timeout: timeout) {
                guard process.isRunning else {
                    throw ToolkitError("the fake card exited: \(process.standardError())")
                }
                ready = Self.readyDeviceID(in: process.standardOutput())
                return ready != nil
            }
            let sink = kind == .analog ? Self.analogSink : Self.headsetSink
            try await waitUntil("pipewire-pulse shows the fake card's sink", timeout: timeout) {
                try ServerControl.sinkExists(sink)
            }
        } catch {
            process.kill()
            throw ToolkitError("\(error); the fake card said: \(process.standardError())")
        }
        deviceID = try ready ?? { throw ToolkitError("no ready line") }()
    }

    /// Sends one command (`unplug`, `plug`, `select speaker`, `profile headset-head-unit`, `remove`) and waits until
    /// the helper says the daemon has applied it; throws on an `error` reply.
    public func send(_ command: String, timeout: Duration = .seconds(10)) async throws {
        let number = lock.withLock { () -> Int in
            commandsSent += 1
            return commandsSent
        }
        try input.write(contentsOf: Array("\(command)\n".utf8))
        let process = process
        try await waitUntil("the fake card answered `\(command)`", timeout: timeout) {
            let replies = process.standardOutput().split(separator: "\n").dropFirst()
            if let error = replies.first(where: { $0.hasPrefix("error ") }) {
                throw ToolkitError("the fake card refused `\(command)`: \(error)")
            }
            guard process.isRunning else { throw ToolkitError("the fake card exited: \(process.standardError())") }
            return replies.count >= number
        }
    }

    /// Sends one command without waiting for its reply (many in a row, as a flapping jack).
    public func post(_ command: String) throws {
        lock.withLock { commandsSent += 1 }
        try input.write(contentsOf: Array("\(command)\n".utf8))
    }

    /// Kills the helper the hard way (SIGKILL), as a crash would: the daemon removes the card with its client.
    public func kill() {
        process.kill()
        _ = process.waitForExit(timeout: .seconds(5))
    }

    /// Ends the helper (its input closed, then SIGKILL if it lingers) and waits until its sink is gone.
    public func stop() async {
        try? input.close()
        if !process.waitForExit(timeout: .seconds(3)) { kill() }
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

    private static func readyDeviceID(in output: String) -> Int? {
        guard let line = output.split(separator: "\n").first, line.hasPrefix("ready device=") else { return nil }
        return Int(line.dropFirst("ready device=".count))
    }
}
