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
/// Started with posix_spawn, not Foundation's Process: on Linux every Process leaks itself and what it holds
/// (swift-corelibs-foundation SR-12551), which the AddressSanitizer run's leak check reports.
final class ChildProcess: @unchecked Sendable {
    // Unchecked Sendable: `reapedStatus` is guarded by `lock`; everything else is immutable.
    /// The child's process id.
    let processIdentifier: pid_t
    /// The file its standard output goes to.
    let outputPath: String
    /// The file its standard error goes to.
    let errorPath: String
    private let exited = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var reapedStatus: Int32?

    /// Starts `executable` with `arguments` and exactly `environment`, with every signal at its default and
    /// none blocked (the test runner blocks SIGTERM, and a child would inherit that).
    init(_ executable: String, _ arguments: [String], environment: [String: String], directory: String) throws {
        outputPath = directory + "/\(UUID().uuidString).out"
        errorPath = directory + "/\(UUID().uuidString).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var spawned: pid_t = 0
        let result = posix_spawn(&spawned, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw BusFailure("cannot start \(executable): \(String(cString: strerror(result)))") }
        let pid = spawned
        processIdentifier = pid
        // The waiter keeps `self` until the child ends. It waits without reaping first, so that `stop` can never
        // signal a recycled process id.
        Thread.detachNewThread { [self] in
            var information = siginfo_t()
            while waitid(P_PID, id_t(pid), &information, WEXITED | WNOWAIT) != 0, errno == EINTR {}
            var status: Int32 = 0
            lock.withLock {
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                reapedStatus = status
            }
            exited.signal()
        }
    }

    /// Whether the child is still running (has not been reaped).
    var isRunning: Bool { lock.withLock { reapedStatus == nil } }

    /// The exit status once the child has ended (the signal's number if a signal ended it), else -1.
    var terminationStatus: Int32 {
        // Decoded by hand: the W* macros are not imported into Swift.
        lock.withLock { reapedStatus.map { ($0 & 0x7f) == 0 ? ($0 >> 8) & 0xff : $0 & 0x7f } ?? -1 }
    }

    /// What it printed on standard output so far.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    /// What it printed on standard error so far.
    var errors: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// Waits up to `timeout` for the process to exit; true if it did.
    func wait(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        guard exited.wait(timeout: .now() + .milliseconds(milliseconds)) == .success else { return false }
        // Others may wait too (`stop` after `wait`): leave the signal for them.
        exited.signal()
        return true
    }

    /// Sends `signal` (SIGKILL by default) and waits for the exit.
    func stop(signal: Int32 = SIGKILL) {
        // Under the lock, so the child cannot be reaped (and its id reused) between the check and the kill.
        lock.withLock { if reapedStatus == nil { kill(processIdentifier, signal) } }
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
            guard ContinuousClock.now < deadline, started.isRunning else {
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
        return ToolResult(status: child.terminationStatus, output: child.output, errors: child.errors)
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
