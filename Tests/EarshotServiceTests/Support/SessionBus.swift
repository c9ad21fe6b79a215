// Helpers for the MPRIS tests: a private `dbus-daemon --session` per test, and running the real command-line
// clients (playerctl, dbus-monitor) against it. Missing tools are failures, never skips.
import Foundation
import Testing

/// The absolute path of `tool` on the usual system paths; records a failure (with the package to install) and
/// throws when it is missing.
func requireTool(_ tool: String, package: String) throws -> String {
    let path = ["/usr/bin", "/bin", "/usr/local/bin"].map { $0 + "/" + tool }
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    return try #require(path, "\(tool) is missing: apt-get install -y \(package)")
}

/// What a finished tool printed and how it exited.
struct ToolResult {
    /// The exit status (or the terminating signal's number).
    var status: Int32
    /// Standard output.
    var output: String
    /// Standard error.
    var errors: String

    /// Standard output without the trailing newline.
    var line: String { output.trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// A child process whose output goes to files (no pipes to drain, so no deadlock on large output).
final class ChildProcess: @unchecked Sendable {
    // Unchecked Sendable: `process` is only started, signalled and waited on; the output files are read-only.
    /// The running process.
    let process = Process()
    /// The file its standard output goes to.
    let outputPath: String
    /// The file its standard error goes to.
    let errorPath: String
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `executable` with `arguments` and exactly `environment`.
    init(_ executable: String, _ arguments: [String], environment: [String: String], directory: String) throws {
        outputPath = directory + "/\(UUID().uuidString).out"
        errorPath = directory + "/\(UUID().uuidString).err"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
    }

    /// What it printed on standard output so far.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    /// What it printed on standard error so far.
    var errors: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// Waits up to `timeout` for the process to exit; true if it did.
    func wait(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        return exited.wait(timeout: .now() + .milliseconds(milliseconds)) == .success
    }

    /// Sends `signal` and waits for the exit. SIGKILL by default: children of the test runner inherit its
    /// signal mask, in which SIGTERM is blocked, so a SIGTERM would only sit pending.
    func stop(signal: Int32 = SIGKILL) {
        if process.isRunning { kill(process.processIdentifier, signal) }
        _ = wait(timeout: .seconds(5))
    }
}

/// A private session bus for one test, at a fixed socket path (so it can be restarted at the same address).
final class PrivateSessionBus: @unchecked Sendable {
    // Unchecked Sendable: `daemon` is replaced only by `restart`, which tests call from one task.
    /// The folder holding the socket and the tools' output.
    let directory: String
    /// The client address, `unix:path=...`.
    let address: String
    private var daemon: ChildProcess?
    private let daemonPath: String

    /// Starts `dbus-daemon --session` listening in a fresh folder; fails the test when it is not installed.
    init() throws {
        daemonPath = try requireTool("dbus-daemon", package: "dbus-daemon")
        directory = try TemporaryDirectory.make()
        address = "unix:path=\(directory)/bus"
        try startDaemon()
    }

    deinit {
        daemon?.stop()
    }

    /// The address the running daemon printed: `address` with the daemon's `guid`, which changes on a restart.
    var printedAddress: String {
        daemon?.output.split(separator: "\n").first.map(String.init) ?? address
    }

    /// The environment for clients of this bus.
    var clientEnvironment: [String: String] {
        ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin", "HOME": directory, "LANG": "C.UTF-8"]
    }

    private func startDaemon() throws {
        let started = try ChildProcess(
            daemonPath, ["--session", "--nofork", "--nopidfile", "--address=\(address)", "--print-address=1"],
            environment: ["PATH": "/usr/bin:/bin"], directory: directory)
        daemon = started
        // The daemon prints its address once it listens.
        let deadline = ContinuousClock.now + .seconds(5)
        while !started.output.contains("\n") {
            guard ContinuousClock.now < deadline, started.process.isRunning else {
                throw BusFailure("dbus-daemon did not start: \(started.errors)")
            }
            usleep(5000)
        }
    }

    /// Kills the daemon (as a crash or a session restart would) and starts a new one at the same address.
    func restart() throws {
        daemon?.stop()
        // A killed daemon leaves its socket file behind, and a new one cannot bind over it.
        unlink(directory + "/bus")
        try startDaemon()
    }

    /// Stops the daemon.
    func stop() {
        daemon?.stop()
        daemon = nil
    }

    /// Runs `tool` with `arguments` as a client of this bus and waits for it (at most `timeout`).
    func run(_ tool: String, _ arguments: [String], timeout: Duration = .seconds(10)) throws -> ToolResult {
        let child = try ChildProcess(tool, arguments, environment: clientEnvironment, directory: directory)
        guard child.wait(timeout: timeout) else {
            child.stop(signal: SIGKILL)
            throw BusFailure("\(tool) \(arguments.joined(separator: " ")) did not finish in \(timeout)")
        }
        return ToolResult(status: child.process.terminationStatus, output: child.output, errors: child.errors)
    }

    /// Starts `tool` as a long-running client (a monitor); the caller stops it.
    func spawn(_ tool: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(tool, arguments, environment: clientEnvironment, directory: directory)
    }
}

/// A test-infrastructure failure with a message.
struct BusFailure: Error, CustomStringConvertible {
    /// What went wrong.
    var description: String

    /// A failure saying `description`.
    init(_ description: String) {
        self.description = description
    }
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
func eventually(timeout: Duration = .seconds(5), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        usleep(10_000)
    }
    return try condition()
}
