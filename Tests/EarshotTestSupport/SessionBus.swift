// A private session bus for the MPRIS tests: `dbus-daemon --session` listening in a test's own folder, and
// the real command-line clients (playerctl, busctl, dbus-monitor) run against it. A missing dbus-daemon is a
// failure, never a skip.

import Foundation
import Glibc
import SystemSupport

/// A private session bus: `dbus-daemon --session --nofork --print-address`, on a fixed socket in a test's folder
/// (so that it can be restarted at the same address).
public final class PrivateSessionBus: Sendable {
    /// The folder holding the socket; tools run against the bus use it as `HOME`.
    public let directory: URL
    /// The client address, `unix:path=...`, without the daemon's guid: the same after a `restart()`.
    public let address: String
    /// The socket the daemon listens on.
    private let socket: String
    /// The dbus-daemon executable.
    private let daemonPath: String
    /// The daemon running now.
    private let daemon: LockedValue<ChildProcess>

    /// Starts a daemon listening on a socket in `directory` (a fresh folder of this process if `nil`) and waits
    /// until it prints its address.
    ///
    /// - Throws: when dbus-daemon is not installed or does not come up within 10 s.
    public init(in directory: URL? = nil) throws {
        daemonPath = try ProcessRunner.requireTool("dbus-daemon", package: "dbus-daemon")
        let directory = directory ?? TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("bus-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        socket = directory.appendingPathComponent("bus").path
        address = "unix:path=\(socket)"
        daemon = LockedValue(try Self.launch(daemonPath, address: address))
    }

    deinit {
        stop()
    }

    /// Starts a daemon at `address` and waits (blocking, at most 10 s) until it prints its address.
    private static func launch(_ daemonPath: String, address: String) throws -> ChildProcess {
        // Exactly this environment: nothing of the user's session reaches the private bus.
        let daemon = try ChildProcess(
            daemonPath, ["--session", "--nofork", "--nopidfile", "--address=\(address)", "--print-address=1"],
            environment: ["PATH": "/usr/bin:/bin"], inheritsEnvironment: false)
        let deadline = ContinuousClock.now + .seconds(10)
        while !daemon.standardOutput().contains("\n") {
            guard daemon.isRunning, ContinuousClock.now < deadline else {
                let failure = daemon.isRunning ? "did not print its address within 10 s" : "exited"
                daemon.kill()
                throw ToolkitError(
                    "dbus-daemon \(failure) (status \(daemon.exitStatus ?? -1)): \(daemon.standardError().trimmed)")
            }
            usleep(5000)
        }
        return daemon
    }

    /// The address the running daemon printed: `address` with the daemon's guid, which changes on a restart.
    public var printedAddress: String {
        daemon.withLock { $0 }.standardOutput().trimmed.components(separatedBy: "\n").first ?? address
    }

    /// The whole environment of a client of this bus: the bus, a plain `PATH`, `HOME` in the bus's folder, UTF-8.
    public var clientEnvironment: [String: String] {
        ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin", "HOME": directory.path, "LANG": "C.UTF-8"]
    }

    /// Kills the daemon with SIGKILL, as a crash or a session restart would, and starts a new one at the same address.
    public func restart() throws {
        stop()
        // A killed daemon leaves its socket file behind, and a new one cannot bind over it.
        unlink(socket)
        let fresh = try Self.launch(daemonPath, address: address)
        daemon.withLock { $0 = fresh }
    }

    /// Stops the daemon with SIGKILL: it may have inherited SIGTERM blocked from the test runner.
    public func stop() {
        daemon.withLock { $0 }.kill()
    }

    /// Runs `tool` with `arguments` as a client of this bus (`clientEnvironment` only) and waits at most `timeout`.
    public func run(_ tool: String, _ arguments: [String], timeout: Duration = .seconds(10)) throws -> CommandResult {
        try ProcessRunner.run(
            tool, arguments, environment: clientEnvironment, inheritsEnvironment: false, timeout: timeout)
    }

    /// Starts `tool` as a long-running client (a monitor) with `clientEnvironment` only; the caller kills it.
    public func spawn(_ tool: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(tool, arguments, environment: clientEnvironment, inheritsEnvironment: false)
    }
}

/// A D-Bus client that the kernel (`/proc/PID/comm`) and so Earshot's MPRIS adapter know by another process name: a
/// copy of busctl named `processName`, standing in for WirePlumber (`wireplumber`), KDE Connect (`kdeconnectd`) or
/// GSConnect (`gjs`, run from a folder whose name says `gsconnect`, as its daemon's script path does).
public struct NamedBusClient: Sendable {
    /// The kernel's name of the client's process.
    public let processName: String
    /// The copy of busctl, whose file name is `processName`.
    public let executable: String

    /// Copies busctl to `folder/processName` (or `folder/subfolder/processName`, so that the command line names
    /// `subfolder`) and checks that the copy, running as a client of the bus at `address`, has the kernel name
    /// `processName` and that command line.
    ///
    /// - Throws: when busctl is missing, the copy cannot be made, or its process is named otherwise.
    public init(processName: String, in folder: URL, subfolder: String? = nil, checkingOn address: String) throws {
        let busctl = try ProcessRunner.requireTool("busctl", package: "systemd")
        var directory = folder
        if let subfolder { directory = directory.appendingPathComponent(subfolder, isDirectory: true) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let copy = directory.appendingPathComponent(processName)
        if !FileManager.default.fileExists(atPath: copy.path) {
            try FileManager.default.copyItem(atPath: busctl, toPath: copy.path)
        }
        self.processName = processName
        executable = copy.path
        try checkProcessName(address: address)
    }

    /// Runs the copy as a bus monitor (a client that stays) and reads its name and command line from /proc.
    private func checkProcessName(address: String) throws {
        let monitor = try ChildProcess(executable, ["--address=\(address)", "monitor"], inheritsEnvironment: false)
        defer { monitor.kill() }
        let procFolder = "/proc/\(monitor.processIdentifier)"
        var name = ""
        var commandLine = ""
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            name = ((try? String(contentsOfFile: "\(procFolder)/comm", encoding: .utf8)) ?? "").trimmed
            commandLine = (try? String(contentsOfFile: "\(procFolder)/cmdline", encoding: .utf8)) ?? ""
            // The kernel keeps 15 bytes of a process's name.
            if name == String(decoding: processName.utf8.prefix(15), as: UTF8.self) && monitor.isRunning { return }
            usleep(10_000)
        }
        throw ToolkitError("a copy of busctl named \(processName) runs as `\(name)` (command line "
            + "`\(commandLine.replacingOccurrences(of: "\0", with: " "))`, running \(monitor.isRunning)): "
            + monitor.standardError().trimmed)
    }

    /// Calls `org.mpris.MediaPlayer2.Player.<method>` (no arguments) on Earshot's MPRIS name through the bus at
    /// `address`, and waits for the reply (a non-zero exit is not thrown).
    public func callPlayer(
        _ method: String, address: String, timeout: Duration = .seconds(15)
    ) throws -> CommandResult {
        try ProcessRunner.run(executable, [
            "--address=\(address)", "--", "call", "org.mpris.MediaPlayer2.earshot", "/org/mpris/MediaPlayer2",
            "org.mpris.MediaPlayer2.Player", method,
        ], environment: ["PATH": "/usr/bin:/bin"], inheritsEnvironment: false, timeout: timeout)
    }
}
